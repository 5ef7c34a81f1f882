"""Queues made by a function the caller passes in (--call runs it), with TF 0.x summaries."""

import tensorflow.compat.v1 as tf


def make_queue(capacity):
    """A file-name queue, its fill level logged the TF 0.x way."""
    queue = tf.FIFOQueue(capacity, [tf.string])
    tf.scalar_summary("queue/fill", tf.cast(queue.size(), tf.float32) / capacity)
    return queue


def lines_from(queue, batch_size):
    _, line = tf.TextLineReader().read(queue)
    return tf.train.batch([line], batch_size=batch_size)
