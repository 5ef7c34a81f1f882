"""Shaped like a public video/audio model's input (an ITR-DQN-era file_io.py).

The function's own FIFOQueue is filled by a QueueRunner registered by hand
(``tf.add_to_collection(tf.GraphKeys.QUEUE_RUNNERS, qr)``, what
``add_queue_runner`` does), read back with ``dequeue()``, and the shapes the
records had before the queue are set again in a loop, before a padded batch.
"""

import tensorflow.compat.v1 as tf


def input_pipeline(filenames, batch_size=2):
    filename_queue = tf.train.string_input_producer(filenames, shuffle=False, num_epochs=1)
    _, value = tf.TextLineReader().read(filename_queue)
    label, text = tf.decode_csv(value, record_defaults=[[0], [""]])
    data_tensor = [tf.strings.bytes_split(text), label]
    dtypes = list(map(lambda x: x.dtype, data_tensor))
    shapes = list(map(lambda x: x.get_shape(), data_tensor))
    queue = tf.FIFOQueue(10, dtypes)
    qr = tf.train.QueueRunner(queue, [queue.enqueue(data_tensor)] * 1)
    tf.add_to_collection(tf.GraphKeys.QUEUE_RUNNERS, qr)
    outputs = queue.dequeue()
    for tensor, shape in zip(outputs, shapes):
        tensor.set_shape(shape)
    return tf.train.batch(outputs, batch_size, capacity=10, dynamic_pad=True)


def chosen_queue_pipeline(filenames, randomize=False):
    """The published shape: the queue's class chosen by an ``if``."""
    filename_queue = tf.train.string_input_producer(filenames, shuffle=randomize, num_epochs=1)
    _, value = tf.TextLineReader().read(filename_queue)
    label, text = tf.decode_csv(value, record_defaults=[[0], [""]])
    data_tensor = [tf.strings.bytes_split(text), label]
    dtypes = list(map(lambda x: x.dtype, data_tensor))
    shapes = list(map(lambda x: x.get_shape(), data_tensor))
    queue = None
    if randomize:
        queue = tf.RandomShuffleQueue(10, 7, dtypes)
    else:
        queue = tf.FIFOQueue(10, dtypes)
    enqueue_op = queue.enqueue(data_tensor)
    qr = tf.train.QueueRunner(queue, [enqueue_op] * 1)
    tf.add_to_collection(tf.GraphKeys.QUEUE_RUNNERS, qr)
    outputs = queue.dequeue()
    for tensor, shape in zip(outputs, shapes):
        tensor.set_shape(shape)
    return tf.train.batch(outputs, 1, capacity=10, dynamic_pad=True)
