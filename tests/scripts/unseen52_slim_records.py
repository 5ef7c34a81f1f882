"""Word-count records read from TFRecords, in a file that also builds slim datasets.

The file imports TF 1.x's contrib slim (gone in TensorFlow 2.x) for a
provider the batching function never uses.
"""

import tensorflow.compat.v1 as tf
import tensorflow.contrib.slim as slim

FEATURES = {"count": tf.FixedLenFeature([], tf.int64)}


def slim_provider(files):
    """The slim way (TF 1.x only)."""
    return slim.dataset.Dataset(
        data_sources=files,
        reader=tf.TFRecordReader,
        decoder=None,
        num_samples=0,
        items_to_descriptions={},
    )


def count_batches(files, batch_size):
    """Batches of counts, in file order, one epoch."""
    queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, blob = tf.TFRecordReader().read(queue)
    count = tf.parse_single_example(blob, features=FEATURES)["count"]
    return tf.train.batch([count], batch_size=batch_size)
