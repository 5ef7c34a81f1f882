"""Seeded augmentation vectorized: every draw stateless, keyed by the batch's position.

NOTE [ Seeded draws keyed by the batch ] (``_engine/vectorize/rules_random.py``):
with ``keyed_draws`` each stateful draw of a region, seeded or not, is one
stateless draw of ``[B] + shape`` seeded by (op key, batch position). Checked
here: the region takes the position and refuses to run without it; a
position gives the same values on every call and another position others;
the draws keep the op's distribution per record; mapped over batches the
values do not depend on the parallelism; on the dataset engine a seeded
augmentation workload (W8) is vectorized, repeats itself, is distributed
as TF's own queues' epoch, and a run restored from a checkpoint draws for
the next batches what the uninterrupted run drew. Both TF modes (``--tf1``).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf
from helpers import dataset_values
from test_engine_stateless import _read
from test_vectorize import NO_AUTOGRAPH, region_of
from test_vectorize_random import AUG_BATCH, CROP, RECORDS, _epoch, _w7, image_records

from queue_pipeline._engine.vectorize import VectorizedRegion, vectorize

__all__ = ["image_records"]  # the fixture, shared with test_vectorize_random

v1 = tf.compat.v1
B = 512
Z = 5.0


def _seeded_noise(x):
    """A seeded and an unseeded draw, as a legacy graph with a graph seed builds them."""
    v1.set_random_seed(11)
    flip = v1.random_uniform([], seed=3) < 0.5
    return x + v1.random_uniform([3]), tf.where(flip, x, -x), v1.random_normal([2], seed=4)


def _keyed():
    region = region_of(_seeded_noise, (tf.float32, [3]))
    vectorized = vectorize(region, random_draws=True, keyed_draws=True)
    assert isinstance(vectorized, VectorizedRegion), vectorized.describe()
    return vectorized


def _batches(vectorized, positions, *, parallel=None):
    """The keyed region on batches of B ones, at `positions`, mapped with `parallel` calls."""

    def one(position):
        return tuple(vectorized(tf.ones([B, 3]), position=position))

    data = tf.data.Dataset.from_tensor_slices(np.array(positions, np.int64))
    data = data.map(NO_AUTOGRAPH(one), num_parallel_calls=parallel, deterministic=parallel and True)
    return dataset_values(data, limit=None)


def test_a_keyed_region_takes_the_batch_position_and_refuses_to_run_without_it():
    vectorized = _keyed()
    assert vectorized.keyed
    assert sum(rule.startswith("one draw of") for _, _, rule in vectorized.rules) == 3
    with pytest.raises(TypeError, match="position="):
        with tf.Graph().as_default():
            vectorized(tf.ones([B, 3]))


def test_unseeded_draws_are_not_keyed_without_keyed_draws():
    region = region_of(_seeded_noise, (tf.float32, [3]))
    unkeyed = vectorize(region, random_draws=True)
    assert not isinstance(unkeyed, VectorizedRegion)  # the seeded draws are refused
    assert "per-example random op" in unkeyed.reason


def test_a_position_draws_the_same_values_on_every_call_and_another_position_others():
    first = _batches(_keyed(), [0, 1, 0])
    second = _batches(_keyed(), [0, 1, 0])
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    for k in range(3):
        np.testing.assert_array_equal(first[0][k], first[2][k])
        assert not np.array_equal(first[0][k], first[1][k])


def test_the_values_do_not_depend_on_the_parallelism():
    sequential = _batches(_keyed(), range(12))
    parallel = _batches(_keyed(), range(12), parallel=8)
    for a, b in zip(sequential, parallel):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_keyed_draws_keep_each_ops_distribution_per_record():
    (noise, flipped, normal), *_ = _batches(_keyed(), [7])
    uniform = noise - 1.0
    assert uniform.min() >= 0 and uniform.max() < 1
    assert abs(uniform.mean() - 0.5) < Z * np.sqrt(1 / 12 / uniform.size)
    rows = flipped[:, 0]  # +1 kept or -1 flipped, one draw per record
    assert abs((rows > 0).mean() - 0.5) < Z * np.sqrt(0.25 / B)
    assert np.all(flipped == rows[:, None])  # one flip per record, over its three values
    assert abs(normal.mean()) < Z / np.sqrt(normal.size)
    assert abs(normal.var() - 1) < Z * np.sqrt(2 / normal.size)
    assert abs(np.corrcoef(uniform[:, 0], uniform[:, 1])[0, 1]) < Z / np.sqrt(B)


# ---------------------------------------------------------- the dataset engine


def _engine_line(caplog) -> str:
    (line,) = {r.getMessage() for r in caplog.records if "runs on tf.data" in r.getMessage()}
    return line


@pytest.mark.parametrize("seeds", [{"seed": 1234}, {"batch_seed": 5}], ids=["graph", "batcher"])
def test_a_seeded_w8_is_vectorized_keyed_by_the_batch_and_repeats(image_records, caplog, seeds):
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        first = _epoch("dataset", image_records, **seeds)
    line = _engine_line(caplog)
    assert "vectorized, decoded once per batch, random ops drawn [B] at a time" in line, line
    assert "stateless keyed by the batch" in line, line
    np.testing.assert_array_equal(first, _epoch("dataset", image_records, **seeds))
    other = {"seed": 99} if "seed" in seeds else {"batch_seed": 6}
    assert not np.array_equal(first, _epoch("dataset", image_records, **other))
    native = _epoch("native", image_records, **seeds)
    assert first.shape == native.shape == (RECORDS // AUG_BATCH * AUG_BATCH, CROP, CROP, 3)
    for c in range(3):
        assert abs(first[..., c].mean() - native[..., c].mean()) < 3.0
        assert abs(first[..., c].std() / native[..., c].std() - 1) < 0.1
    assert first.reshape(len(first), -1, 3).mean(1).std(0).min() > 1.0


def test_a_restored_w8_draws_for_the_next_batches_what_the_whole_run_drew(image_records, tmp_path):
    whole = _read(image_records, make=_w7, seed=1234)
    head = _read(image_records, make=_w7, seed=1234, steps=4, saver_path=str(tmp_path / "model"))
    tail = _read(image_records, make=_w7, seed=1234, restore=str(tmp_path / "model"))
    assert len(whole) == len(head) + len(tail) == RECORDS // AUG_BATCH
    for got, want in zip(head + tail, whole):
        np.testing.assert_array_equal(got, want)
