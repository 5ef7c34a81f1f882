"""Diagnostics for the classic queue-pipeline traps (deliberate differences from TF 1.x).

Four mechanisms, each behind a switch in :mod:`queue_pipeline._settings`:

* **Unstarted guard** (``unstarted_guard``): every dequeue queue_pipeline
  builds gets a control dependency on an ``Assert`` that fails at once when,
  in the running session, nobody started the queue's runners, nothing is in
  the queue and it is not closed. "Started" is a per-session mark (a hash
  table resource, which needs no initializer) that
  :meth:`QueueRunner.create_threads` sets before its threads start. See
  NOTE [ Unstarted guard ].
* **Runner errors** (``runner_errors``): a runner's error is rewritten with
  where it came from (:func:`enrich`), recorded against its session, and the
  session's ``run`` is wrapped so that the ``OutOfRangeError`` a consumer gets
  from the cancelled queue becomes the runner's error, with its original type.
  See NOTE [ Runner errors reach the consumer ].
* **Quiet shutdown** (``quiet_shutdown``): :func:`is_shutdown_error` tells a
  runner that its error is only the echo of a stop request or a closed
  session.
* **Exit unblock** (``exit_unblock``): :func:`unblock_at_exit` cancels the
  queues of live runners when the interpreter starts exiting; see
  NOTE [ Interpreter exit ].

The ``no_spin`` and ``tail_warning`` switches act in runner.py and
_locate.py.
"""

from __future__ import annotations

import re
import threading
import weakref

import tensorflow as tf

from queue_pipeline import _settings
from queue_pipeline._compat import LOCAL_VARIABLES, logger

__all__ = ["GUARD_SUFFIX", "dequeue_guard", "enrich", "failure_for", "forget_failures",
           "is_pipeline_queue", "is_shutdown_error", "mark_started", "record_failure",
           "unblock_at_exit", "watch_session"]

GUARD_SUFFIX = "_qp_guard"

# NOTE [ Unstarted guard ]
# TF 1.x hangs forever when a consumer dequeues from a queue whose runners
# were never started (spec P1). The guard is three cheap ops per dequeue run
# (a table size, a queue size, an is-closed) and an Assert; the dequeue gets a
# control dependency on the Assert, so it fails at once instead of waiting.
# The mark lives in the session (a MutableHashTable shared by node name), so
# two sessions on one graph are judged separately, and it is set
# synchronously by create_threads before any thread starts, so a consumer that
# runs right after start_queue_runners never races it. All guard ops sit
# under "<queue op name>_qp_guard/", a scope no TF name uses, so the names of
# every other op stay TF's. One case can still race: a runner that is *not*
# queue_pipeline's (TF's own QueueRunner rebuilt by import_meta_graph and
# started by TF's start_queue_runners) does not mark; queue_pipeline's
# start_queue_runners marks for it.


def _guard_scope(queue_name: str) -> str:
    return f"{queue_name}{GUARD_SUFFIX}/"


def _marks_table(queue):
    """The per-queue 'runners started' table, created once under the guard scope."""
    graph = queue.queue_ref.graph
    scope = _guard_scope(queue.queue_ref.op.name)
    try:
        return graph.get_operation_by_name(scope + "marks").outputs[0]
    except KeyError:
        pass
    with graph.as_default(), tf.control_dependencies(None), \
            tf.device(queue.queue_ref.device), tf.compat.v1.name_scope(scope):
        table = tf.raw_ops.MutableHashTableV2(
            key_dtype=tf.int64, value_dtype=tf.int64, use_node_name_sharing=True,
            name="marks")
        tf.raw_ops.LookupTableInsertV2(
            table_handle=table, keys=tf.constant([0], tf.int64, name="mark_key"),
            values=tf.constant([1], tf.int64, name="mark_value"), name="mark")
    return table


