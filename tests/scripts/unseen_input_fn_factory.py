"""Shaped like a public crowd-counting Estimator program's input-function factory.

``get_input_fn(filenames, batch_size, num_epochs)`` defines a nested
``_input_fn()`` and returns it: on the CPU device, a filename producer with
``num_epochs``, a ``TFRecordReader``, ``parse_single_example`` of two raw
byte strings (an image and a density map) and an int64 count,
``decode_raw`` to uint8 and float32, ``set_shape`` then ``reshape`` to
``[H, W, 1]``, the image scaled to [-1, 1], then ``shuffle_batch`` with
threads, a capacity above ``min_after_dequeue``, and the count expanded
after the batch; it returns ``({"images": ...}, {"densities": ...,
"counts": ...})``. ``get_eval_input_fn(filenames, batch_size, size=4)``
computes a local before its nested ``input_fn(params=None)`` (a default,
as Estimator-era code writes) and batches in order with ``batch``.
"""

import tensorflow as tf

HEIGHT = 4
WIDTH = 4


def get_input_fn(filenames, batch_size, num_epochs):
    def _input_fn():
        with tf.device("/cpu:0"):
            filename_queue = tf.compat.v1.train.string_input_producer(
                filenames, num_epochs=num_epochs
            )

            reader = tf.compat.v1.TFRecordReader()
            _, serialized_example = reader.read(filename_queue)

            features = tf.io.parse_single_example(
                serialized_example,
                features={
                    "image": tf.io.FixedLenFeature([], tf.string),
                    "density": tf.io.FixedLenFeature([], tf.string),
                    "count": tf.io.FixedLenFeature([], tf.int64),
                },
            )

            image = tf.io.decode_raw(features["image"], tf.uint8)
            density = tf.io.decode_raw(features["density"], tf.float32)
            count = features["count"]

            image.set_shape([HEIGHT * WIDTH])
            image = tf.reshape(image, [HEIGHT, WIDTH, 1])

            density.set_shape([HEIGHT * WIDTH])
            density = tf.reshape(density, [HEIGHT, WIDTH, 1])

            image = tf.cast(image, tf.float32) / 255
            image = image * 2 - 1

            images, densities, counts = tf.compat.v1.train.shuffle_batch(
                [image, density, count],
                batch_size=batch_size,
                num_threads=4,
                capacity=20 + 3 * batch_size,
                min_after_dequeue=20,
            )

            counts = tf.expand_dims(counts, axis=-1)

            features = {"images": images}

            labels = {
                "densities": densities,
                "counts": counts,
            }

            return features, labels

    return _input_fn


def get_eval_input_fn(filenames, batch_size, size=4):
    pixels = size * size

    def input_fn(params=None):
        queue = tf.compat.v1.train.string_input_producer(filenames, num_epochs=1, shuffle=False)
        _, serialized = tf.compat.v1.TFRecordReader().read(queue)
        parsed = tf.io.parse_single_example(
            serialized,
            features={
                "image": tf.io.FixedLenFeature([], tf.string),
                "count": tf.io.FixedLenFeature([], tf.int64),
            },
        )
        image = tf.io.decode_raw(parsed["image"], tf.uint8)
        image.set_shape([pixels])
        images, counts = tf.compat.v1.train.batch(
            [tf.reshape(image, [size, size, 1]), parsed["count"]], batch_size=batch_size
        )
        return {"images": images}, {"counts": counts}

    return input_fn
