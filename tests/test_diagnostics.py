"""Diagnostics for the classic traps (spec section 4) and the switches restoring TF's behaviour.

Each trap is checked three ways where it makes sense: TF's own behaviour,
queue_pipeline under ``tf_faithful()`` (the same), and queue_pipeline's
default (the diagnostic).
"""

from __future__ import annotations

import logging
import os
import subprocess
import textwrap
import threading

import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import TF, graph_nodes, new_session, python_argv
from queue_pipeline._core import settings as _settings

SHORT_MS = 1500  # sessions expected to block use this timeout


def _csv(tmp_path, rows, name="a.csv") -> str:
    path = tmp_path / name
    path.write_text("".join(f"{row}\n" for row in rows))
    return str(path)


def _csv_batch(m, files, *, num_epochs=None, batch_size=2):
    queue = m.string_input_producer(files, num_epochs=num_epochs, shuffle=False)
    _, line = m.TextLineReader().read(queue)
    a, b = tf.io.decode_csv(line, [[0], [0]])
    return m.batch([a, b], batch_size)


def _qp_errors(caplog):
    return [r for r in caplog.records if r.name == "queue_pipeline" and r.levelno >= logging.ERROR]


# --------------------------------------------------------------------------- switches


def test_defaults_are_all_on_and_tf_faithful_turns_all_off():
    settings = _settings.current()
    assert settings.engine == "queue"
    assert all(getattr(settings, key) for key in _settings.DIAGNOSTICS)
    with qp.tf_faithful():
        assert not any(getattr(_settings.current(), key) for key in _settings.DIAGNOSTICS)
        with qp.diagnostics(runner_errors=True):
            assert _settings.current().runner_errors
            assert not _settings.current().unstarted_guard
    assert _settings.current() == settings


def test_unknown_switch_and_engine_are_clear_errors():
    with pytest.raises(ValueError, match=r"unknown switches \['hang'\]"):
        qp.diagnostics(hang=False)
    with pytest.raises(ValueError, match="'turbo' is not an engine"):
        qp.engine("turbo")


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("off", set()),
        ("0", set()),
        ("on", set(_settings.DIAGNOSTICS)),
        ("runner_errors, no_spin", {"runner_errors", "no_spin"}),
    ],
)
def test_environment_variable(monkeypatch, raw, expected):
    monkeypatch.setenv("QUEUE_PIPELINE_DIAGNOSTICS", raw)
    settings = _settings._from_environment()
    assert {k for k in _settings.DIAGNOSTICS if getattr(settings, k)} == expected


def test_environment_variable_rejects_unknown_names(monkeypatch):
    monkeypatch.setenv("QUEUE_PIPELINE_DIAGNOSTICS", "runner_errors,typo")
    with pytest.raises(ValueError, match="unknown switches"):
        _settings._from_environment()
    monkeypatch.delenv("QUEUE_PIPELINE_DIAGNOSTICS")
    monkeypatch.setenv("QUEUE_PIPELINE_ENGINE", "fast")
    with pytest.raises(ValueError, match="QUEUE_PIPELINE_ENGINE='fast'"):
        _settings._from_environment()


# --------------------------------------------------------------------------- 1. never started


def _consumers():
    def batch(tmp):
        return _csv_batch(qp, [tmp])

    def shuffle_batch(tmp):
        return qp.shuffle_batch([tf.constant(1)], 2, capacity=10, min_after_dequeue=2)

    def batch_join(tmp):
        return qp.batch_join([[tf.constant(1)], [tf.constant(2)]], 2)

    def slice_producer(tmp):
        return qp.slice_input_producer([tf.range(5)])[0]

    def reader_read(tmp):
        return qp.TextLineReader().read(qp.string_input_producer([tmp]))[1]

    def reader_read_up_to(tmp):
        return qp.TextLineReader().read_up_to(qp.string_input_producer([tmp]), 2)[1]

    return {
        f.__name__: f
        for f in (batch, shuffle_batch, batch_join, slice_producer, reader_read, reader_read_up_to)
    }


CONSUMERS = _consumers()


GRACE = 0.2  # a short grace period for the tests that expect the guard to raise


