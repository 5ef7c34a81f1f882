"""Shaped like a public queue-runner tutorial whose data is made at random in the function.

A helper draws ``num`` random images with NumPy's global generator (unseeded)
and labels ``0..num-1``; the input function casts both, slices them with
``slice_input_producer(shuffle=False)`` and batches them with
``tf.train.batch``. A second function draws its noise from a fresh, unseeded
``np.random.default_rng()``, which no global state decides.
"""

import numpy as np
import tensorflow as tf


def make_arrays(count):
    labels = np.arange(count)
    pixels = np.random.random([count, 4, 4, 3])
    return labels, pixels


def noisy_batches(count=12, batch=4):
    labels, pixels = make_arrays(count)
    pixels = tf.cast(pixels, tf.float32)
    labels = tf.cast(labels, tf.int32)
    pair = tf.compat.v1.train.slice_input_producer([pixels, labels], shuffle=False)
    return tf.compat.v1.train.batch(pair, batch_size=batch, num_threads=1, capacity=32)


def fresh_generator_batches(count=12, batch=4):
    noise = np.random.default_rng().normal(size=[count, 3])
    values = tf.constant(noise, tf.float32)
    index = tf.constant(np.arange(count), tf.int32)
    pair = tf.compat.v1.train.slice_input_producer([values, index], shuffle=False)
    return tf.compat.v1.train.batch(pair, batch_size=batch, num_threads=1, capacity=32)
