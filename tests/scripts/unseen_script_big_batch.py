"""Shaped like a public test script: a literal batch larger than the data set.

A reading function, then at module level a shuffled producer over one CSV
file, ``shuffle_batch`` with ``batch_size=128`` (a literal) and a session
that prints a batch's shape.
"""

import tensorflow as tf


def read_single_example(filename):
    queue = tf.compat.v1.train.string_input_producer([filename], num_epochs=None)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    return tf.io.decode_csv(line, record_defaults=[[0], [0]])


ident, label = read_single_example("part0.csv")
idents, labels = tf.compat.v1.train.shuffle_batch(
    [ident, label], batch_size=128, capacity=200, min_after_dequeue=10
)

with tf.compat.v1.Session() as sess:
    coord = tf.compat.v1.train.Coordinator()
    threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
    print(sess.run(idents).shape)
    coord.request_stop()
    coord.join(threads)
