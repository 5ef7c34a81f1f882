"""Shaped like a public Estimator program's input functions built on ``tf.contrib``.

``make_input_fn(pattern, batch_size, num_epochs)`` is a factory: its nested
``_input_fn()`` reads batches of parsed records with
``tf.contrib.learn.read_batch_record_features`` (removed with ``tf.contrib``
in TensorFlow 2.x) and returns ``features, labels``. ``eval_inputs(pattern,
batch_size)`` makes the same call as a plain function, through a helper.
"""

import tensorflow as tf

FEATURES = {"answer": tf.io.FixedLenFeature(shape=[], dtype=tf.int64)}


def make_input_fn(pattern, batch_size, num_epochs=None, shuffle=False):
    def _input_fn():
        batched = tf.contrib.learn.read_batch_record_features(
            file_pattern=pattern,
            features=FEATURES,
            batch_size=batch_size,
            randomize_input=shuffle,
            num_epochs=num_epochs,
        )
        return {"answer": batched["answer"]}, batched["answer"]

    return _input_fn


def _read_batches(pattern, batch_size):
    return tf.contrib.learn.read_batch_record_features(
        file_pattern=pattern, features=FEATURES, batch_size=batch_size, num_epochs=1
    )


def eval_inputs(pattern, batch_size):
    batched = _read_batches(pattern, batch_size)
    return batched["answer"]
