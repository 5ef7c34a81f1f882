"""The dataset engine keeps large preloaded constants out of the session's graph.

NOTE [ Constants kept out of the session's graph ] (``_core/held_constants.py``):
a ``slice_input_producer`` over large ``tf.constant`` arrays is served from the
arrays held in memory (fed to the iterator when the input starts), and the
legacy ``Const`` keeps a compact value of the same dtype and shape. These tests
check that the served batches are the queue engine's, that nothing reads the
compact value (ops built later, runners put back, ``to_dataset``, lifted
regions: the value comes back or the step is refused with a clear error), and
that checkpoints restore into the fed iterator.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import drain, new_session
from queue_pipeline._core import held_constants
from queue_pipeline._engine import rebuilder as engine_rebuilder

IMAGES = np.arange(4000, dtype=np.float32).reshape(400, 10)
LABELS = (np.arange(400) % 9).astype(np.int64)


@pytest.fixture(autouse=True)
def large(monkeypatch):
    """The arrays above count as large (NOTE [ Large preloaded arrays ])."""
    monkeypatch.setattr(engine_rebuilder, "LARGE_ROWS_BYTES", 1_000)


def _pipeline(num_epochs=1, batch_size=32):
    images, labels = tf.constant(IMAGES, name="images"), tf.constant(LABELS, name="labels")
    image, label = qp.slice_input_producer([images, labels], num_epochs=num_epochs, shuffle=False)
    batch = qp.batch([image, label], batch_size, allow_smaller_final_batch=True)
    return images, labels, batch


def _build(engine="dataset", **kwargs):
    graph = tf.Graph()
    with graph.as_default(), qp.engine(engine):
        built = _pipeline(**kwargs)
    return graph, built


def _rows(batches) -> np.ndarray:
    return np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])


def _const_bytes(graph, name) -> int:
    node = next(n for n in graph.as_graph_def().node if n.name == name)
    return node.attr["value"].tensor.ByteSize()


def test_the_served_constant_is_compact_in_the_graph_and_the_batches_are_the_queues(caplog):
    graph, (images, _, batch) = _build(num_epochs=2)
    assert held_constants.holds(graph)
    assert _const_bytes(graph, "images") < 100 < IMAGES.nbytes  # a few bytes, not 16,000
    assert images.shape == IMAGES.shape and images.dtype == tf.float32  # unchanged statically
    ops = {op.type for op in graph.get_operations()}
    assert "Placeholder" in ops  # the rows are fed when the input starts
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        served = drain(qp, graph, batch)
    queue_graph, (_, _, queue_batch) = _build("queue", num_epochs=2)
    queued = drain(qp, queue_graph, queue_batch)
    assert len(served) == len(queued) == 25  # 800 rows in batches of 32
    for got, want in zip(_rows(served), _rows(queued)):
        np.testing.assert_array_equal(got, want)
    assert "stays in the session's graph" not in caplog.text


def test_the_held_arrays_are_aligned_for_a_feed_without_copy():
    graph, (images, labels, _) = _build()
    for tensor, want in ((images, IMAGES), (labels, LABELS)):
        value = held_constants.static_value(tensor)
        assert value.ctypes.data % 64 == 0 and value.flags.c_contiguous  # TF uses it in place
        np.testing.assert_array_equal(value, want)
    unaligned = np.frombuffer(b"\0" * 8 + IMAGES.tobytes(), np.float32)[2:].reshape(IMAGES.shape)
    assert unaligned.ctypes.data % 64 != 0
    again = engine_rebuilder._aligned(unaligned)  # noqa: SLF001
    assert again.ctypes.data % 64 == 0 and np.array_equal(again, IMAGES)


def test_each_session_starts_the_fed_input_from_the_beginning():
    graph, (_, _, batch) = _build()
    first = drain(qp, graph, batch)
    again = drain(qp, graph, batch)
    assert len(first) == len(again) == 13
    np.testing.assert_array_equal(_rows(first)[0], _rows(again)[0])


def test_an_op_built_later_that_reads_the_constant_gets_its_value_back(caplog):
    graph, (images, _, batch) = _build()
    with graph.as_default():
        total = tf.reduce_sum(images)  # an evaluation over the same arrays, before any run
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        with new_session(graph) as sess:
            assert sess.run(total) == IMAGES.sum()
    assert (
        "the preloaded constants 'images', 'labels' stay in the session's graph: "
        "'Sum' reads 'images'" in caplog.text
    )
    assert not held_constants.holds(graph)
    assert _const_bytes(graph, "images") > IMAGES.nbytes
    assert len(drain(qp, graph, batch)) == 13  # the input is served as before


def test_reading_the_constant_after_the_graph_ran_is_refused_with_the_fix():
    graph, (images, _, batch) = _build()
    with graph.as_default(), new_session(graph) as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        try:
            assert sess.run(batch)[0].shape == (32, 10)
            total = tf.reduce_sum(images)
            with pytest.raises(tf.errors.FailedPreconditionError) as error:
                sess.run(total)
            for part in ("'Sum'", "'images'", "400x10 float32", "engine('queue')"):
                assert part in str(error.value)
            with pytest.raises(tf.errors.FailedPreconditionError):
                sess.run(images)  # the constant itself
            assert sess.run(batch)[0].shape == (32, 10)  # the input still runs
        finally:
            coord.request_stop()
            coord.join(threads)


def test_to_dataset_and_a_second_call_over_the_constant_read_its_value():
    graph, (images, labels, batch) = _build()
    with graph.as_default(), qp.engine("dataset"):
        # computed rows: the region holding the constant is lifted out of the graph
        image, label = qp.slice_input_producer([images * 2.0, labels], num_epochs=1, shuffle=False)
        doubled = qp.batch([image, label], 100)
        dataset = qp.to_dataset(batch)
    assert held_constants.holds(graph)
    rows = drain(qp, graph, doubled)
    np.testing.assert_array_equal(np.concatenate([r[0] for r in rows]), IMAGES * 2.0)
    with graph.as_default():
        element = tf.compat.v1.data.make_one_shot_iterator(dataset.take(1)).get_next()
        with new_session(graph) as sess:
            first = sess.run(element)
    np.testing.assert_array_equal(first[0], IMAGES[:32])


def test_a_runner_put_back_by_a_fallback_reads_the_real_value(caplog):
    graph = tf.Graph()
    with graph.as_default(), qp.engine("dataset"):
        images = tf.constant(IMAGES, name="images")
        (image,) = qp.slice_input_producer([images], num_epochs=1, shuffle=False)
        served = qp.batch([image], 50)
        assert held_constants.holds(graph)
        # a second consumer of the same producer that the engine cannot serve
        with caplog.at_level(logging.INFO, logger="queue_pipeline"):
            # a per-record op reading a trainable variable: no Dataset can hold it
            weight = tf.compat.v1.Variable(1.0, trainable=True, name="weight")
            kept = qp.batch([image * weight.read_value()], 50, shapes=[[10]])
    assert not held_constants.holds(graph)
    assert "'images' stays in the session's graph" in caplog.text
    with graph.as_default(), new_session(graph) as sess:
        sess.run(
            [
                tf.compat.v1.global_variables_initializer(),
                tf.compat.v1.local_variables_initializer(),
            ]
        )
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        try:
            values = sess.run(kept)
            assert values.shape == (50, 10) and values.sum() > 0
            assert sess.run(served).shape == (50, 10)
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)


def test_a_checkpoint_restores_the_position_before_the_runners_start(tmp_path):
    graph, (_, _, batch) = _build(batch_size=40)
    with graph.as_default():
        step = tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver()
        with new_session(graph) as sess:
            sess.run(
                [
                    tf.compat.v1.global_variables_initializer(),
                    tf.compat.v1.local_variables_initializer(),
                ]
            )
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            sess.run(batch)
            sess.run(batch)
            path = saver.save(sess, str(tmp_path / "model"), global_step=step)
            want = sess.run(batch)
            coord.request_stop()
            coord.join(threads)
        with new_session(graph) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            saver.restore(sess, path)  # as MonitoredTrainingSession does: before the runners
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)  # leaves the restored input alone
            got = sess.run(batch)
            coord.request_stop()
            coord.join(threads)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0][0, 0] == 800.0  # row 80: two batches of 40 were read before the save


def test_monitored_training_session_resumes_the_fed_input(tmp_path):
    def first_ids(steps):
        graph, (_, _, batch) = _build(batch_size=40)
        ids = []
        with graph.as_default():
            step = tf.compat.v1.train.get_or_create_global_step()
            train = tf.compat.v1.assign_add(step, 1)
            with tf.compat.v1.train.MonitoredTrainingSession(
                checkpoint_dir=str(tmp_path),
                save_checkpoint_steps=1,
                save_summaries_steps=None,
                config=tf.compat.v1.ConfigProto(operation_timeout_in_ms=60_000),
            ) as sess:
                for _ in range(steps):
                    ids.append(int(sess.run([batch, train])[0][0][0, 0]))
        return ids

    assert first_ids(2) == [0, 400]
    assert first_ids(1) == [800]  # resumed after the checkpoint of the second step


def test_a_batch_fetched_before_the_runners_start_says_to_start_them():
    graph, (_, _, batch) = _build()
    with graph.as_default(), new_session(graph) as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        with pytest.raises(tf.errors.FailedPreconditionError) as error:
            sess.run(batch)
    assert "fetched before the queue runners were started" in str(error.value)
    assert "start_queue_runners(sess=sess, coord=coord)" in str(error.value)


def test_large_string_rows_are_fed_and_stay_in_the_graph():
    names = np.array([f"file_{i:05d}.jpg".encode() for i in range(400)])

    def pipeline():
        (name,) = qp.slice_input_producer([tf.constant(names)], num_epochs=1, shuffle=False)
        return qp.batch([name], 64, allow_smaller_final_batch=True)

    graph = tf.Graph()
    with graph.as_default(), qp.engine("dataset"):
        batch = pipeline()
    assert not held_constants.holds(graph)  # TF's compact form is for numbers
    got = np.concatenate(drain(qp, graph, batch))
    np.testing.assert_array_equal(got, names)