@pytest.mark.parametrize("consumer", list(CONSUMERS))
def test_unstarted_runners_fail_after_the_grace_period_naming_the_fix(tmp_path, consumer):
    path = _csv(tmp_path, ["1,2", "3,4"])
    g = tf.Graph()
    with g.as_default(), qp.diagnostics(unstarted_grace_secs=GRACE):
        fetch = CONSUMERS[consumer](path)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(fetch)  # a 20 s operation timeout would give DeadlineExceeded
    message = info.value.message
    assert "were not started in this session within 0.2 s" in message
    assert "start_queue_runners" in message and "MonitoredTrainingSession" in message
    assert "unstarted_guard=False" in message and "unstarted_grace_secs" in message


def test_the_guard_adds_nothing_to_the_data_path(tmp_path):
    """The guard is the session hook's: the graph is TF's plus two unconnected probe ops."""
    path = _csv(tmp_path, ["1,2"])
    graphs = {}
    for name, m in (("tf", TF), ("qp", qp)):
        g = tf.Graph()
        with g.as_default():
            _csv_batch(m, [path])
        graphs[name] = g
    ours = graph_nodes(graphs["qp"], strip_guards=False)
    extra = sorted(set(ours) - set(graph_nodes(graphs["tf"], strip_guards=False)))
    assert extra and all("_qp_guard/" in name for name in extra)
    assert {ours[name][0] for name in extra} <= {"QueueSizeV2", "QueueIsClosedV2"}
    for node in graphs["qp"].as_graph_def().node:  # nothing consumes a probe
        assert not any("_qp_guard/" in i for i in node.input), node.name
    assert graph_nodes(graphs["qp"]) == graph_nodes(graphs["tf"])


def test_a_consumer_thread_that_starts_first_waits_for_the_runners(tmp_path):
    """A consumer dequeuing before the main thread calls start_queue_runners gets
    every row, as with TF (which waits); the guard's grace period covers it."""
    rows = [f"{i},{i}" for i in range(10)]
    path = _csv(tmp_path, rows)
    g = tf.Graph()
    with g.as_default():
        fetch = _csv_batch(qp, [path], num_epochs=1, batch_size=1)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            got, errors, asking = [], [], threading.Event()

            def consume():
                asking.set()
                try:
                    while True:
                        got.append(int(sess.run(fetch)[0][0]))
                except tf.errors.OutOfRangeError:
                    pass
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            consumer = threading.Thread(target=consume)
            consumer.start()
            asking.wait(5)
            threading.Event().wait(0.2)  # the consumer is already waiting
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            consumer.join(20)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    assert not consumer.is_alive() and not errors, errors
    assert got == list(range(10))


@pytest.mark.parametrize("m", [TF, qp], ids=["tf", "qp-faithful"])
def test_unstarted_runners_hang_as_in_tf_with_the_guard_off(tmp_path, m):
    path = _csv(tmp_path, ["1,2", "3,4"])
    g = tf.Graph()
    with g.as_default(), qp.diagnostics(unstarted_guard=False):
        fetch = _csv_batch(m, [path])
        assert not [op for op in g.get_operations() if "_qp_guard/" in op.name]
        with new_session(g, timeout_ms=SHORT_MS) as sess:
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(fetch)


def test_guard_judges_each_session_separately(tmp_path):
    path = _csv(tmp_path, ["1,2", "3,4"])
    g = tf.Graph()
    with g.as_default(), qp.diagnostics(unstarted_grace_secs=GRACE):
        fetch = _csv_batch(qp, [path])
        with new_session(g) as started, new_session(g) as idle:
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(started, coord)
            try:
                assert started.run(fetch)[0].tolist() == [1, 3]
                with pytest.raises(tf.errors.InvalidArgumentError, match="were not started"):
                    idle.run(fetch)
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=5)


def test_queue_filled_by_hand_passes_the_guard():
    g = tf.Graph()
    with g.as_default():
        fetch = qp.batch([tf.constant(7)], 2)
        (runner,) = tf.compat.v1.get_collection("queue_runners")
        with new_session(g) as sess:
            for _ in range(2):
                sess.run(runner.enqueue_ops[0])
            assert sess.run(fetch).tolist() == [7, 7]


