"""A script: a helper slices arrays into batches; the session prints a few of them."""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()


def make_batches():
    ids = np.arange(12, dtype=np.int32)
    scores = (ids * 0.5).astype(np.float32)
    pair = tf.train.slice_input_producer([ids, scores], shuffle=False)
    # one thread, batches of three
    # (the queue keeps 32)
    return tf.train.batch(pair, batch_size=3, num_threads=1, capacity=32)


id_batch, score_batch = make_batches()
with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    for _ in range(3):
        print(sess.run([id_batch, score_batch]))
    coord.request_stop()
    coord.join(threads)
