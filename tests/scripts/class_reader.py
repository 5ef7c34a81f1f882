"""An image reader behind a class: settings and a reader in __init__, the pipeline in feed().

Shaped like the GAN repositories' ``Reader`` (CycleGAN-style ``reader.py``):
``Reader(tfrecords_file, image_size, min_queue_examples, batch_size,
num_threads, name).feed()`` reads ``image/encoded_image`` JPEGs through the
reader made in ``__init__``, preprocesses them in a method of its own
(resize, scale to [-1, 1]) and returns ``shuffle_batch`` es with an image
summary. A helper module holds the float conversion (as ``utils.py`` does).
Used by ``queue-pipeline migrate tests/scripts/class_reader.py:Reader.feed``.
"""

import tensorflow as tf

import class_reader_utils as utils


class Reader:
    def __init__(
        self,
        tfrecords_file,
        image_size=16,
        min_queue_examples=20,
        batch_size=4,
        num_threads=2,
        name="",
    ):
        self.tfrecords_file = tfrecords_file
        self.image_size = image_size
        self.min_queue_examples = min_queue_examples
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.reader = tf.compat.v1.TFRecordReader()
        self.name = name

    def feed(self):
        with tf.name_scope(self.name):
            filename_queue = tf.compat.v1.train.string_input_producer(
                [self.tfrecords_file], num_epochs=1
            )
            _, serialized_example = self.reader.read(filename_queue)
            features = tf.io.parse_single_example(
                serialized_example,
                features={
                    "image/file_name": tf.io.FixedLenFeature([], tf.string),
                    "image/encoded_image": tf.io.FixedLenFeature([], tf.string),
                },
            )
            image = tf.image.decode_jpeg(features["image/encoded_image"], channels=3)
            image = self._preprocess(image)
            images = tf.compat.v1.train.shuffle_batch(
                [image],
                batch_size=self.batch_size,
                num_threads=self.num_threads,
                capacity=self.min_queue_examples + 3 * self.batch_size,
                min_after_dequeue=self.min_queue_examples,
            )
            tf.compat.v1.summary.image("_input", images)
        return images

    def _preprocess(self, image):
        image = tf.image.resize(image, size=(self.image_size, self.image_size))
        image = utils.convert2float(image)
        image.set_shape([self.image_size, self.image_size, 3])
        return image
