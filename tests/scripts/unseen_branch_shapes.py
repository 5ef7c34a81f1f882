"""A cifar10_input-shaped reader of image and mask PNGs, batched one of two ways.

Shaped like the echo-cardiography segmentation inputs of the TF 1.x era (our
own code): ``slice_input_producer`` over image and mask paths, ``decode_png``
(whose height and width the graph leaves open), and
``_batch(image, mask, min_queue, batch_size, shuffle)`` with
``shuffle_batch`` in one branch and ``tf.train.batch`` in the other, both
with ``shapes=[(SIDE, SIDE, 1)] * 2``: the run takes one branch, and the
other's ``shapes`` say the same of the same records. Used by
``tests/test_migrate_round48_records.py``.
"""

import glob
import os

import tensorflow as tf

SIDE = 6


def _batch(image, mask, min_queue, batch_size, shuffle):
    if shuffle:
        images, masks = tf.compat.v1.train.shuffle_batch(
            [image, mask],
            batch_size=batch_size,
            num_threads=2,
            capacity=min_queue + 3 * batch_size,
            min_after_dequeue=min_queue,
            shapes=[(SIDE, SIDE, 1)] * 2,
        )
    else:
        images, masks = tf.compat.v1.train.batch(
            [image, mask],
            batch_size=batch_size,
            num_threads=2,
            capacity=min_queue + 3 * batch_size,
            shapes=[(SIDE, SIDE, 1)] * 2,
        )
    return images, masks


def inputs(data_dir, batch_size, shuffle):
    masks = sorted(glob.glob(os.path.join(data_dir, "*_mask.png")))
    images = [name.replace("_mask.png", ".png") for name in masks]
    queue = tf.compat.v1.train.slice_input_producer([images, masks], shuffle=False)
    image = tf.image.decode_png(tf.io.read_file(queue[0]), channels=1)
    mask = tf.image.decode_png(tf.io.read_file(queue[1]), channels=1)
    image = tf.cast(image, tf.float32) / 255.0
    mask = tf.cast(mask, tf.float32)
    return _batch(image, mask, 4, batch_size, shuffle)
