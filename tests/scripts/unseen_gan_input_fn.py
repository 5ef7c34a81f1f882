"""Shaped like a public GAN program's Estimator input functions (an unsupervised model).

``input_images_from_tfrecords(file_pattern, batch_size, num_epochs,
crop_size, size)`` is a factory: its nested ``make_input()`` reads a
TFRecord file in a variable scope, parses a PNG and its shape, crops and
resizes it in a module-level helper, and ``shuffle_batch``es the images; it
returns ``{"image": images}, None``: features as a dict, no labels (the GAN
has none). ``input_from_files(pattern, batch_size)`` does the same from
image files, with ``tf.train.batch``, as a plain function.
"""

import tensorflow as tf


def preprocess_images(image, crop_size=8, image_size=4):
    cropped = tf.image.resize(image, [crop_size, crop_size])
    resized = tf.image.resize(cropped, [image_size, image_size])
    resized.set_shape([image_size, image_size, 3])
    return resized / 127.5 - 1.0


def input_images_from_tfrecords(file_pattern, batch_size=4, num_epochs=1, crop_size=8, size=4):
    def make_input():
        with tf.compat.v1.variable_scope("input_fn"):
            reader = tf.compat.v1.TFRecordReader()
            filename_queue = tf.compat.v1.train.string_input_producer(
                [file_pattern], num_epochs=num_epochs
            )
            _, serialized_example = reader.read(filename_queue)
            features = tf.io.parse_single_example(
                serialized_example,
                features={
                    "image": tf.io.FixedLenFeature([], tf.string),
                    "shape": tf.io.FixedLenFeature((3,), tf.int64),
                },
            )
            image = tf.io.decode_png(features["image"], 3)
            resized = preprocess_images(image, crop_size, size)

            images = tf.compat.v1.train.shuffle_batch(
                [resized], batch_size=batch_size, capacity=20, min_after_dequeue=5, num_threads=2
            )

        return {"image": images}, None

    return make_input


def input_from_files(pattern, batch_size=4):
    files = tf.io.matching_files(pattern)
    queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, contents = tf.compat.v1.WholeFileReader().read(queue)
    image = preprocess_images(tf.io.decode_png(contents, 3))
    images = tf.compat.v1.train.batch([image], batch_size=batch_size)
    return {"image": images}, None
