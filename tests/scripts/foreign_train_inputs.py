"""A training script's input functions calling the reading module (``records_util``).

``train_inputs`` makes the filename queue and hands it to
``records_util.read_and_decode``; ``eval_inputs`` returns
``records_util.inputs(...)``; ``short_inputs`` calls a function imported by
name (``from records_util import read_and_decode as decode``). See
``foreign_records_util.py``.
"""

import tensorflow.compat.v1 as tf

import records_util
from records_util import read_and_decode as decode


def train_inputs(files, batch_size):
    filename_queue = tf.train.string_input_producer(files, num_epochs=2)
    images, embs, labels = records_util.read_and_decode(filename_queue, batch_size)
    images = images * 2.0 - 1.0
    return images, embs, labels


def eval_inputs(files, batch_size):
    return records_util.inputs(files, batch_size)


def short_inputs(files):
    filename_queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    return decode(filename_queue, batch_size=5, capacity=40)
