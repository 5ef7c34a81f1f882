"""A depth model's loader in its evaluation form: one image per step, kept with its mirror.

Shaped like the stereo-depth loaders of the TF 1.x era (our own code): the
constructor reads a text list of image paths with ``TextLineReader``, joins
each with a data directory, decodes the PNG, and keeps the image stacked
with its left-right flip as ``self.image_pair`` (the evaluation code
averages the model's output over both); no batching call. A ``Scorer``
class reads its records the same way but batches them in a method.
Used by ``tests/test_migrate_round48_records.py``.
"""

import tensorflow as tf


class EvalLoader(object):
    def __init__(self, data_dir, list_file, channels=3):
        self.data_dir = data_dir
        self.channels = channels
        queue = tf.compat.v1.train.string_input_producer([list_file], shuffle=False)
        _, line = tf.compat.v1.TextLineReader().read(queue)
        path = tf.strings.join([self.data_dir, tf.compat.v1.string_split([line]).values[0]])
        image = self.read_image(path)
        self.image_pair = tf.stack([image, tf.image.flip_left_right(image)], 0)

    def read_image(self, path):
        image = tf.image.decode_png(tf.io.read_file(path), channels=self.channels)
        return tf.image.convert_image_dtype(image, tf.float32)


class Scorer(object):
    def __init__(self, list_file):
        queue = tf.compat.v1.train.string_input_producer([list_file], shuffle=False)
        _, line = tf.compat.v1.TextLineReader().read(queue)
        self.score = tf.strings.to_number(line)

    def batches(self, n):
        return tf.compat.v1.train.batch([self.score], n)
