"""The benchmark workloads as legacy input functions, written the TF 1.x way.

These are what ``queue-pipeline migrate`` rewrites for the ``migrated``
variant of ``run.py``: plain ``tf.compat.v1.train`` / ``tf.compat.v1``
readers, the decoders of ``workloads.py``, one epoch in order, batches of
``workloads.BATCH`` (the last one smaller), one thread.
"""

from __future__ import annotations

import tensorflow as tf

from workloads import BATCH, CSV_DEFAULTS, FEATURES

train = tf.compat.v1.train


def w1_inputs(filenames):
    """W1: CSV lines -> decode_csv -> batch."""
    filename_queue = train.string_input_producer(filenames, num_epochs=1, shuffle=False)
    reader = tf.compat.v1.TextLineReader()
    _, line = reader.read(filename_queue)
    cols = tf.io.decode_csv(line, CSV_DEFAULTS)
    features = tf.stack(cols[:4], axis=-1)
    return train.batch(
        [features, cols[4]], BATCH, capacity=BATCH * 4, allow_smaller_final_batch=True
    )


def read_and_decode(filename_queue):
    """W2's reader and decoder: one TFRecord -> (image [784] float32, label)."""
    reader = tf.compat.v1.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    parsed = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.cast(tf.io.decode_raw(parsed["image_raw"], tf.uint8), tf.float32) / 255.0
    image = tf.reshape(image, [784])
    return image, parsed["label"]


def w2_inputs(filenames):
    """W2: TFRecords -> parse_single_example -> batch."""
    filename_queue = train.string_input_producer(filenames, num_epochs=1, shuffle=False)
    image, label = read_and_decode(filename_queue)
    return train.batch([image, label], BATCH, capacity=BATCH * 4, allow_smaller_final_batch=True)


def w3_inputs(filenames):
    """W3: CIFAR-10 binary records -> decode_raw -> batch."""
    filename_queue = train.string_input_producer(filenames, num_epochs=1, shuffle=False)
    reader = tf.compat.v1.FixedLengthRecordReader(3073)
    _, record = reader.read(filename_queue)
    raw = tf.io.decode_raw(record, tf.uint8)
    label = tf.cast(raw[0], tf.int32)
    image = tf.transpose(tf.reshape(raw[1:], [3, 32, 32]), [1, 2, 0])
    image = tf.cast(image, tf.float32)
    return train.batch([image, label], BATCH, capacity=BATCH * 4, allow_smaller_final_batch=True)


def w4_inputs(images, labels):
    """W4: preloaded arrays -> slice_input_producer -> batch."""
    image, label = train.slice_input_producer(
        [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
    )
    return train.batch([image, label], BATCH, capacity=BATCH * 4, allow_smaller_final_batch=True)
