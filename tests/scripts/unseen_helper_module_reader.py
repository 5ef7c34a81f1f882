"""Shaped like a public reading module a training script imports (its helper, in another file).

``read_examples(directory, height, width, batch_size)`` joins the directory's
file names, makes a shuffled ``string_input_producer``, decodes raw uint8
images and a string label in a few parallel readers and batches them with
``shuffle_batch_join``.
"""

import os

import tensorflow as tf


def decode_one(queue, height, width):
    reader = tf.compat.v1.TFRecordReader()
    _, serialized = reader.read(queue)
    features = tf.io.parse_single_example(
        serialized,
        features={
            "label": tf.io.FixedLenFeature([], tf.string),
            "img_raw": tf.io.FixedLenFeature([], tf.string),
        },
    )
    image = tf.reshape(tf.io.decode_raw(features["img_raw"], tf.uint8), [height, width, 3])
    return tf.cast(image, tf.float32) * (1.0 / 255) - 0.5, features["label"]


def read_examples(directory, height=3, width=4, batch_size=2):
    names = sorted(os.path.join(directory, n) for n in os.listdir(directory))
    queue = tf.compat.v1.train.string_input_producer(names, shuffle=True, num_epochs=1)
    readers = [decode_one(queue, height, width) for _ in range(3)]
    return tf.compat.v1.train.shuffle_batch_join(
        readers, batch_size=batch_size, capacity=40, min_after_dequeue=10
    )
