"""The consumer side of the diagnostics: one hook on ``Session.run`` and ``make_callable``.

NOTE [ The session hook ]
The diagnostics act where the user's code runs a step: a dequeue whose
runners were never started, a runner's error hidden behind the consumer's
end of data, a decode error that names no file. TF 1.x offers no per-step
hook, so the first time a queue_pipeline pipeline is built with a diagnostic
on (or a queue_pipeline runner creates threads), :func:`register` wraps
``run`` and ``make_callable`` of TF's session base class, once per process.
For a graph without queue_pipeline state the wrapper costs one dictionary
lookup per ``sess.run`` and then calls TF's method; nothing is added to any
graph op by op, and no per-record work happens anywhere (runner threads run
their enqueue ops through TF's own ``make_callable``, see :func:`raw_callable`).
For a graph with state, per step:

* **Unstarted guard** (NOTE [ Unstarted guard ] in ``_diagnostics/traps.py``): while
  some queue_pipeline queue of the graph has no runner started in this
  session, the fetches' step is searched (once per fetch signature) for
  dequeues and reader reads from such queues; each waits up to its grace
  period (``unstarted_grace_secs``) for its runners to start, or for the queue
  to hold elements or be closed (a probe of size and closed-ness, ops built
  with the queue), and only then raises. Once every runner of the graph is
  started in the session, the check is one dictionary lookup.
* **Runner errors** (NOTE [ Runner errors reach the consumer ]): an
  ``OutOfRangeError`` from a closed queue becomes the recorded error of a
  runner feeding that queue (directly or through upstream queues), once: the
  error is delivered, then forgotten. Other pipelines of the session, and
  other ends (a tf.data iterator's), are untouched.
* **Cached steps**: a graph the dataset engine serves runs plain steps
  (no feeds or options) through callables made once per fetch signature
  (NOTE [ Cached step callables ] in ``_core/step_cache.py``).
* **Errors named** (``runner_errors``): a read or decode error raised in the
  step itself (a reader's value decoded in the main thread, a batch of raw
  records decoded after the dequeue) is re-raised with its original type and
  a message naming the file and record (see ``_locate.describe_consumer_error``).

Sessions and graphs are held weakly; the state keeps op names, never ops.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Callable, Iterable

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._core import held_constants, step_cache
from queue_pipeline._core.compat import logger, readable_error
from queue_pipeline._diagnostics.graph_state import GraphState, QueueFacts, fed_names, fetch_ops

__all__ = [
    "CACHED_STEPS_ENV",
    "cache_steps",
    "failure_for_end",
    "forget_failures",
    "guard_held_constants",
    "mark_started",
    "raw_callable",
    "record_failure",
    "record_session_failure",
    "register",
    "register_queue",
    "registered",
    "rewrite_steps",
    "time_steps",
    "waiting_since",
]

_POLL_SECS = 0.02
CACHED_STEPS_ENV = "QUEUE_PIPELINE_CACHED_STEPS"
_SESSION_WIDE = "<the session>"  # a failure key no queue has
_LOCK = threading.RLock()
_ORIGINAL: dict[str, Callable] = {}


_GRAPHS: "weakref.WeakKeyDictionary[tf.Graph, GraphState]" = weakref.WeakKeyDictionary()
# session -> queue names whose runners were started in it.
_STARTED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# session -> the graph state version at which every guarded queue was started.
_ALL_STARTED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# sess -> {thread id: start time} of the steps running now (graphs with times_steps only).
_RUNNING: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# session -> {queue name: enriched error} (the first failure of each queue's runners).
_FAILURES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


# ------------------------------------------------------------------ registration


def register(graph: tf.Graph) -> GraphState:
    """The state of `graph`, created (and the hook installed) on first use."""
    with _LOCK:
        _install()
        state = _GRAPHS.get(graph)
        if state is None:
            state = _GRAPHS[graph] = GraphState()
        return state


def registered(graph: tf.Graph) -> bool:
    """Whether `graph` has queue_pipeline diagnostics state."""
    return graph in _GRAPHS


def register_queue(queue, api: str, *, grace: float, guarded: bool, names_errors: bool) -> None:
    """Registers a queue_pipeline queue for the consumer-side diagnostics.

    Builds its probe (size and is-closed ops, under ``<queue>_qp_guard/``,
    connected to nothing) so that the guard can look at it once the graph is
    finalized. Side effect: installs the session hook (once per process).
    """

    ref = queue.queue_ref
    graph = ref.graph
    state = register(graph)
    with _LOCK:
        state.names_errors = state.names_errors or names_errors
        known = state.queues.get(ref.op.name)
        if known is not None:
            known.guarded = known.guarded or guarded
            state.version += 1
            return
        probe: list[str] = []
        if guarded:
            with (
                graph.as_default(),
                tf.control_dependencies(None),
                tf.device(ref.device),
                tf.compat.v1.name_scope(f"{ref.op.name}{graph_facts.GUARD_SUFFIX}/"),
            ):
                probe = [
                    tf.raw_ops.QueueSizeV2(handle=ref, name="size").name,
                    tf.raw_ops.QueueIsClosedV2(handle=ref, name="closed").name,
                ]
        state.queues[ref.op.name] = QueueFacts(api, grace, probe, guarded)
        state.version += 1


def mark_started(sess, queue_name: str | None) -> None:
    """Records that `queue_name`'s runners were started in `sess`."""
    if queue_name is None:
        return
    with _LOCK:
        try:
            _STARTED.setdefault(sess, set()).add(queue_name)
        except TypeError:  # a session type that cannot be weakly referenced
            return


