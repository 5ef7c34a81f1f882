"""Shaped like a seq2seq speech provider (ibrahim85/seq2seq_regression's
``get_split``): options in a dict, TFRecord files of variable-length frames,
``batch(dynamic_pad=True)``, then code on the padded batches (time reversed,
so the padding moves to the front), and the example count returned among the
batches.
"""

import tensorflow.compat.v1 as tf


def get_split(options):
    paths = options["paths"]
    num_examples = options["num_examples"]
    filename_queue = tf.train.string_input_producer(paths, shuffle=options["shuffle"])
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized_example,
        features={
            "frames": tf.VarLenFeature(tf.float32),
            "label": tf.FixedLenFeature([], tf.int64),
        },
    )
    frames = tf.sparse_tensor_to_dense(features["frames"])
    frames = tf.reshape(frames, [-1, 2])
    length = tf.shape(frames)[0]
    frames, label, length = tf.train.batch(
        [frames, features["label"], length],
        options["batch_size"],
        num_threads=1,
        capacity=100,
        dynamic_pad=True,
    )
    if options["reverse_time"]:
        frames = tf.reverse(frames, axis=[1])
    return frames, label, num_examples, length
