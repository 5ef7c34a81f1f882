"""An image loader with a per-record ``if`` (copied as ``data_loader.py``).

Shaped like carpedm20/BEGAN-tensorflow's ``data_loader.py`` ``get_loader``:
JPEG paths listed from a folder, ``string_input_producer`` -> ``WholeFileReader``
-> ``decode_jpeg``, ``if is_grayscale:`` converts the image, ``set_shape``,
``shuffle_batch``, then a ``tf.image`` crop and a transpose to NCHW on the
batches. Used by ``tests/test_migrate_shapes.py``.
"""

import os
from glob import glob

import tensorflow.compat.v1 as tf


def get_loader(root, batch_size, scale_size, data_format, seed=None, is_grayscale=False):
    paths = sorted(glob(os.path.join(root, "*.jpg")))
    filename_queue = tf.train.string_input_producer(list(paths), shuffle=False, seed=seed)
    reader = tf.WholeFileReader()
    filename, data = reader.read(filename_queue)
    image = tf.image.decode_jpeg(data, channels=3)
    if is_grayscale:
        image = tf.image.rgb_to_grayscale(image)
    image.set_shape([12, 10, 1 if is_grayscale else 3])
    min_after_dequeue = 20
    capacity = min_after_dequeue + 3 * batch_size
    queue = tf.train.shuffle_batch(
        [image],
        batch_size=batch_size,
        num_threads=2,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        name="synthetic_inputs",
    )
    queue = tf.image.crop_to_bounding_box(queue, 1, 1, scale_size, scale_size)
    if data_format == "NCHW":
        queue = tf.transpose(queue, [0, 3, 1, 2])
    return tf.cast(queue, tf.float32)