def is_pipeline_queue(queue) -> bool:
    """True if a queue_pipeline builder made `queue` (a plan node fills it)."""
    from queue_pipeline import plan  # plan imports nothing of ours; avoid a cycle anyway

    name = queue.queue_ref.op.name
    graph = queue.queue_ref.graph
    return any(getattr(getattr(node.fills, "queue_ref", None), "op", None) is not None
               and node.fills.queue_ref.op.name == name
               for node in plan.plan_nodes(graph))


def dequeue_guard(queue, api: str) -> list:
    """The control dependencies a dequeue from `queue` should take.

    Args:
      queue: a ``tf.queue.QueueBase`` built by queue_pipeline.
      api: the public API doing the dequeue, for the message.

    Returns:
      ``[assert_op]`` when the ``unstarted_guard`` diagnostic is on, else ``[]``.
    """
    if not _settings.current().unstarted_guard:
        return []
    table = _marks_table(queue)
    name = queue.queue_ref.op.name
    message = (
        f"queue_pipeline: {api} dequeues from queue '{name}', but its queue runners "
        "were never started in this session, so the dequeue would wait forever. "
        "Start them after initializing variables: "
        "`coord = tf.compat.v1.train.Coordinator(); "
        "threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)` "
        "(queue_pipeline.start_queue_runners is the same), or run the graph in "
        "tf.compat.v1.train.MonitoredTrainingSession, which starts them. To wait "
        "instead, as TF 1.x does, build the pipeline under "
        "queue_pipeline.diagnostics(unstarted_guard=False).")
    with tf.control_dependencies(None), tf.device(queue.queue_ref.device), \
            tf.compat.v1.name_scope(_guard_scope(name)):
        started = tf.raw_ops.Greater(
            x=tf.raw_ops.LookupTableSizeV2(table_handle=table),
            y=tf.constant(0, tf.int64))
        filled = tf.raw_ops.Greater(
            x=tf.raw_ops.QueueSizeV2(handle=queue.queue_ref), y=tf.constant(0))
        closed = tf.raw_ops.QueueIsClosedV2(handle=queue.queue_ref)
        ok = tf.raw_ops.LogicalOr(x=started, y=tf.raw_ops.LogicalOr(x=filled, y=closed))
        check = tf.raw_ops.Assert(condition=ok, data=[tf.constant(message)],
                                  summarize=1, name="started")
    return [check]


def mark_started(sess, queue_name: str) -> None:
    """Marks `queue_name`'s runners as started in `sess`, if the queue is guarded."""
    try:
        mark = sess.graph.get_operation_by_name(_guard_scope(queue_name) + "mark")
    except (KeyError, ValueError):
        return
    sess.run(mark)


# NOTE [ Runner errors reach the consumer ]
# A runner thread fails in its own sess.run; the consumer's sess.run only sees
# the queue (OutOfRangeError once it is closed, or a hang if it never is).
# TF 1.x's contract: with a Coordinator the queue is cancelled (so the
# consumer sees a plain end of data) and the error waits in coord.join();
# without one the thread dies and the consumer hangs (spec P2, P12). In-graph
# there is no way to fail a dequeue with another error type (a py_func turns
# every exception into UnknownError), so the consumer side is handled at the
# session: create_threads wraps the `run` of the session it runs in (that
# instance only; `make_callable` is not wrapped), the failing runner records
# its enriched error against that session and cancels its queue, and the
# wrapped `run` turns the consumer's resulting OutOfRangeError into that
# error, same type, chained to the OutOfRangeError.

_LOCK = threading.Lock()
# session -> {runner id: enriched error}, first failure of each runner.
_FAILURES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_WATCHED: "weakref.WeakSet" = weakref.WeakSet()


