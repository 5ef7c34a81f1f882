"""A TF 1.x script that uses ``tf.contrib.slim``, which TensorFlow 2.x removed.

tests/test_run_tf1.py runs it through ``queue-pipeline run --tf1`` and wants
the clear error that names ``tf.contrib.slim`` and the ``tf-slim`` package.
"""

import tensorflow as tf

slim = tf.contrib.slim


def model(images):
    with slim.arg_scope([slim.fully_connected], activation_fn=tf.nn.relu):
        return slim.fully_connected(images, 10)


if __name__ == "__main__":
    with tf.Graph().as_default():
        print(model(tf.placeholder(tf.float32, [None, 4])))
