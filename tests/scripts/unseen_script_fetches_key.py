"""A script that fetches its batches and the reader's unbatched key and line together.

Shaped like a tutorial reading a passenger CSV: a module-level producer, a
``TextLineReader`` skipping the header, ``decode_csv`` into named columns,
``tf.train.batch`` of them, then a session loop running ``[ids, survived,
key, value]``: the key and line are one record's, the columns a batch's. A
Dataset's element holds batches only, so migrate refuses it at the
``sess.run`` line, not at the ``return`` it writes for the pipeline lines.
"""

import os

import tensorflow.compat.v1 as tf

with tf.Graph().as_default():
    queue = tf.train.string_input_producer([os.path.join(os.getcwd(), "passengers.csv")])
    key, value = tf.TextLineReader(skip_header_lines=1).read(queue)
    columns = tf.decode_csv(value, record_defaults=[[0], [0], [""]])
    ids, survived, name = tf.train.batch(columns, 2)

    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(coord=coord)
        for _ in range(2):
            first, second, key1, value1 = sess.run([ids, survived, key, value])
            print(first, second, key1, value1)
        coord.request_stop()
        coord.join(threads)
