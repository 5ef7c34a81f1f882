"""An input class whose constructor builds the whole pipeline and keeps the batches.

Shaped like the model repositories' ``DataLoader`` / ``BatchLoader`` classes
(super-resolution and GAN code of the TF 1.x era): ``DataLoader(data_dir,
batch_size, ...)`` lists the TFRecord files of a directory, reads them with a
reader it keeps, parses and augments each record in methods of its own, and
keeps ``self.images, self.labels`` from ``tf.train.shuffle_batch`` beside plain
settings and a learning-rate tensor; the training code reads
``loader.images``. Used by ``queue-pipeline migrate
tests/scripts/ctor_pipeline_loader.py:DataLoader``.
"""

import glob
import os

import tensorflow as tf


class DataLoader(object):
    def __init__(self, data_dir, batch_size=4, image_size=8, num_epochs=1, seed=7):
        self.batch_size = batch_size
        self.image_size = image_size
        files = sorted(glob.glob(os.path.join(data_dir, "*.tfrecords")))
        self.num_files = len(files)
        filename_queue = tf.compat.v1.train.string_input_producer(
            files, num_epochs=num_epochs, shuffle=False
        )
        self.reader = tf.compat.v1.TFRecordReader()
        _, serialized = self.reader.read(filename_queue)
        image, label = self._parse(serialized)
        image = self._augment(image)
        self.images, self.labels = tf.compat.v1.train.shuffle_batch(
            [image, label],
            batch_size=batch_size,
            capacity=50,
            min_after_dequeue=10,
            seed=seed,
            allow_smaller_final_batch=True,
        )
        self.learning_rate = tf.constant(1e-3)

    def _parse(self, serialized):
        features = tf.io.parse_single_example(
            serialized,
            features={
                "image": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64),
            },
        )
        image = tf.io.decode_raw(features["image"], tf.uint8)
        image = tf.reshape(image, [self.image_size, self.image_size, 3])
        return tf.cast(image, tf.float32) / 255.0, tf.cast(features["label"], tf.int32)

    def _augment(self, image):
        return image * 2.0 - 1.0


def train(data_dir):
    loader = DataLoader(data_dir)
    logits = tf.reduce_mean(loader.images, axis=[1, 2, 3])
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = tf.compat.v1.train.Coordinator()
        threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while not coord.should_stop():
                print(sess.run([logits, loader.labels]))
        except tf.errors.OutOfRangeError:
            print("done")
        finally:
            coord.request_stop()
        coord.join(threads)


if __name__ == "__main__":
    train("data")