# ------------------------------------------------------------------- failures


def record_failure(sess, queue_name: str, error: BaseException) -> None:
    """Records a runner's error for its queue in `sess` (the first one per queue)."""
    with _LOCK:
        try:
            _FAILURES.setdefault(sess, {}).setdefault(queue_name, error)
        except TypeError:
            return


def record_session_failure(sess, error: BaseException) -> None:
    """Records why `sess` cannot go on (its input service is lost): every failing step raises it.

    The step that fails (typically with ``CancelledError``, the session
    closed under it) raises `error` instead, and so does every later one.
    """
    record_failure(sess, _SESSION_WIDE, error)


def forget_failures(sess, queue_name: str) -> None:
    """Drops the recorded failure of `queue_name` in `sess` (its runners restart)."""
    with _LOCK:
        failures = _FAILURES.get(sess)
        if failures:
            failures.pop(queue_name, None)


def failure_for_end(sess, end: tf.errors.OutOfRangeError):
    """The recorded runner error behind `end` (a closed queue's end), delivered once.

    Only failures of the queue `end` comes from and of the queues upstream of
    it count; the one returned is forgotten, so later ends are plain again.
    """

    with _LOCK:
        failures = _FAILURES.get(sess)
        if not failures:
            return None
    graph = sess.graph
    op = graph_facts.error_op(end, graph)
    if op is None:
        return None
    if op.type in graph_facts.DEQUEUE_OPS:
        queue = op.inputs[0].op.name
    elif op.type in graph_facts.READ_OPS:
        queue = op.inputs[1].op.name
    else:
        return None  # a tf.data iterator's end, or any other
    state = _GRAPHS.get(graph)
    upstream = state.upstream(graph, queue) if state is not None else frozenset([queue])
    with _LOCK:
        failures = _FAILURES.get(sess) or {}
        for name in list(failures):
            if name in upstream:
                return failures.pop(name)
    return None


# ----------------------------------------------------------------------- the hook


def _install() -> None:
    if _ORIGINAL:
        return
    from tensorflow.python.client import session as session_lib  # the public class's base

    base = session_lib.BaseSession
    _ORIGINAL["run"], _ORIGINAL["make_callable"] = base.run, base.make_callable
    base.run = _run
    base.make_callable = _make_callable


def raw_callable(sess, fetches):
    """TF's own ``make_callable`` for `fetches`: what runner threads loop on (no hook)."""
    original = _ORIGINAL.get("make_callable")
    if original is None:
        return sess.make_callable(fetches)
    state = _GRAPHS.get(sess.graph)
    if state is not None and state.holds_constants:
        _check_held(sess.graph, fetches)
    return original(sess, fetches)


def _run(self, fetches, feed_dict=None, options=None, run_metadata=None):
    state = _GRAPHS.get(self._graph)  # noqa: SLF001 - the hook's one lookup
    if state is None:
        return _ORIGINAL["run"](self, fetches, feed_dict, options, run_metadata)
    if state.rewrite is not None:
        fetches, feed_dict = state.rewrite(self, fetches, feed_dict, _ORIGINAL["run"])
    if state.holds_constants:
        _check_held(self._graph, fetches)  # noqa: SLF001
    if state.caches_steps and feed_dict is None and options is None and run_metadata is None:
        call = step_cache.cached_callable(self, fetches, state.served_ops)
        if call is not None:
            return _step(self, state, fetches, None, call)
    return _step(
        self,
        state,
        fetches,
        feed_dict,
        lambda: _ORIGINAL["run"](self, fetches, feed_dict, options, run_metadata),
    )


