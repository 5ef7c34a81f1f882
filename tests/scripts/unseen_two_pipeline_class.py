"""An input class whose constructor builds a training and a validation pipeline.

Shaped like a face-attributes model's data class of the TF 1.x era: settings
kept as attributes, the file lists found with ``glob``, then for each split a
``string_input_producer``, a reading method of the class (``TFRecordReader``,
``parse_single_example``, ``decode_raw``), and the batches kept as attributes
(``shuffle_batch`` for training, ``batch`` for validation); a learning rate
beside them. Used by ``queue-pipeline migrate
tests/scripts/unseen_two_pipeline_class.py:FaceAttributes --call "'DIR'"``:
NOTE [ Several pipelines in a constructor ].
"""

import glob
import os

import tensorflow.compat.v1 as tf


class FaceAttributes(object):
    def __init__(self, data_dir, batch_size=4, image_size=8, val_batch_size=3):
        self.batch_size = batch_size
        self.image_size = image_size
        train_files = sorted(glob.glob(os.path.join(data_dir, "train-*.tfrecords")))
        val_files = sorted(glob.glob(os.path.join(data_dir, "val-*.tfrecords")))

        # training input
        train_queue = tf.train.string_input_producer(train_files, num_epochs=1, shuffle=False)
        image, attributes = self.read(train_queue)
        image = tf.image.flip_left_right(image)
        self.train_images, self.train_attributes = tf.train.shuffle_batch(
            [image, attributes],
            batch_size=batch_size,
            capacity=40,
            min_after_dequeue=10,
            seed=3,
            allow_smaller_final_batch=True,
        )

        # validation input
        val_queue = tf.train.string_input_producer(val_files, num_epochs=1, shuffle=False)
        image, attributes = self.read(val_queue)
        self.val_images, self.val_attributes = tf.train.batch(
            [image, attributes], batch_size=val_batch_size, allow_smaller_final_batch=True
        )
        self.learning_rate = tf.constant(1e-3)

    def read(self, queue):
        reader = tf.TFRecordReader()
        _, serialized = reader.read(queue)
        features = tf.parse_single_example(
            serialized,
            features={
                "image": tf.FixedLenFeature([], tf.string),
                "attributes": tf.FixedLenFeature([4], tf.int64),
            },
        )
        image = tf.decode_raw(features["image"], tf.uint8)
        image = tf.reshape(image, [self.image_size, self.image_size, 3])
        return tf.cast(image, tf.float32) / 255.0, features["attributes"]
