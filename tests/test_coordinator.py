"""Tests of queue_pipeline.coordinator, differential against TF's Coordinator and LooperThread."""

from __future__ import annotations

import inspect
import logging
import sys
import threading
import time

import pytest
import tensorflow as tf

from queue_pipeline import coordinator as coordinator_module
from queue_pipeline.coordinator import Coordinator, LooperThread

TFCoordinator = tf.train.Coordinator
TFLooperThread = tf.compat.v1.train.LooperThread

# (Coordinator class, LooperThread class) per implementation; TF's is the oracle.
IMPLS = {
    "ours": (Coordinator, LooperThread),
    "tf": (TFCoordinator, TFLooperThread),
}

SHORT_GRACE = 0.05  # grace period for joins that expect stragglers
THREAD_TIMEOUT = 10.0  # upper bound on any wait for a test thread


@pytest.fixture(params=sorted(IMPLS), ids=sorted(IMPLS))
def impl(request):
    """The implementation under test: a (Coordinator, LooperThread) pair."""
    return IMPLS[request.param]


@pytest.fixture
def threads_to_stop():
    """Tracks (event, thread) pairs; at teardown sets each event and joins each thread."""
    tracked: list[tuple[threading.Event, threading.Thread]] = []
    yield tracked
    for event, _ in tracked:
        event.set()
    for _, thread in tracked:
        if thread.ident is not None:
            thread.join(THREAD_TIMEOUT)
            assert not thread.is_alive(), f"test thread {thread.name} did not end"


def outcome(fn, *args, **kwargs):
    """Runs fn and describes what happened, so two implementations can be compared."""
    try:
        result = fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - SystemExit is part of the contract
        return ("raised", type(e), str(e))
    return ("returned", result)


def run_both(scenario):
    """Runs scenario(Coordinator, LooperThread) with both implementations; returns (ours, tf)."""
    return scenario(*IMPLS["ours"]), scenario(*IMPLS["tf"])


def blocked_thread(tracked, name, coord=None):
    """Starts a thread that blocks until teardown (or its event); optionally registered."""
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(THREAD_TIMEOUT,), name=name, daemon=True)
    tracked.append((release, thread))
    if coord is not None:
        coord.register_thread(thread)
    thread.start()
    return release, thread


def caught(error):
    """Raises `error` and returns sys.exc_info() from the except block."""
    try:
        raise error
    except BaseException:  # noqa: BLE001
        return sys.exc_info()


def without_annotations(sig: inspect.Signature) -> inspect.Signature:
    """`sig` with parameter and return annotations removed (TF's have none)."""
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return sig.replace(parameters=params, return_annotation=inspect.Signature.empty)


# -- public surface --------------------------------------------------------------------------


COORDINATOR_METHODS = [
    "__init__",
    "request_stop",
    "clear_stop",
    "should_stop",
    "stop_on_exception",
    "wait_for_stop",
    "register_thread",
    "join",
    "raise_requested_exception",
]
LOOPER_METHODS = ["__init__", "loop", "run", "start_loop", "stop_loop", "run_loop"]


@pytest.mark.parametrize(
    "ours, theirs, name",
    [(Coordinator, TFCoordinator, n) for n in COORDINATOR_METHODS]
    + [(LooperThread, TFLooperThread, n) for n in LOOPER_METHODS],
    ids=[f"Coordinator.{n}" for n in COORDINATOR_METHODS]
    + [f"LooperThread.{n}" for n in LOOPER_METHODS],
)
def test_signature_matches_tf(ours, theirs, name):
    ours_sig = inspect.signature(getattr(ours, name))
    assert without_annotations(ours_sig) == inspect.signature(getattr(theirs, name))
    # Ours are fully annotated, on top of TF's names, order and defaults.
    assert all(
        p.annotation is not inspect.Parameter.empty
        for p in ours_sig.parameters.values()
        if p.name != "self"
    )


def test_public_members_match_tf():
    def public(cls):
        return {n for n in dir(cls) if not n.startswith("_")}

    assert public(Coordinator) == public(TFCoordinator)
    assert public(LooperThread) - public(threading.Thread) == (
        public(TFLooperThread) - public(threading.Thread)
    )
    assert isinstance(inspect.getattr_static(Coordinator, "joined"), property)
    assert isinstance(inspect.getattr_static(LooperThread, "loop"), staticmethod)


