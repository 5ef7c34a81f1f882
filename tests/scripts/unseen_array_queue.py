"""A script's own FIFOQueue filled from arrays in memory by a QueueRunner.

Shaped like a public queue tutorial: numpy computes N rows of four features
and N labels, ``enqueue_many`` puts them in a ``FIFOQueue`` that four
threads of one ``QueueRunner`` fill (``create_threads(sess, coord=coord,
start=True)``), and the session reads ``dequeue()``'s pair for a few steps.
"""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

ROWS = 12
THREADS = 4
features = np.arange(ROWS * 4, dtype=np.float32).reshape(ROWS, 4) / 10.0 + 1.0
labels = np.arange(ROWS) % 2

queue = tf.FIFOQueue(capacity=20, dtypes=[tf.float32, tf.int32], shapes=[[4], []])
enqueue_op = queue.enqueue_many([features, labels])
feature, label = queue.dequeue()
runner = tf.train.QueueRunner(queue, [enqueue_op] * THREADS)

with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
    coord = tf.train.Coordinator()
    threads = runner.create_threads(sess, coord=coord, start=True)
    try:
        for _ in range(5):
            if coord.should_stop():
                break
            x, y = sess.run([feature, label])
            print(x, y)
    finally:
        coord.request_stop()
        sess.run(queue.close(cancel_pending_enqueues=True))
        coord.join(threads)
