"""Shaped like a public style-transfer input (a hackathon's neural-style reader).

Each image is paired with a style index dequeued from a second producer,
``range_input_producer(num_styles).dequeue()``, before a reading helper reads
the image from the file queue; both go into one ``shuffle_batch`` list. The
two sources are read in lockstep: with ``shuffle=True`` (as published) the
pairs are random and migrate refuses with the fix; unshuffled, the index
Dataset is zipped with the image records.
"""

import tensorflow.compat.v1 as tf


def read_file(filename_queue):
    reader = tf.WholeFileReader()
    _, contents = reader.read(filename_queue)
    return tf.strings.length(contents)


def style_input(files, batch_size, num_styles=3, shuffle=True):
    file_queue = tf.train.string_input_producer(files, shuffle=shuffle, num_epochs=1)
    index_queue = tf.train.range_input_producer(num_styles, shuffle=shuffle)
    index = index_queue.dequeue()
    length = read_file(file_queue)
    return tf.train.shuffle_batch(
        [length, index], batch_size=batch_size, capacity=8, min_after_dequeue=2
    )