def _make_callable(self, fetches, feed_list=None, accept_options=False):
    state = _GRAPHS.get(self._graph)  # noqa: SLF001
    if state is not None and state.rewrite is not None and not accept_options:
        return _rewritten_callable(self, fetches, feed_list)
    if state is not None and state.holds_constants:
        _check_held(self._graph, fetches)  # noqa: SLF001
    call = _ORIGINAL["make_callable"](self, fetches, feed_list, accept_options)
    if state is None:
        return call
    session = weakref.ref(self)
    fed = {getattr(t, "name", t): None for t in (feed_list or [])}

    def hooked(*args, **kwargs):
        sess = session()
        if sess is None:
            return call(*args, **kwargs)
        return _step(sess, state, fetches, fed, lambda: call(*args, **kwargs))

    hooked.__wrapped__ = call
    return hooked


def _rewritten_callable(sess, fetches, feed_list):
    """A callable running `fetches` through the hooked ``run`` (the rewrite sees each call)."""
    feeds = list(feed_list or ())
    session = weakref.ref(sess)

    def call(*args):
        if len(args) != len(feeds):
            raise TypeError(f"this callable takes {len(feeds)} argument(s), got {len(args)}")
        return _run(session(), fetches, dict(zip(feeds, args)) if feeds else None)

    return call


def rewrite_steps(graph: tf.Graph, rewrite: Callable) -> None:
    """From now on, each step of `graph` first goes through `rewrite`.

    ``rewrite(sess, fetches, feed_dict, raw_run)`` returns the step's
    ``(fetches, feed_dict)``; ``raw_run(sess, fetches, feed_dict, options,
    run_metadata)`` is TF's own ``run``, unhooked. Steps through
    ``make_callable`` run through the hooked ``run`` instead of a TF
    callable. Used by NOTE [ Reader values fetched directly ] in
    ``_engine/direct_reads.py``. Side effect: installs the session hook.
    """
    register(graph).rewrite = rewrite


def cache_steps(graph: tf.Graph, served: Iterable[tf.Operation] = ()) -> None:
    """From now on, plain steps of `graph` run through cached callables.

    See NOTE [ Cached step callables ] in ``_core/step_cache.py``. Side
    effect: installs the session hook (once per process).

    ``QUEUE_PIPELINE_CACHED_STEPS=off`` in the environment (read when the
    pipeline is built) turns this off: every step then runs through
    ``Session.run``, so a profiler or a program's own wrapper of
    ``Session.run`` (installed before ``install()``) sees every step; cached
    steps bypass such wrappers.

    Args:
      graph: the served graph.
      served: the ops whose outputs are a served call's batch (its
        ``IteratorGetNext``): a step fetching only such outputs runs in the
        calling thread (NOTE [ Served batches fetched in the caller's thread ]
        in ``_core/step_cache.py``).
    """
    if os.environ.get(CACHED_STEPS_ENV, "on").strip().lower() in ("0", "off", "false", "no"):
        return  # every step through Session.run, where wrappers of it see it
    state = register(graph)
    state.caches_steps = True
    state.served_ops.update(op.name for op in served)


def guard_held_constants(graph: tf.Graph) -> None:
    """From now on, every step of `graph` is checked against its held constants.

    See NOTE [ Constants kept out of the session's graph ] in
    ``_core/held_constants.py``. Side effect: installs the session hook (once
    per process).
    """
    register(graph).holds_constants = True


def _check_held(graph: tf.Graph, fetches) -> None:
    held_constants.check(graph, fetches, lambda: fetch_ops(graph, fetches))


def time_steps(graph: tf.Graph) -> None:
    """From now on, the hook notes when each step of `graph` starts and ends: `waiting_since`."""
    register(graph).times_steps = True


def waiting_since(sess) -> float | None:
    """The ``time.monotonic()`` at which the oldest step now running in `sess` began, or None."""
    with _LOCK:
        running = _RUNNING.get(sess)
        return min(running.values()) if running else None


def _step(sess, state: GraphState, fetches, feed_dict, run):
    """One hooked step: guard, run, and turn errors into their diagnostics."""
    if not state.times_steps:
        return _run_step(sess, state, fetches, feed_dict, run)
    key = threading.get_ident()
    with _LOCK:
        try:
            _RUNNING.setdefault(sess, {})[key] = time.monotonic()
        except TypeError:  # a session type that cannot be weakly referenced
            pass
    try:
        return _run_step(sess, state, fetches, feed_dict, run)
    finally:
        with _LOCK:
            running = _RUNNING.get(sess)
            if running is not None:
                running.pop(key, None)


