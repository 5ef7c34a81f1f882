"""Shaped like a public module-level script that reads its records through another module.

argparse flags at module level, then ``image, label = read_examples(flags.data_dir,
width=4, height=3)`` imported from a sibling module
(``unseen_helper_module_reader.py``), which lists the directory, makes a
shuffled filename producer, several readers and ``shuffle_batch_join``; then
a session loop over a few runs of the batches.
"""

import argparse

import tensorflow as tf

from unseen_helper_module_reader import read_examples

parser = argparse.ArgumentParser()
parser.add_argument("--data_dir", required=True)
flags = parser.parse_args()

image, label = read_examples(flags.data_dir, width=4, height=3)

with tf.compat.v1.Session() as sess:
    coord = tf.compat.v1.train.Coordinator()
    threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
    for _ in range(2):
        pixels, names = sess.run([image, label])
        print(pixels.shape, names)
    coord.request_stop()
    coord.join(threads)
