"""The demo's data and its two input pipelines: legacy queues and their tf.data twin.

The constants are ``mnist/fully_connected_reader.py``'s; ``prepare_data``
writes the bundled digits as MNIST TFRecords; ``legacy_inputs`` is the
classic queue pipeline on queue_pipeline, ``twin_inputs`` its tf.data twin
(batches decoded with ``parse_example``). :mod:`queue_pipeline.demo` runs them.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tensorflow as tf

import queue_pipeline
from queue_pipeline import _bundled_data, data

BATCH_SIZE = 64
MIN_AFTER_DEQUEUE = 1000  # as fully_connected_reader.py
CAPACITY = MIN_AFTER_DEQUEUE + 3 * BATCH_SIZE
NUM_THREADS = 2
HIDDEN_UNITS = 64
LEARNING_RATE = 3e-3
IMAGE_PIXELS = 28 * 28
NUM_CLASSES = 10
FEATURES = {
    "image_raw": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
LEGACY_CHAIN = (
    "string_input_producer -> TFRecordReader -> parse_single_example -> "
    f"shuffle_batch({BATCH_SIZE}, num_threads={NUM_THREADS}), "
    "Coordinator + start_queue_runners, a Session loop until OutOfRangeError"
)
TWIN_CHAIN = (
    "queue_pipeline.data: string_input_producer -> "
    "TFRecordReader.read(keys=False) -> shuffle_batch(decode=parse_example) "
    "-> Keras Model.fit"
)
TWIN_CHAIN_TF1 = (
    "queue_pipeline.data: string_input_producer -> "
    "TFRecordReader.read(keys=False) -> shuffle_batch(decode=parse_example) "
    "-> make_one_shot_iterator().get_next(), the same graph ops in a "
    "Session loop until OutOfRangeError (TF1 mode: no Keras)"
)


def prepare_data(directory: str) -> dict[str, Any]:
    """Writes the bundled digits as MNIST idx files and converts them to TFRecords.

    Returns:
      ``{"train": path, "test": path}`` of the TFRecord files, the test set
      as arrays (``test_images`` float32 ``[n, 784]``, ``test_labels``),
      ``train_examples`` and ``source``.
    """
    idx = _bundled_data.write_mnist_idx(directory)
    out: dict[str, Any] = {"source": _bundled_data.source()}
    for part, name in (("train", "train"), ("t10k", "test")):
        out[name] = os.path.join(directory, f"{part}.tfrecords")
        count = _bundled_data.convert_to_tfrecords(
            idx[f"{part}_images"], idx[f"{part}_labels"], out[name]
        )
        out[f"{name}_examples"] = count
    images, labels = _bundled_data.read_mnist_idx(idx["t10k_images"], idx["t10k_labels"])
    out["test_images"] = _scale(images.reshape(len(images), IMAGE_PIXELS))
    out["test_labels"] = labels.astype(np.int32)
    return out


def _scale(pixels):
    """uint8 pixels -> float32 in [0, 1]; the same expression on every side."""
    return (
        tf.cast(pixels, tf.float32) * (1.0 / 255.0)
        if tf.is_tensor(pixels)
        else (pixels.astype(np.float32) * np.float32(1.0 / 255.0))
    )


def _read_and_decode(serialized):
    """fully_connected_reader.py's decoder: one Example -> (image [784], label [])."""
    features = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.io.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([IMAGE_PIXELS])
    return _scale(image), tf.cast(features["label"], tf.int32)


def _decode_batch(serialized):
    """The twin's decoder: a batch of Examples -> (images [n, 784], labels [n])."""
    features = tf.io.parse_example(serialized, FEATURES)
    images = tf.reshape(tf.io.decode_raw(features["image_raw"], tf.uint8), [-1, IMAGE_PIXELS])
    return _scale(images), tf.cast(features["label"], tf.int32)


def legacy_inputs(train_file: str, num_epochs: int, seed: int):
    """The legacy input pipeline; call inside a ``tf.Graph().as_default()``.

    Returns:
      ``[images [None, 784] float32, labels [None] int32]`` (the last batch may
      be smaller: ``allow_smaller_final_batch``, so every example is trained on).
    """
    filename_queue = queue_pipeline.string_input_producer(
        [train_file], num_epochs=num_epochs, seed=seed
    )
    reader = queue_pipeline.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    image, label = _read_and_decode(serialized)
    return queue_pipeline.shuffle_batch(
        [image, label],
        batch_size=BATCH_SIZE,
        num_threads=NUM_THREADS,
        capacity=CAPACITY,
        min_after_dequeue=MIN_AFTER_DEQUEUE,
        seed=seed,
        allow_smaller_final_batch=True,
    )


def twin_inputs(train_file: str, num_epochs: int, seed: int) -> tf.data.Dataset:
    """The tf.data twin of :func:`legacy_inputs`: a Dataset of (images, labels) batches."""
    names = data.string_input_producer([train_file], num_epochs=num_epochs, seed=seed)
    records = data.TFRecordReader().read(names, keys=False)
    return data.shuffle_batch(
        records,
        batch_size=BATCH_SIZE,
        num_threads=NUM_THREADS,
        capacity=CAPACITY,
        min_after_dequeue=MIN_AFTER_DEQUEUE,
        seed=seed,
        allow_smaller_final_batch=True,
        decode=_decode_batch,
    )
