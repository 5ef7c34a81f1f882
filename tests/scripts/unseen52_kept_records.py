"""A paired-record input whose batching keeps only the valid records (our own code).

Shaped like the sketch-to-image GAN inputs of the TF 1.x era: a reading
helper returns seven values (the tensors, a per-record ``is_valid`` flag and
three attributes the caller throws away as ``_, _, _``), then
``maybe_batch`` / ``maybe_shuffle_batch`` with ``keep_input=is_valid``, then an
``if one_hot:`` / ``else:`` on a Python flag computing the labels from the
batched class ids. More functions put ``keep_input`` to the other uses the
legacy API allows (a whole input batch or rows of it with ``enqueue_many``, a
Python bool, a join of one list) and the refused ones (``keep_input=False``, a
join of several lists); ``branch_per_record`` has an ``if`` on a Python flag
between the read and the batch, and starred and nested unpacking targets.
Used by ``tests/test_migrate_round52_kept.py``; the CSV rows are
``id,value,class_id,flag`` and a record is valid when its flag is not 0.
"""

import tensorflow as tf

NUM_CLASSES = 4


def read_pair(filenames):
    queue = tf.compat.v1.train.string_input_producer(filenames, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    rid, value, class_id, flag = tf.io.decode_csv(line, [[0], [0.0], [0], [0]])
    feature = tf.stack([value, value * 2.0])
    mask = tf.cast(rid % 2, tf.float32)
    is_valid = tf.not_equal(flag, 0)
    return feature, mask, class_id, is_valid, rid, flag, value


def class_labels(class_ids):
    return tf.one_hot(class_ids, NUM_CLASSES)


def dense_labels(labels):
    return tf.argmax(labels, axis=1) * 10


def kept_batches(filenames, batch_size, one_hot=False):
    feature, mask, class_id, is_valid, _, _, _ = read_pair(filenames)
    features, masks, class_ids = tf.compat.v1.train.maybe_batch(
        [feature, mask, class_id], keep_input=is_valid, batch_size=batch_size, capacity=16
    )
    if one_hot:
        labels = class_labels(class_ids)
    else:
        labels = dense_labels(class_labels(class_ids))
    return features, masks, labels


def kept_shuffled(filenames, batch_size, one_hot=False):
    feature, mask, class_id, is_valid, _, _, _ = read_pair(filenames)
    features, masks, class_ids = tf.compat.v1.train.maybe_shuffle_batch(
        [feature, mask, class_id],
        batch_size=batch_size,
        capacity=64,
        keep_input=is_valid,
        min_after_dequeue=8,
        num_threads=2,
    )
    if one_hot:
        labels = class_labels(class_ids)
    else:
        labels = dense_labels(class_labels(class_ids))
    return features, masks, labels


def kept_join_of_one(filenames, batch_size):
    feature, _, class_id, is_valid, _, _, _ = read_pair(filenames)
    return tf.compat.v1.train.maybe_batch_join([[feature, class_id]], is_valid, batch_size)


def kept_whole_inputs(filenames, batch_size):
    feature, mask, class_id, is_valid, rid, _, _ = read_pair(filenames)
    rows = tf.stack([feature, feature + 100.0])
    ids = tf.stack([rid, rid + 1000])
    return tf.compat.v1.train.maybe_batch([rows, ids], is_valid, batch_size, enqueue_many=True)


def kept_rows(filenames, batch_size):
    feature, mask, class_id, is_valid, rid, _, _ = read_pair(filenames)
    rows = tf.stack([feature, feature + 100.0])
    ids = tf.stack([rid, rid + 1000])
    keep = tf.stack([is_valid, tf.logical_not(is_valid)])
    return tf.compat.v1.train.maybe_batch([rows, ids], keep, batch_size, enqueue_many=True)


def kept_by_flag(filenames, batch_size, keep_all=True):
    feature, mask, class_id, is_valid, _, _, _ = read_pair(filenames)
    return tf.compat.v1.train.maybe_batch([feature, class_id], keep_all, batch_size)


def kept_none(filenames, batch_size):
    feature, mask, class_id, is_valid, _, _, _ = read_pair(filenames)
    return tf.compat.v1.train.maybe_batch([feature, class_id], False, batch_size)


def read_two(filenames):
    feature, _, class_id, _, _, _, _ = read_pair(filenames)
    return [feature, class_id]


def kept_join_of_two(filenames, batch_size, keep=True):
    return tf.compat.v1.train.maybe_batch_join(
        [read_two(filenames), read_two(filenames)], tf.constant(keep), batch_size
    )


def branch_per_record(filenames, batch_size, double=False):
    feature, *rest = read_pair(filenames)
    if double:
        feature = feature * 2.0
        scale = 2.0
    else:
        feature = feature - 1.0
        scale = 0.5
    mask = rest[0] * scale
    return tf.compat.v1.train.batch([feature, mask, rest[1]], batch_size)


def read_nested(filenames):
    feature, mask, class_id, _, _, _, _ = read_pair(filenames)
    return (feature, mask), class_id


def nested_targets(filenames, batch_size):
    (feature, mask), class_id = read_nested(filenames)
    return tf.compat.v1.train.batch([feature + mask, class_id], batch_size)
