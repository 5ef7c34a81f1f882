"""Input code whose own variable is named ``dataset`` (the data set's name), read late.

Shaped like a depth-estimation loader whose constructor takes ``dataset``
(which data set: its crop differs) and reads it after the batching call.
``inputs(path, dataset, batch_size)`` offsets the batches by the data set's
offset after batching them; ``Loader(path, dataset, batch_size)`` does the
same in a constructor that keeps the batches as an attribute; ``scaled(records)``
hands its file list to the producer and reads it again after batching. Run as a
script, the module-level lines do it with a global ``dataset``. Used by
``tests/test_migrate_generated_names.py``: NOTE [ Names the written code binds ].
"""

import tensorflow.compat.v1 as tf

OFFSETS = {"small": 100, "large": 1000}


def inputs(path, dataset, batch_size=2):
    queue = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(queue)
    (value,) = tf.decode_csv(line, [[0]])
    values = tf.train.batch([value], batch_size)
    values = values + OFFSETS[dataset]
    return values


def scaled(records, batch_size=2):
    """``records``: the list of files, handed to the producer and read again after batching."""
    queue = tf.train.string_input_producer(records, num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(queue)
    (value,) = tf.decode_csv(line, [[0]])
    values = tf.train.batch([value], batch_size)
    return values * len(records)


class Loader(object):
    """Keeps the offset batches of one data set."""

    def __init__(self, path, dataset, batch_size=2):
        self.dataset = dataset
        queue = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
        _, line = tf.TextLineReader().read(queue)
        (value,) = tf.decode_csv(line, [[0]])
        values = tf.train.batch([value], batch_size)
        self.values = values + OFFSETS[dataset]


if __name__ == "__main__":
    import sys

    dataset = "large"
    with tf.Graph().as_default():
        queue = tf.train.string_input_producer([sys.argv[1]], num_epochs=1, shuffle=False)
        _, line = tf.TextLineReader().read(queue)
        (value,) = tf.decode_csv(line, [[0]])
        values = tf.train.batch([value], 2)
        offset = values + OFFSETS[dataset]
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while True:
                    print(dataset, sess.run(offset).tolist())
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads)