def watch_session(sess) -> None:
    """Wraps `sess.run` (this instance only) to re-raise recorded runner errors."""
    with _LOCK:
        if sess in _WATCHED:
            return
        try:
            original = sess.run
        except AttributeError:
            return
        owner = weakref.ref(sess)

        def run(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            except tf.errors.OutOfRangeError as end:
                session = owner()
                failure = failure_for(session) if session is not None else None
                if failure is None or not _is_closed_queue(end, session.graph):
                    raise
                raise _copy(failure) from end

        run.__wrapped__ = original
        run.__doc__ = getattr(original, "__doc__", None)
        try:
            sess.run = run
        except AttributeError:  # a session type that forbids new attributes
            return
        _WATCHED.add(sess)


_QUEUE_END_OPS = ("QueueDequeue", "ReaderRead")


def _is_closed_queue(end, graph) -> bool:
    """True if `end` comes from a closed queue (not, say, a tf.data iterator's end)."""
    op = failing_op(end, graph)
    if op is not None:
        return op.type.startswith(_QUEUE_END_OPS)
    return "is closed" in (getattr(end, "message", "") or "")


def record_failure(sess, runner, error: BaseException) -> None:
    """Records `runner`'s error against `sess` (the first one per runner)."""
    with _LOCK:
        _FAILURES.setdefault(sess, {}).setdefault(id(runner), error)


def forget_failures(sess, runner) -> None:
    """Drops `runner`'s recorded failure for `sess` (its threads are restarting)."""
    with _LOCK:
        failures = _FAILURES.get(sess)
        if failures:
            failures.pop(id(runner), None)


def failure_for(sess):
    """The first recorded runner error for `sess`, or None."""
    with _LOCK:
        failures = _FAILURES.get(sess)
        return next(iter(failures.values())) if failures else None


def _copy(error: BaseException) -> BaseException:
    """A fresh exception of `error`'s type and message (so each raise has its own traceback)."""
    if isinstance(error, tf.errors.OpError):
        return type(error)(error.node_def, error.op, error.message)
    try:
        return type(error)(*error.args)
    except Exception:  # noqa: BLE001 - exotic constructors: re-raise the original
        return error


# NOTE [ Interpreter exit ]
# Python joins every non-daemon thread before it exits, and a runner thread
# blocked on a full queue never ends by itself (spec P8: create_threads
# defaults to daemon=False). threading's own pre-join hook (the one
# concurrent.futures uses) runs before that join: there, every queue with a
# live runner is cancelled, so blocked enqueues fail, the threads see a
# shutdown error and end quietly.

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
        pairs = [(runner, sess) for runner, sessions in _LIVE.items()
                 for sess in list(sessions)]
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


_NODE = re.compile(r"\{\{node ([^}]+)\}\}")


def failing_op(error, graph):
    """The op an OpError names (its ``op``, else the ``{{node X}}`` in its message), or None."""
    op = getattr(error, "op", None)
    if op is not None:
        return op
    match = _NODE.search(getattr(error, "message", "") or "")
    if match is None or graph is None:
        return None
    try:
        return graph.get_operation_by_name(match.group(1))
    except (KeyError, ValueError):
        return None


_UNINITIALIZED_HINTS = ("uninitialized value", "does not exist", "Could not find variable",
                        "Could not find resource")


def _uninitialized_local(error, graph) -> str | None:
    """The local variable `error` says is uninitialized (read by the failing op), or None."""
    if not isinstance(error, (tf.errors.NotFoundError, tf.errors.FailedPreconditionError)):
        return None
    op = failing_op(error, graph)
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
    op = failing_op(error, graph)
    op_name = getattr(op, "name", None)
    enqueue_name = getattr(enqueue_op, "name", str(enqueue_op))
    queue_name = getattr(runner, "_queue_op_name", None) or runner.name
    parts = [f"queue_pipeline: a queue runner failed while filling queue "
             f"'{queue_name}' (enqueue op '{enqueue_name}'"
             + (f", failing op '{op_name}'" if op_name else "") + ")."]
    if origin:
        parts.append(f"Input: {origin}.")
    variable = _uninitialized_local(error, graph) if graph is not None else None
    if variable:
        parts.append(
            f"The local variable '{variable}' is not initialized: run "
            "`sess.run(tf.compat.v1.local_variables_initializer())` before "
            "start_queue_runners (num_epochs and match_filenames_once keep their "
            "state in local variables; MonitoredTrainingSession initializes them "
            "for you).")
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
