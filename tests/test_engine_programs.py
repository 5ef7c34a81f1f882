"""The dataset engine engages on the shapes of the classic TF 1.x programs, in both TF modes.

Each case is the input function of a well-known TF 1.x program, written as
it was (Python-int capacities, many preprocessing threads, random
distortions), built under ``queue_pipeline.engine("dataset")``. The engine
must serve it on tf.data with no fallback (no warning on logger
``queue_pipeline``), take the path the case names (vectorized or per-record
map), and deliver what TF's own queue API delivers for the same code: the
per-epoch multiset of examples (exact order where both are deterministic).
The suite runs this file in TF1 mode too (``--tf1``), the mode these
programs were written for.
"""

from __future__ import annotations

import collections
import logging

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import TF, build, drain
from queue_pipeline import plan

RECORDS = 60


@pytest.fixture(scope="module")
def tfrecord_files(tmp_path_factory):
    """Two TFRecord files of MNIST-like examples: 784-byte ``image_raw``, int64 ``label``."""
    d = tmp_path_factory.mktemp("mnist")
    rng = np.random.default_rng(0)
    paths = []
    for f in range(2):
        path = str(d / f"train{f}.tfrecords")
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(RECORDS // 2):
                image = rng.integers(0, 256, 784, dtype=np.uint8)
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image_raw": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[image.tobytes()])
                            ),
                            "label": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=[f * 100 + i])
                            ),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def cifar_files(tmp_path_factory):
    """Two CIFAR-10 binary batches of 1 label byte + 3,072 image bytes per record."""
    d = tmp_path_factory.mktemp("cifar")
    rng = np.random.default_rng(1)
    paths = []
    for f in range(2):
        path = str(d / f"data_batch_{f + 1}.bin")
        records = rng.integers(0, 256, size=(RECORDS // 2, 3073), dtype=np.uint8)
        records[:, 0] = np.arange(RECORDS // 2) % 10
        records.tofile(path)
        paths.append(path)
    return paths


# ------------------------------------------------------------- the programs, as written


def mnist_inputs(m, files, batch_size=10, num_epochs=1):
    """fully_connected_reader.py's inputs(): TFRecordReader -> parse -> shuffle_batch."""
    filename_queue = m.string_input_producer(files, num_epochs=num_epochs)
    reader = m.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.compat.v1.parse_single_example(
        serialized_example,
        features={
            "image_raw": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    image = tf.compat.v1.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([784])
    image = tf.cast(image, tf.float32) * (1.0 / 255) - 0.5
    label = tf.cast(features["label"], tf.int32)
    return m.shuffle_batch(
        [image, label],
        batch_size=batch_size,
        num_threads=2,
        capacity=1000 + 3 * batch_size,
        min_after_dequeue=1000,
        allow_smaller_final_batch=True,
    )


def read_cifar10(m, filename_queue):
    """cifar10_input.py's read_cifar10(), verbatim in substance."""
    label_bytes, height, width, depth = 1, 32, 32, 3
    image_bytes = height * width * depth
    reader = m.FixedLengthRecordReader(record_bytes=label_bytes + image_bytes)
    _, value = reader.read(filename_queue)
    record_bytes = tf.compat.v1.decode_raw(value, tf.uint8)
    label = tf.cast(tf.strided_slice(record_bytes, [0], [label_bytes]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record_bytes, [label_bytes], [label_bytes + image_bytes]),
        [depth, height, width],
    )
    return label, tf.transpose(depth_major, [1, 2, 0])


def cifar10_distorted_inputs(m, files, batch_size=8):
    """cifar10_input.py's distorted_inputs(): random crop, flip, brightness, contrast."""
    filename_queue = m.string_input_producer(files, num_epochs=1)
    label, uint8image = read_cifar10(m, filename_queue)
    reshaped_image = tf.cast(uint8image, tf.float32)
    distorted_image = tf.image.random_crop(reshaped_image, [24, 24, 3])
    distorted_image = tf.image.random_flip_left_right(distorted_image)
    distorted_image = tf.image.random_brightness(distorted_image, max_delta=63)
    distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8)
    float_image = tf.image.per_image_standardization(distorted_image)
    float_image.set_shape([24, 24, 3])
    label.set_shape([1])
    min_queue_examples = int(RECORDS * 0.4)
    images, label_batch = m.shuffle_batch(
        [float_image, label],
        batch_size=batch_size,
        num_threads=16,
        capacity=min_queue_examples + 3 * batch_size,
        min_after_dequeue=min_queue_examples,
        allow_smaller_final_batch=True,
    )
    return images, tf.reshape(label_batch, [-1])


def cifar10_eval_inputs(m, files, batch_size=8):
    """cifar10_input.py's inputs(eval_data=True): central crop, batch in order."""
    filename_queue = m.string_input_producer(files, num_epochs=1, shuffle=False)
    label, uint8image = read_cifar10(m, filename_queue)
    reshaped_image = tf.cast(uint8image, tf.float32)
    resized_image = tf.image.resize_with_crop_or_pad(reshaped_image, 24, 24)
    float_image = tf.image.per_image_standardization(resized_image)
    float_image.set_shape([24, 24, 3])
    label.set_shape([1])
    images, label_batch = m.batch(
        [float_image, label],
        batch_size=batch_size,
        num_threads=1,
        capacity=1000 + 3 * batch_size,
        allow_smaller_final_batch=True,
    )
    return images, tf.reshape(label_batch, [-1])


def preloaded_inputs(m, batch_size=7):
    """fully_connected_preloaded.py: slice_input_producer over constants -> batch."""
    images = np.arange(RECORDS * 4, dtype=np.float32).reshape(RECORDS, 4)
    labels = np.arange(RECORDS, dtype=np.int64)
    image, label = m.slice_input_producer(
        [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
    )
    return m.batch(
        [image, tf.cast(label, tf.int32)], batch_size=batch_size, allow_smaller_final_batch=True
    )


# ------------------------------------------------------------------------- checks


def _served_on_dataset(make, caplog):
    """Builds make(qp) under the dataset engine; returns (graph, outputs, path log)."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="queue_pipeline"), qp.engine("dataset"):
        graph, outputs = build(qp, make)
    records = [r for r in caplog.records if r.name == "queue_pipeline"]
    warnings = [r.getMessage() for r in records if r.levelno >= logging.WARNING]
    assert not warnings, warnings  # no fallback
    assert any(node.args.get("engine") == "dataset" for node in plan.plan_for(outputs))
    return graph, outputs, " ".join(r.getMessage() for r in records)


def _rows(batches, component):
    return collections.Counter(
        row.tobytes() for batch in batches for row in np.asarray(batch[component])
    )


CASES = {
    "mnist_reader": (mnist_inputs, "tfrecord_files", "vectorized", (1,)),
    "cifar10_distorted": (cifar10_distorted_inputs, "cifar_files", "per-record map", (1,)),
    # per_image_standardization's float Mean could round differently batched.
    "cifar10_eval": (cifar10_eval_inputs, "cifar_files", "per-record map", (0, 1)),
    "preloaded_constants": (preloaded_inputs, None, "vectorized", (0, 1)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_classic_input_function_runs_on_tf_data_like_tfs_queues(case, request, caplog):
    inputs, fixture, path, compared = CASES[case]
    args = (request.getfixturevalue(fixture),) if fixture else ()
    make = lambda m: inputs(m, *args)  # noqa: E731
    graph, outputs, log = _served_on_dataset(make, caplog)
    assert path in log, log
    got = drain(qp, graph, outputs)
    tf_graph, tf_outputs = build(TF, make)
    want = drain(TF, tf_graph, tf_outputs)
    assert [tuple(x.shape.as_list()) for x in outputs] == [
        tuple(x.shape.as_list()) for x in tf_outputs
    ]
    assert sum(len(b[1]) for b in got) == sum(len(b[1]) for b in want) == RECORDS
    for component in compared:  # the distorted images are random on both sides
        assert _rows(got, component) == _rows(want, component), component
    if case in ("cifar10_eval", "preloaded_constants"):  # deterministic on both sides
        assert all(np.array_equal(g[1], w[1]) for g, w in zip(got, want))
