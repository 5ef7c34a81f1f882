"""A slim-style dataset module: short clips of sensor frames in TFRecord files.

A test program for ``queue-pipeline migrate`` (#41, trial 52): the shape of
the TF-slim model zoo's dataset modules (``get_split`` returning a
``slim.dataset.Dataset`` with a ``TFExampleDecoder``), one of whose features
has a tensor default made when the split is described.
"""

import os

import tensorflow as tf
import tf_slim as slim

SPLIT_FILES = "clips_%s_*.tfrecord"
ROWS = 3  # frames per clip, each of 2 channels

DESCRIPTIONS = {
    "frames": "The clip's frames, ROWS x 2 x 1",
    "label": "The clip's class",
    "clip": "The clip's number",
}


def count_records(pattern):
    """How many records the files matching `pattern` hold."""
    total = 0
    for name in tf.io.gfile.glob(pattern):
        for _ in tf.compat.v1.io.tf_record_iterator(name):
            total += 1
    return total


def get_split(split, directory, reader=None, rows=ROWS):
    """The `split` ('train' or 'eval') of the clips in `directory` as a slim Dataset."""
    if split not in ("train", "eval"):
        raise ValueError("unknown split %r: use 'train' or 'eval'" % (split,))
    pattern = os.path.join(directory, SPLIT_FILES % split)
    if reader is None:
        reader = tf.compat.v1.TFRecordReader
    keys_to_features = {
        "clip/frames": tf.io.FixedLenFeature((rows, 2), tf.float32),
        "clip/label": tf.io.FixedLenFeature(
            (), tf.int64, default_value=tf.zeros((), dtype=tf.int64)
        ),
        "clip/number": tf.io.FixedLenFeature((), tf.int64),
    }
    items_to_handlers = {
        "frames": slim.tfexample_decoder.Tensor("clip/frames", shape=(rows, 2, 1)),
        "label": slim.tfexample_decoder.Tensor("clip/label"),
        "clip": slim.tfexample_decoder.Tensor("clip/number"),
    }
    decoder = slim.tfexample_decoder.TFExampleDecoder(keys_to_features, items_to_handlers)
    return slim.dataset.Dataset(
        data_sources=pattern,
        reader=reader,
        decoder=decoder,
        num_samples=count_records(pattern),
        items_to_descriptions=DESCRIPTIONS,
    )