def test_runners_rebuilt_from_a_meta_graph_are_marked_by_start_queue_runners(tmp_path):
    path = _csv(tmp_path, ["1,2", "3,4", "5,6", "7,8"])
    with tf.Graph().as_default():
        fetch = _csv_batch(qp, [path], num_epochs=1)
        meta = tf.compat.v1.train.export_meta_graph()
        fetch_name = fetch[0].name
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.train.import_meta_graph(meta)
        runners = tf.compat.v1.get_collection("queue_runners")
        assert runners and not any(isinstance(r, qp.QueueRunner) for r in runners)
        fetch = g.get_tensor_by_name(fetch_name)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            try:
                assert sorted(x for b in _drain_until_end(sess, fetch) for x in b) == [1, 3, 5, 7]
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=5)


def _drain_until_end(sess, fetch):
    out = []
    try:
        while True:
            out.append(sess.run(fetch).tolist())
    except tf.errors.OutOfRangeError:
        return out


# --------------------------------------------------------------------------- 2. locals


@pytest.mark.parametrize("with_coord", [True, False], ids=["coord", "no-coord"])
def test_uninitialized_local_variable_is_named(tmp_path, with_coord):
    path = _csv(tmp_path, ["1,2", "3,4"])
    g = tf.Graph()
    with g.as_default():
        fetch = _csv_batch(qp, [path], num_epochs=1)
        with new_session(g) as sess:
            coord = qp.Coordinator() if with_coord else None
            threads = qp.start_queue_runners(sess, coord)
            with pytest.raises(
                (tf.errors.NotFoundError, tf.errors.FailedPreconditionError)
            ) as info:
                sess.run(fetch)
            if coord:
                with pytest.raises(type(info.value)) as joined:
                    coord.join(threads, stop_grace_period_secs=5)
                assert "local_variables_initializer" in str(joined.value)
            else:
                for thread in threads:
                    thread.join(5)
                    assert not thread.is_alive()
    message = info.value.message
    assert "local_variables_initializer()" in message
    assert "input_producer/limit_epochs/epochs" in message
    assert "queue_pipeline: a queue runner failed" in message


def test_uninitialized_match_filenames_once_is_named(tmp_path):
    _csv(tmp_path, ["1,2", "3,4"])  # the glob would match it
    g = tf.Graph()
    with g.as_default():
        files = qp.match_filenames_once(str(tmp_path / "*.csv"))
        fetch = _csv_batch(qp, files)
        with new_session(g) as sess:
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            with pytest.raises(
                (tf.errors.NotFoundError, tf.errors.FailedPreconditionError)
            ) as info:
                sess.run(fetch)
            coord.request_stop()
            with pytest.raises(type(info.value)):
                coord.join(threads, stop_grace_period_secs=5)
    assert "matching_filenames" in info.value.message
    assert "local_variables_initializer()" in info.value.message


@pytest.mark.parametrize("m", [TF, qp], ids=["tf", "qp-faithful"])
def test_uninitialized_local_looks_like_end_of_data_in_tf(tmp_path, m):
    """Spec P2, kept under tf_faithful(): the consumer sees OutOfRange, join the error."""
    path = _csv(tmp_path, ["1,2", "3,4"])
    g = tf.Graph()
    with g.as_default(), qp.tf_faithful():
        fetch = _csv_batch(m, [path], num_epochs=1)
        with new_session(g) as sess:
            coord = m.Coordinator()
            threads = m.start_queue_runners(sess, coord)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(fetch)
            with pytest.raises((tf.errors.NotFoundError, tf.errors.FailedPreconditionError)):
                coord.join(threads, stop_grace_period_secs=5)


# --------------------------------------------------------------------------- 3. runner errors


@pytest.mark.parametrize("with_coord", [True, False], ids=["coord", "no-coord"])
def test_missing_file_reaches_the_consumer_with_its_type(tmp_path, with_coord):
    good = _csv(tmp_path, ["1,2", "3,4"])
    missing = str(tmp_path / "missing.csv")
    g = tf.Graph()
    with g.as_default():
        fetch = _csv_batch(qp, [good, missing], num_epochs=1)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = qp.Coordinator() if with_coord else None
            threads = qp.start_queue_runners(sess, coord)
            assert sess.run(fetch)[0].tolist() == [1, 3]
            with pytest.raises(tf.errors.NotFoundError) as info:
                sess.run(fetch)
            assert isinstance(info.value.__cause__, tf.errors.OutOfRangeError)
            if coord:
                with pytest.raises(tf.errors.NotFoundError, match="missing.csv"):
                    coord.join(threads, stop_grace_period_secs=5)
            else:
                for thread in threads:
                    thread.join(5)
    message = info.value.message
    assert "queue 'batch/fifo_queue'" in message
    assert "ReaderReadV2" in message
    assert "missing.csv" in message


