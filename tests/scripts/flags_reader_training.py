"""A TF 1.x training program's shape: global FLAGS, the reader pipeline inline in run_training.

``FLAGS`` is set in the ``__main__`` block (argparse, then
``tf.compat.v1.app.run``), and ``run_training`` builds its CSV pipeline
inline from it, then trains in the Coordinator loop. ``queue-pipeline
migrate FILE.py:run_training`` migrates the pipeline where it stands, with
the flags at their defaults for the proof (NOTE [ Migrating an inline
pipeline ]). Usage: python flags_reader_training.py CSV... [--num_epochs N]
"""

import argparse
import sys

import tensorflow as tf

FLAGS = None


def run_training():
    with tf.Graph().as_default():
        filename_queue = tf.compat.v1.train.string_input_producer(
            FLAGS.files, num_epochs=FLAGS.num_epochs, shuffle=False
        )
        reader = tf.compat.v1.TextLineReader()
        _, line = reader.read(filename_queue)
        x, y = tf.io.decode_csv(line, [[0.0], [0.0]])
        xs, ys = tf.compat.v1.train.batch([x, y], FLAGS.batch_size, allow_smaller_final_batch=True)

        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(w * xs - ys))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=30_000)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
            step = 0
            try:
                while not coord.should_stop():
                    _, value = sess.run([train_op, loss])
                    print("step %d loss %.5f" % (step, value))
                    step += 1
            except tf.errors.OutOfRangeError:
                print("done after %d steps, w = %.5f" % (step, sess.run(w)))
            finally:
                coord.request_stop()
            coord.join(threads)


def main(_):
    run_training()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", default=["train.csv"])
    parser.add_argument("--num_epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=3)
    FLAGS, unparsed = parser.parse_known_args()
    tf.compat.v1.app.run(main=main, argv=[sys.argv[0]] + unparsed)
