"""A shuffling helper whose queue takes ``**`` arguments.

Shaped like a rotated-box text-detection reader's tfrecord_utils.py: a
``Config`` object, ``tf.RandomShuffleQueue(..., **({"names": names} if names
else {}))`` and a QueueRunner in a helper, the records returned unbatched by
``return queue.dequeue()``.
"""

import tensorflow.compat.v1 as tf


class Config:
    capacity = 20
    min_after_dequeue = 5


def _shuffle(tensors, config, names=None):
    queue = tf.RandomShuffleQueue(
        capacity=config.capacity,
        min_after_dequeue=config.min_after_dequeue,
        dtypes=[t.dtype for t in tensors],
        **({"names": names} if names else {}),
    )
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(tensors)]))
    return queue.dequeue()


def read_tfrecord(path, config):
    filename_queue = tf.train.string_input_producer([path])
    _, line = tf.TextLineReader().read(filename_queue)
    (value,) = tf.decode_csv(line, [[0]])
    return _shuffle([value], config)