def test_module_surface():
    assert coordinator_module.__all__ == sorted(coordinator_module.__all__)
    assert set(coordinator_module.__all__) == {"Coordinator", "LooperThread"}
    # Built on plain threading: TF's classes are not in our hierarchy or namespace.
    assert TFLooperThread not in LooperThread.__mro__
    assert TFCoordinator not in Coordinator.__mro__
    assert not any(
        value in (TFCoordinator, TFLooperThread) for value in vars(coordinator_module).values()
    )
    assert "Differences from TF 1.x:" in Coordinator.__doc__


# -- Coordinator: stop flag and recorded exception -------------------------------------------


def test_initial_state(impl):
    coord_cls, _ = impl
    coord = coord_cls()
    assert not coord.should_stop()
    assert not coord.joined
    assert coord.wait_for_stop(0.01) is False
    coord.raise_requested_exception()  # nothing recorded: no-op
    coord.join()  # no threads: returns at once
    assert coord.joined


def test_request_stop_without_exception(impl):
    coord_cls, _ = impl
    coord = coord_cls()
    coord.request_stop()
    assert coord.should_stop()
    assert coord.wait_for_stop(0) is True
    assert coord.wait_for_stop() is True
    coord.raise_requested_exception()
    coord.join()
    assert coord.joined


def test_exception_in_except_block_is_recorded_and_reraised():
    def scenario(coord_cls, _):
        coord = coord_cls()
        error = ValueError("bad record")
        try:
            raise error
        except ValueError as e:
            coord.request_stop(e)
        assert coord.should_stop()
        with pytest.raises(ValueError) as raised:
            coord.join()
        assert raised.value is error
        return outcome(coord.raise_requested_exception), coord.joined

    ours, theirs = run_both(scenario)
    assert ours == theirs == (("raised", ValueError, "bad record"), True)


def test_handled_exception_wins_over_the_argument():
    # TF records sys.exc_info(), i.e. the exception being handled, not `ex`.
    def scenario(coord_cls, _):
        coord = coord_cls()
        try:
            raise KeyError("actual")
        except KeyError:
            coord.request_stop(ValueError("passed"))
        return outcome(coord.join)

    ours, theirs = run_both(scenario)
    assert ours == theirs == ("raised", KeyError, "'actual'")


def test_exc_info_tuple_is_recorded_as_is():
    def scenario(coord_cls, _):
        coord = coord_cls()
        exc_info = caught(IndexError("from a tuple"))
        coord.request_stop(exc_info)  # outside any except block: the tuple is enough
        with pytest.raises(IndexError) as raised:
            coord.join()
        assert raised.value is exc_info[1]
        return coord.should_stop()

    assert run_both(scenario) == (True, True)


CLEAN_STOP_CASES = [
    pytest.param(None, tf.errors.OutOfRangeError(None, None, "eof"), False, id="default-oore"),
    pytest.param(None, ValueError("v"), True, id="default-valueerror"),
    pytest.param([ValueError], ValueError("v"), False, id="list-valueerror"),
    pytest.param([ValueError], tf.errors.OutOfRangeError(None, None, "eof"), True, id="list-oore"),
    pytest.param((KeyError, StopIteration), StopIteration(), False, id="tuple-stopiteration"),
    pytest.param([], tf.errors.OutOfRangeError(None, None, "eof"), True, id="empty-oore"),
    pytest.param([LookupError], KeyError("k"), False, id="list-subclass"),
]


@pytest.mark.parametrize("types, error, reported", CLEAN_STOP_CASES)
@pytest.mark.parametrize("as_tuple", [False, True], ids=["instance", "exc_info"])
def test_clean_stop_filter(types, error, reported, as_tuple):
    def scenario(coord_cls, _):
        coord = coord_cls(types)
        try:
            raise error
        except BaseException as e:  # noqa: BLE001
            coord.request_stop(sys.exc_info() if as_tuple else e)
        assert coord.should_stop()
        return outcome(coord.join)

    ours, theirs = run_both(scenario)
    assert ours == theirs
    assert (ours[0] == "raised") == reported


