"""Shaped like a public music model's padded-batch reader: its own queue filled by threads.

``read_numbers(paths, batch_size, num_threads)`` reads numbers (one a line)
from an endless, unshuffled file name queue, does some per-record work (so
the threads overtake each other), and fills its own ``FIFOQueue`` through a
``QueueRunner`` of ``num_threads`` copies of one enqueue op; it returns
``dequeue_many(batch_size)``. With a record count that is not a multiple of
``batch_size``, which records fall into the dropped partial batch depends on
the threads' timing, in TF itself.
"""

import tensorflow as tf


def read_numbers(paths, batch_size, num_threads=4):
    name_queue = tf.compat.v1.train.string_input_producer(paths, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(name_queue)
    (number,) = tf.io.decode_csv(line, record_defaults=[[0]])
    spread = tf.tile(tf.reshape(number, [1]), [50000])
    number = tf.reduce_max(spread)
    twice = number * 2
    queue = tf.queue.FIFOQueue(capacity=64, dtypes=[tf.int32, tf.int32], shapes=[[], []])
    enqueue_ops = [queue.enqueue([number, twice])] * num_threads
    tf.compat.v1.train.add_queue_runner(tf.compat.v1.train.QueueRunner(queue, enqueue_ops))
    return queue.dequeue_many(batch_size)
