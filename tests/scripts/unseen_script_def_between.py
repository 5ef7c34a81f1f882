"""Shaped like a public YouTube-8M audio TFRecord reader script.

Module-level parameters, then the filename producer, THEN the definition of
the reading function (its parameter named like the producer), then its call
at module level, and a Session block that reads two batches.
"""

import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

# parameters
csv_path = "rows.csv"
batch_size = 3

# the queue of file names
filename_queue = tf.train.string_input_producer([csv_path], num_epochs=1, shuffle=False)


def read_rows(filename_queue):
    reader = tf.TextLineReader()
    _, line = reader.read(filename_queue)
    ident, score = tf.decode_csv(line, record_defaults=[[0], [0.0]])
    return tf.train.batch([ident, score * 2.0], batch_size=batch_size)


ids, scores = read_rows(filename_queue)

with tf.Session() as sess:
    sess.run(tf.local_variables_initializer())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(coord=coord)
    for _ in range(2):
        got_ids, got_scores = sess.run([ids, scores])
        print(list(got_ids), list(got_scores))
    coord.request_stop()
    coord.join(threads)