def test_clean_stop_types_converted_with_tuple():
    assert Coordinator([ValueError])._clean_stop_exception_types == (ValueError,)
    assert Coordinator()._clean_stop_exception_types == (tf.errors.OutOfRangeError,)
    assert Coordinator([])._clean_stop_exception_types == ()


def test_first_exception_wins():
    def scenario(coord_cls, _):
        coord = coord_cls()
        coord.request_stop(caught(ValueError("first")))
        coord.request_stop(caught(KeyError("second")))
        try:
            raise TypeError("third")
        except TypeError as e:
            coord.request_stop(e)
        return outcome(coord.join)

    ours, theirs = run_both(scenario)
    assert ours == theirs == ("raised", ValueError, "first")


def test_exception_after_clean_stop_is_dropped():
    def scenario(coord_cls, _):
        coord = coord_cls()
        coord.request_stop()
        coord.request_stop(caught(ValueError("late")))
        return outcome(coord.join), outcome(coord.raise_requested_exception)

    ours, theirs = run_both(scenario)
    assert ours == theirs == (("returned", None), ("returned", None))


def test_concurrent_reports_keep_exactly_one(impl):
    coord_cls, _ = impl
    coord = coord_cls()
    errors = [ValueError(f"worker {i}") for i in range(8)]
    go = threading.Event()

    def worker(error):
        go.wait(THREAD_TIMEOUT)
        with coord.stop_on_exception():
            raise error

    threads = [threading.Thread(target=worker, args=(e,)) for e in errors]
    for thread in threads:
        thread.start()
    go.set()
    with pytest.raises(ValueError) as raised:
        coord.join(threads, stop_grace_period_secs=THREAD_TIMEOUT)
    assert any(raised.value is e for e in errors)
    assert not any(t.is_alive() for t in threads)


def test_reported_exception_is_logged(caplog):
    coord = Coordinator()
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        coord.request_stop(caught(ValueError("logged")))
    records = [r for r in caplog.records if r.name == "queue_pipeline"]
    assert len(records) == 1
    assert records[0].levelno == logging.INFO
    assert records[0].getMessage().startswith("Error reported to Coordinator: ")
    assert "logged" in records[0].getMessage()


# -- after join, clear_stop, raise_requested_exception ---------------------------------------


def test_request_stop_after_join():
    def scenario(coord_cls, _):
        coord = coord_cls()
        coord.request_stop()
        coord.join()
        results = [
            outcome(coord.request_stop),  # no exception: fine
            outcome(coord.request_stop, caught(ValueError("tuple after join"))),
            outcome(coord.request_stop, caught(tf.errors.OutOfRangeError(None, None, "eof"))),
        ]
        try:
            raise KeyError("handled after join")
        except KeyError as e:
            results.append(outcome(coord.request_stop, e))
        try:
            raise KeyError("handled")
        except KeyError:
            results.append(outcome(coord.request_stop, ValueError("passed")))
        return results, coord.should_stop(), coord.joined

    ours, theirs = run_both(scenario)
    assert ours == theirs
    assert ours[0] == [
        ("returned", None),
        ("raised", ValueError, "tuple after join"),
        ("returned", None),
        ("raised", KeyError, "'handled after join'"),
        ("raised", KeyError, "'handled'"),
    ]


def test_clear_stop_resets_state(impl):
    coord_cls, _ = impl
    coord = coord_cls()
    coord.request_stop(caught(ValueError("cleared")))
    coord.clear_stop()
    assert not coord.should_stop()
    assert not coord.joined
    coord.raise_requested_exception()  # cleared: no-op
    coord.request_stop(caught(KeyError("new")))  # a new first exception is recorded
    with pytest.raises(KeyError):
        coord.join()
    assert coord.joined
    coord.clear_stop()
    assert not coord.joined
    assert not coord.should_stop()


