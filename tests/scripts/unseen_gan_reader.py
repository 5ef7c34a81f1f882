"""An image reader class for a GAN: endless, shuffled, augmented at random.

Shaped like an image-to-image GAN's ``Reader`` (TF 1.x era): the constructor
keeps settings and a ``WholeFileReader``; ``feed()`` reads the folder's
images forever (``string_input_producer`` of ``match_filenames_once`` with
no ``num_epochs``) in a name scope, decodes, crops and flips at random in a
method of the class, and ``shuffle_batch``es with ``min_after_dequeue`` from
the constructor. Used by ``queue-pipeline migrate
tests/scripts/unseen_gan_reader.py:Reader.feed --call "Reader('DIR'), "``.
"""

import tensorflow.compat.v1 as tf


class Reader(object):
    def __init__(
        self,
        file_path,
        image_size=(8, 8, 3),
        min_queue_examples=10,
        batch_size=4,
        num_threads=2,
        name="A",
    ):
        self.file_path = file_path
        self.image_size = image_size
        self.min_queue_examples = min_queue_examples
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.reader = tf.WholeFileReader()
        self.name = name

    def feed(self):
        with tf.name_scope(self.name):
            filename_queue = tf.train.string_input_producer(
                tf.train.match_filenames_once(self.file_path + "/*.png"),
                capacity=2 * self.min_queue_examples,
            )
            _, serialized_example = self.reader.read(filename_queue)
            image = tf.image.decode_png(serialized_example, channels=3)
            image = self._preprocess(image)
            images = tf.train.shuffle_batch(
                [image],
                batch_size=self.batch_size,
                num_threads=self.num_threads,
                capacity=self.min_queue_examples + 3 * self.batch_size,
                min_after_dequeue=self.min_queue_examples,
            )
        return images

    def _preprocess(self, image):
        image = tf.image.resize_images(image, size=(10, 10))
        image = tf.random_crop(image, size=self.image_size)
        image = tf.image.random_flip_left_right(image)
        return tf.image.convert_image_dtype(image, dtype=tf.float32) / 255.0
