"""A test script reading blocks through an object of another module, built inline.

Shaped like a public lung-CT block reader's ``data_test.py`` (our own code):
``single_blocks = BlockRecords([...]).read_records()`` (the class imported
from ``records.py``, no name holding the object), its items enqueued into
the script's own FIFOQueue, one record dequeued at a time, the QueueRunner
made after the dequeue and started with ``qr.create_threads``; the queue
closed and the threads joined at the end.
"""

import tensorflow.compat.v1 as tf
from records import BlockRecords

tf.disable_eager_execution()

with tf.Graph().as_default():
    single_blocks = BlockRecords(["blocks.tfrecord"]).read_records()
    queue = tf.FIFOQueue(capacity=8, dtypes=(tf.int16, tf.string))
    enqueue_op = queue.enqueue((single_blocks["block"], single_blocks["project"]))
    (block, project) = queue.dequeue()
    qr = tf.train.QueueRunner(queue, [enqueue_op])
    sess = tf.Session()
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    enqueue_threads = qr.create_threads(sess, coord=coord, start=True)
    for _ in range(3):
        got_block, got_project = sess.run([block, project])
        print(got_project, int(got_block.sum()))
    coord.request_stop()
    sess.run(queue.close(cancel_pending_enqueues=True))
    coord.join(threads + enqueue_threads)
sess.close()
