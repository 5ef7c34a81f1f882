"""A training script whose own queue's dequeued tuple is indexed.

Shaped like a public TF 1.x script: module-level ``string_input_producer``
over CSV files, a ``TextLineReader`` and ``decode_csv``, the script's own
``FIFOQueue`` with a ``QueueRunner`` of two enqueue threads, ``sample =
q.dequeue()`` read as ``sample[0]`` / ``sample[-1]``, ``tf.train.batch``,
then a session printing (all in ``with tf.Graph().as_default():``, so it runs
under TF 2.x defaults too) what the batches hold.
"""

import tensorflow.compat.v1 as tf

with tf.Graph().as_default():
    filename_queue = tf.train.string_input_producer(["p0.csv", "p1.csv"], shuffle=False)
    reader = tf.TextLineReader()
    _, line = reader.read(filename_queue)
    columns = tf.decode_csv(line, record_defaults=[[0.0], [0.0], [0.0], [0.0], [0]])
    image = tf.stack(columns[:4]) / 255.0
    label = columns[4]

    q = tf.FIFOQueue(100, [tf.float32, tf.int32], shapes=[[4], []])
    enq = q.enqueue([image, label])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [enq] * 2))
    sample = q.dequeue()
    image_b, label_b = tf.train.batch([sample[0], sample[-1]], 4)

    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        for step in range(3):
            images, labels = sess.run([image_b, label_b])
            print(step, images.shape, images.dtype, labels.shape, int(labels.max()) < 3)
        coord.request_stop()
        coord.join(threads)
