"""The multi-reader join, detection (dynamic padding + prefetcher) and TPU input_fn examples."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf

from helpers import TF, build, dataset_values, drain
from legacy_examples import detection_dynamic_pad as detection
from legacy_examples import multi_reader_join, tpu_input_fn
from queue_pipeline import compare
import queue_pipeline as qp

IMPLS = {"qp": qp, "tf": TF}


def _rows(pixels, labels) -> collections.Counter:
    return collections.Counter(
        tuple(p.tolist()) + (int(label),) for p, label in zip(pixels, labels)
    )


def _csv_rows(paths) -> collections.Counter:
    rows = np.concatenate([np.loadtxt(p, dtype=np.int32, delimiter=",", ndmin=2) for p in paths])
    return _rows(rows[:, 1:], rows[:, 0])


# --- multi_reader_join ------------------------------------------------------------------


@pytest.mark.parametrize("impl", ["qp", "tf"])
def test_multi_reader_join_smoke(capsys, impl):
    assert multi_reader_join.main(["--smoke", "--impl", impl, "--readers", "3"]) == 0
    assert f"{impl}: 3 readers, 5 batches of 32" in capsys.readouterr().out


@pytest.mark.parametrize("impl", ["qp", "tf"])
def test_multi_reader_join_reads_every_row_once_per_epoch(tmp_path, impl):
    files = multi_reader_join.write_files(str(tmp_path), num_files=3)
    g, fetch = build(
        IMPLS[impl],
        lambda m: multi_reader_join.build_legacy(
            files,
            impl,
            num_readers=3,
            num_epochs=2,
            seed=3,
            min_after_dequeue=50,
            allow_smaller_final_batch=True,
        ),
    )
    batches = drain(IMPLS[impl], g, fetch)
    got = _rows(np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches]))
    expected = _csv_rows(files)
    assert sum(expected.values()) == 1797
    assert got == collections.Counter({row: 2 * n for row, n in expected.items()})


def test_multi_reader_join_twin_matches_legacy_as_multiset():
    report = compare.compare(multi_reader_join.legacy, multi_reader_join.twin, timeout=20)
    assert report.matched, str(report)
    assert report.mode == "multiset"
    assert report.legacy.examples == report.twin.examples == 1797
    assert report.to_json()


def test_multi_reader_join_interleaved_twin_matches_legacy():
    report = compare.compare(
        multi_reader_join.legacy, multi_reader_join.twin_interleaved, timeout=20
    )
    assert report.matched, str(report)


def test_multi_reader_join_twin_needs_a_file_per_reader(tmp_path):
    files = multi_reader_join.write_files(str(tmp_path), num_files=2)
    with pytest.raises(ValueError, match="num_readers"):
        multi_reader_join.build_twin(files, num_readers=3)


# --- detection_dynamic_pad --------------------------------------------------------------


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    """The detection TFRecords, and each scene's decoded JPEG and boxes, in order."""
    path, written = detection.write_records(str(tmp_path_factory.mktemp("scenes")), count=10)
    with tf.Graph().as_default():  # a private graph, read in a Session in both modes
        jpegs = tf.data.Dataset.from_tensor_slices([jpeg for jpeg, _ in written]).map(
            lambda jpeg: tf.io.decode_jpeg(tf.io.read_file(jpeg), channels=3)
        )
    images = dataset_values(jpegs)
    return path, [(image, boxes.astype(np.float32)) for image, (_, boxes) in zip(images, written)]


def _assert_unpadded_equal(examples, originals):
    assert len(examples) == len(originals)
    for example, (image, boxes) in zip(examples, originals):
        np.testing.assert_array_equal(np.asarray(example[detection.IMAGE]), image)
        np.testing.assert_array_equal(np.asarray(example[detection.BOXES]), boxes)


@pytest.mark.parametrize("impl", ["qp", "tf"])
def test_detection_smoke(capsys, impl):
    assert detection.main(["--smoke", "--impl", impl]) == 0
    assert f"{impl}: 3 batches of 4 images" in capsys.readouterr().out


