"""Tests of QueueRunner, add_queue_runner and start_queue_runners, against TF's own."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import TF, build, drain, graph_nodes, new_session, session_config


def _counter_runner(m, limit=3, n_ops=1, **kwargs):
    """A queue fed by a counter that raises OutOfRangeError after `limit` runs."""
    var = tf.compat.v1.Variable(0, name="count", use_resource=True)
    counter = var.count_up_to(limit)
    queue = tf.queue.FIFOQueue(10, tf.int32, shapes=[[]])
    enqueue = queue.enqueue(counter)
    runner = m.QueueRunner(queue, [enqueue] * n_ops, **kwargs)
    return queue, runner


def _stop_and_join(coord, threads):
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=5)


# --- construction -------------------------------------------------------------


def test_default_close_and_cancel_ops_identical_to_tf():
    graphs = {}
    for m in (TF, qp):
        g = tf.Graph()
        with g.as_default():
            queue, runner = _counter_runner(m)
            assert runner.close_op.name == "fifo_queue_Close"
            assert runner.cancel_op.name == "fifo_queue_Close_1"
            assert runner.cancel_op.get_attr("cancel_pending_enqueues")
            assert runner.name == queue.name == "fifo_queue"
            assert runner.queue is queue
            assert runner.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
        graphs[m] = g
    assert graph_nodes(graphs[qp]) == graph_nodes(graphs[TF])


def test_custom_ops_and_types_kept():
    with tf.Graph().as_default():
        queue = tf.queue.FIFOQueue(2, tf.int32)
        close, cancel = tf.no_op(name="c"), tf.no_op(name="k")
        types = (tf.errors.OutOfRangeError, tf.errors.CancelledError)
        runner = qp.QueueRunner(queue, [queue.enqueue(1)], close, cancel, types)
        assert runner.close_op is close and runner.cancel_op is cancel
        assert runner.queue_closed_exception_types == types
        assert not [
            op for op in tf.compat.v1.get_default_graph().get_operations() if "Close" in op.name
        ]


CONSTRUCTOR_ERRORS = {
    "no_queue": (dict(enqueue_ops=["x"]), ValueError, "Must provide queue and enqueue_ops"),
    "empty_ops": (dict(enqueue_ops=[]), ValueError, "Must provide queue and enqueue_ops"),
    "types_list": (
        dict(queue_closed_exception_types=[tf.errors.OutOfRangeError]),
        TypeError,
        "queue_closed_exception_types",
    ),
    "types_not_op_error": (
        dict(queue_closed_exception_types=(ValueError,)),
        TypeError,
        "queue_closed_exception_types",
    ),
    "types_empty": (dict(queue_closed_exception_types=()), TypeError, None),
    "types_not_class": (dict(queue_closed_exception_types=("x",)), TypeError, None),
}


@pytest.mark.parametrize("case", list(CONSTRUCTOR_ERRORS))
def test_constructor_errors_match_tf_types(case):
    kwargs, error, text = CONSTRUCTOR_ERRORS[case]
    for m in (TF, qp):
        with tf.Graph().as_default():
            queue = tf.queue.FIFOQueue(2, tf.int32)
            kwargs = dict(kwargs)
            if "enqueue_ops" not in kwargs:
                kwargs = {"queue": queue, "enqueue_ops": [queue.enqueue(1)], **kwargs}
            with pytest.raises(error) as info:
                m.QueueRunner(**kwargs)
            if text:
                assert text in str(info.value)
    # Where TF's own message is broken, ours names the argument.
    with tf.Graph().as_default():
        queue = tf.queue.FIFOQueue(2, tf.int32)
        with pytest.raises(TypeError, match="queue_closed_exception_types.*got|saw: \\(\\)"):
            qp.QueueRunner(queue, [queue.enqueue(1)], queue_closed_exception_types=())


def test_proto_and_queue_are_exclusive():
    for m in (TF, qp):
        with tf.Graph().as_default():
            queue, runner = _counter_runner(m)
            with pytest.raises(ValueError, match="queue_runner_def and queue are mutually"):
                m.QueueRunner(queue, queue_runner_def=runner.to_proto())


# --- threads ------------------------------------------------------------------


@pytest.mark.parametrize("use_coord", [False, True])
def test_threads_names_flags_and_counting(impl, use_coord):
    g = tf.Graph()
    with g.as_default():
        queue, runner = _counter_runner(impl, limit=3, n_ops=2)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            coord = impl.Coordinator() if use_coord else None
            threads = runner.create_threads(sess, coord=coord, daemon=True)
            names = [t.name for t in threads]
            expected = ["QueueRunnerThread-fifo_queue-fifo_queue_enqueue"] * 2
            if use_coord:
                expected.append("QueueRunnerThread-fifo_queue-close_on_stop")
            assert names == expected
            assert all(t.daemon and not t.is_alive() for t in threads)
            # Created but not started: the session counts as busy (TF's P16).
            assert runner.create_threads(sess) == []
            for t in threads:
                t.start()
            if use_coord:
                assert sorted(sess.run(queue.dequeue_many(3))) == [0, 1, 2]
                _stop_and_join(coord, threads)
            else:
                for t in threads:
                    t.join(10)
                assert sorted(sess.run(queue.dequeue_many(3))) == [0, 1, 2]
                assert sess.run(queue.is_closed())
                # Every thread finished: threads can be created again.
                again = runner.create_threads(sess)
                assert len(again) == 2 and runner.exceptions_raised == []


def test_last_thread_closes_queue(impl):
    """With two enqueue ops, only the second to finish closes the queue."""
    g = tf.Graph()
    with g.as_default():
        up1 = tf.queue.FIFOQueue(5, tf.int32, shapes=[[]])
        up2 = tf.queue.FIFOQueue(5, tf.int32, shapes=[[]])
        queue = tf.queue.FIFOQueue(10, tf.int32, shapes=[[]])
        runner = impl.QueueRunner(
            queue, [queue.enqueue(up1.dequeue()), queue.enqueue(up2.dequeue())]
        )
        with new_session(g) as sess:
            threads = runner.create_threads(sess, start=True)
            sess.run(up1.close())
            threads[0].join(10)
            assert not threads[0].is_alive()
            assert not sess.run(queue.is_closed())
            sess.run(up2.enqueue(7))
            sess.run(up2.close())
            threads[1].join(10)
            assert sess.run(queue.is_closed())
            assert sess.run(queue.dequeue()) == 7


def test_error_with_coordinator_reaches_join_and_consumer_sees_end(impl):
    """TF's contract (diagnostics off): the consumer sees a plain end of data."""
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(10, tf.float32, shapes=[[]])
        bad = tf.debugging.check_numerics(tf.constant(np.nan), "boom")
        impl.add_queue_runner(impl.QueueRunner(queue, [queue.enqueue(bad)]))
        with new_session(g) as sess:
            coord = impl.Coordinator()
            with qp.tf_faithful():
                threads = impl.start_queue_runners(sess, coord)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(queue.dequeue())  # cancelled by close_on_stop
            with pytest.raises(tf.errors.InvalidArgumentError, match="boom"):
                coord.join(threads, stop_grace_period_secs=5)
            assert tf.compat.v1.get_collection("queue_runners")[0].exceptions_raised == []


