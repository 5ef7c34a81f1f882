"""queue_pipeline.testing: bounded runs, stall diagnosis, snapshots, the pytest plugin."""

from __future__ import annotations

import importlib.metadata
import json

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from queue_pipeline import pytest_plugin, testing
from queue_pipeline.testing import (
    PipelineError,
    PipelineStalledError,
    SnapshotMismatchError,
    assert_snapshot,
    run_pipeline,
    snapshot_pipeline,
)

pytest_plugins = ["pytester"]

STALL = 2.0  # seconds: short, every stall test must end quickly


def _range_batches(n=10, batch_size=4, **kw):
    x = qp.range_input_producer(n, num_epochs=1, shuffle=False).dequeue()
    return qp.batch([x, tf.as_string(x)], batch_size, **kw)


@pytest.fixture(autouse=True)
def _no_ci_no_update(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(testing.UPDATE_SNAPSHOTS_ENV, raising=False)


# ---------------------------------------------------------------- run_pipeline


def test_run_pipeline_returns_numpy_batches(graph):
    batches = run_pipeline(_range_batches(), 2, timeout=10)
    assert len(batches) == 2
    np.testing.assert_array_equal(batches[1][0], [4, 5, 6, 7])
    assert list(batches[0][1]) == [b"0", b"1", b"2", b"3"]


def test_run_pipeline_stops_at_end_of_input(graph):
    batches = run_pipeline(_range_batches(allow_smaller_final_batch=True), 100, timeout=10)
    assert [len(b[0]) for b in batches] == [4, 4, 2]


@pytest.mark.slow
def test_never_started_runners_name_the_starved_queue(graph):
    with qp.tf_faithful():  # the unstarted guard would fail the fetch at once
        fetch = _range_batches()
    with pytest.raises(PipelineStalledError) as info:
        run_pipeline(fetch, 1, timeout=STALL, start_queue_runners=False)
    message = str(info.value)
    assert info.value.queue_name == "input_producer"
    assert "Starved queue: 'input_producer' (FIFOQueueV2) is empty and open" in message
    assert "never started" in message and "batch/fifo_queue" in message
    assert "start_queue_runners" in message  # the fix
    assert isinstance(info.value, TimeoutError)


@pytest.mark.slow
def test_queue_without_runner_is_named(graph):
    orphan = tf.queue.FIFOQueue(4, tf.int32, shapes=[[]], name="orphan")
    with pytest.raises(PipelineStalledError, match="no QueueRunner") as info:
        run_pipeline(qp.batch([orphan.dequeue()], 2), 1, timeout=STALL)
    assert info.value.queue_name == "orphan"
    assert "1 of 1 enqueue thread(s) alive" in str(info.value)  # the batch runner waits


def test_runner_error_is_re_raised_with_context(graph):
    x = qp.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
    bad = tf.strings.to_number(tf.strings.join(["x", tf.as_string(x)]))
    with pytest.raises(PipelineError, match="QueueRunner thread failed|fetching batch"):
        run_pipeline(qp.batch([bad], 2), 2, timeout=10)


def test_run_pipeline_rejects_bad_arguments(graph):
    with pytest.raises(ValueError, match="`num_batches`"):
        run_pipeline(_range_batches(), 0)
    with pytest.raises(TypeError, match="`fetches` must be graph tensors"):
        run_pipeline([1, 2], 1)


# ------------------------------------------------------------------- snapshots


def test_snapshot_create_compare_diff_update(tmp_path, monkeypatch):
    golden = tmp_path / "snap" / "range.json"
    batches = [
        (np.array([0, 1], np.int32), np.array([b"a", b"b"], dtype=object)),
        (np.array([2, 3], np.int32), np.array([b"c", b"\xff"], dtype=object)),
    ]
    assert_snapshot(batches, golden)  # created
    data = json.loads(golden.read_text())
    assert data["format"] == testing.SNAPSHOT_FORMAT and data["num_batches"] == 2
    assert data["batches"][0]["[0]"] == {"dtype": "int32", "shape": [2], "values": [0, 1]}
    assert data["batches"][1]["[1]"]["encoding"] == "hex"
    assert_snapshot(batches, golden)  # unchanged: passes

    changed = [batches[0], (np.array([2, 4], np.int32), batches[1][1])]
    with pytest.raises(SnapshotMismatchError) as info:
        assert_snapshot(changed, golden)
    message = str(info.value)
    assert (
        "First difference: batch 1, component [0]: values differ at flat index 1: golden 3, now 4"
    ) in message
    assert '-      "[0]": {"dtype": "int32", "shape": [2], "values": [2, 3]},' in message
    assert '+      "[0]": {"dtype": "int32", "shape": [2], "values": [2, 4]},' in message
    assert testing.UPDATE_SNAPSHOTS_ENV in message

    monkeypatch.setenv(testing.UPDATE_SNAPSHOTS_ENV, "1")
    assert_snapshot(changed, golden)  # rewritten
    monkeypatch.delenv(testing.UPDATE_SNAPSHOTS_ENV)
    assert_snapshot(changed, golden)
    with pytest.raises(SnapshotMismatchError, match="golden has 2 batch"):
        assert_snapshot(changed[:1], golden)
    assert_snapshot(changed[:1], golden, update=True)
    assert json.loads(golden.read_text())["num_batches"] == 1


def test_snapshot_dtype_change_and_missing_in_ci(tmp_path, monkeypatch):
    golden = tmp_path / "a.json"
    assert_snapshot([np.arange(3, dtype=np.int32)], golden)
    with pytest.raises(SnapshotMismatchError, match="dtype golden 'int32', now 'int64'"):
        assert_snapshot([np.arange(3, dtype=np.int64)], golden)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(SnapshotMismatchError, match="missing and CI is set"):
        assert_snapshot([np.arange(3)], tmp_path / "b.json")
    assert not (tmp_path / "b.json").exists()


def test_snapshot_pipeline_with_a_seeded_shuffle(tmp_path):
    golden = tmp_path / "seeded.json"

    def build():
        g = tf.Graph()
        with g.as_default():
            tf.compat.v1.set_random_seed(7)
            x = qp.range_input_producer(10, num_epochs=1, shuffle=True).dequeue()
            return qp.batch({"x": x}, 3)

    first = snapshot_pipeline(build(), golden, 2, timeout=10)
    again = snapshot_pipeline(build(), golden, 2, timeout=10)  # same seed: same batches
    np.testing.assert_array_equal(first[1]["x"], again[1]["x"])


def test_snapshot_pipeline_refuses_nondeterministic_pipelines(tmp_path, graph):
    x = qp.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
    fetch = qp.shuffle_batch([x], 2, capacity=10, min_after_dequeue=2)
    with pytest.raises(ValueError, match="RandomShuffleQueue"):
        snapshot_pipeline(fetch, tmp_path / "s.json", 1)


# --------------------------------------------------------------- pytest plugin


def test_plugin_is_registered_by_entry_point():
    points = importlib.metadata.entry_points(group="pytest11")
    ours = [p for p in points if p.value == "queue_pipeline.pytest_plugin"]
    assert ours, (
        "the pytest11 entry point is missing: run `pip install -e .` so that "
        "setup.py's entry points are installed"
    )
    assert ours[0].load() is pytest_plugin


PLUGIN_TESTS = """
import numpy as np
import tensorflow as tf
import queue_pipeline as qp

def test_fixtures(qp_graph, qp_session, qp_coord):
    assert tf.compat.v1.get_default_graph() is qp_graph
    assert qp_session.graph is qp_graph
    x = qp.range_input_producer(5, num_epochs=1, shuffle=False).dequeue()
    qp_session.run(tf.compat.v1.local_variables_initializer())
    qp.start_queue_runners(qp_session, coord=qp_coord)
    assert [qp_session.run(x) for _ in range(5)] == list(range(5))

def test_session_times_out(qp_graph, qp_session):
    q = tf.queue.FIFOQueue(1, tf.int32, shapes=[[]])
    try:
        qp_session.run(q.dequeue())
    except tf.errors.DeadlineExceededError:
        return
    raise AssertionError("no timeout")

def test_snapshot(qp_snapshot):
    qp_snapshot([np.arange(VALUE)], name="small")
"""


@pytest.mark.slow
def test_plugin_fixtures_and_snapshot_option(pytester):
    pytester.makeini("[pytest]\nqueue_pipeline_timeout = 0.5\n")
    pytester.makepyfile(test_plugin=PLUGIN_TESTS.replace("VALUE", "3"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3)
    golden = pytester.path / "__snapshots__" / "test_plugin" / "test_snapshot-small.json"
    assert json.loads(golden.read_text())["batches"][0]["(tensor)"]["values"] == [0, 1, 2]

    pytester.makepyfile(test_plugin=PLUGIN_TESTS.replace("VALUE", "4"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2, failed=1)
    assert "component (tensor): shape golden [3], now [4]" in result.stdout.str()

    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "--update-snapshots")
    result.assert_outcomes(passed=3)
    assert json.loads(golden.read_text())["batches"][0]["(tensor)"]["values"] == [0, 1, 2, 3]
    assert not testing.update_snapshots_requested()  # reset after the inner run
