"""Shaped like a public lung-CT program's reader of ZLIB-compressed TFRecord blocks.

``TF_Records(files, block_shape).read_records(batch_size)`` makes its
``TFRecordOptions`` from ``TFRecordCompressionType.ZLIB`` in a variable,
hands it to ``TFRecordReader(options=...)``, parses raw int16 blocks and
their labels and batches them in order. ``read_gzip(files, batch_size)``
spells the options inline, as a string with another field
(``compression_level``), the way a writer's options are often reused.
"""

import tensorflow as tf


class TF_Records(object):
    def __init__(self, files, block_shape):
        self.files = files
        self.block_shape = block_shape

    def read_records(self, batch_size=2):
        filename_queue = tf.compat.v1.train.string_input_producer(
            self.files, shuffle=False, num_epochs=1
        )
        options = tf.io.TFRecordOptions(tf.compat.v1.python_io.TFRecordCompressionType.ZLIB)
        reader = tf.compat.v1.TFRecordReader(options=options)
        _, serialized = reader.read(filename_queue)
        features = tf.io.parse_single_example(
            serialized,
            features={
                "original": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64),
            },
        )
        block = tf.reshape(tf.io.decode_raw(features["original"], tf.int16), self.block_shape)
        blocks, labels = tf.compat.v1.train.batch([block, features["label"]], batch_size)
        return {"original": blocks, "label": labels}


def read_gzip(files, batch_size=2):
    queue = tf.compat.v1.train.string_input_producer(files, shuffle=False, num_epochs=1)
    reader = tf.compat.v1.TFRecordReader(
        options=tf.io.TFRecordOptions(compression_type="GZIP", compression_level=9)
    )
    _, serialized = reader.read(queue)
    label = tf.io.parse_single_example(
        serialized, features={"label": tf.io.FixedLenFeature([], tf.int64)}
    )["label"]
    return tf.compat.v1.train.batch([label], batch_size)
