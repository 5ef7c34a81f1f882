"""Shaped like a public asynchronous runner that fills a queue from a Python generator.

The constructor makes a ``RandomShuffleQueue`` and a QueueRunner whose
enqueue op is ``tf.py_func(lambda: next(generator), [], dtypes)``; a method
returns ``queue.dequeue_many(batch_size)``.
"""

import numpy as np
import tensorflow as tf


def endless_images(shape):
    k = 0
    while True:
        k += 1
        yield np.full(shape, k, np.float32), np.int64(k)


class QueueFeeder(object):
    def __init__(self, shape, capacity=32, min_after=8):
        generator = endless_images(shape)
        dtypes = [tf.float32, tf.int64]
        self.queue = tf.queue.RandomShuffleQueue(capacity, min_after, dtypes, [shape, []])
        fetched = tf.compat.v1.py_func(lambda: next(generator), [], dtypes)
        self.runner = tf.compat.v1.train.QueueRunner(self.queue, [self.queue.enqueue(fetched)])

    def get_inputs(self, batch_size):
        return self.queue.dequeue_many(batch_size)
