"""Trains a tiny classifier on TFRecords through a queue input pipeline, written for TF 1.x.

The shape of TensorFlow 1.x's
``tensorflow/examples/how_tos/reading_data/fully_connected_reader.py``, as a
TF 1.x user wrote it (``import tensorflow as tf``, no ``compat.v1``):
``tf.train.string_input_producer`` -> ``tf.TFRecordReader`` ->
``tf.parse_single_example`` -> ``tf.train.shuffle_batch`` (or, without
``--shuffle``, ``tf.train.batch`` on one thread), a model from
``tf1_model.py`` trained with ``tf.train.GradientDescentOptimizer`` in a
``tf.Session`` driven by ``tf.train.Coordinator`` and
``tf.train.start_queue_runners``, evaluated before and after on all the
records through ``tf.placeholder``s, started by ``tf.app.run``.

tests/test_run_tf1.py runs it through ``queue-pipeline run --tf1`` on both
engines and through ``tf1_native.py`` (TensorFlow's own queue API in TF1
mode, the oracle), and compares what it prints. Without ``--shuffle`` the
order is fixed, so it prints every step's ids and loss; with it, only facts
that do not depend on the order. The ``impl:`` line says whose Coordinator
and queue runners ran.

Usage: tf1_fully_connected_reader.py --train_dir DIR [--num_epochs N]
  [--batch_size N] [--shuffle]
"""

from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

import argparse
import collections
import os.path
import sys

import tensorflow as tf

import tf1_model

FLAGS = None
TRAIN_FILE = "train.tfrecords"


def decode(serialized_example):
    features = tf.parse_single_example(
        serialized_example,
        features={
            "id": tf.FixedLenFeature([], tf.int64),
            "features": tf.FixedLenFeature([tf1_model.NUM_FEATURES], tf.float32),
            "label": tf.FixedLenFeature([], tf.int64),
        },
    )
    return features["id"], features["features"], tf.cast(features["label"], tf.int32)


def inputs(batch_size, num_epochs):
    """Reads input data num_epochs times; returns ids, features, labels batches."""
    filename = os.path.join(FLAGS.train_dir, TRAIN_FILE)
    with tf.name_scope("input"):
        filename_queue = tf.train.string_input_producer(
            [filename], num_epochs=num_epochs, shuffle=FLAGS.shuffle
        )
        reader = tf.TFRecordReader()
        _, serialized_example = reader.read(filename_queue)
        example_id, features, label = decode(serialized_example)
        if FLAGS.shuffle:
            return tf.train.shuffle_batch(
                [example_id, features, label],
                batch_size=batch_size,
                num_threads=2,
                capacity=16 + 3 * batch_size,
                min_after_dequeue=16,
            )
        return tf.train.batch(
            [example_id, features, label],
            batch_size=batch_size,
            num_threads=1,
            capacity=2 * batch_size,
        )


def run_training():
    """Trains for FLAGS.num_epochs epochs; prints what it saw."""
    print("tensorflow", tf.__version__, "eager", tf.executing_eagerly())
    with tf.Graph().as_default():
        tf.set_random_seed(42)
        ids, features, labels = inputs(FLAGS.batch_size, FLAGS.num_epochs)
        loss = tf1_model.loss(tf1_model.inference(features, FLAGS.hidden1), labels)
        train_op = tf1_model.training(loss, FLAGS.learning_rate)

        eval_features = tf.placeholder(tf.float32, [None, tf1_model.NUM_FEATURES])
        eval_labels = tf.placeholder(tf.int32, [None])
        eval_loss = tf1_model.loss(tf1_model.inference(eval_features, FLAGS.hidden1), eval_labels)
        all_features, all_labels = tf1_model.data()
        feed_dict = {eval_features: all_features, eval_labels: all_labels}

        init_op = tf.group(tf.global_variables_initializer(), tf.local_variables_initializer())
        config = tf.ConfigProto(operation_timeout_in_ms=FLAGS.timeout_ms)
        sess = tf.Session(config=config)
        sess.run(init_op)
        before = sess.run(eval_loss, feed_dict=feed_dict)
        print("eval loss before: %.6f" % before)

        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        runners = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
        print(
            "impl:", type(coord).__module__, " ".join(sorted({type(r).__module__ for r in runners}))
        )
        seen = collections.Counter()
        step = 0
        try:
            while not coord.should_stop():
                _, loss_value, batch_ids = sess.run([train_op, loss, ids])
                seen.update(batch_ids.tolist())
                if not FLAGS.shuffle:
                    print(
                        "Step %d: ids %s, loss = %.6f"
                        % (step, " ".join(map(str, batch_ids)), loss_value)
                    )
                step += 1
        except tf.errors.OutOfRangeError:
            print("Done training for %d epochs, %d steps." % (FLAGS.num_epochs, step))
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)

        after = sess.run(eval_loss, feed_dict=feed_dict)
        if FLAGS.shuffle:
            print("eval loss after is lower:", bool(after < before))
        else:
            print("eval loss after: %.6f" % after)
        counts = sorted(set(seen.values()))
        print("records:", len(seen), "each seen", " or ".join(map(str, counts)), "times")
        sess.close()


def main(_):
    if not tf.gfile.Exists(os.path.join(FLAGS.train_dir, TRAIN_FILE)):
        tf.gfile.MakeDirs(FLAGS.train_dir)
        tf1_model.write_records(os.path.join(FLAGS.train_dir, TRAIN_FILE))
    run_training()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--learning_rate", type=float, default=0.5)
    parser.add_argument("--num_epochs", type=int, default=5)
    parser.add_argument("--hidden1", type=int, default=8)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--train_dir", type=str, required=True)
    parser.add_argument("--shuffle", action="store_true")
    parser.add_argument("--timeout_ms", type=int, default=30000)
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