# TF's own contract, kept under tf_faithful(): the thread dies with the error.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_error_without_coordinator_is_kept_and_logged(caplog):
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(10, tf.float32, shapes=[[]])
        bad = tf.debugging.check_numerics(tf.constant(np.nan), "boom")
        runner = qp.QueueRunner(queue, [queue.enqueue(bad)])
        with new_session(g) as sess, caplog.at_level(logging.ERROR, "queue_pipeline"):
            with qp.tf_faithful():
                (thread,) = runner.create_threads(sess, start=True)
            thread.join(10)
            (error,) = runner.exceptions_raised
            assert isinstance(error, tf.errors.InvalidArgumentError)
            assert not sess.run(queue.is_closed())  # TF: the queue stays open
    assert "Exception in QueueRunner" in caplog.text


def test_closed_by_someone_else_is_an_error_unless_typed(impl):
    """P10: enqueue into a closed queue is CancelledError, not a clean stop."""
    for types, clean in (
        (None, False),
        ((tf.errors.OutOfRangeError, tf.errors.CancelledError), True),
    ):
        g = tf.Graph()
        with g.as_default():
            queue = tf.queue.FIFOQueue(10, tf.int32, shapes=[[]])
            runner = impl.QueueRunner(queue, [queue.enqueue(1)], queue_closed_exception_types=types)
            with new_session(g) as sess:
                sess.run(queue.close())
                coord = impl.Coordinator()
                threads = runner.create_threads(sess, coord=coord, start=True)
                threads[0].join(10)
                coord.request_stop()
                if clean:
                    coord.join(threads, stop_grace_period_secs=5)
                else:
                    with pytest.raises(tf.errors.CancelledError, match="is closed"):
                        coord.join(threads, stop_grace_period_secs=5)


