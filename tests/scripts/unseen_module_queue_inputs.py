"""Shaped like public TF 1.x training modules that make their filename queue at
module level (our own code): the file list and the producer are module globals,
built when the module is imported, and ``inputs(batch_size)`` reads from that
queue with a reader of its own, parses, and batches. Beside them the module
keeps other code (a model function, constants) that reads no queue.

``inputs`` reads ``filename_queue`` (shuffled files, forever, as training
modules do); ``eval_inputs`` reads ``eval_queue`` (one epoch, in order) through
a reader made at module level too.
"""

import glob
import os

import tensorflow as tf

DATA_DIR = os.environ.get("SHAPES_DIR", os.path.dirname(os.path.abspath(__file__)))
FILES = sorted(glob.glob(os.path.join(DATA_DIR, "shapes-*.tfrecords")))
SIDE = 3
FEATURES = {
    "pixels": tf.io.FixedLenFeature([SIDE * SIDE], tf.float32),
    "label": tf.io.FixedLenFeature([], tf.int64),
}

filename_queue = tf.compat.v1.train.string_input_producer(FILES, num_epochs=None, shuffle=True)
eval_queue = tf.compat.v1.train.string_input_producer(FILES, num_epochs=1, shuffle=False)
eval_reader = tf.compat.v1.TFRecordReader()


def inputs(batch_size):
    reader = tf.compat.v1.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    features = tf.io.parse_single_example(serialized, features=FEATURES)
    image = tf.reshape(features["pixels"], [SIDE, SIDE, 1])
    label = tf.cast(features["label"], tf.int32)
    return tf.compat.v1.train.shuffle_batch(
        [image, label], batch_size=batch_size, capacity=60, min_after_dequeue=20
    )


def eval_inputs(batch_size):
    _, serialized = eval_reader.read(eval_queue)
    features = tf.io.parse_single_example(serialized, features=FEATURES)
    image = tf.reshape(features["pixels"], [SIDE, SIDE, 1]) * 2.0
    return tf.compat.v1.train.batch([image, features["label"]], batch_size=batch_size)


def model(images):
    return tf.reduce_mean(images, axis=[1, 2, 3])