def _run_step(sess, state: GraphState, fetches, feed_dict, run):
    if _ALL_STARTED.get(sess) != state.version:
        _wait_for_runners(sess, state, fetches, feed_dict)
    try:
        try:
            return run()
        except UnicodeDecodeError as undecodable:  # a plain try: free when nothing is raised
            error = readable_error(undecodable)
            if error is undecodable:
                raise
            raise error from undecodable
    except tf.errors.OutOfRangeError as end:
        failure = failure_for_end(sess, end)
        if failure is None:
            raise
        raise _copy(failure) from end
    except tf.errors.OpError as error:
        lost = (_FAILURES.get(sess) or {}).get(_SESSION_WIDE)
        if lost is not None:
            raise _copy(lost) from error
        unstarted = _unstarted_input(state, error)
        if unstarted is not None:
            raise unstarted from error
        if not state.names_errors or isinstance(
            error, (tf.errors.CancelledError, tf.errors.DeadlineExceededError)
        ):
            raise
        named = _named(error, sess)
        if named is None:
            raise
        raise named from error


def _named(error, sess):
    from queue_pipeline._diagnostics import locate as _locate  # noqa: PLC0415 - the locator imports the graph tools

    try:
        return _locate.consumer_error(error, sess.graph)
    except Exception as e:  # noqa: BLE001 - a diagnostic must never mask the error
        logger.debug("queue_pipeline could not name the input of %r: %s", error, e)
        return None


def _copy(error: BaseException) -> BaseException:
    """A fresh exception of `error`'s type and message (each raise its own traceback)."""
    if isinstance(error, tf.errors.OpError):
        return type(error)(error.node_def, error.op, error.message)
    try:
        return type(error)(*error.args)
    except Exception:  # noqa: BLE001 - exotic constructors: re-raise the original
        return error


# ------------------------------------------------------------------- the guard


def _wait_for_runners(sess, state: GraphState, fetches, feed_dict) -> None:
    """The unstarted guard for one step; see NOTE [ The session hook ]."""
    with _LOCK:
        version = state.version
        started = set(_STARTED.get(sess, ()))
        missing = state.guarded_queues() - started
        if not missing:
            try:
                _ALL_STARTED[sess] = version
            except TypeError:
                pass
            return
    graph = sess.graph
    consumed = state.consumed(graph, fetch_ops(graph, fetches), fed_names(feed_dict))
    for name in sorted(consumed & missing):
        queue = state.queues[name]
        deadline = time.monotonic() + queue.grace
        while not _ready(sess, name, queue):
            if time.monotonic() >= deadline:
                raise tf.errors.InvalidArgumentError(
                    None, None, _unstarted_message(queue.api, name, queue.grace)
                )
            time.sleep(_POLL_SECS)


def _ready(sess, name: str, queue: QueueFacts) -> bool:
    """Whether `name`'s runners are started in `sess`, or it has elements or is closed."""
    with _LOCK:
        if name in _STARTED.get(sess, ()):
            return True
    try:
        size, closed = _ORIGINAL["run"](sess, queue.probe, None, None, None)
    except Exception:  # noqa: BLE001 - cannot tell: let the step run as TF would
        return True
    return bool(size > 0 or closed)


# How to start the runners, in both errors of an input that was never started.
_HOW_TO_START = (
    "Start them after initializing variables: `coord = tf.compat.v1.train.Coordinator(); "
    "threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)` "
    "(queue_pipeline.start_queue_runners is the same), or run the graph in "
    "tf.compat.v1.train.MonitoredTrainingSession, which starts them."
)


def _unstarted_input(state: GraphState, error: tf.errors.OpError):
    """The error for a served batch whose iterator was not started, or None.

    A served call whose input is read when it starts (variables, or fed
    preloaded arrays) has an initializable iterator, which its stand-in
    runner initializes when the queue runners start.
    """
    op = getattr(error, "op", None)
    if (
        not isinstance(error, tf.errors.FailedPreconditionError)
        or op is None
        or op.name not in state.served_ops
        or "not been initialized" not in (error.message or "")
    ):
        return None
    return tf.errors.FailedPreconditionError(
        error.node_def,
        op,
        f"queue_pipeline dataset engine: the batch {op.name!r} was fetched before the queue "
        "runners were started in this session; its input (preloaded arrays or variables, "
        "read when the input starts) is started with them, as the legacy pipeline's runners "
        f"would be. {_HOW_TO_START}",
    )


def _unstarted_message(api: str, name: str, grace: float) -> str:
    return (
        f"queue_pipeline: {api} dequeues from queue '{name}', but its queue runners "
        f"were not started in this session within {grace:g} s, and the queue is empty "
        f"and open, so the dequeue would wait forever. {_HOW_TO_START} To wait longer, "
        "build the pipeline under queue_pipeline.diagnostics(unstarted_grace_secs=...); "
        "to wait forever, as TF 1.x does, under "
        "queue_pipeline.diagnostics(unstarted_guard=False)."
    )
