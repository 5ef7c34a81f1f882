"""Batching calls over the program's own queue of serialized lines (#41).

Shaped like an input module that lets N readers fill a FIFOQueue of strings
(no shapes given), registers its QueueRunner, dequeues one string at a time
and hands the decoded record to ``tf.train.batch`` or ``shuffle_batch``; the
queue may be filled by a helper that returns it.
"""

import tensorflow.compat.v1 as tf


def decode(line):
    line = tf.reshape(line, [])  # the queue was given no shapes
    number, label = tf.decode_csv(line, record_defaults=[[0.0], [0]])
    return number * 2.0, label


def batched_lines(files, batch_size, num_readers=2):
    filename_queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    lines = tf.FIFOQueue(100, [tf.string])
    enqueue_ops = []
    for _ in range(num_readers):
        _, value = tf.TextLineReader().read(filename_queue)
        enqueue_ops.append(lines.enqueue([value]))
    tf.train.queue_runner.add_queue_runner(tf.train.QueueRunner(lines, enqueue_ops))
    example = lines.dequeue()
    number, label = decode(example)
    return tf.train.batch([number, label], batch_size=batch_size, allow_smaller_final_batch=True)


def shuffled_lines(files, batch_size, num_readers=2):
    filename_queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    lines = tf.FIFOQueue(100, [tf.string])
    enqueue_ops = []
    for _ in range(num_readers):
        _, value = tf.TextLineReader().read(filename_queue)
        enqueue_ops.append(lines.enqueue([value]))
    tf.train.queue_runner.add_queue_runner(tf.train.QueueRunner(lines, enqueue_ops))
    (example,) = [lines.dequeue()]
    number, label = decode(example)
    return tf.train.shuffle_batch(
        [number, label],
        batch_size=batch_size,
        capacity=40,
        min_after_dequeue=5,
        seed=3,
        allow_smaller_final_batch=True,
    )


def threads_of_one_read(files, batch_size, threads=4):
    filename_queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, value = tf.TextLineReader().read(filename_queue)
    lines = tf.FIFOQueue(100, [tf.string])
    enqueue_op = lines.enqueue([value])
    tf.train.add_queue_runner(tf.train.QueueRunner(lines, [enqueue_op] * threads))
    example = [lines.dequeue()]
    return tf.train.batch(decode(example[0]), batch_size=batch_size, allow_smaller_final_batch=True)


def _line_queue(files, num_readers):
    filename_queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    lines = tf.FIFOQueue(100, [tf.string])
    enqueue_ops = []
    for _ in range(num_readers):
        _, value = tf.TextLineReader().read(filename_queue)
        enqueue_ops.append(lines.enqueue([value]))
    tf.train.add_queue_runner(tf.train.QueueRunner(lines, enqueue_ops))
    return lines


def helper_filled_lines(files, batch_size, num_readers=2):
    lines = _line_queue(files, num_readers)
    example = lines.dequeue()
    number, label = decode(example)
    return tf.train.shuffle_batch(
        [number, label],
        batch_size,
        capacity=30,
        min_after_dequeue=5,
        seed=2,
        allow_smaller_final_batch=True,
    )
