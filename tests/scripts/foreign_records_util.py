"""The program's reading code in a module of its own (copied as ``records_util.py``).

Shaped like text2image's ``reader.py`` and the CIFAR-10 tutorial's
``cifar10_input.py``: module constants, a plain helper, a reading function
``read_record(filename_queue)``, ``read_and_decode(filename_queue,
batch_size, ...)`` that reads through it and shuffle-batches, and
``inputs(files, batch_size)`` that builds a whole pipeline. Used by
``tests/test_migrate_foreign.py`` through ``foreign_train_inputs.py``
(NOTE [ Following a function of another module ]).
"""

from __future__ import absolute_import, division, print_function

import tensorflow.compat.v1 as tf

IMAGE_SIZE = 8
EMB_SIZE = 4


def _scale(image):
    return tf.cast(image, tf.float32) / 255.0


def read_record(filename_queue):
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized,
        features={
            "image_raw": tf.FixedLenFeature([], tf.string),
            "emb_raw": tf.FixedLenFeature([], tf.string),
            "label": tf.FixedLenFeature([], tf.int64),
        },
    )
    image = tf.decode_raw(features["image_raw"], tf.uint8)
    image = tf.reshape(image, tf.stack([IMAGE_SIZE, IMAGE_SIZE, 3]))
    emb = tf.reshape(tf.decode_raw(features["emb_raw"], tf.float32), [EMB_SIZE])
    return _scale(image), emb, tf.cast(features["label"], tf.int32)


def read_and_decode(filename_queue, batch_size=4, num_threads=2, capacity=64, min_after_dequeue=16):
    image, emb, label = read_record(filename_queue)
    images, embs, labels = tf.train.shuffle_batch(
        [image, emb, label],
        batch_size=batch_size,
        num_threads=num_threads,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
    )
    return images, embs, labels


def inputs(files, batch_size, num_epochs=1):
    filename_queue = tf.train.string_input_producer(files, num_epochs=num_epochs, shuffle=False)
    image, emb, label = read_record(filename_queue)
    return tf.train.batch([image, emb, label], batch_size=batch_size)
