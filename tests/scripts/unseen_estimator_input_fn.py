"""Shaped like a public Estimator program's input-function factory.

``make_input_fn(filenames, batch_size, num_epochs)`` defines and returns a
nested ``_input_fn()`` that reads TFRecords through a filename producer and a
reader, parses a count and a raw image, and ``shuffle_batch``es them into
``(features, labels)`` dicts; ``make_params_input_fn`` returns one that takes
``params`` (Estimator-style) and reads its batch size from it.
"""

import tensorflow as tf


def make_input_fn(filenames, batch_size, num_epochs):
    def _input_fn():
        queue = tf.compat.v1.train.string_input_producer(filenames, num_epochs=num_epochs)
        _, serialized = tf.compat.v1.TFRecordReader().read(queue)
        parsed = tf.io.parse_single_example(
            serialized,
            features={
                "image": tf.io.FixedLenFeature([], tf.string),
                "count": tf.io.FixedLenFeature([], tf.int64),
            },
        )
        image = tf.reshape(tf.io.decode_raw(parsed["image"], tf.uint8), [2, 2, 1])
        images, counts = tf.compat.v1.train.shuffle_batch(
            [tf.cast(image, tf.float32) / 255, parsed["count"]],
            batch_size=batch_size,
            capacity=30,
            min_after_dequeue=5,
        )
        return {"images": images}, {"counts": tf.expand_dims(counts, -1)}

    return _input_fn


def make_params_input_fn(filenames, num_epochs):
    def input_fn(params):
        queue = tf.compat.v1.train.string_input_producer(filenames, num_epochs=num_epochs)
        _, serialized = tf.compat.v1.TFRecordReader().read(queue)
        return tf.compat.v1.train.batch([serialized], batch_size=params["batch_size"])

    return input_fn


def make_nothing(filenames):
    def _constant():
        return tf.constant(filenames)

    return _constant
