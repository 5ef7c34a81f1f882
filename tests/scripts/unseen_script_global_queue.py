"""Shaped like a public face-detection TFRecord reader script.

The reading function takes no argument: it reads the filename queue made at
module level below it as a global, parses a record with fixed and variable
length features, and is called as the first line of the ``with
tf.Session()`` block, which then prints three records.
"""

import tensorflow.compat.v1 as tf

tf.disable_eager_execution()


def read_and_decode():
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized_example,
        features={
            "image/height": tf.FixedLenFeature((), tf.int64, 1),
            "image/name": tf.FixedLenFeature((), tf.string, default_value=""),
            "image/object/bbox/xmin": tf.VarLenFeature(tf.float32),
        },
    )
    height = tf.cast(features["image/height"], tf.int32)
    xmin = features["image/object/bbox/xmin"]
    return height, features["image/name"], xmin


filename = "faces.tfrecord"
filename_queue = tf.train.string_input_producer([filename], shuffle=False)


with tf.Session() as sess:
    height, name, xmin = read_and_decode()
    # height = tf.reshape(height, [])
    sess.run(tf.global_variables_initializer())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(coord=coord)
    for _ in range(3):
        height_out, name_out, xmin_out = sess.run([height, name, xmin])
        print(height_out, name_out, list(xmin_out.values))
    coord.request_stop()
    coord.join(threads)