def test_decode_error_after_good_records_is_never_a_clean_end(tmp_path):
    path = _csv(tmp_path, ["1,2", "3,4", "5,six", "7,8"])
    g = tf.Graph()
    with g.as_default():
        fetch = _csv_batch(qp, [path], num_epochs=1)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            assert sess.run(fetch)[0].tolist() == [1, 3]
            with pytest.raises(tf.errors.InvalidArgumentError, match="queue 'batch/fifo_queue'"):
                sess.run(fetch)
            with pytest.raises(tf.errors.InvalidArgumentError):
                coord.join(threads, stop_grace_period_secs=5)


def test_error_without_coordinator_unblocks_the_consumer():
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(10, tf.float32, shapes=[[]])
        bad = tf.debugging.check_numerics(tf.constant(float("nan")), "boom")
        runner = qp.QueueRunner(queue, [queue.enqueue(bad)])
        with new_session(g) as sess:
            (thread,) = runner.create_threads(sess, start=True)
            with pytest.raises(tf.errors.InvalidArgumentError, match="boom") as info:
                sess.run(queue.dequeue())
            thread.join(5)
            assert sess.run(queue.is_closed())
            (error,) = runner.exceptions_raised
            assert type(error) is tf.errors.InvalidArgumentError
    assert "queue 'fifo_queue'" in info.value.message


def test_an_unrelated_dataset_end_stays_a_plain_end_after_a_runner_failed():
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(10, tf.float32, shapes=[[]])
        bad = tf.debugging.check_numerics(tf.constant(float("nan")), "boom")
        runner = qp.QueueRunner(queue, [queue.enqueue(bad)])
        rows = tf.compat.v1.data.make_one_shot_iterator(tf.data.Dataset.range(2)).get_next()
        with new_session(g) as sess:
            (thread,) = runner.create_threads(sess, start=True)
            with pytest.raises(tf.errors.InvalidArgumentError, match="boom"):
                sess.run(queue.dequeue())
            thread.join(5)
            assert [sess.run(rows), sess.run(rows)] == [0, 1]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(rows)  # the dataset's own end, not the runner's error


def test_monitored_training_session_raises_the_root_cause(tmp_path):
    missing = str(tmp_path / "missing.csv")
    g = tf.Graph()
    with g.as_default():
        fetch = _csv_batch(qp, [missing], num_epochs=1)
        with pytest.raises(tf.errors.NotFoundError, match="missing.csv"):
            with tf.compat.v1.train.MonitoredTrainingSession(
                config=tf.compat.v1.ConfigProto(operation_timeout_in_ms=20_000)
            ) as sess:
                while not sess.should_stop():
                    sess.run(fetch)


def test_runner_errors_off_keeps_tf_contract(tmp_path):
    missing = str(tmp_path / "missing.csv")
    g = tf.Graph()
    with g.as_default():
        fetch = _csv_batch(qp, [missing], num_epochs=1)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = qp.Coordinator()
            with qp.diagnostics(runner_errors=False):
                threads = qp.start_queue_runners(sess, coord)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(fetch)
            with pytest.raises(tf.errors.NotFoundError) as info:
                coord.join(threads, stop_grace_period_secs=5)
    assert "queue_pipeline:" not in info.value.message


# --------------------------------------------------------------------------- 4. shutdown


def _full_pipeline():
    """Two runners that block: one on a full queue, one on an empty pipeline queue.

    `full` has capacity 2 and nobody consumes it. `starved` dequeues from a
    pipeline queue whose runner keeps nothing (a dynamic keep_input that is
    False), so it stays empty.
    """
    full = qp.batch([tf.constant(1)], 1, capacity=2, num_threads=2)
    keep = tf.compat.v1.placeholder_with_default(False, [])
    empty = qp.maybe_batch([tf.constant(2)], keep, 1, capacity=2)
    starved = qp.batch([empty], 1, capacity=2)
    return full, starved


def test_stop_and_join_end_blocked_runners_without_error_logs(caplog):
    g = tf.Graph()
    with g.as_default(), caplog.at_level(logging.DEBUG, "queue_pipeline"):
        _full_pipeline()
        with new_session(g) as sess:
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
            assert not any(t.is_alive() for t in threads)
    assert not _qp_errors(caplog)


