"""The bundled data: every on-disk format is valid and holds the same digits."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import dataset_values
from queue_pipeline import _bundled_data as bundled


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    return bundled.prepare_all(str(tmp_path_factory.mktemp("bundled")))


def test_digits_are_8x8_uint8_with_ten_classes():
    images, labels = bundled.digits()
    assert images.shape[1:] == (8, 8) and images.dtype == np.uint8
    assert len(images) == len(labels) and set(labels.tolist()) == set(range(10))


def test_csv_rows_are_label_then_64_pixels(prepared):
    rows = np.concatenate(
        [np.loadtxt(p, delimiter=",", dtype=int, ndmin=2) for p in prepared["csv"]]
    )
    images, labels = bundled.digits()
    assert rows.shape == (len(images), 65)
    assert (rows[:, 0] == labels).all() and (rows[:, 1:] == images.reshape(len(images), -1)).all()


def test_mnist_idx_round_trip(prepared):
    idx = prepared["mnist_idx"]
    train, train_labels = bundled.read_mnist_idx(idx["train_images"], idx["train_labels"])
    test, test_labels = bundled.read_mnist_idx(idx["t10k_images"], idx["t10k_labels"])
    assert train.shape[1:] == (28, 28) == test.shape[1:]
    assert len(train) + len(test) == len(bundled.digits()[0])
    assert len(train_labels) == len(train) and len(test_labels) == len(test)
    with pytest.raises(ValueError, match="not an idx image file"):
        bundled.read_mnist_idx(idx["train_labels"], idx["train_labels"])


def test_mnist_tfrecords_parse_with_the_classic_features(prepared):
    features = {
        "image_raw": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "height": tf.io.FixedLenFeature([], tf.int64),
        "width": tf.io.FixedLenFeature([], tf.int64),
        "depth": tf.io.FixedLenFeature([], tf.int64),
    }
    idx = prepared["mnist_idx"]
    images, labels = bundled.read_mnist_idx(idx["t10k_images"], idx["t10k_labels"])
    records = tf.data.TFRecordDataset(prepared["mnist_tfrecords"]["t10k"]).map(
        lambda record: tf.io.parse_single_example(record, features)
    )
    parsed = dataset_values(records)
    assert len(parsed) == len(images)
    assert [int(parsed[0][k]) for k in ("height", "width", "depth")] == [28, 28, 1]
    assert [int(example["label"]) for example in parsed] == labels.tolist()
    for example, image in zip(parsed, images):
        assert (np.frombuffer(example["image_raw"], np.uint8).reshape(28, 28) == image).all()


def test_cifar_binary_records_are_1_plus_3072_bytes(prepared):
    files = prepared["cifar"]["train"] + prepared["cifar"]["test"]
    assert [os.path.basename(f) for f in files] == [f"data_batch_{i}.bin" for i in range(1, 6)] + [
        "test_batch.bin"
    ]
    total = 0
    for path in files:
        size = os.path.getsize(path)
        assert size % 3073 == 0
        total += size // 3073
    assert total == len(bundled.digits()[0])
    record = np.fromfile(files[0], np.uint8, count=3073)
    assert record[0] < 10


def test_jpegs_decode_and_boxes_fit(prepared):
    paths = [path for path, _ in prepared["jpegs"]]
    decoded = dataset_values(
        tf.data.Dataset.from_tensor_slices(paths).map(
            lambda path: tf.io.decode_jpeg(tf.io.read_file(path))
        )
    )
    assert len(decoded) == len(paths)
    for image, (_, boxes) in zip(decoded, prepared["jpegs"]):
        assert image.ndim == 3 and image.shape[2] == 3
        assert boxes.shape[1] == 4 and 1 <= len(boxes) <= 3
        assert (boxes[:, 2] <= image.shape[0]).all() and (boxes[:, 3] <= image.shape[1]).all()


def test_jpegs_are_written_even_under_a_graph(tmp_path):
    with tf.Graph().as_default():
        scenes = bundled.write_jpegs(str(tmp_path), count=2)
    assert all(os.path.getsize(path) > 0 for path, _ in scenes)
