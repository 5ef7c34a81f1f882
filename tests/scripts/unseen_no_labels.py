"""Shaped like an unsupervised model's input function and the session loop reading it.

``inputs(path, batch_size)`` reads a CSV column of numbers and returns
``{"value": values}, None``: features as a dict and no labels, as an
Estimator input_fn of an autoencoder returns them. ``total(path,
batch_size)`` unpacks ``features, labels = inputs(...)`` and sums the
batches in a Coordinator loop; ``labels`` stays None throughout.
"""

import tensorflow as tf

OP_TIMEOUT_MS = 20_000


def inputs(path, batch_size):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    (value,) = tf.io.decode_csv(line, [[0]])
    values = tf.compat.v1.train.batch([value], batch_size)
    return {"value": values}, None


def total(path, batch_size):
    with tf.Graph().as_default():
        features, labels = inputs(path, batch_size)
        summed = tf.reduce_sum(features["value"])
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
            seen, steps = 0, 0
            try:
                while not coord.should_stop():
                    seen += int(sess.run(summed))
                    steps += 1
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
            return seen, steps, labels is None
