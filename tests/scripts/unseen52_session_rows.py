"""Shaped like CSV tutorials that test their queues in the same function: a
helper parses a row of a shuffled file-name queue, the rows are shuffle-batched,
and the session loop binds the per-record names again to the batches' values;
one helper also dequeues a file name from the queue its reader reads.
"""

import tensorflow.compat.v1 as tf

DEFAULTS = [[0.0], [0.0], [0.0], [0]]


def parse_row(file_queue):
    reader = tf.TextLineReader()
    _, line = reader.read(file_queue)
    a, b, c, label = tf.decode_csv(line, record_defaults=DEFAULTS)
    return tf.stack([a, b, c]), label


def parse_row_peeking(file_queue):
    peeked = file_queue.dequeue()
    reader = tf.TextLineReader()
    _, line = reader.read(file_queue)
    a, b, c, label = tf.decode_csv(line, record_defaults=DEFAULTS)
    return tf.stack([a, b, c]), label, peeked


def train_rows(files, batch_size=2, num_epochs=1):
    file_queue = tf.train.string_input_producer(files, num_epochs=num_epochs, shuffle=True)
    features, label = parse_row(file_queue)
    feature_batch, label_batch = tf.train.shuffle_batch(
        [features, label], batch_size=batch_size, capacity=10, min_after_dequeue=4, num_threads=2
    )
    config = tf.ConfigProto(operation_timeout_in_ms=20000)
    with tf.Session(config=config) as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(coord=coord)
        seen = 0
        try:
            while not coord.should_stop():
                features, label = sess.run([feature_batch, label_batch])
                seen += len(label)
                print(features.shape, "->", label)
        except tf.errors.OutOfRangeError:
            print("done after", seen, "rows")
        finally:
            coord.request_stop()
        coord.join(threads)
    return seen


def peek_rows(files, batch_size=2, num_epochs=1):
    file_queue = tf.train.string_input_producer(files, num_epochs=num_epochs, shuffle=True)
    features, label, peeked = parse_row_peeking(file_queue)
    feature_batch, label_batch = tf.train.shuffle_batch(
        [features, label], batch_size=batch_size, capacity=10, min_after_dequeue=4, num_threads=2
    )
    config = tf.ConfigProto(operation_timeout_in_ms=20000)
    with tf.Session(config=config) as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(coord=coord)
        print(sess.run(peeked))
        try:
            while not coord.should_stop():
                features, label = sess.run([feature_batch, label_batch])
                print(features, "->", label)
        except tf.errors.OutOfRangeError:
            print("done")
        finally:
            coord.request_stop()
        coord.join(threads)
