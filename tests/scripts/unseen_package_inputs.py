"""The program's input function calling a reading function of its package."""

import tensorflow.compat.v1 as tf

from unseen_datasets.read import read_and_decode


def build_inputs(path, batch_size):
    filename_queue = tf.train.string_input_producer([path], shuffle=False)
    return read_and_decode(filename_queue, batch_size)
