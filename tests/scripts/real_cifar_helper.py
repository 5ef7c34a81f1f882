"""Shaped like TensorFlow models' cifar10_input.py: ``read_cifar10(filename_queue)``
computes the record size in the helper (``record_bytes = label_bytes + image_bytes``),
returns a record object, and ``inputs()`` batches what it returns.
"""

import os

import tensorflow as tf

IMAGE_SIZE = 8


class CIFAR10Record(object):
    pass


def read_cifar10(filename_queue):
    result = CIFAR10Record()
    label_bytes = 1
    result.height = 8
    result.width = 8
    result.depth = 3
    image_bytes = result.height * result.width * result.depth
    record_bytes = label_bytes + image_bytes
    reader = tf.compat.v1.FixedLengthRecordReader(record_bytes=record_bytes)
    result.key, value = reader.read(filename_queue)
    record_bytes = tf.io.decode_raw(value, tf.uint8)
    result.label = tf.cast(tf.strided_slice(record_bytes, [0], [label_bytes]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record_bytes, [label_bytes], [label_bytes + image_bytes]),
        [result.depth, result.height, result.width],
    )
    result.uint8image = tf.transpose(depth_major, [1, 2, 0])
    return result


def inputs(data_dir, batch_size):
    filenames = [os.path.join(data_dir, "data_batch_%d.bin" % i) for i in range(1, 3)]
    for f in filenames:
        if not tf.io.gfile.exists(f):
            raise ValueError("Failed to find file: " + f)
    filename_queue = tf.compat.v1.train.string_input_producer(
        filenames, num_epochs=1, shuffle=False
    )
    read_input = read_cifar10(filename_queue)
    reshaped_image = tf.cast(read_input.uint8image, tf.float32)
    float_image = tf.image.per_image_standardization(reshaped_image)
    float_image.set_shape([IMAGE_SIZE, IMAGE_SIZE, 3])
    read_input.label.set_shape([1])
    images, label_batch = tf.compat.v1.train.batch(
        [float_image, read_input.label],
        batch_size=batch_size,
        num_threads=1,
        capacity=50,
        allow_smaller_final_batch=True,
    )
    return images, tf.reshape(label_batch, [-1])
