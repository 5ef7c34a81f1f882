"""Shaped like a public book chapter's queue example (Hands-on ML, ch. 12): a script.

A ``FIFOQueue`` of file names that the session fills from a placeholder
(``sess.run(enqueue_name, feed_dict=...)``) and closes; a ``TextLineReader``
reads it; the decoded rows go through the script's own ``RandomShuffleQueue``
filled by a ``QueueRunner`` of two enqueue ops that the session starts with
``create_threads``; mini-batches come from ``dequeue_up_to``.
"""

import tensorflow as tf

tf.compat.v1.disable_eager_execution()

name_queue = tf.queue.FIFOQueue(capacity=5, dtypes=[tf.string], shapes=[()])
name = tf.compat.v1.placeholder(tf.string)
enqueue_name = name_queue.enqueue([name])
close_name_queue = name_queue.close()
reader = tf.compat.v1.TextLineReader(skip_header_lines=1)
_, row = reader.read(name_queue)
width, height, kind = tf.io.decode_csv(row, record_defaults=[[0.0], [0.0], [0]])
sizes = tf.stack([width, height])
rows = tf.queue.RandomShuffleQueue(
    capacity=8, min_after_dequeue=2, dtypes=[tf.float32, tf.int32], shapes=[[2], []]
)
enqueue_row = rows.enqueue([sizes, kind])
size_batch, kind_batch = rows.dequeue_up_to(3)
runner = tf.compat.v1.train.QueueRunner(rows, [enqueue_row] * 2)
coord = tf.compat.v1.train.Coordinator()

with tf.compat.v1.Session() as sess:
    sess.run(enqueue_name, feed_dict={name: "sizes.csv"})
    sess.run(close_name_queue)
    threads = runner.create_threads(sess, coord=coord, start=True)
    try:
        while True:
            print(sess.run([size_batch, kind_batch]))
    except tf.errors.OutOfRangeError:
        print("done")
