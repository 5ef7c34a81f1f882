"""Shaped like a public echo-cardiography U-Net input module (cifar10_input's layout).

``read_data(image_paths, label_paths)`` makes a ``slice_input_producer`` of
image and mask paths, reads and decodes both PNGs, and returns them as
attributes of a record object of a local class (``result.uint8image``,
``result.label``), as cifar10's ``read_cifar10`` does for its reader.
``inputs(images, masks, batch_size)`` casts the attributes and batches them.
``inputs_unpacked`` is the same with a helper returning the tensors.
"""

import tensorflow as tf


def read_data(image_paths, label_paths):
    class DataRecord(object):
        pass

    result = DataRecord()
    input_queue = tf.compat.v1.train.slice_input_producer(
        [tf.convert_to_tensor(image_paths), tf.convert_to_tensor(label_paths)], shuffle=False
    )
    result.uint8image = tf.io.decode_png(tf.io.read_file(input_queue[0]), channels=3)
    result.label = tf.io.decode_png(tf.io.read_file(input_queue[1]), channels=3)
    return result


def inputs(image_paths, label_paths, batch_size):
    read_input = read_data(image_paths, label_paths)
    image = tf.cast(read_input.uint8image, tf.float32)
    label = tf.cast(read_input.label, tf.float32) / 255.0
    image.set_shape([10, 10, 3])
    label.set_shape([10, 10, 3])
    return tf.compat.v1.train.batch([image, label], batch_size=batch_size)


def read_unpacked(image_paths, label_paths):
    input_queue = tf.compat.v1.train.slice_input_producer(
        [tf.convert_to_tensor(image_paths), tf.convert_to_tensor(label_paths)], shuffle=False
    )
    image = tf.io.decode_png(tf.io.read_file(input_queue[0]), channels=3)
    label = tf.io.decode_png(tf.io.read_file(input_queue[1]), channels=3)
    return image, label


def inputs_unpacked(image_paths, label_paths, batch_size):
    uint8image, mask = read_unpacked(image_paths, label_paths)
    image = tf.cast(uint8image, tf.float32)
    label = tf.cast(mask, tf.float32) / 255.0
    image.set_shape([10, 10, 3])
    label.set_shape([10, 10, 3])
    return tf.compat.v1.train.batch([image, label], batch_size=batch_size)
