"""Shaped like a public dataset module whose only input function takes the queue.

``read_and_decode(filename_queue, batch_size)`` reads and decodes CSV lines
and batches them; nothing in the file makes the queue (a script elsewhere does).
"""

import tensorflow as tf


def read_and_decode(filename_queue, batch_size):
    _, line = tf.compat.v1.TextLineReader().read(filename_queue)
    ident, label = tf.io.decode_csv(line, record_defaults=[[0], [0]])
    return tf.compat.v1.train.batch([ident, label], batch_size=batch_size)