def test_stop_unblocks_threads_blocked_on_full_queue(impl):
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(2, tf.int32, shapes=[[]])
        runner = impl.QueueRunner(queue, [queue.enqueue(1)] * 3)
        with new_session(g) as sess:
            coord = impl.Coordinator()
            threads = runner.create_threads(sess, coord=coord, start=True)
            assert sess.run(queue.dequeue()) == 1
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)  # clean: no exception
            assert not any(t.is_alive() for t in threads)


def test_runs_independently_per_session():
    g = tf.Graph()
    with g.as_default():
        queue = tf.queue.FIFOQueue(5, tf.int32, shapes=[[]])
        runner = qp.QueueRunner(queue, [queue.enqueue(3)])
        with new_session(g) as s1, new_session(g) as s2:
            coord = qp.Coordinator()
            threads = runner.create_threads(s1, coord=coord, start=True)
            threads += runner.create_threads(s2, coord=coord, start=True)
            assert len(threads) == 4
            assert s1.run(queue.dequeue()) == 3 and s2.run(queue.dequeue()) == 3
            _stop_and_join(coord, threads)


# --- start_queue_runners -------------------------------------------------------


def test_start_queue_runners_defaults_and_second_call(impl):
    g = tf.Graph()
    with g.as_default():
        queue, runner = _counter_runner(impl, limit=1000)
        impl.add_queue_runner(runner)
        with new_session(g) as sess, sess.as_default():
            sess.run(tf.compat.v1.global_variables_initializer())
            coord = impl.Coordinator()
            threads = impl.start_queue_runners(coord=coord)  # default session
            assert all(t.daemon and t.is_alive() for t in threads)
            assert impl.start_queue_runners(coord=coord) == []
            assert sess.run(queue.dequeue()) == 0
            _stop_and_join(coord, threads)


def test_start_queue_runners_collection_and_start_false(impl):
    g = tf.Graph()
    with g.as_default():
        _, runner = _counter_runner(impl)
        impl.add_queue_runner(runner, collection="mine")
        with new_session(g) as sess:
            assert impl.start_queue_runners(sess, collection="queue_runners") == []
            threads = impl.start_queue_runners(sess, start=False, daemon=False, collection="mine")
            assert len(threads) == 1
            assert not threads[0].is_alive() and not threads[0].daemon


def test_start_queue_runners_warns_when_empty(caplog):
    g = tf.Graph()
    with g.as_default(), new_session(g) as sess, caplog.at_level(logging.WARNING):
        assert qp.start_queue_runners(sess) == []
    assert "no queue runners were defined" in caplog.text


@pytest.mark.parametrize("case", ["no_default", "not_session"])
def test_start_queue_runners_session_errors(impl, case):
    with tf.Graph().as_default():
        if case == "no_default":
            with pytest.raises(ValueError, match="No default session is registered"):
                impl.start_queue_runners()
        else:
            with pytest.raises(TypeError, match="sess must be a `tf.Session` object"):
                impl.start_queue_runners(sess=object())


