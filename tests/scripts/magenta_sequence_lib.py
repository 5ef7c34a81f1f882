"""Padded batches of SequenceExamples, shuffled through the program's own queue.

Shaped like magenta's ``magenta/common/sequence_example_lib.py``
(``get_padded_batch``, ``_shuffle_inputs``): a ``TFRecordReader`` on
``string_input_producer``, ``parse_single_sequence_example``, the record as a
list ``[inputs, labels, length]``; with ``shuffle=True`` the list passes
through ``_shuffle_inputs`` (a ``RandomShuffleQueue`` filled by a QueueRunner,
then ``dequeue()`` and a loop restoring the static shapes); then
``tf.train.batch(dynamic_pad=True)``. Copied as ``sequence_example_lib.py``.
"""

import math

import tensorflow.compat.v1 as tf

QUEUE_CAPACITY = 50


def _shuffle_inputs(input_tensors, capacity, min_after_dequeue, num_threads):
    shuffle_queue = tf.RandomShuffleQueue(
        capacity, min_after_dequeue, dtypes=[t.dtype for t in input_tensors]
    )
    enqueue_op = shuffle_queue.enqueue(input_tensors)
    runner = tf.train.QueueRunner(shuffle_queue, [enqueue_op] * num_threads)
    tf.train.add_queue_runner(runner)
    output_tensors = shuffle_queue.dequeue()
    for i in range(len(input_tensors)):
        output_tensors[i].set_shape(input_tensors[i].shape)
    return output_tensors


def get_padded_batch(file_list, batch_size, input_size, num_enqueuing_threads=4, shuffle=False):
    file_queue = tf.train.string_input_producer(file_list, num_epochs=1, shuffle=False)
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(file_queue)
    sequence_features = {
        "inputs": tf.FixedLenSequenceFeature(shape=[input_size], dtype=tf.float32),
        "labels": tf.FixedLenSequenceFeature(shape=[], dtype=tf.int64),
    }
    _, sequence = tf.parse_single_sequence_example(
        serialized_example, sequence_features=sequence_features
    )
    length = tf.shape(sequence["inputs"])[0]
    input_tensors = [sequence["inputs"], sequence["labels"], length]
    if shuffle:
        shuffle_threads = int(math.ceil(num_enqueuing_threads) / 2.0)
        input_tensors = _shuffle_inputs(
            input_tensors,
            capacity=QUEUE_CAPACITY,
            min_after_dequeue=10,
            num_threads=shuffle_threads,
        )
        num_enqueuing_threads -= shuffle_threads
    tf.logging.info(input_tensors)
    return tf.train.batch(
        input_tensors,
        batch_size=batch_size,
        capacity=QUEUE_CAPACITY,
        num_threads=num_enqueuing_threads,
        dynamic_pad=True,
        allow_smaller_final_batch=False,
    )
