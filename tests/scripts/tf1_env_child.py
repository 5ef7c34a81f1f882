"""A TF 1.x script started by ``tf1_env_parent.py``; it only works in TF1 mode."""

import os

import tensorflow as tf

x = tf.placeholder(tf.float32, [])
with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
    value = sess.run(x * 2.0, feed_dict={x: 1.5})
print(
    "child: QUEUE_PIPELINE_TF1=%s eager=%s fed=%s"
    % (os.environ.get("QUEUE_PIPELINE_TF1"), tf.executing_eagerly(), value)
)
