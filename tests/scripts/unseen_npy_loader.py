"""Shaped like a public medical-imaging reader class (a fetal-MRI ``DataSetNPY``).

The constructor batches the FILE NAMES with the producer's own
``dequeue_many(batch_size)`` (no reader, no batching call), loads each batch
of ``.npy`` files with ``tf.py_func`` and keeps the result as an attribute.
"""

import numpy as np
import tensorflow.compat.v1 as tf


class DataSetNPY(object):
    def __init__(self, filenames, batch_size, shuffle=False):
        name_queue = tf.train.string_input_producer(filenames, shuffle=shuffle, num_epochs=1)
        batch = name_queue.dequeue_many(batch_size)
        images = tf.py_func(self._load, [batch], tf.float32)
        self.images = tf.reshape(images, (-1, 2, 2))

    def _load(self, names):
        return np.array([np.load(n.decode("utf-8")) for n in names], np.float32)
