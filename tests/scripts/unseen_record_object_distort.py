"""Shaped like CIFAR-10-era public input modules (our own code): binary records of
a label byte and a small RGB image.

``read_record(filename_queue)`` reads one fixed-length record and returns it as
an object of a module-level class whose attributes hold its tensors
(``record.label``, ``record.image``, beside plain ``height`` / ``width``);
``make_batch(record, batch_size, shuffle)`` does the per-record work on the
object's fields itself (cast, scale, a random flip, the label reshaped) and then
batches. ``inputs`` hands the reader's result straight to the batching helper;
``inline_inputs`` makes the queue inside the reading helper's call, itself in
the batching helper's call; ``train_inputs`` names the object first and
repeats forever; ``tensor_inputs``
hands the object's tensors to ``batch_scaled``, which computes on them before
batching; ``sized_inputs``
calls a helper that reads a plain attribute (``record.height``) of the object
besides its tensors; ``distorted_inputs`` distorts the object's image between two helpers (a random
crop and brightness, as cifar10_input does) and hands plain tensors to
``batch_pair``.
"""

import os

import tensorflow as tf

HEIGHT = 6
WIDTH = 6
DEPTH = 3
CROP = 4


class Record(object):
    pass


def read_record(filename_queue):
    record = Record()
    record.height = HEIGHT
    record.width = WIDTH
    label_bytes = 1
    image_bytes = HEIGHT * WIDTH * DEPTH
    reader = tf.compat.v1.FixedLengthRecordReader(record_bytes=label_bytes + image_bytes)
    record.key, value = reader.read(filename_queue)
    raw = tf.io.decode_raw(value, tf.uint8)
    record.label = tf.cast(tf.strided_slice(raw, [0], [label_bytes]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(raw, [label_bytes], [label_bytes + image_bytes]), [DEPTH, HEIGHT, WIDTH]
    )
    record.image = tf.transpose(depth_major, [1, 2, 0])
    return record


def make_batch(record, batch_size, shuffle=False):
    image = tf.cast(record.image, tf.float32) / 255.0
    image = tf.image.random_flip_left_right(image)
    label = tf.reshape(record.label, [])
    if shuffle:
        return tf.compat.v1.train.shuffle_batch(
            [image, label], batch_size, capacity=200, min_after_dequeue=50
        )
    return tf.compat.v1.train.batch([image, label], batch_size)


def sized_batch(record, batch_size):
    image = tf.image.resize(tf.cast(record.image, tf.float32), [record.height // 2, WIDTH // 2])
    return tf.compat.v1.train.batch([image, tf.reshape(record.label, [])], batch_size)


def batch_scaled(image, label, batch_size):
    image = tf.image.per_image_standardization(tf.cast(image, tf.float32))
    return tf.compat.v1.train.batch([image, tf.reshape(label, [])], batch_size=batch_size)


def batch_pair(image, label, batch_size):
    images, labels = tf.compat.v1.train.batch([image, label], batch_size=batch_size, capacity=40)
    return images, tf.reshape(labels, [batch_size])


def _files(data_dir):
    return [os.path.join(data_dir, "part_%d.bin" % i) for i in range(2)]


def inputs(data_dir, batch_size, shuffle=False):
    filename_queue = tf.compat.v1.train.string_input_producer(
        _files(data_dir), num_epochs=1, shuffle=False
    )
    return make_batch(read_record(filename_queue), batch_size, shuffle=shuffle)


def inline_inputs(data_dir, batch_size):
    return make_batch(
        read_record(
            tf.compat.v1.train.string_input_producer(_files(data_dir), num_epochs=1, shuffle=False)
        ),
        batch_size,
    )


def train_inputs(data_dir, batch_size):
    filename_queue = tf.compat.v1.train.string_input_producer(_files(data_dir), shuffle=False)
    record = read_record(filename_queue)
    images, labels = make_batch(record, batch_size, shuffle=True)
    return images, labels


def tensor_inputs(data_dir, batch_size):
    filename_queue = tf.compat.v1.train.string_input_producer(
        _files(data_dir), num_epochs=1, shuffle=False
    )
    record = read_record(filename_queue)
    return batch_scaled(record.image, record.label, batch_size)


def sized_inputs(data_dir, batch_size):
    filename_queue = tf.compat.v1.train.string_input_producer(
        _files(data_dir), num_epochs=1, shuffle=False
    )
    return sized_batch(read_record(filename_queue), batch_size)


def distorted_inputs(data_dir, batch_size):
    filename_queue = tf.compat.v1.train.string_input_producer(_files(data_dir), num_epochs=1)
    read_input = read_record(filename_queue)
    image = tf.cast(read_input.image, tf.float32)
    image = tf.image.random_crop(image, [CROP, CROP, DEPTH])
    image = tf.image.random_brightness(image, max_delta=40)
    read_input.label.set_shape([1])
    return batch_pair(image, read_input.label, batch_size)
