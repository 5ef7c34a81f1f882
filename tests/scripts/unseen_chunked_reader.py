"""Shaped like readers that read records in chunks (youtube-8m's aggregated
features, ShuffleNet's ``_get_data``): ``reader.read_up_to(queue, n)``, a
batch parse of the chunk, then a batching call with ``enqueue_many=True``;
a CSV variant with a header line per file.
"""

import tensorflow.compat.v1 as tf


def chunked_inputs(files, batch_size, chunk=3):
    filename_queue = tf.train.string_input_producer(files, shuffle=False, num_epochs=1)
    reader = tf.TFRecordReader()
    _, serialized = reader.read_up_to(filename_queue, chunk)
    features = tf.parse_example(
        serialized,
        features={
            "x": tf.FixedLenFeature([2], tf.float32),
            "label": tf.FixedLenFeature([], tf.int64),
        },
    )
    return tf.train.batch(
        [features["x"], features["label"]],
        batch_size,
        enqueue_many=True,
        allow_smaller_final_batch=True,
    )


def csv_chunks(files, batch_size):
    filename_queue = tf.train.string_input_producer(files, shuffle=False, num_epochs=2)
    reader = tf.TextLineReader(skip_header_lines=1)
    _, lines = reader.read_up_to(filename_queue, num_records=4)
    a, b = tf.decode_csv(lines, record_defaults=[[0], [0.0]])
    return tf.train.shuffle_batch(
        [a, b * 2.0], batch_size, capacity=30, min_after_dequeue=5, enqueue_many=True
    )
