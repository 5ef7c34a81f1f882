"""A tutorial script: two CSV decoders on one reader, joined.

Shaped like a Chinese TF 1.x tutorial's join.py (comments kept in their
language): module-level ``string_input_producer`` over CSV files, one
``TextLineReader``, a list comprehension of two ``decode_csv`` copies on the
same ``value`` (the "two readers" of the comment), ``batch_join``, and a
session that prints a batch. Used by ``queue-pipeline migrate
tests/scripts/unseen_join_script.py --epochs 4`` run in the folder of its CSV files.
"""

import tensorflow.compat.v1 as tf

filenames = ["A.csv", "B.csv", "C.csv"]
filename_queue = tf.train.string_input_producer(filenames, shuffle=False)
reader = tf.TextLineReader()
key, value = reader.read(filename_queue)
record_defaults = [["null"], ["null"]]
# 定义了多种解码器,每个解码器跟一个reader相连
example_list = [
    tf.decode_csv(value, record_defaults=record_defaults) for _ in range(2)
]  # Reader设置为2
# 使用tf.train.batch_join()，可以使用多个reader，并行读取数据。每个Reader使用一个线程。
example_batch, label_batch = tf.train.batch_join(example_list, batch_size=8)
with tf.Session() as sess:
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(coord=coord)
    for _ in range(1):
        e_val, l_val = sess.run([example_batch, label_batch])
        print(e_val, l_val)
    coord.request_stop()
    coord.join(threads)