def test_clear_stop_keeps_registered_threads(threads_to_stop):
    def scenario(coord_cls, _):
        coord = coord_cls()
        release, thread = blocked_thread(threads_to_stop, "registered", coord)
        coord.clear_stop()
        coord.request_stop()
        result = outcome(coord.join, stop_grace_period_secs=SHORT_GRACE)
        release.set()
        thread.join(THREAD_TIMEOUT)
        return result

    ours, theirs = run_both(scenario)
    assert (
        ours
        == theirs
        == (
            "raised",
            RuntimeError,
            "Coordinator stopped with threads still running: registered",
        )
    )


def test_request_stop_after_clear_stop_following_join():
    def scenario(coord_cls, _):
        coord = coord_cls()
        coord.request_stop()
        coord.join()
        coord.clear_stop()
        coord.request_stop(caught(ValueError("usable again")))
        return outcome(coord.join)

    ours, theirs = run_both(scenario)
    assert ours == theirs == ("raised", ValueError, "usable again")


def test_raise_requested_exception_leaves_state(impl):
    coord_cls, _ = impl
    coord = coord_cls()
    error = ValueError("pending")
    coord.request_stop(caught(error))
    for _ in range(2):
        with pytest.raises(ValueError) as raised:
            coord.raise_requested_exception()
        assert raised.value is error
    assert coord.should_stop()
    assert not coord.joined


def test_joined_is_read_only(impl):
    coord_cls, _ = impl
    with pytest.raises(AttributeError):
        coord_cls().joined = True


# -- stop_on_exception ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        ValueError("v"),
        SystemExit(3),
        KeyboardInterrupt(),
        tf.errors.OutOfRangeError(None, None, "e"),
    ],
    ids=["ValueError", "SystemExit", "KeyboardInterrupt", "OutOfRangeError"],
)
def test_stop_on_exception_swallows_and_records(error):
    def scenario(coord_cls, _):
        coord = coord_cls()
        reached_after = False
        with coord.stop_on_exception():
            raise error
        reached_after = True  # the exception was swallowed
        return reached_after, coord.should_stop(), outcome(coord.join)

    ours, theirs = run_both(scenario)
    assert ours == theirs
    assert ours[:2] == (True, True)
    clean = isinstance(error, tf.errors.OutOfRangeError)
    assert ours[2] == (("returned", None) if clean else ("raised", type(error), str(error)))


def test_stop_on_exception_without_exception(impl):
    coord_cls, _ = impl
    coord = coord_cls()
    with coord.stop_on_exception():
        pass
    assert not coord.should_stop()


# -- wait_for_stop ----------------------------------------------------------------------------


def test_wait_for_stop_wakes_other_thread(impl, threads_to_stop):
    coord_cls, _ = impl
    coord = coord_cls()
    results = []
    waiting = threading.Event()

    def waiter():
        waiting.set()
        results.append(coord.wait_for_stop(THREAD_TIMEOUT))

    thread = threading.Thread(target=waiter)
    threads_to_stop.append((threading.Event(), thread))
    thread.start()
    assert waiting.wait(THREAD_TIMEOUT)
    assert coord.wait_for_stop(0.01) is False
    coord.request_stop()
    thread.join(THREAD_TIMEOUT)
    assert results == [True]


# -- join ----------------------------------------------------------------------------------------


def test_join_waits_for_threads_without_stop_request(impl):
    # No stop request: join waits for the threads to end on their own.
    coord_cls, _ = impl
    coord = coord_cls()
    started = threading.Event()
    finish = threading.Event()

    def work():
        started.set()
        finish.wait(THREAD_TIMEOUT)

    thread = threading.Thread(target=work)
    coord.register_thread(thread)
    thread.start()
    assert started.wait(THREAD_TIMEOUT)
    timer = threading.Timer(0.05, finish.set)  # the thread ends while join is waiting
    timer.start()
    coord.join(stop_grace_period_secs=0)
    timer.join(THREAD_TIMEOUT)
    assert not thread.is_alive()
    assert not coord.should_stop()
    assert coord.joined


