"""Shaped like a public model module: a loss over the batches, with a variable of its own."""

import tensorflow as tf


def get_loss(datas):
    weight = tf.compat.v1.get_variable("weight", [], dtype=tf.float32)
    return tf.reduce_mean(datas * weight), tf.equal(datas, 1.0)
