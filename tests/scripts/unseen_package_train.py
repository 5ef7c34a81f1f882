"""A training entry that builds its queue, reads through a package's function and
runs the session itself (issue #41).

Shaped like calzonelover/Object_Detection's train.py: argparse flags, then in
``main()`` the filename queue, ``read_and_decode`` imported from
``datasets/read.py`` (which prints the shapes it builds), and a Session loop.
"""

import argparse

import tensorflow.compat.v1 as tf

from unseen_datasets.read import read_and_decode

parser = argparse.ArgumentParser()
parser.add_argument("--tfrecord", default="train.tfrecords")
parser.add_argument("--batch_size", type=int, default=4)
args = parser.parse_args()


def main():
    filename_queue = tf.train.string_input_producer([args.tfrecord])
    boxes, labels = read_and_decode(filename_queue, args.batch_size)
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        for _ in range(2):
            print(sess.run([boxes, labels])[1])
        coord.request_stop()
        coord.join(threads)


if __name__ == "__main__":
    main()
