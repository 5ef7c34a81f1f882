"""The classic TF 1.x programs in legacy_examples: smoke runs, twins, and parity with TF's own API.

Covers cifar10_binary, mnist_tfrecords, preloaded_data and feeding. Each
example's legacy program runs on queue_pipeline and on TF's own queue API
(``impl="tf"``), deterministic paths give identical outputs on both, and each
``legacy()``/``twin()`` pair matches through ``compare``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from helpers import TF, build, dataset_values, drain
from legacy_examples import cifar10_binary, feeding, mnist_tfrecords, preloaded_data
from queue_pipeline import _bundled_data, compare
import queue_pipeline as qp

IMPLS = (("tf", TF), ("qp", qp))


@pytest.fixture(scope="module")
def cifar_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cifar")
    _bundled_data.write_cifar_binary(str(directory))
    return str(directory)


@pytest.fixture(scope="module")
def mnist_files(tmp_path_factory):
    return mnist_tfrecords.prepare_data(str(tmp_path_factory.mktemp("mnist")))


@pytest.fixture(scope="module")
def mnist_train_arrays(tmp_path_factory):
    return preloaded_data.load_training_data(str(tmp_path_factory.mktemp("preloaded")))


@pytest.fixture(scope="module")
def feed_arrays(tmp_path_factory):
    return feeding.load_arrays(str(tmp_path_factory.mktemp("feed")))


def _legacy_outputs(fn):
    """{impl name: every batch of fn(impl name) drained to OutOfRangeError}."""
    out = {}
    for key, impl in IMPLS:
        graph, fetch = build(impl, lambda m, key=key: fn(key))
        out[key] = drain(impl, graph, fetch)
    return out


def _assert_matches(legacy, twin, **kwargs):
    report = compare.compare(legacy, twin, timeout=30, **kwargs)
    assert report.matched, str(report)
    return report


# --- cifar10_binary -------------------------------------------------------------------


def test_cifar10_smoke(capsys):
    assert cifar10_binary.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "qp: 3 batches of [32, 24, 24, 3] images" in out
    assert "twin (tf.data): 3 batches of [32, 24, 24, 3] images" in out


@pytest.mark.parametrize("impl", ["qp", "tf"])
def test_cifar10_distorted_batches(cifar_dir, impl):
    batches = cifar10_binary.run(cifar_dir, 2, impl, batch_size=16, num_threads=4, verbose=False)
    assert len(batches) == 2
    for images, labels in batches:
        assert images.shape == (16, 24, 24, 3) and images.dtype == np.float32
        assert labels.shape == (16,) and labels.dtype == np.int32
        assert set(labels.tolist()) <= set(range(10))
        # per_image_standardization: each image has mean 0 and std 1.
        np.testing.assert_allclose(images.mean(axis=(1, 2, 3)), 0, atol=1e-3)
        np.testing.assert_allclose(images.std(axis=(1, 2, 3)), 1, atol=1e-2)


def test_cifar10_twin_distorted_batches(cifar_dir):
    [(images, labels)] = dataset_values(
        cifar10_binary.twin_distorted_inputs(cifar_dir, 16, seed=1), limit=1
    )
    assert images.shape == (16, 24, 24, 3) and labels.shape == (16,)
    np.testing.assert_allclose(images.mean(axis=(1, 2, 3)), 0, atol=1e-3)


def test_cifar10_eval_input_same_as_tf(cifar_dir):
    out = _legacy_outputs(
        lambda key: cifar10_binary.inputs(
            True, cifar_dir, 50, key, num_epochs=1, shuffle=False, num_threads=1
        )
    )
    assert len(out["qp"]) == 299 // 50
    np.testing.assert_equal(out["qp"], out["tf"])
    first_label = np.fromfile(cifar10_binary.eval_files(cifar_dir)[0], np.uint8)[0]
    assert out["qp"][0][1][0] == first_label


def test_cifar10_twin_matches_legacy():
    report = _assert_matches(cifar10_binary.legacy, cifar10_binary.twin)
    assert "ordered" in str(report)


@pytest.mark.slow
def test_cifar10_shuffled_threaded_input_matches_as_multiset(cifar_dir):
    # 1,498 training records = 107 batches of 14: no tail is dropped, so the
    # multisets match whatever order the threads and the shuffle give.
    _assert_matches(
        lambda: cifar10_binary.inputs(False, cifar_dir, 14, num_epochs=1, num_threads=4),
        lambda: cifar10_binary.twin_inputs(False, cifar_dir, 14, num_epochs=1, seed=3),
    )


# --- mnist_tfrecords ------------------------------------------------------------------


def _accuracies(text: str) -> list[float]:
    return [float(a) for a in re.findall(r"t10k accuracy ([0-9.]+)", text)]


@pytest.mark.slow
def test_mnist_smoke_both_sides_learn(capsys):
    assert mnist_tfrecords.main(["--smoke"]) == 0  # 2 epochs, seed 0
    out = capsys.readouterr().out
    assert "Done training for 2 epochs, 28 steps." in out
    assert "twin (tf.data): 28 steps" in out
    legacy_accuracy, twin_accuracy = _accuracies(out)
    assert legacy_accuracy > 0.5 and twin_accuracy > 0.5  # chance is 0.1


def test_mnist_on_tf_learns(mnist_files):
    weights, steps = mnist_tfrecords.run_training(
        mnist_files["train"], 2, "tf", seed=0, verbose=False
    )
    assert steps == 2 * 1437 // 100
    assert mnist_tfrecords.evaluate(mnist_files["t10k"], weights, "tf") > 0.5


def test_mnist_max_steps_stops_through_the_coordinator(mnist_files):
    _, steps = mnist_tfrecords.run_training(
        mnist_files["train"], None, "qp", max_steps=3, verbose=False
    )
    assert steps == 3


def test_mnist_eval_input_same_as_tf(mnist_files):
    out = _legacy_outputs(lambda key: mnist_tfrecords.eval_inputs(mnist_files["t10k"], 100, key))
    assert [len(labels) for _, labels in out["qp"]] == [100, 100, 100, 60]
    np.testing.assert_equal(out["qp"], out["tf"])
    assert 0.0 <= out["qp"][0][0].min() and out["qp"][0][0].max() <= 1.0


def test_mnist_legacy_and_twin_evaluate_weights_alike(mnist_files):
    weights = mnist_tfrecords.initial_weights(seed=3)
    accuracies = {
        mnist_tfrecords.evaluate(mnist_files["t10k"], weights, impl) for impl in ("qp", "tf")
    }
    accuracies.add(mnist_tfrecords.evaluate_twin(mnist_files["t10k"], weights))
    assert len(accuracies) == 1


def test_mnist_twin_matches_legacy():
    _assert_matches(mnist_tfrecords.legacy, mnist_tfrecords.twin)


# --- preloaded_data -------------------------------------------------------------------


@pytest.mark.parametrize("args", [["--smoke"], ["--smoke", "--impl", "tf", "--mode", "constant"]])
def test_preloaded_smoke(capsys, args):
    assert preloaded_data.main(args) == 0
    out = capsys.readouterr().out
    assert "5 batches of 100 from 1437 preloaded examples" in out
    assert "twin (tf.data): 5 batches" in out


def test_preloaded_twin_matches_legacy():
    _assert_matches(preloaded_data.legacy, preloaded_data.twin)


@pytest.mark.parametrize("shuffle", [False, True], ids=["in_order", "seeded_shuffle"])
def test_preloaded_variable_and_constant_same_on_qp_and_tf(mnist_train_arrays, shuffle):
    images, labels = mnist_train_arrays
    runs = {
        (impl, mode): preloaded_data.run(
            images, labels, None, impl, mode=mode, num_epochs=1, shuffle=shuffle, seed=7
        )
        for impl in ("qp", "tf")
        for mode in preloaded_data.MODES
    }
    reference = runs[("tf", "constant")]
    assert len(reference) == 1437 // 100
    for got in runs.values():
        np.testing.assert_equal(got, reference)


def test_preloaded_variable_equals_twin(mnist_train_arrays):
    images, labels = mnist_train_arrays
    legacy = preloaded_data.run(
        images, labels, None, "qp", mode="variable", num_epochs=1, shuffle=False
    )
    twin = dataset_values(preloaded_data.build_twin(images, labels, num_epochs=1, shuffle=False))
    np.testing.assert_equal(legacy, twin)


def test_preloaded_shuffled_twin_matches_as_multiset(mnist_train_arrays):
    images, labels = (a[:400] for a in mnist_train_arrays)  # 2 epochs = 8 whole batches
    report = _assert_matches(
        lambda: preloaded_data.preloaded_constant(images, labels, num_epochs=2, seed=1),
        lambda: preloaded_data.build_twin(images, labels, num_epochs=2, seed=1),
    )
    assert "multiset" in str(report)


def test_preloaded_rejects_unknown_mode(mnist_train_arrays):
    with pytest.raises(ValueError, match="mode"):
        preloaded_data.build_legacy(*mnist_train_arrays, mode="sparse")


# --- feeding --------------------------------------------------------------------------


def test_feeding_smoke_is_the_same_program_on_qp_and_tf(capsys):
    outputs = []
    for impl in ("qp", "tf"):
        assert feeding.main(["--smoke", "--impl", impl]) == 0
        outputs.append(capsys.readouterr().out.replace(f"{impl} (feed_dict", "(feed_dict"))
    assert "30 steps" in outputs[0]
    assert outputs[0] == outputs[1]


def test_feeding_twin_matches_legacy():
    _assert_matches(feeding.legacy, feeding.twin)


def test_feeding_legacy_and_twin_train_alike(feed_arrays):
    data_sets = feeding.Datasets(
        train=feeding.DataSet(*feed_arrays["train"], shuffle=False),
        test=feeding.DataSet(*feed_arrays["test"], shuffle=False),
    )
    losses, precision = feeding.run_training(data_sets, 30, verbose=False)
    twin_losses, twin_precision = feeding.train_twin(feed_arrays, 30, shuffle=False)
    np.testing.assert_allclose(losses, twin_losses, rtol=1e-3, atol=1e-4)
    assert precision > 0.5 and abs(precision - twin_precision) < 0.02


def test_feeding_next_batch_wraps_epochs_like_repeat_then_batch():
    images = np.arange(5, dtype=np.float32)[:, None]
    data_set = feeding.DataSet(images, np.arange(5, dtype=np.int32), shuffle=False)
    got = [data_set.next_batch(2)[1].tolist() for _ in range(4)]
    assert got == [[0, 1], [2, 3], [4, 0], [1, 2]]
    assert data_set.epochs_completed == 1
