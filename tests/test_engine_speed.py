"""The dataset engine's speed paths keep what the legacy call promised.

* One-thread ``batch`` delivers its examples in the queue engine's order on the
  batch-then-decode path (TF 1.x's one FIFO thread promised that order).
* Batching calls over large preloaded arrays shuffle and batch row indices and
  gather each batch once (NOTE [ Large preloaded arrays ]): same order for
  ``batch``, same epochs for a seeded ``shuffle_batch``, repeated run to run.
* Steps of a served graph run through cached callables (NOTE [ Cached step
  callables ]): the same values and structures as ``Session.run``, one
  callable per fetch signature, and ``Session.run`` itself for everything
  that is not a plain step.
"""

from __future__ import annotations

import contextlib
import logging
import re

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import drain, id_label_csv, new_session
from queue_pipeline._core import step_cache
from queue_pipeline._engine import rebuilder as engine_rebuilder


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory):
    """Three CSV files of 25 rows ``id,label`` with distinct ids."""
    return id_label_csv(tmp_path_factory.mktemp("engine_speed"), rows=25)


def _run(engine, fn, *, seed=None):
    """(outputs, graph, every batch in order) of fn() under `engine`, drained to the end."""
    graph = tf.Graph()
    with graph.as_default(), qp.engine(engine):
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        outputs = fn()
    return outputs, graph, drain(qp, graph, outputs)


def _same_batches(a, b) -> bool:
    return len(a) == len(b) and all(
        all(np.array_equal(x, y) for x, y in zip(tf.nest.flatten(p), tf.nest.flatten(q)))
        for p, q in zip(a, b)
    )


def _rows(batches) -> list:
    """Every example of `batches` as a tuple of its components' bytes, in order."""
    return [
        tuple(np.asarray(x)[i].tobytes() for x in tf.nest.flatten(batch))
        for batch in batches
        for i in range(len(tf.nest.flatten(batch)[0]))
    ]


def _dataset_ops(graph) -> list[str]:
    return [op.type for op in graph.get_operations() if op.type.endswith("Dataset")] + [
        node.op for f in graph.as_graph_def().library.function for node in f.node_def
    ]


# ----------------------------------------------------------- one-thread order


def test_one_thread_batch_keeps_the_queue_order_when_decoding_batches(csv_files, caplog):
    def pipeline():
        queue = qp.string_input_producer(csv_files, num_epochs=2, shuffle=False)
        _, line = qp.TextLineReader().read(queue)
        ident, label = tf.io.decode_csv(line, [[0], [0]])
        return qp.batch([ident, label], 7, allow_smaller_final_batch=True)

    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        _, _, served = _run("dataset", pipeline)
    assert "vectorized, decoded once per batch" in caplog.text
    _, _, queued = _run("queue", pipeline)
    assert _same_batches(served, queued) and len(served) == 22  # 150 lines, a tail of 3


# ----------------------------------------------------------- preloaded arrays


IMAGES = np.arange(3000, dtype=np.float32).reshape(300, 10)
LABELS = np.arange(300) % 7


@pytest.fixture
def large(monkeypatch):
    """The preloaded arrays above count as large (NOTE [ Large preloaded arrays ])."""
    monkeypatch.setattr(engine_rebuilder, "LARGE_ROWS_BYTES", 1_000)


def test_preloaded_batch_keeps_order_and_gathers_whole_batches(large, caplog):
    def pipeline():
        image, label = qp.slice_input_producer(
            [tf.constant(IMAGES), tf.constant(LABELS)], num_epochs=2, shuffle=False
        )
        return qp.batch([label, image], 32, allow_smaller_final_batch=True)  # reordered

    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        outputs, graph, served = _run("dataset", pipeline)
    assert "rows gathered in memory a batch at a time" in caplog.text
    ops = _dataset_ops(graph)
    # gathered in TF from the fed arrays (NOTE [ Large preloaded arrays ]): no Python
    assert "UnbatchDataset" not in ops and "PyFuncStateless" not in ops
    assert ops.count("GatherV2") == 2
    queue_outputs, _, queued = _run("queue", pipeline)
    assert [(t.dtype, t.shape.as_list()) for t in outputs] == [
        (t.dtype, t.shape.as_list()) for t in queue_outputs
    ]
    assert _same_batches(served, queued) and len(served) == 19  # 600 rows, a tail of 24


