"""A reading helper handed a queue that batches two ways by a test of its own.

Shaped like a 3-D shape-completion repository's reader.py and train.py:
``read_and_decode(filename_queue, shuffle_batch=True)`` parses two raw
tensors and ends in ``if shuffle_batch: ... tf.train.shuffle_batch(...) else:
... tf.train.batch(...)``; ``train()`` makes the queue, calls it, and runs the
session; ``evaluate(path, shuffle)`` passes the choice on. Used by
``queue-pipeline migrate tests/scripts/unseen_voxel_reader.py:train --call
"'FILE'"``: NOTE [ A reading helper that batches two ways ].
"""

import tensorflow.compat.v1 as tf


def read_and_decode(filename_queue, shuffle_batch=True):
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized_example,
        features={
            "data": tf.FixedLenFeature([], tf.string),
            "target": tf.FixedLenFeature([], tf.string),
        },
    )
    data = tf.reshape(tf.decode_raw(features["data"], tf.float32), [2, 2, 2])
    target = tf.reshape(tf.decode_raw(features["target"], tf.float32), [2, 2, 1])
    if shuffle_batch:
        datas, targets = tf.train.shuffle_batch(
            [data, target], batch_size=4, capacity=40, min_after_dequeue=8
        )
    else:
        datas, targets = tf.train.batch([data, target], batch_size=4)
    return datas, targets


def train(path):
    filename_queue = tf.train.string_input_producer([path], num_epochs=1)
    datas, targets = read_and_decode(filename_queue)
    loss = tf.reduce_mean(datas) + tf.reduce_mean(targets)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        print(sess.run(loss))
        coord.request_stop()
        coord.join(threads)


def evaluate(path, shuffle):
    filename_queue = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
    datas, targets = read_and_decode(filename_queue, shuffle_batch=shuffle)
    return datas, targets
