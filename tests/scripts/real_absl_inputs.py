"""Shaped like the classic absl / ``tf.app.flags`` trainers (cifar10_train.py, mnist's
fully_connected_reader.py): flags defined at module level, an ``inputs()`` that reads
``FLAGS`` and a ``main(_)`` that trains, run by ``tf.compat.v1.app.run()``.

``queue-pipeline migrate real_absl_inputs.py:inputs`` must not parse migrate's own
command line with these flags, must not run ``main``, and keeps the flags at their
defaults unless ``--argv`` sets them.
"""

import os

import tensorflow as tf
from absl import flags

flags.DEFINE_string("data_dir", os.path.join(os.path.dirname(__file__), "data"), "CSV dir.")
flags.DEFINE_integer("batch_size", 4, "Examples per batch.")
flags.DEFINE_integer("num_epochs", 1, "Epochs of input.")
FLAGS = flags.FLAGS

NUM_COLUMNS = 3


def inputs():
    """Batches of (features, label) from every CSV file under FLAGS.data_dir."""
    files = sorted(tf.io.gfile.glob(os.path.join(FLAGS.data_dir, "*.csv")))
    filename_queue = tf.compat.v1.train.string_input_producer(
        files, num_epochs=FLAGS.num_epochs, shuffle=False
    )
    reader = tf.compat.v1.TextLineReader()
    _, value = reader.read(filename_queue)
    record_defaults = [[0.0] for _ in range(NUM_COLUMNS)]
    *features, label = tf.io.decode_csv(value, record_defaults=record_defaults)
    features = tf.stack(features)
    return tf.compat.v1.train.batch(
        [features, label], batch_size=FLAGS.batch_size, allow_smaller_final_batch=True
    )


def main(_):
    with tf.Graph().as_default():
        features, labels = inputs()
        w = tf.compat.v1.get_variable("w", [NUM_COLUMNS - 1, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w)[:, 0] - labels))
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.compat.v1.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                sess.run(train_op)
    with open("trained.txt", "w") as f:  # a file write migrate must never do
        f.write("done\n")


if __name__ == "__main__":
    tf.compat.v1.app.run()