def test_join_reraises_thread_exception_over_stragglers(threads_to_stop):
    def scenario(coord_cls, _):
        coord = coord_cls()
        blocked_thread(threads_to_stop, "straggler", coord)

        def fail():
            with coord.stop_on_exception():
                raise ValueError("worker failed")

        failing = threading.Thread(target=fail)
        failing.start()
        return outcome(coord.join, [failing], stop_grace_period_secs=SHORT_GRACE)

    ours, theirs = run_both(scenario)
    assert ours == theirs == ("raised", ValueError, "worker failed")


@pytest.mark.parametrize("registered", [True, False], ids=["registered", "passed"])
def test_join_stragglers_message(registered, threads_to_stop):
    def scenario(coord_cls, _):
        coord = coord_cls()
        _, first = blocked_thread(threads_to_stop, "straggler-a", coord if registered else None)
        _, second = blocked_thread(threads_to_stop, "straggler-b", coord if registered else None)
        coord.request_stop()
        result = outcome(
            coord.join, None if registered else [first, second], stop_grace_period_secs=SHORT_GRACE
        )
        return result, coord.joined

    ours, theirs = run_both(scenario)
    assert ours[1] is theirs[1] is True
    assert ours[0][:2] == theirs[0][:2] == ("raised", RuntimeError)
    prefix = "Coordinator stopped with threads still running: "
    for message in (ours[0][2], theirs[0][2]):
        assert message.startswith(prefix)
        assert sorted(message[len(prefix) :].split(" ")) == ["straggler-a", "straggler-b"]


def test_join_ignore_live_threads_logs(caplog, impl, threads_to_stop):
    coord_cls, _ = impl
    coord = coord_cls()
    blocked_thread(threads_to_stop, "ignored-straggler", coord)
    coord.request_stop()
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        coord.join(stop_grace_period_secs=SHORT_GRACE, ignore_live_threads=True)
    assert coord.joined
    if coord_cls is Coordinator:
        messages = [r.getMessage() for r in caplog.records if r.name == "queue_pipeline"]
        assert messages == ["Coordinator stopped with threads still running: ignored-straggler"]


def test_join_forgets_registered_threads(impl, threads_to_stop):
    coord_cls, _ = impl
    coord = coord_cls()
    blocked_thread(threads_to_stop, "forgotten", coord)
    coord.request_stop()
    with pytest.raises(RuntimeError, match="forgotten"):
        coord.join(stop_grace_period_secs=SHORT_GRACE)
    coord.join(stop_grace_period_secs=SHORT_GRACE)  # the set was cleared: nothing to wait for


def test_join_grace_period_lets_threads_finish(impl):
    coord_cls, _ = impl
    coord = coord_cls()

    def polite():
        coord.wait_for_stop(THREAD_TIMEOUT)
        time.sleep(0.02)  # a short shutdown, well within the grace period

    threads = [threading.Thread(target=polite) for _ in range(3)]
    for thread in threads:
        coord.register_thread(thread)
        thread.start()
    coord.request_stop()
    coord.join(stop_grace_period_secs=THREAD_TIMEOUT)
    assert not any(t.is_alive() for t in threads)


def test_join_ignores_unstarted_and_finished_threads(impl):
    coord_cls, _ = impl
    coord = coord_cls()
    finished = threading.Thread(target=lambda: None)
    finished.start()
    finished.join()
    coord.register_thread(threading.Thread(target=lambda: None))  # never started
    coord.join([finished])
    assert coord.joined


# -- the deliberate difference (spec 1.18, pain point P15) ------------------------------------


def test_instance_outside_except_is_recorded_tf_raises_typeerror():
    error = ValueError("reported outside except")

    ours = Coordinator()
    ours.request_stop(error)
    assert ours.should_stop()
    with pytest.raises(ValueError) as raised:
        ours.join()
    assert raised.value is error

    theirs = TFCoordinator()
    with pytest.raises(TypeError, match="not all arguments converted during string formatting"):
        theirs.request_stop(error)
    assert not theirs.should_stop()  # TF is left broken: not stopped...
    with pytest.raises(TypeError, match="exceptions must derive from BaseException"):
        theirs.join()  # ...and its join raises `None`


def test_instance_outside_except_keeps_its_traceback():
    error = caught(KeyError("with traceback"))[1]
    coord = Coordinator()
    coord.request_stop(error)
    assert coord._exc_info_to_raise == (KeyError, error, error.__traceback__)


