"""An input function that computes on its batches and returns a count beside them.

Shaped like ibrahim85/seq2seq_regression's data_provider.py ``get_split``:
an options dict, a TFRecord per example listed in Python, ``decode_raw``,
``tf.train.batch(dynamic_pad=True)``, reshapes and lengths computed on the
batches, then ``return frames, labels, lengths, num_examples``.
``get_split_word`` also returns the unbatched ``word`` of one record.
"""

import glob
import os

import tensorflow.compat.v1 as tf

DIM = 3


def length(sequence):
    used = tf.sign(tf.reduce_max(tf.abs(sequence), 2))
    return tf.cast(tf.reduce_sum(used, 1), tf.int32)


def get_split(options, root="."):
    batch_size = options["batch_size"]
    paths = sorted(glob.glob(os.path.join(root, "*.tfrecords")))
    num_examples = len(paths)
    filename_queue = tf.train.string_input_producer(paths, shuffle=options["is_training"])
    _, serialized = tf.TFRecordReader().read(filename_queue)
    features = tf.parse_single_example(
        serialized,
        features={
            "frames": tf.FixedLenFeature([], tf.string),
            "word": tf.FixedLenFeature([], tf.string),
        },
    )
    frames = tf.reshape(tf.decode_raw(features["frames"], tf.float32), (-1, DIM))
    word = features["word"]
    frames, words = tf.train.batch([frames, word], batch_size, dynamic_pad=True)
    frames = tf.reshape(frames, (batch_size, -1, DIM))
    frame_lengths = length(frames)
    return frames, frame_lengths, num_examples


def get_split_word(options, root="."):
    paths = sorted(glob.glob(os.path.join(root, "*.tfrecords")))
    filename_queue = tf.train.string_input_producer(paths, shuffle=False)
    _, serialized = tf.TFRecordReader().read(filename_queue)
    features = tf.parse_single_example(
        serialized,
        features={
            "frames": tf.FixedLenFeature([], tf.string),
            "word": tf.FixedLenFeature([], tf.string),
        },
    )
    frames = tf.reshape(tf.decode_raw(features["frames"], tf.float32), (-1, DIM))
    word = features["word"]
    frames, words = tf.train.batch([frames, word], options["batch_size"], dynamic_pad=True)
    frame_lengths = length(frames)
    return frames, frame_lengths, word
