"""Shaped like a public star-identification input module (TFRecords of small images).

``read_example(queue)`` parses one record and returns it as an object of a
local class whose attributes hold its tensors (``example.image``,
``example.label``, ``example.size``); ``batch_example(example, batch_size,
shuffle)`` batches two of those attributes (``shuffle_batch`` or ``batch``)
and reshapes the labels. One pipeline: the object is the record.
``inputs`` hands the reader the queue it makes inside the call;
``named_inputs`` names the queue first; ``scaled_inputs`` calls a helper that
also computes on the object's attributes before batching them.
"""

import tensorflow as tf

SIDE = 4


def read_example(filename_queue):
    reader = tf.compat.v1.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    features = tf.io.parse_single_example(
        serialized,
        features={
            "label": tf.io.FixedLenFeature([], tf.int64),
            "pixels": tf.io.FixedLenFeature([], tf.string),
        },
    )

    class Example(object):
        pass

    example = Example()
    example.size = SIDE
    example.label = tf.cast(features["label"], tf.int32)
    pixels = tf.io.decode_raw(features["pixels"], tf.uint8)
    example.image = tf.reshape(pixels, [SIDE, SIDE, 1])
    return example


def batch_example(example, batch_size, shuffle):
    if shuffle:
        images, labels = tf.compat.v1.train.shuffle_batch(
            [example.image, example.label],
            batch_size=batch_size,
            capacity=30,
            min_after_dequeue=5,
        )
    else:
        images, labels = tf.compat.v1.train.batch(
            [example.image, example.label], batch_size=batch_size
        )
    return images, tf.reshape(labels, [batch_size])


def scaled_batch(example, batch_size):
    image = tf.cast(example.image, tf.float32) / 255.0
    return tf.compat.v1.train.batch([image, example.label], batch_size=batch_size)


def inputs(path, batch_size, shuffle=False):
    example = read_example(
        tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    )
    return batch_example(example, batch_size, shuffle=shuffle)


def named_inputs(path, batch_size):
    filename_queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    example = read_example(filename_queue)
    images, labels = batch_example(example, batch_size, False)
    return images, labels


def scaled_inputs(path, batch_size):
    filename_queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    example = read_example(filename_queue)
    return scaled_batch(example, batch_size)
