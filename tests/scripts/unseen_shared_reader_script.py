"""A script shaped like a public captcha recognizer's data module (TF 1.x era).

At module level, ONE ``TFRecordReader`` reads a training and then a test
filename queue, the name ``serialized_example`` is bound again for the second
read, and each batch is decoded after the batching call (``decode_raw`` on the
batch). migrate writes both pipelines (the reader stays until the second
one's read) and proves each.
"""

import tensorflow.compat.v1 as tf

DATA = "data"

reader = tf.TFRecordReader()
filename_queue = tf.train.string_input_producer([DATA + "/train.tfrecords"])
_, serialized_example = reader.read(filename_queue)
features_train = tf.parse_single_example(
    serialized_example,
    features={"data": tf.FixedLenFeature([], tf.string), "label": tf.FixedLenFeature([], tf.int64)},
)
image_batch_train0, label_batch_train = tf.train.batch(
    [features_train["data"], features_train["label"]], batch_size=5, capacity=20
)
image_batch_train = tf.decode_raw(image_batch_train0, tf.uint8)

filename_queue_test = tf.train.string_input_producer([DATA + "/test.tfrecords"])
_, serialized_example = reader.read(filename_queue_test)
features_test = tf.parse_single_example(
    serialized_example,
    features={"data": tf.FixedLenFeature([], tf.string), "label": tf.FixedLenFeature([], tf.int64)},
)
image_batch_test0, label_batch_test = tf.train.batch(
    [features_test["data"], features_test["label"]], batch_size=5, capacity=20
)
image_batch_test = tf.decode_raw(image_batch_test0, tf.uint8)

with tf.Session() as sess:
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    print(sess.run([image_batch_train, label_batch_test]))
    coord.request_stop()
    coord.join(threads)
