"""Shaped like a public sentiment-analysis input module (a CSV of text and label).

``read_row(queue)`` reads one CSV line and returns ``(label, text)``;
``make_batches(text, label, batch_size, shuffle)`` rebinds its own record
parameters with the batch (``text, label = tf.train.shuffle_batch([text,
label], ...)``, or ``tf.train.batch`` unshuffled) and returns them; the
caller hands the columns over in another order than it read them.
``make_batches_once`` rebinds one parameter only, ``text``.
"""

import tensorflow as tf


def read_row(filename_queue):
    reader = tf.compat.v1.TextLineReader(skip_header_lines=1)
    _key, line = reader.read(filename_queue)
    label, text = tf.io.decode_csv(line, record_defaults=[[0], [""]])
    return label, text


def make_batches(text, label, batch_size, shuffle):
    if shuffle:
        text, label = tf.compat.v1.train.shuffle_batch(
            [text, label], batch_size=batch_size, capacity=40, min_after_dequeue=10
        )
    else:
        text, label = tf.compat.v1.train.batch([text, label], batch_size=batch_size)
    return text, label


def make_batches_once(text, label, batch_size):
    text, labels = tf.compat.v1.train.batch([text, label], batch_size=batch_size)
    return text, labels


def train_batches(path, batch_size, shuffle=False):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    label, text = read_row(queue)
    return make_batches(text, label, batch_size, shuffle=shuffle)


def eval_batches(path, batch_size):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    label, text = read_row(queue)
    return make_batches_once(text, label, batch_size)