def test_start_queue_runners_uses_session_graph():
    """Runners come from the session's graph, even under another default graph."""
    g = tf.Graph()
    with g.as_default():
        _, runner = _counter_runner(qp)
        qp.add_queue_runner(runner)
    with tf.Graph().as_default(), new_session(g) as sess:
        with g.as_default():
            sess.run(tf.compat.v1.global_variables_initializer())
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        assert len(threads) == 2
        _stop_and_join(coord, threads)


def test_monitored_session_instance_returns_empty():
    with tf.Graph().as_default():
        qp.string_input_producer(["a"])
        with tf.compat.v1.train.MonitoredSession(
            session_creator=tf.compat.v1.train.ChiefSessionCreator(config=session_config())
        ) as mon:
            assert qp.start_queue_runners(sess=mon) == []


def test_add_queue_runner_has_no_guard_as_in_tf():
    g = tf.Graph()
    with g.as_default():
        qp.add_queue_runner("anything", collection="c")
        assert g.get_collection("c") == ["anything"]


@pytest.mark.v2_only(
    "eager execution exists only under TF 2.x defaults; TF1 mode: "
    "test_no_eager_at_all_gives_tfs_argument_errors"
)
@pytest.mark.parametrize("api", ["QueueRunner", "start_queue_runners"])
def test_eager_raises_graph_mode_required(api):
    with pytest.raises(qp.GraphModeRequiredError, match=api) as info:
        getattr(qp, api)()
    assert isinstance(info.value, RuntimeError)


@pytest.mark.tf1_only(
    "TF1 mode has no eager execution; TF 2.x: test_eager_raises_graph_mode_required"
)
@pytest.mark.parametrize(
    "api, match",
    [("QueueRunner", "queue and enqueue_ops"), ("start_queue_runners", "No default session")],
)
def test_no_eager_at_all_gives_tfs_argument_errors(api, match):
    """At a TF1 script's top level the calls build; missing arguments fail as in TF."""
    for m in (TF, qp):
        with pytest.raises(ValueError, match=match):
            getattr(m, api)()


# --- protos and meta graphs ----------------------------------------------------


def test_to_proto_equals_tf_and_respects_export_scope():
    protos = {}
    for m in (TF, qp):
        with tf.Graph().as_default():
            with tf.name_scope("outer"):
                queue = tf.queue.FIFOQueue(3, tf.int32, name="q")
                types = (tf.errors.OutOfRangeError, tf.errors.CancelledError)
                runner = m.QueueRunner(
                    queue, [queue.enqueue(1), queue.enqueue(2)], queue_closed_exception_types=types
                )
            protos[m] = [runner.to_proto(), runner.to_proto("outer"), runner.to_proto("other")]
    assert protos[qp] == protos[TF]
    full, scoped, outside = protos[qp]
    assert full.queue_name == "outer/q" and scoped.queue_name == "q"
    assert list(scoped.enqueue_op_name) == ["q_enqueue", "q_enqueue_1"]
    assert outside is None
    assert list(full.queue_closed_exception_types) == [11, 1]


def test_from_proto_with_import_scope():
    with tf.Graph().as_default():
        queue, runner = _counter_runner(qp)
        proto = runner.to_proto()
    g = tf.Graph()
    with g.as_default():
        with tf.name_scope("imp"):
            _counter_runner(qp)
        for m in (TF, qp):
            rebuilt = m.QueueRunner.from_proto(proto, import_scope="imp")
            assert rebuilt.queue is g.get_operation_by_name("imp/fifo_queue")
            assert rebuilt.name == "imp/fifo_queue"
            assert [op.name for op in rebuilt.enqueue_ops] == ["imp/fifo_queue_enqueue"]
            assert rebuilt.close_op.name == "imp/fifo_queue_Close"
            assert rebuilt.cancel_op.name == "imp/fifo_queue_Close_1"
            assert rebuilt.queue_closed_exception_types == (tf.errors.OutOfRangeError,)


def test_legacy_proto_without_types_defaults_to_out_of_range():
    with tf.Graph().as_default():
        _, runner = _counter_runner(qp)
        proto = runner.to_proto()
        del proto.queue_closed_exception_types[:]
        rebuilt = qp.QueueRunner(queue_runner_def=proto)
        assert rebuilt.queue_closed_exception_types == (tf.errors.OutOfRangeError,)


