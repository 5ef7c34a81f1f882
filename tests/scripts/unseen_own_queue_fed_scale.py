"""Shaped like public readers whose own queue's records read a placeholder.

``scaled_numbers(paths, batch_size)`` reads numbers (one a line), multiplies
each by ``scale``, a placeholder the training loop feeds, and fills its own
``FIFOQueue`` through a ``QueueRunner``; it returns ``dequeue_many``. A
Dataset has no feed: the refusal names the placeholder's line.
"""

import tensorflow as tf


def scaled_numbers(paths, batch_size):
    name_queue = tf.compat.v1.train.string_input_producer(paths, shuffle=False, num_epochs=1)
    _, line = tf.compat.v1.TextLineReader().read(name_queue)
    (number,) = tf.io.decode_csv(line, record_defaults=[[0.0]])
    scale = tf.compat.v1.placeholder(tf.float32, [], name="scale")
    queue = tf.queue.FIFOQueue(capacity=16, dtypes=[tf.float32], shapes=[[]])
    enqueue = queue.enqueue([number * scale])
    tf.compat.v1.train.add_queue_runner(tf.compat.v1.train.QueueRunner(queue, [enqueue]))
    return queue.dequeue_many(batch_size)
