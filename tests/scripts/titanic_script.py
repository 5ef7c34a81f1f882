"""A logistic regression script whose session initializes before it builds its input.

Shaped like backstopmedia/tensorflowbook ``chapter4/logistic_regression.py``:
``read_csv(batch_size, file_name, record_defaults)`` (a ``TextLineReader`` on
``string_input_producer``, ``decode_csv``, ``shuffle_batch``), ``inputs()``
making features from its columns, then at module level ``with tf.Session() as
sess: tf.global_variables_initializer().run()`` *before* ``X, Y = inputs()``,
the model, and the queue runners. Copied as ``logistic_regression.py``.
"""

import os

import tensorflow.compat.v1 as tf

W = tf.Variable(tf.zeros([2, 1]), name="weights")
b = tf.Variable(0.0, name="bias")


def read_csv(batch_size, file_name, record_defaults):
    filename_queue = tf.train.string_input_producer(
        [os.path.join(os.getcwd(), file_name)], num_epochs=1
    )
    reader = tf.TextLineReader(skip_header_lines=1)
    key, value = reader.read(filename_queue)
    decoded = tf.decode_csv(value, record_defaults=record_defaults)
    return tf.train.shuffle_batch(
        decoded, batch_size=batch_size, capacity=batch_size * 5, min_after_dequeue=batch_size
    )


def inputs():
    passenger_id, survived, age, fare = read_csv(4, "train.csv", [[0.0], [0.0], [0.0], [0.0]])
    features = tf.transpose(tf.stack([age, fare]))
    survived = tf.reshape(survived, [4, 1])
    return features, survived


with tf.Session() as sess:
    tf.global_variables_initializer().run()
    X, Y = inputs()
    total_loss = tf.reduce_mean(tf.square(tf.matmul(X, W) + b - Y))
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    print(sess.run([total_loss]))
    coord.request_stop()
    coord.join(threads)