def test_preloaded_shuffle_batch_same_epochs_and_repeats_with_a_seed(large, caplog):
    def pipeline():
        image, label = qp.slice_input_producer(
            [tf.constant(IMAGES), tf.constant(LABELS)], num_epochs=2, seed=3
        )
        return qp.shuffle_batch(
            [image, label], 25, capacity=100, min_after_dequeue=50, seed=5, num_threads=2
        )

    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        _, _, first = _run("dataset", pipeline)
    assert "shuffle_batch: 14,400 bytes of preloaded rows gathered in memory" in caplog.text
    _, _, again = _run("dataset", pipeline)
    assert _same_batches(first, again)  # seeded: the same order on every run
    _, _, queued = _run("queue", pipeline)
    assert sorted(_rows(first)) == sorted(_rows(queued))  # each row twice, as queued
    assert len(_rows(first)) == 600


def test_preloaded_batch_of_computed_rows_keeps_the_per_row_path(large, caplog):
    def pipeline():
        image, label = qp.slice_input_producer(
            [tf.constant(IMAGES), tf.constant(LABELS)], num_epochs=1, shuffle=False
        )
        return qp.batch([image * 2.0, label], 50)

    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        _, _, served = _run("dataset", pipeline)
    assert "slice_input_producer: 14,400 bytes of preloaded rows gathered" in caplog.text
    _, _, queued = _run("queue", pipeline)
    assert _same_batches(served, queued) and len(served) == 6


# ------------------------------------------------------------------ cached steps


def _served_csv(files):
    queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = qp.TextLineReader().read(queue)
    ident, label = tf.io.decode_csv(line, [[0], [0]])
    return qp.batch([ident, label], 5)


@contextlib.contextmanager
def _running(graph):
    """A Session on `graph` (the default graph inside) with its runners started; stops them."""
    with graph.as_default(), new_session(graph) as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        try:
            yield sess
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)


def test_cached_steps_return_what_session_run_returns(csv_files):
    graph = tf.Graph()
    with graph.as_default(), qp.engine("dataset"):
        ident, label = _served_csv(csv_files)
        total = tf.reduce_sum(ident)
        noop = tf.no_op()
    with _running(graph) as sess:
        base = len(step_cache.entries(sess))  # the initializer's step
        steps = [
            sess.run([ident, label]),
            sess.run((ident, label)),
            sess.run({"id": ident, "label": label}),
            sess.run(ident),
            sess.run(noop),
            sess.run([ident, noop]),
        ]
        for _ in range(3):  # the same signatures again
            sess.run([ident, label])
            sess.run(ident)
        entries = len(step_cache.entries(sess)) - base
        fed = sess.run(total, feed_dict={ident: [1, 2, 3, 4, 5]})  # a feed: uncached
        named = sess.run("batch:0")  # a name: uncached
        after = len(step_cache.entries(sess)) - base
    assert isinstance(steps[0], list) and isinstance(steps[1], tuple)
    assert sorted(steps[2]) == ["id", "label"] and isinstance(steps[3], np.ndarray)
    assert steps[4] is None and steps[5][1] is None
    assert np.array_equal(steps[0][0], np.arange(5)) and np.array_equal(
        steps[0][1], [0, 1, 2, 3, 0]
    )
    assert np.array_equal(steps[1][0], np.arange(5, 10))
    assert np.array_equal(steps[2]["id"], np.arange(10, 15))
    assert np.array_equal(steps[3], np.arange(15, 20))
    assert entries == 6  # one callable per signature, reused by the repeats
    assert fed == 15 and after == 6
    assert named.shape == (5,)
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run([ident, label])


