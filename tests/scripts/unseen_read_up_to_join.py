"""CSV rows read in chunks and joined from a literal list.

Shaped like a public TF 1.x CSV reader: a function over a list of CSV files
with ``string_input_producer(num_epochs=...)``, a ``TextLineReader`` whose
``read_up_to(queue, batch_size)`` returns up to a batch of lines at once,
``decode_csv`` on that chunk (one vector per column, string defaults), and
``shuffle_batch_join([columns], enqueue_many=True, ...)``: a join of one list,
so one enqueue thread, of rows. Beside it, the same rows read by a reading
helper called twice in a literal list (two readers of one queue joined by
``batch_join``) or once, and a join of two lists read by different helpers (refused).
"""

import tensorflow.compat.v1 as tf

DEFAULTS = [[""], [""], ["0"], ["0"]]


def chunk_read(file_list, batch_size=512, num_epochs=1):
    queue = tf.train.string_input_producer(file_list, num_epochs=num_epochs)

    reader = tf.TextLineReader()
    _, lines = reader.read_up_to(queue, batch_size)

    # every column of the chunk as a vector
    columns = tf.decode_csv(lines, field_delim=",", record_defaults=DEFAULTS)
    return tf.train.shuffle_batch_join(
        [columns],
        batch_size=batch_size,
        capacity=batch_size * 5,
        enqueue_many=True,
        min_after_dequeue=batch_size,
    )


def read_row(queue):
    reader = tf.TextLineReader()
    _, line = reader.read(queue)
    name, city, count, score = tf.decode_csv(line, record_defaults=DEFAULTS)
    return name, city, tf.strings.to_number(count, tf.int32), score


def read_row_upper(queue):
    reader = tf.TextLineReader()
    _, line = reader.read(queue)
    name, city, count, score = tf.decode_csv(line, record_defaults=DEFAULTS)
    return tf.strings.upper(name), city, tf.strings.to_number(count, tf.int32), score


def two_readers(file_list, batch_size=4):
    queue = tf.train.string_input_producer(file_list, num_epochs=1, shuffle=False)
    rows = tf.train.batch_join(
        [read_row(queue), read_row(queue)], batch_size=batch_size, capacity=8 * batch_size
    )
    return rows


def one_reader(file_list, batch_size=4):
    queue = tf.train.string_input_producer(file_list, num_epochs=1, shuffle=False)
    return tf.train.batch_join([read_row(queue)], batch_size=batch_size)


def two_helpers(file_list, batch_size=4):
    queue = tf.train.string_input_producer(file_list, num_epochs=1, shuffle=False)
    return tf.train.batch_join([read_row(queue), read_row_upper(queue)], batch_size=batch_size)


def get_splits(train_files, test_files, batch_size=512, num_epochs=1):
    train, test = [], []
    for f in train_files:
        if f.endswith("csv"):
            train.append(chunk_read([f], batch_size, num_epochs))
    for f in test_files:
        if f.endswith("csv"):
            test.append(chunk_read([f], batch_size, num_epochs))
    return train, test
