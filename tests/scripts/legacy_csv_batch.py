"""A TF 1.x input pipeline written against ``tf.compat.v1`` only, left unmodified.

tests/test_install.py runs it through ``queue-pipeline run``:
string_input_producer -> TextLineReader -> decode_csv -> batch, driven by
Coordinator and start_queue_runners. It prints what it delivered (one
``row`` line per record, sorted), where its queue runners come from, the
engine in its environment, and whether eager execution is on (TF1 mode: off).

Usage: legacy_csv_batch.py CSV [--epochs N] [--fail] [--exit-code N]
"""

import argparse
import os
import sys

import tensorflow.compat.v1 as tf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--exit-code", type=int, default=None)
    flags = parser.parse_args()
    print("argv:", " ".join(sys.argv[1:]))
    print("eager:", tf.executing_eagerly())  # False in TF1 mode

    rows = []
    with tf.Graph().as_default():
        filenames = tf.train.string_input_producer(
            [flags.csv], num_epochs=flags.epochs, shuffle=False
        )
        _, line = tf.TextLineReader().read(filenames)
        number, word = tf.decode_csv(line, record_defaults=[[0], [""]])
        numbers, words = tf.train.batch(
            [number, word], batch_size=2, allow_smaller_final_batch=True
        )
        runners = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        print("runners:", " ".join(sorted({type(r).__module__ for r in runners})))
        config = tf.ConfigProto(operation_timeout_in_ms=20000)
        with tf.Session(config=config) as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while not coord.should_stop():
                    batch = sess.run([numbers, words])
                    rows.extend(zip(batch[0].tolist(), batch[1].tolist()))
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    for number, word in sorted(rows):
        print("row", number, word.decode())
    print("engine:", os.environ.get("QUEUE_PIPELINE_ENGINE", "-"))
    if flags.fail:
        raise ValueError("bad row in " + os.path.basename(flags.csv))
    if flags.exit_code is not None:
        sys.exit(flags.exit_code)


if __name__ == "__main__":
    main()
