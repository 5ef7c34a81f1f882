"""A TF 1.x training-input loop, unmodified, for ``queue-pipeline run --service``.

tests/test_service_run.py runs it as one or two trainer processes against a
tf.data service cluster on loopback. string_input_producer over CSV files
(several, so the workers can split them) -> TextLineReader -> decode_csv
with a per-record computation -> shuffle_batch, driven by Coordinator and
start_queue_runners in a plain Session. It prints one ``record N`` line per
record it received, ``done N`` at the end of the input and, with --slow,
sleeps between steps (so a test can kill a server mid-epoch). With
--wait-for PATH it waits, TensorFlow imported, until PATH exists before it
builds anything: a test starts it early, its start-up beside other work.

``--epochs 0`` reads forever (stop it with ``--steps N``).

Usage: served_trainer.py CSV... [--epochs N] [--batch N] [--slow SECONDS] [--steps N]
                         [--wait-for PATH]
"""

import argparse
import os
import sys
import time

import tensorflow.compat.v1 as tf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--steps", type=int, default=0, help="stop after N steps (0: at the end)")
    parser.add_argument("--wait-for", default="", help="build nothing until this file exists")
    flags = parser.parse_args()
    if flags.wait_for:
        deadline = time.monotonic() + 600
        while not os.path.exists(flags.wait_for):
            if time.monotonic() > deadline:
                print(f"served_trainer.py: {flags.wait_for} never appeared", file=sys.stderr)
                return 3
            time.sleep(0.05)

    with tf.Graph().as_default():
        epochs = flags.epochs if flags.epochs > 0 else None
        files = tf.train.string_input_producer(flags.csv, num_epochs=epochs)
        _, line = tf.TextLineReader().read(files)
        (number,) = tf.decode_csv(line, record_defaults=[[0]])
        squared = number * number  # decoding work, done on the workers
        numbers, squares = tf.train.shuffle_batch(
            [number, squared],
            batch_size=flags.batch,
            capacity=64,
            min_after_dequeue=16,
            allow_smaller_final_batch=True,
        )
        config = tf.ConfigProto(operation_timeout_in_ms=120_000)
        with tf.Session(config=config) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            count = 0
            try:
                while not coord.should_stop():
                    got, got_squares = sess.run([numbers, squares])
                    for n, s in zip(got, got_squares):
                        assert n * n == s, (n, s)
                        print(f"record {n}", flush=True)
                    count += len(got)
                    if flags.slow:
                        time.sleep(flags.slow)
                    if flags.steps and count >= flags.steps * flags.batch:
                        print(f"stopped {count}", flush=True)
                        break
            except tf.errors.OutOfRangeError:
                print(f"done {count}", flush=True)
            finally:
                coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
