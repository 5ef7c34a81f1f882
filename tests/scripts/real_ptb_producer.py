"""Shaped like TensorFlow models' ptb reader.py: ``ptb_producer(raw_data, ...)`` takes a
Python list, rebinds the parameter to a tensor, and reads windows of it at an index that
``range_input_producer(...).dequeue()`` gives.
"""

import tensorflow as tf


def ptb_producer(raw_data, batch_size, num_steps, name=None):
    with tf.compat.v1.name_scope(name, "PTBProducer", [raw_data, batch_size, num_steps]):
        raw_data = tf.convert_to_tensor(raw_data, name="raw_data", dtype=tf.int32)
        data_len = tf.size(raw_data)
        batch_len = data_len // batch_size
        data = tf.reshape(raw_data[0 : batch_size * batch_len], [batch_size, batch_len])
        epoch_size = (batch_len - 1) // num_steps
        assertion = tf.compat.v1.assert_positive(
            epoch_size, message="epoch_size == 0, decrease batch_size or num_steps"
        )
        with tf.control_dependencies([assertion]):
            epoch_size = tf.identity(epoch_size, name="epoch_size")
        i = tf.compat.v1.train.range_input_producer(epoch_size, shuffle=False).dequeue()
        x = tf.strided_slice(data, [0, i * num_steps], [batch_size, (i + 1) * num_steps])
        x.set_shape([batch_size, num_steps])
        y = tf.strided_slice(data, [0, i * num_steps + 1], [batch_size, (i + 1) * num_steps + 1])
        y.set_shape([batch_size, num_steps])
        return x, y
