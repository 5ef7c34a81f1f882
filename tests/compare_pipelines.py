"""Small legacy pipelines and hand-written tf.data twins for test_compare and test_cli.

Each ``legacy_*`` builds a queue pipeline in the current graph and returns
its outputs; each ``twin_*`` returns a ``tf.data.Dataset``. ``twin_range`` is
the true twin of ``legacy_range``; the other twins inject one difference.
"""

from __future__ import annotations

import tensorflow as tf

import queue_pipeline as qp

N = 10
BATCH = 4
VALUES = list(range(N))


def legacy_range(num_epochs=1):
    x = qp.range_input_producer(N, num_epochs=num_epochs, shuffle=False).dequeue()
    return qp.batch([x], BATCH, allow_smaller_final_batch=True)


def legacy_range_2_epochs():
    return legacy_range(num_epochs=2)


def legacy_forever():
    return legacy_range(num_epochs=None)


def _twin(values, dtype=tf.int32):
    return tf.data.Dataset.from_tensor_slices(tf.constant(values, dtype)).batch(BATCH)


def twin_range():
    return _twin(VALUES)


def twin_range_2_epochs():
    return _twin(VALUES).unbatch().repeat(2).batch(BATCH)


def twin_dropped():
    return _twin([v for v in VALUES if v != 3])


def twin_duplicated():
    return _twin(VALUES[:6] + [5] + VALUES[6:])


def twin_int64():
    return _twin(VALUES, tf.int64)


def twin_pairs():
    """Each example has shape [2] instead of []."""
    return tf.data.Dataset.from_tensor_slices(
        tf.constant([[v, v] for v in VALUES], tf.int32)
    ).batch(BATCH)


def twin_swapped():
    return _twin([1, 0] + VALUES[2:])


def twin_extra_epoch():
    return _twin(VALUES + VALUES)


def twin_forever():
    return tf.data.Dataset.from_tensor_slices(tf.constant(VALUES, tf.int32)).repeat().batch(BATCH)


def twin_two_components():
    return _twin(VALUES).map(lambda x: (x, x))


def twin_unbatched():
    return tf.data.Dataset.from_tensor_slices(tf.constant(VALUES, tf.int32))


def legacy_shuffled():
    x = qp.range_input_producer(N, num_epochs=2, shuffle=False).dequeue()
    return qp.shuffle_batch(
        [x],
        BATCH,
        capacity=20,
        min_after_dequeue=5,
        num_threads=2,
        allow_smaller_final_batch=True,
        seed=1,
    )


def twin_shuffled():
    values = tf.data.Dataset.from_tensor_slices(tf.constant(VALUES, tf.int32))
    return values.shuffle(N, seed=1).repeat(2).batch(BATCH)


def twin_shuffled_dropped():
    values = tf.data.Dataset.from_tensor_slices(tf.constant(VALUES[1:], tf.int32))
    return values.shuffle(N, seed=1).repeat(2).batch(BATCH)


def legacy_raises():
    raise RuntimeError("boom while building")


def legacy_returns_number():
    return 42


def legacy_starved():
    """A batch over a queue that nothing ever fills."""
    orphan = tf.queue.FIFOQueue(4, tf.int32, shapes=[[]], name="orphan")
    return qp.batch([orphan.dequeue()], 2)


def twin_not_a_dataset():
    return [1, 2, 3]


def twin_raises():
    raise ValueError("twin exploded")
