"""A reading function in a package (issue #41).

Shaped like calzonelover/Object_Detection's datasets/read.py: handed its
filename queue, it reads, parses and batches with ``dynamic_pad``.
"""

import tensorflow.compat.v1 as tf

BOX = 4  # numbers per box


def read_and_decode(filename_queue, batch_size):
    _, serialized = tf.TFRecordReader().read(filename_queue)
    features = tf.parse_single_example(
        serialized,
        features={
            "boxes": tf.VarLenFeature(tf.float32),
            "label": tf.FixedLenFeature([], tf.int64),
        },
    )
    boxes = tf.reshape(tf.sparse_tensor_to_dense(features["boxes"]), [-1, BOX])
    print("boxes:", boxes.get_shape())  # the public file prints what it builds
    return tf.train.batch([boxes, features["label"]], batch_size, dynamic_pad=True)
