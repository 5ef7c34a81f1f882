"""Shaped like a public collaborative-filtering script written for TensorFlow 0.x.

At module level: a filename producer over a ratings CSV, a TextLineReader,
``decode_csv`` of user, item and rating, then ``tf.pack`` (TF 0.x's name of
``tf.stack``) of the user and item, no batching call, and a session loop
fetching one record at a time.
"""

import tensorflow as tf

filename_queue = tf.train.string_input_producer(["ratings.csv"])
reader = tf.TextLineReader()
key, value = reader.read(filename_queue)
col1, col2, col3 = tf.decode_csv(value, record_defaults=[[1], [1], [1.0]])
features = tf.pack([col1, col2])

with tf.Session() as sess:
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(coord=coord)
    for _ in range(12):
        example, label = sess.run([features, col3])
        print(example, label)
    coord.request_stop()
    coord.join(threads)