@pytest.mark.parametrize(
    "bad",
    [(None, None, None), (), (ValueError, "not an exception", None), "oops", ValueError],
    ids=["none-triple", "empty-tuple", "str-in-tuple", "str", "class"],
)
def test_incomplete_ex_records_valueerror(bad):
    coord = Coordinator()
    coord.request_stop(bad)
    assert coord.should_stop()
    expected = r"`ex` must be an exception or a complete sys\.exc_info\(\) tuple"
    with pytest.raises(ValueError, match=expected) as raised:
        coord.join()
    assert repr(bad) in str(raised.value)


def test_none_triple_tf_raises_typeerror():
    theirs = TFCoordinator()
    with pytest.raises(TypeError, match="not all arguments converted"):
        theirs.request_stop((None, None, None))
    assert not theirs.should_stop()


def test_bad_ex_after_join_raises_at_once():
    coord = Coordinator()
    coord.join()
    error = ValueError("outside except, after join")
    with pytest.raises(ValueError) as raised:
        coord.request_stop(error)
    assert raised.value is error
    with pytest.raises(ValueError, match=r"\(None, None, None\)"):
        coord.request_stop((None, None, None))

    theirs = TFCoordinator()
    theirs.join()
    with pytest.raises(TypeError, match="exceptions must derive from BaseException"):
        theirs.request_stop(error)


def test_bad_ex_does_not_replace_a_recorded_exception():
    coord = Coordinator()
    coord.request_stop(caught(KeyError("first")))
    coord.request_stop((None, None, None))
    with pytest.raises(KeyError):
        coord.join()


# -- LooperThread ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_coord", [None, "coord", 3, object()], ids=["None", "str", "int", "object"]
)
def test_looper_rejects_non_coordinator(bad_coord):
    def scenario(_, looper_cls):
        return outcome(looper_cls, bad_coord, None, target=lambda: None)

    ours, theirs = run_both(scenario)
    message = f"'coord' argument must be a Coordinator: {bad_coord}"
    assert ours == theirs == ("raised", ValueError, message)


def test_looper_duck_types_the_coordinator():
    class Partial:
        def should_stop(self):
            return True

        def request_stop(self, ex=None):
            pass

    with pytest.raises(ValueError, match="'coord' argument must be a Coordinator"):
        LooperThread(Partial(), None)


@pytest.mark.parametrize(
    "kwargs",
    [{"args": (1,)}, {"kwargs": {"a": 1}}, {"args": [1], "kwargs": {"a": 1}}],
    ids=["args", "kwargs", "both"],
)
def test_looper_args_require_target(kwargs):
    def scenario(coord_cls, looper_cls):
        coord = coord_cls()
        result = outcome(looper_cls, coord, None, **kwargs)
        coord.request_stop()
        coord.join()  # the rejected thread was not registered
        return result

    ours, theirs = run_both(scenario)
    assert (
        ours
        == theirs
        == (
            "raised",
            ValueError,
            "'args' and 'kwargs' argument require that you also pass 'target'",
        )
    )


def test_looper_empty_args_without_target_allowed(impl):
    coord_cls, looper_cls = impl
    looper = looper_cls(coord_cls(), None, args=(), kwargs={})
    assert looper.daemon


def test_looper_back_to_back_with_hooks(impl):
    coord_cls, looper_cls = impl
    coord = coord_cls()
    calls = []
    enough = threading.Event()

    class Looper(looper_cls):
        def start_loop(self):
            calls.append("start")

        def run_loop(self):
            calls.append("run")
            if calls.count("run") >= 5:
                enough.set()
                coord.wait_for_stop(THREAD_TIMEOUT)

        def stop_loop(self):
            calls.append("stop")

    looper = Looper(coord, None)
    assert looper.daemon and not looper.is_alive()
    looper.start()
    assert enough.wait(THREAD_TIMEOUT)
    coord.request_stop()
    coord.join(stop_grace_period_secs=THREAD_TIMEOUT)  # registered in the constructor
    assert not looper.is_alive()
    assert calls == ["start"] + ["run"] * 5 + ["stop"]