def test_closing_the_session_first_ends_quietly(caplog):
    """Spec P9: closing the session under blocked runners is not reported as an error."""
    g = tf.Graph()
    with g.as_default(), caplog.at_level(logging.DEBUG):
        _full_pipeline()
        sess = new_session(g)
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        sess.close()
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)  # no CancelledError
        assert not any(t.is_alive() for t in threads)
    assert not _qp_errors(caplog)


def test_closing_the_session_without_coordinator_is_quiet(caplog):
    g = tf.Graph()
    with g.as_default(), caplog.at_level(logging.DEBUG, "queue_pipeline"):
        _full_pipeline()
        runners = tf.compat.v1.get_collection("queue_runners")
        sess = new_session(g)
        threads = [t for r in runners for t in r.create_threads(sess, start=True)]
        sess.close()
        for thread in threads:
            thread.join(5)
            assert not thread.is_alive()
    assert not _qp_errors(caplog)
    assert all(not r.exceptions_raised for r in runners)


# TF's own contract, kept under tf_faithful(): the thread dies with the error.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_closing_the_session_without_coordinator_logs_in_faithful_mode(caplog):
    g = tf.Graph()
    with g.as_default(), caplog.at_level(logging.DEBUG, "queue_pipeline"):
        qp.batch([tf.constant(1)], 1, capacity=2)
        (runner,) = tf.compat.v1.get_collection("queue_runners")
        sess = new_session(g)
        with qp.tf_faithful():
            (thread,) = runner.create_threads(sess, start=True)
        sess.close()
        thread.join(5)
    assert [r for r in _qp_errors(caplog) if "Exception in QueueRunner" in r.getMessage()]


@pytest.mark.slow
def test_non_daemon_runner_threads_do_not_keep_the_interpreter_alive(tmp_path):
    script = tmp_path / "exit_with_blocked_runner.py"
    script.write_text(
        textwrap.dedent("""
        import tensorflow as tf
        import queue_pipeline as qp
        with tf.Graph().as_default() as g:
            qp.batch([tf.constant(1)], 1, capacity=2)
            (runner,) = tf.compat.v1.get_collection("queue_runners")
            sess = tf.compat.v1.Session(graph=g)
            threads = runner.create_threads(sess, daemon=False, start=True)
            assert not threads[0].daemon
        print("script done")
    """)
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        python_argv(str(script)), capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "script done" in done.stdout
    assert "Exception in QueueRunner" not in done.stderr


def test_keep_input_false_closes_instead_of_spinning():
    g = tf.Graph()
    with g.as_default():
        fetch = qp.maybe_batch([tf.constant(1)], keep_input=False, batch_size=2)
        with new_session(g) as sess:
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(fetch)
            enqueue_threads = [t for t in threads if "close_on_stop" not in t.name]
            for thread in enqueue_threads:
                thread.join(5)
                assert not thread.is_alive()
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)


@pytest.mark.parametrize("m", [TF, qp], ids=["tf", "qp-faithful"])
def test_keep_input_false_spins_in_tf(m):
    g = tf.Graph()
    with g.as_default(), qp.tf_faithful():
        fetch = m.maybe_batch([tf.constant(1)], keep_input=False, batch_size=2)
        with new_session(g, timeout_ms=SHORT_MS) as sess:
            coord = m.Coordinator()
            threads = m.start_queue_runners(sess, coord)
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(fetch)
            assert threads[0].is_alive()  # still looping over its NoOp
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)


def test_guard_marks_even_when_threads_are_created_outside_the_graph_context(tmp_path):
    path = _csv(tmp_path, ["1,2", "3,4"])
    g = tf.Graph()
    with g.as_default():
        fetch = _csv_batch(qp, [path])
    with new_session(g) as sess:  # eager is the default out here
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        try:
            assert sess.run(fetch)[0].tolist() == [1, 3]
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)


def test_no_runner_thread_outlives_its_test():
    names = [t.name for t in threading.enumerate() if t.name.startswith("QueueRunnerThread")]
    assert names == []


# --------------------------------------------------------------------------- per pipeline, free


