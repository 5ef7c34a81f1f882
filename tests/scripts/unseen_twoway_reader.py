"""Shaped like a public reading module whose helper batches two ways.

``read_and_decode(queue, shuffle_batch=True)`` reads a CSV line, decodes it and
batches it with ``shuffle_batch`` or ``batch`` as its flag says, binding both
branches' batches to the same names and returning them once.
"""

import tensorflow as tf


def read_and_decode(filename_queue, shuffle_batch=True):
    reader = tf.compat.v1.TextLineReader()
    _, line = reader.read(filename_queue)
    ident, label = tf.io.decode_csv(line, record_defaults=[[0], [0]])
    data = tf.cast(ident, tf.float32)
    if shuffle_batch:
        datas, targets = tf.compat.v1.train.shuffle_batch(
            [data, label], batch_size=4, capacity=40, min_after_dequeue=10
        )
    else:
        datas, targets = tf.compat.v1.train.batch([data, label], batch_size=4)
    return datas, targets
