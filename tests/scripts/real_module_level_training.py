"""Shaped like the many course / blog scripts that define an input function and then,
at module level, build the model and train it (no ``__main__`` guard), writing a
checkpoint at the end.

``queue-pipeline migrate real_module_level_training.py:read_inputs --call
'DATA_FILES'`` must load the function, its imports and constants only: the model
building, the training loop and the checkpoint write below it never run.
"""

import glob
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

HERE = os.path.dirname(os.path.abspath(__file__))
DATA_FILES = sorted(glob.glob(os.path.join(HERE, "data", "*.tfrecords")))
BATCH_SIZE = 4
FEATURES = {
    "x": tf.io.FixedLenFeature([2], tf.float32),
    "y": tf.io.FixedLenFeature([], tf.int64),
}


def read_inputs(files, batch_size=BATCH_SIZE):
    queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    reader = tf.compat.v1.TFRecordReader()
    _, serialized = reader.read(queue)
    example = tf.io.parse_single_example(serialized, features=FEATURES)
    x = example["x"] * 2.0
    y = tf.cast(example["y"], tf.int32)
    return tf.compat.v1.train.batch([x, y], batch_size, allow_smaller_final_batch=True)


x_batch, y_batch = read_inputs(DATA_FILES)
w = tf.Variable(np.zeros([2, 3], np.float32))
logits = tf.matmul(x_batch, w)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_batch, logits=logits))
train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss)
saver = tf.compat.v1.train.Saver()
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    sess.run(tf.compat.v1.local_variables_initializer())
    coord = tf.compat.v1.train.Coordinator()
    threads = tf.compat.v1.train.start_queue_runners(sess, coord)
    try:
        while not coord.should_stop():
            print(sess.run([train_op, loss])[1])
    except tf.errors.OutOfRangeError:
        saver.save(sess, os.path.join(HERE, "model.ckpt"))
    finally:
        coord.request_stop()
        coord.join(threads)
