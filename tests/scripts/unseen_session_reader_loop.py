"""Shaped like a public video-classification repository's TFRecord reader test.

A module-level function opens a Session, makes the filename producer, sets a
plain value the loop below reads (``steps``, and a ``cont`` flag) between the
producer and the reading helper's call, then reads batches in a loop until
the flag says stop. The helper reads the producer's queue with a
TextLineReader, decodes CSV and batches.
"""

import tensorflow.compat.v1 as tf


def read_batch(filename_queue, batch_size):
    reader = tf.TextLineReader()
    _, line = reader.read(filename_queue)
    (label,) = tf.decode_csv(line, record_defaults=[[0]])
    return tf.train.batch([label], batch_size=batch_size)


def test_read(path, batch_size=4):
    with tf.Session() as sess:
        filename_queue = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
        steps = 2
        cont = "y"
        labels = read_batch(filename_queue, batch_size)
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(coord=coord, sess=sess)
        seen = []
        while cont == "y" and len(seen) < steps:
            seen.append(sess.run(labels))
        coord.request_stop()
        coord.join(threads)
        return seen
