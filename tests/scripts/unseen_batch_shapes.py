"""Variable-length sequences batched with padding and an explicit ``shapes=``.

Shaped like a public TF 1.x ECG classifier's input ops: a module-level
options object, a ``TFRecordReader`` helper that parses a
``SequenceExample`` (a float sequence, its length and a label in the
context), ``placeholder_with_default(data, [None])`` on the sequence, casts,
and ``tf.train.batch([data, length, label], batch_size, threads, capacity,
shapes=[[None], [], []], dynamic_pad=True)`` inside name scopes: the shapes
repeat what the records already say. Beside it, fixed-length windows whose
static shape is unknown and whose ``shapes=`` fixes it (the batch checks
each record), ``enqueue_many`` rows with their shapes, and two readers of
windows joined with ``shapes=`` (refused: set the shape in the reader).
"""

import tensorflow.compat.v1 as tf


class Options(object):
    pass


OPTIONS = Options()
OPTIONS.batch_size = 16
OPTIONS.capacity = 64
OPTIONS.threads = 2
WINDOW = 6


def parse_sequence(filename_queue):
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    context, sequence = tf.parse_single_sequence_example(
        serialized=serialized,
        context_features={
            "length": tf.FixedLenFeature([], dtype=tf.int64),
            "label": tf.FixedLenFeature([], dtype=tf.int64),
        },
        sequence_features={"signal": tf.FixedLenSequenceFeature([], dtype=tf.float32)},
    )
    return sequence["signal"], context["length"], context["label"]


def padded_producer(
    path, batch_size=OPTIONS.batch_size, capacity=OPTIONS.capacity, threads=OPTIONS.threads
):
    if isinstance(path, str):
        path = [path]
    with tf.name_scope("producer"):
        queue = tf.train.string_input_producer(path, shuffle=False, name="files")
        with tf.name_scope("records"):
            signal, length, label = parse_sequence(queue)
            signal = tf.placeholder_with_default(signal, [None], name="signal")
            length = tf.cast(length, tf.int32)
            label = tf.cast(label, tf.int32)
        batch = tf.train.batch(
            [signal, length, label],
            batch_size,
            threads,
            capacity,
            shapes=[[None], [], []],
            dynamic_pad=True,
            name="padded_batch",
        )
    return batch


def window_producer(path, batch_size=4, window=WINDOW):
    queue = tf.train.string_input_producer([path], shuffle=False, num_epochs=1)
    signal, _, label = parse_sequence(queue)
    first = signal[:window]  # static shape [None]: the slice's length is not known
    return tf.train.batch([first, label], batch_size, shapes=[[window], []])


def window_rows(path, batch_size=4, window=WINDOW):
    queue = tf.train.string_input_producer([path], shuffle=False, num_epochs=1)
    signal, _, _ = parse_sequence(queue)
    rows = tf.reshape(signal[: 2 * window], [2, -1])  # two rows of unknown width
    return tf.train.batch([rows], batch_size, enqueue_many=True, shapes=[[window]])


def read_window(queue, window=WINDOW):
    signal, _, label = parse_sequence(queue)
    return signal[:window], label


def joined_windows(path, batch_size=4, window=WINDOW):
    queue = tf.train.string_input_producer([path], shuffle=False, num_epochs=1)
    return tf.train.batch_join(
        [read_window(queue) for _ in range(2)], batch_size, shapes=[[window], []]
    )
