"""The helper module of class_reader.py (a GAN repository's utils.py)."""

import tensorflow as tf


def convert2float(image):
    """Pixels in [0, 255] to floats in [-1, 1]."""
    image = tf.cast(image, tf.float32) * (1.0 / 255)
    return (image - 0.5) * 2.0
