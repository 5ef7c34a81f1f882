"""A face-recognition input module whose own function is named ``input_producer``.

Shaped like a TF 1.x face-recognition repository's input.py: a
``read_and_decode(filename_queue)`` parsing TFRecords, a module function
``input_producer(filename, batch_size, min_after_queue)`` (the file's own,
named like ``tf.train.input_producer``) that shuffles and batches, and a
class ``Inputs`` whose constructor calls it for training or validation and
keeps the batches and settings as attributes. Used by ``queue-pipeline
migrate tests/scripts/unseen_face_inputs.py:Inputs --call "'DIR', True"``.
"""

import os

import tensorflow.compat.v1 as tf


def read_and_decode(filename_queue):
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized_example,
        features={
            "image": tf.FixedLenFeature([], tf.string),
            "label": tf.FixedLenFeature([], tf.int64),
        },
    )
    image = tf.decode_raw(features["image"], tf.uint8)
    image = tf.reshape(image, [4, 4, 1])
    image = tf.cast(image, tf.float32) * (1.0 / 255) - 0.5
    return image, tf.cast(features["label"], tf.int32)


def input_producer(filename, batch_size, min_after_queue):
    filename_queue = tf.train.string_input_producer([filename], num_epochs=1)
    image, label = read_and_decode(filename_queue)
    images, labels = tf.train.shuffle_batch(
        [image, label],
        batch_size=batch_size,
        num_threads=2,
        capacity=min_after_queue + 3 * batch_size,
        min_after_dequeue=min_after_queue,
        allow_smaller_final_batch=True,
    )
    return images, labels


class Inputs(object):
    def __init__(self, data_dir, train=True):
        if train is True:
            self.batch_size = 4
            self.images, self.labels = input_producer(
                filename=os.path.join(data_dir, "train.tfrecords"),
                batch_size=self.batch_size,
                min_after_queue=8,
            )
        else:
            self.batch_size = 2
            self.images, self.labels = input_producer(
                filename=os.path.join(data_dir, "validate.tfrecords"),
                batch_size=self.batch_size,
                min_after_queue=8,
            )
        self.num_classes = 5