@pytest.mark.parametrize("impl", ["qp", "tf"])
def test_detection_legacy_unpads_to_the_original_images_and_boxes(scenes, impl):
    path, originals = scenes
    batches = detection.run([path], steps=100, impl=impl, num_epochs=1, shuffle=False)
    assert [len(b) for b in batches] == [4, 4]  # 10 images: the tail of 2 is dropped
    _assert_unpadded_equal([e for b in batches for e in b], originals[:8])


def test_detection_batches_are_padded_to_the_largest(scenes):
    path, originals = scenes
    twin = detection.build_twin([path], num_epochs=1, shuffle=False).map(
        lambda batch: (batch, tuple(detection.unpad(batch)))
    )  # unpad on graph tensors
    batches = dataset_values(twin)
    assert len(batches) == 2  # 10 images: the tail of 2 is dropped
    for i, (batch, unpadded) in enumerate(batches):
        part = originals[4 * i : 4 * i + 4]
        height = max(image.shape[0] for image, _ in part)
        width = max(image.shape[1] for image, _ in part)
        assert batch[detection.IMAGE].shape == (4, height, width, 3)
        assert batch[detection.BOXES].shape == (4, max(len(b) for _, b in part), 4)
        np.testing.assert_array_equal(batch[detection.NUM_BOXES], [len(b) for _, b in part])
        np.testing.assert_array_equal(
            batch[detection.TRUE_IMAGE_SHAPE], [image.shape for image, _ in part]
        )
        _assert_unpadded_equal(unpadded, part)


def test_detection_twin_matches_legacy_in_order():
    report = compare.compare(detection.legacy, detection.twin, timeout=20)
    assert report.matched, str(report)
    assert report.mode == "ordered"
    assert report.legacy.batches == report.twin.batches == 6


def test_detection_prefetcher_registers_a_runner_and_a_summary(scenes):
    path, _ = scenes
    with tf.Graph().as_default() as g:
        detection.build_legacy([path], num_epochs=1, shuffle=False)
        runners = g.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
        assert any(r.queue.name.startswith("prefetch_queue") for r in runners)
        summaries = [s.name for s in g.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)]
        assert any("prefetch_queue" in name for name in summaries)


# --- tpu_input_fn -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def mnist_shards(tmp_path_factory):
    return tpu_input_fn.write_shards(str(tmp_path_factory.mktemp("mnist")), num_shards=4)


def test_tpu_input_fn_smoke(capsys):
    assert tpu_input_fn.main(["--smoke", "--batch-size", "16"]) == 0
    out = capsys.readouterr().out
    assert "5 batches; static shapes float32[16, 784], int32[16]" in out


def test_tpu_input_fn_static_shapes(mnist_shards):
    dataset = tpu_input_fn.make_input_fn(mnist_shards, seed=1)({"batch_size": 32})
    assert tpu_input_fn.static_shapes(dataset) == [("float32", [32, 784]), ("int32", [32])]
    [(images, labels)] = dataset_values(dataset, limit=1)
    assert images.shape == (32, 784) and labels.shape == (32,)
    assert 0.0 <= images.min() and images.max() <= 1.0


def test_tpu_input_fn_static_shapes_in_a_graph(mnist_shards):
    with tf.Graph().as_default():  # as TPUEstimator calls it
        dataset = tpu_input_fn.make_input_fn(mnist_shards)({"batch_size": 8})
        images, labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        assert images.shape.as_list() == [8, 784] and labels.shape.as_list() == [8]


def test_tpu_input_fn_eval_reads_every_full_batch_once(mnist_shards):
    dataset = tpu_input_fn.make_input_fn(mnist_shards, is_training=False)({"batch_size": 100})
    labels = np.concatenate([labels for _, labels in dataset_values(dataset)])
    assert len(labels) == 1400  # 1,437 records: the remainder of 37 is dropped
    assert set(labels.tolist()) == set(range(10))
