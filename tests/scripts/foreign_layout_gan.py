"""A GAN whose ``build_model`` reads through another module, then builds the model.

Shaped like arnavkj1995/text2image's ``model.py``: ``build_model(self)``
lists the TFRecord files, makes ``string_input_producer`` and hands the queue
to ``records_util.read_and_decode`` (another module); ``else:`` makes
placeholders of the same names for a feed_dict; an optional resize on the
batches, scaling, then the discriminator, its loss and a Saver in the same
method. Migrated as ``FILE.py:LayoutGAN.build_model``.
"""

import os

import tensorflow.compat.v1 as tf

import records_util


class LayoutGAN(object):
    def __init__(self, record_dir, batch_size=4, output_size=8, use_tfrecords=True):
        self.record_dir = record_dir
        self.batch_size = batch_size
        self.output_size = output_size
        self.use_tfrecords = use_tfrecords
        self.build_model()

    def build_model(self):
        if self.use_tfrecords:
            names = sorted(os.listdir(self.record_dir))
            files = [os.path.join(self.record_dir, n) for n in names]
            filename_queue = tf.train.string_input_producer(files, num_epochs=3)
            self.images, self.embs, self.labels = records_util.read_and_decode(
                filename_queue, self.batch_size
            )
            if self.output_size == 16:
                self.images = tf.image.resize_images(self.images, (16, 16))
            self.images = (self.images / 0.5) - 1
        else:
            self.images = tf.placeholder(tf.float32, [self.batch_size, 8, 8, 3], name="images")
            self.embs = tf.placeholder(tf.float32, [self.batch_size, 4], name="embs")
            self.labels = tf.placeholder(tf.int32, [self.batch_size], name="labels")

        self.is_training = tf.placeholder(tf.bool, name="is_training")
        flat = tf.concat([tf.reshape(self.images, [self.batch_size, -1]), self.embs], 1)
        with tf.variable_scope("D", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [flat.get_shape()[1], 1])
            self.logits = tf.matmul(flat, w)
        self.loss = tf.reduce_mean(
            tf.nn.sigmoid_cross_entropy_with_logits(
                logits=self.logits, labels=tf.ones_like(self.logits)
            )
        )
        self.saver = tf.train.Saver()