def test_cached_steps_end_with_out_of_range_and_stop_at_the_bound(csv_files, monkeypatch):
    monkeypatch.setattr(step_cache, "MAX_ENTRIES", 2)
    graph = tf.Graph()
    with graph.as_default(), qp.engine("dataset"):
        ident, label = _served_csv(csv_files)
    seen = []
    with _running(graph) as sess:
        with pytest.raises(tf.errors.OutOfRangeError):
            for step in range(100):
                batch = sess.run([ident, label]) if step % 2 else sess.run([label, ident])
                seen.extend(batch[0] if step % 2 else batch[1])
        # The initializer's step and the first signature: the second ran uncached.
        assert len(step_cache.entries(sess)) == 2
    assert seen == [i * 100 + j for i in range(3) for j in range(25)]


def test_a_session_with_cached_steps_is_collected_once_dropped(csv_files):
    """The cached steps live on their session (NOTE [ Cached step callables ]):
    a closed, dropped session is freed with them, not held by the cache."""
    import gc
    import weakref

    graph = tf.Graph()
    with graph.as_default(), qp.engine("dataset"):
        ident, label = _served_csv(csv_files)
    with _running(graph) as sess:
        assert len(sess.run([ident, label])[0]) == 5
        assert step_cache.entries(sess)
        gone = weakref.ref(sess)
    del sess
    gc.collect()
    assert gone() is None


def test_queue_engine_steps_are_not_cached(csv_files):
    graph = tf.Graph()
    with graph.as_default():
        ident, label = _served_csv(csv_files)
    with _running(graph) as sess:
        assert len(sess.run([ident, label])[0]) == 5
        assert not step_cache.entries(sess)


@pytest.mark.slow
def test_a_cached_step_raises_the_error_session_run_raises(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\n3,x\n5,6\n7,8\n9,0\n1,1\n")  # line 2 does not decode
    graph = tf.Graph()
    with graph.as_default(), qp.engine("dataset"):
        batch = _served_csv([str(bad)])
    errors = []
    for feed in (None, {}):  # a plain step (cached), then one with a feed (Session.run)
        with _running(graph) as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(batch, feed_dict=feed)
            errors.append(info.value)
            assert len(step_cache.entries(sess)) == (2 if feed is None else 1)
    cached, uncached = errors
    assert type(cached) is type(uncached)
    assert getattr(cached.op, "name", None) == getattr(uncached.op, "name", None)
    # The same interpolation and naming (the ids tf.data numbers each iterator's Dataset by aside).
    assert _without_ids(cached.message) == _without_ids(uncached.message)
    assert "[[batch]]" in cached.message and "bad.csv, line 2" in cached.message  # interpolated


def _without_ids(message: str) -> str:
    return re.sub(r"DatasetV2:\d+", "DatasetV2:<id>", message)


def test_steps_of_served_batches_alone_run_in_the_callers_thread(csv_files, monkeypatch):
    """NOTE [ Served batches fetched in the caller's thread ]: a step fetching only
    served batch tensors runs one C++ callable with ``inter_op_thread_pool = -1``;
    a step that also fetches other work keeps the session's pool; both give
    Session.run's values and structures."""
    from tensorflow.python.client import session as tf_session

    made = []
    original = tf_session.BaseSession._make_callable_from_options

    def spy(self, callable_options):
        made.append((sorted(callable_options.fetch), callable_options.run_options))
        return original(self, callable_options)

    monkeypatch.setattr(tf_session.BaseSession, "_make_callable_from_options", spy)
    graph = tf.Graph()
    with graph.as_default(), qp.engine("dataset"):
        ident, label = _served_csv(csv_files)
        total = tf.reduce_sum(ident)
    with _running(graph) as sess:
        first = sess.run([ident, label])
        second = sess.run({"label": label, "id": ident})
        summed = sess.run(total)
        mixed = sess.run([ident, total])
    batch = sorted([ident.name, label.name])
    in_caller = [f for f, options in made if options.inter_op_thread_pool == -1]
    pooled = [f for f, options in made if options.inter_op_thread_pool == 0]
    assert in_caller == [batch, batch]  # the list and the dict signatures
    assert [total.name] in pooled and sorted([ident.name, total.name]) in pooled
    assert isinstance(first, list) and sorted(second) == ["id", "label"]
    assert np.array_equal(first[0], np.arange(5)) and np.array_equal(second["id"], np.arange(5, 10))
    assert summed == sum(range(10, 15)) and np.array_equal(mixed[0], np.arange(15, 20))
    assert mixed[1] == sum(mixed[0])