def test_meta_graph_round_trip_runs():
    """Export a queue_pipeline pipeline, import it under a scope, run it."""
    with tf.Graph().as_default():
        with tf.name_scope("outer"):
            files = qp.string_input_producer(["a", "b", "c"], shuffle=False)
        assert files.name == "outer/input_producer"
        meta = tf.compat.v1.train.export_meta_graph()
    assert "queue_runners" in meta.collection_def
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.train.import_meta_graph(meta, import_scope="imp")
        (runner,) = g.get_collection("queue_runners")
        assert runner.name == "imp/outer/input_producer"
        dequeue = g.get_operation_by_name("imp/outer/input_producer").outputs[0]
        value = tf.raw_ops.QueueDequeueV2(handle=dequeue, component_types=[tf.string])
        with new_session(g) as sess:
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            assert [sess.run(value)[0] for _ in range(4)] == [b"a", b"b", b"c", b"a"]
            _stop_and_join(coord, threads)


# --- interop with TF's own machinery --------------------------------------------


def _producer_fetch(m):
    return m.string_input_producer(["a", "b", "c"], num_epochs=2, shuffle=False).dequeue()


def test_tf_start_queue_runners_starts_ours():
    g, fetch = build(qp, _producer_fetch)

    class Mixed:  # TF's runner starter and Coordinator, our pipeline
        Coordinator = tf.train.Coordinator
        start_queue_runners = staticmethod(tf.compat.v1.train.start_queue_runners)

    assert drain(Mixed, g, fetch) == [b"a", b"b", b"c"] * 2


def test_our_start_queue_runners_starts_tfs():
    g, fetch = build(TF, _producer_fetch)
    assert drain(qp, g, fetch) == [b"a", b"b", b"c"] * 2


def test_monitored_training_session_runs_our_runners():
    g = tf.Graph()
    with g.as_default():
        value = _producer_fetch(qp)
        tf.compat.v1.train.get_or_create_global_step()
        seen = []
        with tf.compat.v1.train.MonitoredTrainingSession(config=session_config()) as sess:
            while not sess.should_stop():
                seen.append(sess.run(value))
    assert seen == [b"a", b"b", b"c"] * 2


def test_monitored_session_reraises_runner_root_cause(tmp_path):
    g = tf.Graph()
    with g.as_default():
        files = qp.string_input_producer([str(tmp_path / "missing.txt")])
        _, line = qp.TextLineReader().read(files)
        with pytest.raises(tf.errors.NotFoundError, match="missing.txt"):
            with tf.compat.v1.train.MonitoredSession(
                session_creator=tf.compat.v1.train.ChiefSessionCreator(config=session_config())
            ) as sess:
                sess.run(line)


def test_supervisor_starts_our_runners(tmp_path):
    g = tf.Graph()
    with g.as_default():
        value = _producer_fetch(qp)
        sv = tf.compat.v1.train.Supervisor(
            logdir=None,
            summary_op=None,
            saver=None,
            local_init_op=tf.compat.v1.local_variables_initializer(),
        )
        with sv.managed_session(config=session_config()) as sess:
            got = [sess.run(value) for _ in range(6)]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(value)
        assert got == [b"a", b"b", b"c"] * 2


def test_our_runner_with_tf_coordinator_and_ours_with_tf_runner():
    for runner_impl, coord_cls in ((qp, tf.train.Coordinator), (TF, qp.Coordinator)):
        g = tf.Graph()
        with g.as_default():
            queue, runner = _counter_runner(runner_impl, limit=2)
            with new_session(g) as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                coord = coord_cls()
                threads = runner.create_threads(sess, coord=coord, start=True)
                assert sorted(sess.run(queue.dequeue_many(2))) == [0, 1]
                with pytest.raises(tf.errors.OutOfRangeError):
                    sess.run(queue.dequeue())
                _stop_and_join(coord, threads)


def test_no_threads_left_behind():
    before = threading.active_count()
    g, fetch = build(qp, _producer_fetch)
    drain(qp, g, fetch)
    assert threading.active_count() == before
