"""The data and the model of ``tf1_fully_connected_reader.py``, written for TensorFlow 1.x.

A module the script imports, as TF 1.x's ``fully_connected_reader.py``
imported ``mnist.py``: under ``queue-pipeline run --tf1`` its ``import
tensorflow as tf`` gives ``tensorflow.compat.v1`` too. ``write_records``
converts arrays to a TFRecord file of ``tf.train.Example`` (as
``convert_to_records.py`` did); ``inference``, ``loss`` and ``training``
build a one-hidden-layer classifier (as ``mnist.py`` did), with explicit
initializer seeds so that it starts from the same weights in every graph.
"""

import numpy as np
import tensorflow as tf

NUM_FEATURES = 4
NUM_CLASSES = 3
NUM_RECORDS = 24


def data():
    """(features [NUM_RECORDS, NUM_FEATURES] float32, labels [NUM_RECORDS] int64)."""
    rng = np.random.RandomState(7)
    features = rng.uniform(-1.0, 1.0, size=(NUM_RECORDS, NUM_FEATURES)).astype(np.float32)
    labels = np.argmax(features[:, :NUM_CLASSES], axis=1).astype(np.int64)
    return features, labels


def write_records(path):
    """Writes data() to `path` as TFRecords with features `id`, `features`, `label`."""
    features, labels = data()
    with tf.python_io.TFRecordWriter(path) as writer:
        for index in range(NUM_RECORDS):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[index])),
                        "features": tf.train.Feature(
                            float_list=tf.train.FloatList(value=features[index].tolist())
                        ),
                        "label": tf.train.Feature(
                            int64_list=tf.train.Int64List(value=[int(labels[index])])
                        ),
                    }
                )
            )
            writer.write(example.SerializeToString())


def inference(features, hidden_units):
    """Logits [batch, NUM_CLASSES]; the variables are shared between calls."""
    with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
        with tf.variable_scope("hidden1"):
            weights = tf.get_variable(
                "weights",
                [NUM_FEATURES, hidden_units],
                initializer=tf.truncated_normal_initializer(stddev=0.5, seed=1),
            )
            biases = tf.get_variable("biases", [hidden_units], initializer=tf.zeros_initializer())
            hidden = tf.nn.relu(tf.matmul(features, weights) + biases)
        with tf.variable_scope("softmax_linear"):
            weights = tf.get_variable(
                "weights",
                [hidden_units, NUM_CLASSES],
                initializer=tf.truncated_normal_initializer(stddev=0.5, seed=2),
            )
            biases = tf.get_variable("biases", [NUM_CLASSES], initializer=tf.zeros_initializer())
            return tf.matmul(hidden, weights) + biases


def loss(logits, labels):
    """Mean cross-entropy of integer `labels`."""
    labels = tf.to_int64(labels)
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
        name="xentropy_mean",
    )


def training(loss_tensor, learning_rate):
    """The train op: one GradientDescentOptimizer step, counted in `global_step`."""
    tf.summary.scalar("loss", loss_tensor)
    global_step = tf.Variable(0, name="global_step", trainable=False)
    optimizer = tf.train.GradientDescentOptimizer(learning_rate)
    return optimizer.minimize(loss_tensor, global_step=global_step)
