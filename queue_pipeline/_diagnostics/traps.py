"""Diagnostics for the classic queue-pipeline traps (deliberate differences from TF 1.x).

Four mechanisms, each behind a switch in :mod:`queue_pipeline._core.settings`:

* **Unstarted guard** (``unstarted_guard``): a step that dequeues from a
  queue_pipeline queue whose runners were not started in its session waits a
  grace period for them, then fails with a message naming the fix instead of
  hanging. The check runs once per ``sess.run`` in the session hook, never
  per record. See NOTE [ Unstarted guard ].
* **Runner errors** (``runner_errors``): a runner's error is rewritten with
  where it came from (:func:`enrich`), recorded against its session and
  queue, and the consumer's ``OutOfRangeError`` from the cancelled queue
  becomes that error, with its original type; read and decode errors raised
  in the consumer's own step name their file and record too. See NOTE
  [ Runner errors reach the consumer ] and NOTE [ The session hook ].
* **Quiet shutdown** (``quiet_shutdown``): :func:`is_shutdown_error` tells a
  runner that its error is only the echo of a stop request or a closed
  session.
* **Exit unblock** (``exit_unblock``): :func:`unblock_at_exit` cancels the
  queues of live runners when the interpreter starts exiting; see
  NOTE [ Interpreter exit ].

The ``no_spin`` and ``tail_warning`` switches act in runner.py and
_diagnostics/locate.py.
"""

from __future__ import annotations

import threading
import weakref

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._diagnostics import session_hook as _session_hook
from queue_pipeline._core import settings as _settings
from queue_pipeline._core.compat import LOCAL_VARIABLES, logger

__all__ = [
    "enrich",
    "forget_failures",
    "guard",
    "is_pipeline_queue",
    "is_shutdown_error",
    "mark_started",
    "record_failure",
    "unblock_at_exit",
]


# NOTE [ Unstarted guard ]
# TF 1.x hangs forever when a consumer dequeues from a queue whose runners
# were never started (spec P1). The guard lives in the session hook (NOTE
# [ The session hook ] in _diagnostics/session_hook.py), not in the graph: every queue a
# queue_pipeline builder dequeues or reads from is registered when it is
# built, with a probe (its size and closed-ness, two ops connected to
# nothing, under "<queue op name>_qp_guard/", a scope no TF name uses);
# create_threads marks the queue started in its session before any thread
# starts, and queue_pipeline's start_queue_runners marks the queues of
# runners that are not queue_pipeline's. A step that dequeues from a queue
# not started in its session waits up to the grace period
# (`unstarted_grace_secs`, read when the pipeline is built) for its runners,
# or for the queue to hold elements or be closed (filled by hand, or by a
# runner that does not mark), and only then raises; a consumer thread that
# starts before the main thread calls start_queue_runners therefore works.
# Runner threads run their enqueue ops through TF's own make_callable, so
# nothing is checked per record.


def guard(queue, api: str) -> None:
    """Registers a dequeue or read from `queue` (a queue_pipeline queue) for the diagnostics.

    Under the ``unstarted_guard`` switch the dequeue is guarded (see NOTE
    [ Unstarted guard ]); under ``runner_errors`` errors of the step are named
    (see NOTE [ The session hook ]). With both off, nothing happens.

    Args:
      queue: a ``tf.queue.QueueBase`` built by queue_pipeline.
      api: the public API doing the dequeue, for the message.
    """
    settings = _settings.current()
    if not (settings.unstarted_guard or settings.runner_errors):
        return
    _session_hook.register_queue(
        queue,
        api,
        grace=settings.unstarted_grace_secs,
        guarded=settings.unstarted_guard,
        names_errors=settings.runner_errors,
    )


def is_pipeline_queue(queue) -> bool:
    """True if a queue_pipeline builder made `queue` (a plan node fills it)."""
    from queue_pipeline import plan  # plan imports nothing of ours; avoid a cycle anyway

    name = queue.queue_ref.op.name
    graph = queue.queue_ref.graph
    return any(
        getattr(getattr(node.fills, "queue_ref", None), "op", None) is not None
        and node.fills.queue_ref.op.name == name
        for node in plan.plan_nodes(graph)
    )


def mark_started(sess, queue_name: str | None) -> None:
    """Marks `queue_name`'s runners as started in `sess` (for the unstarted guard)."""
    _session_hook.mark_started(sess, queue_name)


# NOTE [ Runner errors reach the consumer ]
# A runner thread fails in its own sess.run; the consumer's sess.run only sees
# the queue (OutOfRangeError once it is closed, or a hang if it never is).
# TF 1.x's contract: with a Coordinator the queue is cancelled (so the
# consumer sees a plain end of data) and the error waits in coord.join();
# without one the thread dies and the consumer hangs (spec P2, P12). In-graph
# there is no way to fail a dequeue with another error type (a py_func turns
# every exception into UnknownError), so the consumer side is handled by the
# session hook: the failing runner records its enriched error against its
# session and queue and cancels its queue, and the hooked `run` (and
# `make_callable` callables) turns the resulting OutOfRangeError of a
# consumer downstream of that queue into that error, same type, chained to
# the OutOfRangeError, once. Pipelines not fed by the failed queue, and
# tf.data iterators, keep their plain ends.