def test_looper_registers_itself_in_constructor(impl, threads_to_stop):
    coord_cls, looper_cls = impl
    coord = coord_cls()
    release = threading.Event()
    inside = threading.Event()

    def target():
        inside.set()
        release.wait(THREAD_TIMEOUT)

    looper = looper_cls(coord, None, target=target)
    looper.name = "registered-looper"
    threads_to_stop.append((release, looper))
    looper.start()
    assert inside.wait(THREAD_TIMEOUT)
    coord.request_stop()
    with pytest.raises(RuntimeError, match="still running: registered-looper"):
        coord.join(stop_grace_period_secs=SHORT_GRACE)


def test_looper_timer_interval(impl):
    coord_cls, looper_cls = impl
    coord = coord_cls()
    interval = 0.03
    stamps = []
    enough = threading.Event()

    class Looper(looper_cls):
        def start_loop(self):
            stamps.append(time.monotonic())

        def run_loop(self):
            stamps.append(time.monotonic())
            if len(stamps) > 4:
                enough.set()

    Looper(coord, interval).start()
    assert enough.wait(THREAD_TIMEOUT)
    coord.request_stop()
    coord.join(stop_grace_period_secs=THREAD_TIMEOUT)
    start, calls = stamps[0], stamps[1:]
    # Call k is scheduled at boundary k after the loop started, never earlier
    # (10% slack: TF schedules with time.time(), this test reads time.monotonic()).
    for k, stamp in enumerate(calls[:4]):
        assert stamp - start >= 0.9 * k * interval


def test_looper_timer_stop_before_start_skips_work(impl):
    coord_cls, looper_cls = impl
    for interval in (None, 0.01):
        coord = coord_cls()
        calls = []
        looper = looper_cls(coord, interval, target=calls.append, args=("run",))
        coord.request_stop()
        looper.start()
        coord.join(stop_grace_period_secs=THREAD_TIMEOUT)
        assert calls == []


def test_looper_loop_staticmethod(impl):
    coord_cls, looper_cls = impl
    coord = coord_cls()
    seen = []
    enough = threading.Event()

    def target(a, b, *, c):
        seen.append((a, b, c))
        if len(seen) >= 3:
            enough.set()

    looper = looper_cls.loop(coord, 0, target, args=[1, 2], kwargs={"c": 3})
    assert isinstance(looper, looper_cls)
    assert looper.daemon
    assert enough.wait(THREAD_TIMEOUT)
    coord.request_stop()
    coord.join(stop_grace_period_secs=THREAD_TIMEOUT)
    assert not looper.is_alive()
    assert set(seen) == {(1, 2, 3)}


def test_looper_run_loop_error_skips_stop_loop():
    def scenario(coord_cls, looper_cls):
        coord = coord_cls()
        calls = []

        class Looper(looper_cls):
            def run_loop(self):
                calls.append("run")
                raise ValueError("run_loop failed")

            def stop_loop(self):
                calls.append("stop")

        looper = Looper(coord, None)
        looper.start()
        result = outcome(coord.join, stop_grace_period_secs=THREAD_TIMEOUT)
        return result, calls, coord.should_stop(), looper.is_alive()

    ours, theirs = run_both(scenario)
    assert ours == theirs == (("raised", ValueError, "run_loop failed"), ["run"], True, False)


def test_looper_with_tf_coordinator():
    coord = TFCoordinator()
    count = []
    enough = threading.Event()

    def target():
        count.append(1)
        if len(count) >= 3:
            enough.set()

    looper = LooperThread.loop(coord, None, target)
    assert enough.wait(THREAD_TIMEOUT)
    coord.request_stop()
    coord.join(stop_grace_period_secs=THREAD_TIMEOUT)  # TF's coordinator watches our thread
    assert not looper.is_alive()

    coord = TFCoordinator()

    def fail():
        raise KeyError("into TF's coordinator")

    failing = LooperThread.loop(coord, 0.01, fail)
    with pytest.raises(KeyError, match="into TF's coordinator"):
        coord.join(stop_grace_period_secs=THREAD_TIMEOUT)
    assert not failing.is_alive()
