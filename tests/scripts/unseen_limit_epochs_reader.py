"""Shaped like a public recommendation program's TFRecord reader (no batching call).

``get_data(filename)`` reads a TFRecord file forever (``num_epochs=None``),
parses a label, a user and an item, and returns them through
``tf.train.limit_epochs([label, user, item])`` with no limit: one packed
int64 tensor per record, fetched one at a time by the training loop.
``get_limited(filename)`` does the same with ``num_epochs=2`` on the
limit: two records, then OutOfRangeError.
"""

import tensorflow as tf

FEATURES = {
    "label": tf.io.FixedLenFeature([], tf.int64),
    "user": tf.io.FixedLenFeature([], tf.int64),
    "item": tf.io.FixedLenFeature([], tf.int64),
}


def get_data(filename):
    filename_queue = tf.compat.v1.train.string_input_producer([filename], shuffle=False)
    reader = tf.compat.v1.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.io.parse_single_example(serialized_example, features=FEATURES)
    _l = features["label"]
    _user = features["user"]
    _item = features["item"]
    return tf.compat.v1.train.limit_epochs([_l, _user, _item])


def get_limited(filename):
    filename_queue = tf.compat.v1.train.string_input_producer([filename], shuffle=False)
    reader = tf.compat.v1.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.io.parse_single_example(serialized_example, features=FEATURES)
    return tf.compat.v1.train.limit_epochs(features["user"], num_epochs=2)