def record_failure(sess, runner, error: BaseException) -> None:
    """Records `runner`'s error against `sess` (the first one per runner's queue)."""
    _session_hook.register(sess.graph)
    _session_hook.record_failure(sess, _runner_queue(runner), error)


def forget_failures(sess, runner) -> None:
    """Drops `runner`'s recorded failure for `sess` (its threads are restarting)."""
    _session_hook.forget_failures(sess, _runner_queue(runner))


def _runner_queue(runner) -> str:
    return getattr(runner, "_queue_op_name", None) or runner.name


# NOTE [ Interpreter exit ]
# Python joins every non-daemon thread before it exits, and a runner thread
# blocked on a full queue never ends by itself (spec P8: create_threads
# defaults to daemon=False). threading's own pre-join hook (the one
# concurrent.futures uses) runs before that join: there, every queue with a
# live runner is cancelled, so blocked enqueues fail, the threads see a
# shutdown error and end quietly.

_LOCK = threading.Lock()
_EXITING = threading.Event()
# runner -> sessions its threads run in (both weak).
_LIVE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_EXIT_HOOK = [False]


def unblock_at_exit(runner, sess) -> None:
    """Cancels `runner`'s queue in `sess` when the interpreter starts exiting."""
    with _LOCK:
        _LIVE.setdefault(runner, weakref.WeakSet()).add(sess)
        if _EXIT_HOOK[0]:
            return
        register = getattr(threading, "_register_atexit", None)
        if register is None:  # pragma: no cover - CPython < 3.9 or another VM
            return
        try:
            register(_cancel_live_queues)
        except RuntimeError:  # already shutting down
            return
        _EXIT_HOOK[0] = True


def _cancel_live_queues() -> None:
    _EXITING.set()
    with _LOCK:
        pairs = [(runner, sess) for runner, sessions in _LIVE.items() for sess in list(sessions)]
    for runner, sess in pairs:
        if getattr(sess, "_closed", False):
            continue
        try:
            sess.run(runner.cancel_op)
        except Exception:  # noqa: BLE001 - best effort while exiting
            pass


def is_shutdown_error(error: BaseException, sess, coord) -> bool:
    """True if `error` is only the echo of a stop request, a closed `sess` or exit."""
    closed = bool(getattr(sess, "_closed", False)) or _EXITING.is_set()
    stopping = coord is not None and coord.should_stop()
    if isinstance(error, tf.errors.CancelledError):
        return closed or stopping
    if isinstance(error, RuntimeError) and not isinstance(error, tf.errors.OpError):
        return closed and "closed Session" in str(error)
    return False


_UNINITIALIZED_HINTS = (
    "uninitialized value",
    "does not exist",
    "Could not find variable",
    "Could not find resource",
)


def _uninitialized_local(error, graph) -> str | None:
    """The local variable `error` says is uninitialized (read by the failing op), or None."""
    if not isinstance(error, (tf.errors.NotFoundError, tf.errors.FailedPreconditionError)):
        return None
    op = graph_facts.error_op(error, graph)
    if op is None or not any(hint in error.message for hint in _UNINITIALIZED_HINTS):
        return None
    local_ops = {v.op.name for v in graph.get_collection(LOCAL_VARIABLES)}
    read = sorted(t.op.name for t in op.inputs if t.op.name in local_ops)
    return read[0] if read else None


def enrich(error: BaseException, runner, sess, enqueue_op, origin: str = "") -> BaseException:
    """`error` with the same type and a message naming where it came from.

    Args:
      error: the exception a runner thread caught.
      runner: the QueueRunner (its ``name`` is the queue's op name).
      sess: the Session the runner ran in.
      enqueue_op: the enqueue op (or tensor) the thread was running.
      origin: text naming the file and record, or "".

    Returns:
      A new exception of ``type(error)`` (``error`` itself for types that cannot
      be rebuilt), whose message starts with ``queue_pipeline:``.
    """
    if "queue_pipeline: a queue runner failed" in str(error):
        return error
    graph = getattr(sess, "graph", None)
    op = graph_facts.error_op(error, graph)
    op_name = getattr(op, "name", None)
    enqueue_name = getattr(enqueue_op, "name", str(enqueue_op))
    queue_name = getattr(runner, "_queue_op_name", None) or runner.name
    parts = [
        f"queue_pipeline: a queue runner failed while filling queue "
        f"'{queue_name}' (enqueue op '{enqueue_name}'"
        + (f", failing op '{op_name}'" if op_name else "")
        + ")."
    ]
    if origin:
        parts.append(f"Input: {origin}.")
    variable = _uninitialized_local(error, graph) if graph is not None else None
    if variable:
        parts.append(
            f"The local variable '{variable}' is not initialized: run "
            "`sess.run(tf.compat.v1.local_variables_initializer())` before "
            "start_queue_runners (num_epochs and match_filenames_once keep their "
            "state in local variables; MonitoredTrainingSession initializes them "
            "for you)."
        )
    message = getattr(error, "message", None) or str(error)
    parts.append(f"Original error: {message}")
    text = " ".join(parts)
    if isinstance(error, tf.errors.OpError):
        return type(error)(error.node_def, error.op, text)
    try:
        return type(error)(text)
    except Exception:  # noqa: BLE001 - exotic constructors keep their own message
        logger.debug("queue_pipeline could not rebuild %r with context", error)
        return error
