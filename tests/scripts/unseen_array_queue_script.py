"""A script filling its own queue from NumPy arrays, batched with dequeue_many.

Shaped like a common queue tutorial: the rows are drawn once with NumPy
(seeded), ``enqueue_many`` puts rows and targets in a ``FIFOQueue``, a
``QueueRunner`` of several threads of that one op is registered with
``add_queue_runner`` and started by ``start_queue_runners``, and the session
prints batches of ``dequeue_many`` for more steps than the arrays hold.
"""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

N_SAMPLES = 10
NUM_THREADS = 4
BATCH = 4
np.random.seed(7)
data = np.round(10 * np.random.randn(N_SAMPLES, 4) + 1, 3)
target = np.random.randint(0, 2, size=N_SAMPLES)

queue = tf.FIFOQueue(capacity=50, dtypes=[tf.float32, tf.int32], shapes=[[4], []])
enqueue_op = queue.enqueue_many([data, target])
data_batch, label_batch = queue.dequeue_many(BATCH)
tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * NUM_THREADS))

with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    step = 0
    try:
        while not coord.should_stop() and step < 6:
            d, labels = sess.run([data_batch, label_batch])
            print(step, d.sum(axis=1).round(2).tolist(), labels.tolist())
            step += 1
    finally:
        coord.request_stop()
    coord.join(threads)
