"""Shaped like a public lung-CT block reader's test script.

A reading function returns a dict of decoded tensors; the script's module
level (in ``with tf.Graph().as_default():``) enqueues two of them into its
own FIFOQueue, dequeues one record at a time, makes the QueueRunner AFTER the
dequeue and starts it itself with ``qr.create_threads`` (never registered),
then prints three records, closes the queue and joins the runners' threads.
"""

import tensorflow.compat.v1 as tf

tf.disable_eager_execution()


def read_records(records):
    queue = tf.train.string_input_producer(records, shuffle=False)
    _, value = tf.TFRecordReader().read(queue)
    f = tf.parse_single_example(
        value,
        features={
            "block": tf.FixedLenFeature([], tf.string),
            "project": tf.FixedLenFeature([], tf.string),
        },
    )
    ret = {}
    ret["block"] = tf.reshape(tf.decode_raw(f["block"], tf.int16), [2, 2])
    ret["project"] = f["project"]
    return ret


with tf.Graph().as_default():
    single_blocks = read_records(["blocks.tfrecord"])
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
