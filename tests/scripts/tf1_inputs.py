"""A TF 1.x input function as a TF 1.x user wrote it: ``import tensorflow as tf``, no compat.v1.

``tests/test_migrate.py`` migrates it with ``queue-pipeline migrate --tf1``.
"""

import tensorflow as tf


def decode(serialized_example):
    features = tf.parse_single_example(
        serialized_example,
        features={
            "id": tf.FixedLenFeature([], tf.int64),
            "features": tf.FixedLenFeature([4], tf.float32),
        },
    )
    return features["id"], features["features"] * 2.0


def inputs(path, batch_size, num_epochs):
    """Reads the records `num_epochs` times, in order; returns ids and features batches."""
    with tf.name_scope("input"):
        filename_queue = tf.train.string_input_producer(
            [path], num_epochs=num_epochs, shuffle=False
        )
        reader = tf.TFRecordReader()
        _, serialized_example = reader.read(filename_queue)
        example_id, features = decode(serialized_example)
        return tf.train.batch([example_id, features], batch_size=batch_size, num_threads=1)
