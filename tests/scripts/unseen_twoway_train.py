"""Shaped like a public training function over a reading helper of another module.

``train()`` makes the file name queue, gets its batches from
``unseen_twoway_reader.read_and_decode`` (which batches two ways), builds the
loss of ``unseen_twoway_model`` on them inside a device block, then runs a
few steps in a session with queue runners.
"""

import tensorflow as tf

import unseen_twoway_model as model
import unseen_twoway_reader as reader


def train():
    filename_queue = tf.compat.v1.train.string_input_producer(["part0.csv"])
    datas, targets = reader.read_and_decode(filename_queue)
    with tf.device("/cpu:0"):
        loss, mask = model.get_loss(datas)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        coord = tf.compat.v1.train.Coordinator()
        threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
        for _ in range(3):
            print(sess.run([loss, mask]))
        coord.request_stop()
        coord.join(threads)