def test_a_runner_error_ends_only_the_pipelines_it_feeds_and_only_once(tmp_path):
    """Pipelines A and B in one session: B's bad row is B's error; A's end stays plain;
    a pipeline C built after B's error was delivered ends plainly too."""
    good = _csv(tmp_path, ["1,2", "3,4"], "good.csv")
    bad = _csv(tmp_path, ["5,6", "7"], "bad.csv")
    g = tf.Graph()
    with g.as_default():
        a = _csv_batch(qp, [good], num_epochs=1, batch_size=1)
        b = _csv_batch(qp, [bad], num_epochs=1, batch_size=1)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            with pytest.raises(tf.errors.InvalidArgumentError, match="Expect 2 fields"):
                for _ in range(5):
                    sess.run(b)
            coord.request_stop()
            with pytest.raises(tf.errors.InvalidArgumentError):
                coord.join(threads, stop_grace_period_secs=5)
            # A's runners were stopped with everyone's: its end is a plain end.
            with pytest.raises(tf.errors.OutOfRangeError) as info:
                for _ in range(5):
                    sess.run(a)
            assert not info.value.message.startswith("queue_pipeline:")
            before = len(tf.compat.v1.get_collection("queue_runners"))
            c = _csv_batch(qp, [good], num_epochs=1, batch_size=1)
            sess.run(tf.compat.v1.variables_initializer(tf.compat.v1.local_variables()[-1:]))
            coord = qp.Coordinator()
            threads = [
                t
                for qr in tf.compat.v1.get_collection("queue_runners")[before:]
                for t in qr.create_threads(sess, coord, start=True)
            ]  # C's only
            rows = []
            with pytest.raises(tf.errors.OutOfRangeError) as info:
                while True:
                    rows.append(sess.run(c)[0].tolist())
            assert rows == [[1], [3]]
            assert not info.value.message.startswith("queue_pipeline:")  # B's is gone
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)


def test_graphs_without_queue_pipeline_run_through_tfs_own_session_run():
    from queue_pipeline._diagnostics import session_hook as _session_hook

    with tf.Graph().as_default() as g:
        qp.batch([tf.constant(1)], 1)  # installs the hook (once per process)
    with tf.Graph().as_default() as plain:
        x = tf.constant(3) + 1
        with new_session(plain) as sess:
            assert sess.run(x) == 4
    assert _session_hook.registered(g) and not _session_hook.registered(plain)


@pytest.mark.slow
def test_no_deprecation_warning_from_our_own_calls(tmp_path):
    """Every builder, run once, in a fresh process of the suite's TF mode."""
    script = tmp_path / "all_builders.py"
    data = tmp_path / "a.csv"
    data.write_text("1,2\n3,4\n")
    script.write_text(
        textwrap.dedent(f"""
        import tensorflow as tf
        import queue_pipeline as qp
        for engine in ("queue", "dataset"):
            with tf.Graph().as_default(), qp.engine(engine):
                files = qp.match_filenames_once({str(tmp_path / "*.csv")!r})
                queue = qp.string_input_producer(files, num_epochs=2, seed=1)
                key, value = qp.TextLineReader().read(queue)
                row = tf.io.decode_csv(value, [[0], [0]])
                first = qp.shuffle_batch(row, 2, 10, 2, num_threads=2)
                (index,) = qp.slice_input_producer([tf.range(4)], num_epochs=1)
                second = qp.batch_join([[index], [index + 10]], 2)
                n = qp.range_input_producer(3, num_epochs=1).dequeue()
                third = qp.maybe_batch([n], tf.equal(n % 2, 0), 1)
                with tf.compat.v1.Session() as sess:
                    sess.run([tf.compat.v1.global_variables_initializer(),
                              tf.compat.v1.local_variables_initializer()])
                    coord = qp.Coordinator()
                    threads = qp.start_queue_runners(sess, coord)
                    sess.run([first, second, third])
                    coord.request_stop()
                    coord.join(threads)
        print("ran")
    """)
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        python_argv(str(script)), capture_output=True, text=True, timeout=180, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran" in done.stdout
    ours = [
        line
        for line in done.stderr.splitlines()
        if "deprecated" in line and "queue_pipeline" in line
    ]
    froms = [
        line
        for line in done.stderr.splitlines()
        if line.startswith("WARNING:tensorflow:From") and "queue_pipeline" in line
    ]
    assert not ours and not froms, done.stderr[-3000:]
