"""Functions that fill their own queue from arrays in memory (#41).

Shaped like a common queue tutorial, as functions returning what the queue
hands out: numpy makes the rows, ``enqueue_many`` (or ``enqueue`` of one
constant row) puts them in a ``FIFOQueue`` or a ``RandomShuffleQueue``, a
``QueueRunner`` of several threads of that one op fills it, and the function
returns ``dequeue()``'s pair or ``dequeue_many(n)``'s batch. The last
functions fill the queue from a placeholder or from a random draw, which no
Dataset can repeat.
"""

import numpy as np
import tensorflow.compat.v1 as tf

NUM_THREADS = 4


def make_arrays(rows):
    features = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) / 10.0 + 1.0
    targets = np.arange(rows) % 3
    return features, targets


def fifo_rows(rows=12, threads=NUM_THREADS):
    features, targets = make_arrays(rows)
    queue = tf.FIFOQueue(capacity=20, dtypes=[tf.float32, tf.int32], shapes=[[4], []])
    enqueue_op = queue.enqueue_many([features, targets])
    data_sample, label_sample = queue.dequeue()
    runner = tf.train.QueueRunner(queue, [enqueue_op] * threads)
    tf.train.add_queue_runner(runner)
    return data_sample, label_sample


def scaled_fifo_batches(rows=12, batch_size=5):
    features, targets = make_arrays(rows)
    centred = tf.constant(features) - features.mean()
    queue = tf.FIFOQueue(capacity=30, dtypes=[tf.float32, tf.int32], shapes=[[4], []])
    enqueue_op = queue.enqueue_many([centred, targets])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * NUM_THREADS))
    data_batch, label_batch = queue.dequeue_many(batch_size)
    return data_batch * 2.0, label_batch


def fifo_batches(rows=100_000, batch_size=500, threads=8):
    features, targets = make_arrays(rows)
    queue = tf.FIFOQueue(capacity=2 * batch_size, dtypes=[tf.float32, tf.int32], shapes=[[4], []])
    enqueue_op = queue.enqueue_many([features, targets])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * threads))
    return queue.dequeue_many(batch_size)


def shuffled_batches(rows=40, batch_size=8):
    features, targets = make_arrays(rows)
    queue = tf.RandomShuffleQueue(
        capacity=50, min_after_dequeue=10, dtypes=[tf.float32, tf.int32], shapes=[[4], []]
    )
    enqueue_op = queue.enqueue_many([features, targets])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * NUM_THREADS))
    data_batch, label_batch = queue.dequeue_many(batch_size)
    return data_batch, label_batch


def one_row():
    row = tf.constant([1.0, 2.0, 3.0, 4.0])
    queue = tf.FIFOQueue(capacity=10, dtypes=[tf.float32, tf.int32], shapes=[[4], []])
    enqueue_op = queue.enqueue([row * 3.0, 7])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * 2))
    value, label = queue.dequeue()
    return value, label


def fed_rows(batch_size=4):
    features = tf.placeholder(tf.float32, [None, 4])
    queue = tf.FIFOQueue(capacity=20, dtypes=[tf.float32], shapes=[[4]])
    enqueue_op = queue.enqueue_many([features])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * 2))
    return queue.dequeue_many(batch_size)


def drawn_rows(rows=12):
    features = 10 * tf.random_normal([rows, 4]) + 1
    queue = tf.FIFOQueue(capacity=20, dtypes=[tf.float32], shapes=[[4]])
    enqueue_op = queue.enqueue_many([features])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * 2))
    return queue.dequeue()


def listed_rows(rows=12, batch_size=3):
    features, targets = make_arrays(rows)
    queue = tf.FIFOQueue(capacity=20, dtypes=[tf.float32, tf.int64], shapes=[[4], []])
    tensors = [features, targets]
    enqueue_op = queue.enqueue_many(tensors)
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * NUM_THREADS))
    return queue.dequeue_many(batch_size)


def two_arrays(kind="fifo", batch_size=4):
    features, targets = make_arrays(8)
    extra = np.full((4, 4), -1.0, dtype=np.float32), np.full(4, 9, dtype=np.int32)
    if kind == "fifo":
        queue = tf.FIFOQueue(capacity=20, dtypes=[tf.float32, tf.int32], shapes=[[4], []])
    else:
        queue = tf.RandomShuffleQueue(20, 4, [tf.float32, tf.int32], shapes=[[4], []], seed=5)
    first = queue.enqueue_many([features, targets])
    second = queue.enqueue_many([extra[0], extra[1]])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [first] * 2 + [second] * 2))
    return queue.dequeue_many(batch_size)
