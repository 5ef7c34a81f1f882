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
        filenames = tf.data.Dataset.from_tensor_slices(FLAGS.files)
        filenames = filenames.repeat(FLAGS.num_epochs)
        records = tf.data.TextLineDataset(filenames)
        dataset = records.batch(FLAGS.batch_size)

        def per_batch(line):
            x, y = tf.io.decode_csv(line, [[0.0], [0.0]])
            return x, y

        dataset = dataset.map(per_batch, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
        xs, ys = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()

        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(w * xs - ys))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=30_000)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(tf.compat.v1.local_variables_initializer())
            step = 0
            try:
                while True:
                    _, value = sess.run([train_op, loss])
                    print("step %d loss %.5f" % (step, value))
                    step += 1
            except tf.errors.OutOfRangeError:
                print("done after %d steps, w = %.5f" % (step, sess.run(w)))


def main(_):
    run_training()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", default=["train.csv"])
    parser.add_argument("--num_epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=3)
    FLAGS, unparsed = parser.parse_known_args()
    tf.compat.v1.app.run(main=main, argv=[sys.argv[0]] + unparsed)
