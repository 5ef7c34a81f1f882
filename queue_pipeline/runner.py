"""Threads that run enqueue ops: QueueRunner (add_queue_runner, start_queue_runners beside it).

The implementation of TF 1.x's ``tf.compat.v1.train.QueueRunner``,
``add_queue_runner`` and ``start_queue_runners``, interoperable with TF's own:
a QueueRunner made here lives in the standard ``"queue_runners"`` collection
and is started by ``MonitoredTrainingSession``, ``Supervisor`` and TF's own
``start_queue_runners``; :func:`start_queue_runners` here starts any object in
the collection that has ``create_threads`` (TF's runners, tf-slim's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import threading
import weakref
from typing import Any

import tensorflow as tf
from tensorflow.core.protobuf import queue_runner_pb2

from queue_pipeline._core import compat as _compat
from queue_pipeline._diagnostics import traps as _diagnostics
from queue_pipeline._diagnostics import locate as _locate
from queue_pipeline._diagnostics import session_hook as _session_hook
from queue_pipeline._diagnostics import tails as _tails
from queue_pipeline._core import settings as _settings
from queue_pipeline._core.compat import QUEUE_RUNNERS, logger
from queue_pipeline._core.graph import queue_op_name

# The graph's collection of runners, started together: its own module, re-exported here.
from queue_pipeline._runners_started import add_queue_runner as add_queue_runner
from queue_pipeline._runners_started import start_queue_runners as start_queue_runners

if TYPE_CHECKING:
    from typing import Sequence

    from queue_pipeline.coordinator import Coordinator
    from queue_pipeline._core.types import (
        OperationLike,
        QueueLike,
        SessionLike,
    )

__all__ = ["QueueRunner", "add_queue_runner", "start_queue_runners"]

# NOTE [ Queue close vs cancel ]
# A runner owns two ops on its queue. `close_op` closes the queue but lets
# elements already enqueued (and enqueues already admitted) be dequeued: it is
# how "end of data" travels downstream, and it runs only when the *last*
# thread of the runner (for one session) stops on a queue-closed error such as
# OutOfRangeError from an exhausted upstream queue or epoch counter.
# `cancel_op` closes the queue and also cancels enqueues blocked on a full
# queue: it runs when a Coordinator asks to stop, so that no thread stays
# blocked forever. Threads that end through another error or a stop request
# never close the queue; with a Coordinator the cancel unblocks consumers,
# without one the consumer keeps waiting (TF 1.x's contract).


def _error_codes() -> dict[int, type]:
    """Maps TF error codes to their tf.errors exception classes."""
    table = {}
    for attr in dir(tf.errors):
        cls = getattr(tf.errors, attr)
        if (
            isinstance(cls, type)
            and issubclass(cls, tf.errors.OpError)
            and cls is not tf.errors.OpError
        ):
            table[cls(None, None, "").error_code] = cls
    return table


_CODE_TO_ERROR = _error_codes()


def _strip_scope(name: str, scope: str | None) -> str:
    if not scope:
        return name
    prefix = scope.rstrip("/") + "/"
    return name[len(prefix) :] if name.startswith(prefix) else name


def _prepend_scope(name: str, scope: str | None) -> str:
    return f"{scope.rstrip('/')}/{name}" if scope else name


def _missing(value) -> bool:
    return value is None or (isinstance(value, (list, tuple)) and not value)


class QueueRunner:
    """Holds the enqueue ops of one queue; runs each in its own thread.

    Typical pipelines have a chain of queues (file names -> records ->
    batches), each fed by a QueueRunner. The runner's threads run their
    enqueue op in a loop; when an upstream queue or epoch counter is exhausted
    the last thread closes this queue, passing end-of-data downstream (see
    NOTE [ Queue close vs cancel ]).

    Args:
      queue: the queue (a ``tf.queue.QueueBase``) the ops enqueue into.
      enqueue_ops: list of ops (or tensors, e.g. a ``cond`` output) to run,
        one thread each; repeat an op to run it in several threads.
      close_op: op closing the queue without cancelling pending enqueues.
        Default: ``queue.close()``, created now (op ``<queue>_Close``).
      cancel_op: op closing the queue and cancelling pending enqueues.
        Default: ``queue.close(cancel_pending_enqueues=True)``, created now.
      queue_closed_exception_types: tuple of ``tf.errors.OpError`` subclasses
        that mean "the upstream is exhausted". Default
        ``(tf.errors.OutOfRangeError,)``; add ``tf.errors.CancelledError``
        when an enqueue op dequeues from a queue that others may close.
      queue_runner_def: a ``QueueRunnerDef`` proto to rebuild the runner from
        (names resolved in the default graph); exclusive with the above.
      import_scope: name scope prepended to the names in `queue_runner_def`.

    Raises:
      GraphModeRequiredError: under eager execution (a RuntimeError).
      ValueError: `queue_runner_def` given with `queue` or `enqueue_ops`, or
        neither `queue` and `enqueue_ops` nor a proto given.
      TypeError: `queue_closed_exception_types` is not a non-empty tuple of
        ``tf.errors`` types.

    Side effects:
      Creates the default close and cancel ops in the current graph and
      name scope (their names are ``<queue op>_Close`` and ``_Close_1``).

    tf.data equivalent:
      none needed: a ``tf.data.Dataset`` runs its own prefetch threads
      (``dataset.prefetch(tf.data.AUTOTUNE)``).
    """

    def __init__(
        self,
        queue: QueueLike | None = None,
        enqueue_ops: Sequence[OperationLike] | None = None,
        close_op: OperationLike | None = None,
        cancel_op: OperationLike | None = None,
        queue_closed_exception_types: Sequence[type[BaseException]] | None = None,
        queue_runner_def: Any | None = None,
        import_scope: str | None = None,
    ) -> None:
        _compat.require_graph("QueueRunner")
        if queue_runner_def:
            if not _missing(queue) or not _missing(enqueue_ops):
                raise ValueError(
                    "QueueRunner: queue_runner_def and queue are mutually "
                    "exclusive; pass either a QueueRunnerDef or `queue` and "
                    "`enqueue_ops`."
                )
            self._init_from_proto(queue_runner_def, import_scope)
        else:
            self._init_from_args(
                queue, enqueue_ops, close_op, cancel_op, queue_closed_exception_types
            )
        self._lock = threading.Lock()
        # Session -> number of this runner's enqueue threads not yet finished.
        self._runs_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._exceptions_raised: list[BaseException] = []

    def _init_from_args(self, queue, enqueue_ops, close_op, cancel_op, closed_types):
        if _missing(queue) or _missing(enqueue_ops):
            raise ValueError(
                "QueueRunner: Must provide queue and enqueue_ops; got "
                f"queue={queue!r}, enqueue_ops={enqueue_ops!r}."
            )
        if closed_types is not None:
            valid = (
                isinstance(closed_types, tuple)
                and closed_types
                and all(
                    isinstance(t, type) and issubclass(t, tf.errors.OpError) for t in closed_types
                )
            )
            if not valid:
                raise TypeError(
                    "QueueRunner: `queue_closed_exception_types`, when provided, "
                    "must be a non-empty tuple of tf.error types (subclasses of "
                    f"tf.errors.OpError), but saw: {closed_types!r}. Example: "
                    "(tf.errors.OutOfRangeError, tf.errors.CancelledError)."
                )
        self._queue = queue
        self._enqueue_ops = enqueue_ops
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (
            cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        )
        # Attribute name shared with TF's QueueRunner: TF's registered
        # meta-graph exporter reads it from any runner in the collection.
        self._queue_closed_exception_types = (
            tuple(closed_types) if closed_types else (tf.errors.OutOfRangeError,)
        )

    def _init_from_proto(self, proto, import_scope):
        if not isinstance(proto, queue_runner_pb2.QueueRunnerDef):
            raise TypeError(
                "QueueRunner: `queue_runner_def` must be a QueueRunnerDef proto; "
                f"got {type(proto).__name__}."
            )
        graph = tf.compat.v1.get_default_graph()

        def element(name):
            return graph.as_graph_element(_prepend_scope(name, import_scope))

        self._queue = element(proto.queue_name)
        self._enqueue_ops = [element(name) for name in proto.enqueue_op_name]
        self._close_op = element(proto.close_op_name)
        self._cancel_op = element(proto.cancel_op_name)
        self._queue_closed_exception_types = tuple(
            _CODE_TO_ERROR[code] for code in proto.queue_closed_exception_types
        ) or (tf.errors.OutOfRangeError,)

    @property
    def queue(self):
        """The queue (a QueueBase; the queue Operation when built from a proto)."""
        return self._queue

    @property
    def enqueue_ops(self) -> list:
        """The enqueue ops, as given, one thread each."""
        return self._enqueue_ops

    @property
    def close_op(self):
        """The op that closes the queue, letting pending enqueues complete."""
        return self._close_op

    @property
    def cancel_op(self):
        """The op that closes the queue and cancels pending enqueues."""
        return self._cancel_op

    @property
    def queue_closed_exception_types(self) -> tuple:
        """Error types that end a thread cleanly (the upstream is exhausted)."""
        return self._queue_closed_exception_types

    @property
    def exceptions_raised(self) -> list:
        """Errors raised by threads created without a Coordinator.

        With a Coordinator, errors are reported to it instead and this list
        stays empty. It is reset each time threads are created for a session.
        """
        return self._exceptions_raised

    @property
    def name(self) -> str:
        """The name of the queue, e.g. ``"batch/fifo_queue"``.

        As in TF, this is ``queue.name``, which is only the last part of the
        op name (``"fifo_queue"``) where eager execution is active.
        """
        return self._queue.name

    @property
    def _queue_op_name(self) -> str:
        """The queue's full op name in every context (runner threads run eagerly)."""
        return queue_op_name(self._queue) or ""

    def create_threads(
        self,
        sess: SessionLike,
        coord: Coordinator | None = None,
        daemon: bool = False,
        start: bool = False,
    ) -> list:
        """Creates one thread per enqueue op for `sess` (plus one if `coord`).

        If this runner's threads for `sess` have not all finished (including
        threads created but never started), no thread is created and ``[]`` is
        returned. Otherwise the per-session thread count is set and
        :attr:`exceptions_raised` is cleared.

        Args:
          sess: the Session to run the ops in.
          coord: optional Coordinator (ours or TF's): threads check
            ``should_stop()`` and report errors to it, and an extra
            ``close_on_stop`` thread runs `cancel_op` once stop is requested.
          daemon: mark the threads daemon, so they never block interpreter exit.
          start: start the threads; otherwise the caller starts them.

        Returns:
          The threads, enqueue threads first, named
          ``QueueRunnerThread-<queue>-<op>``; the close-on-stop thread last.

        Side effects:
          Registers each thread with `coord`. Marks the queue's runners as
          started in `sess` (for the unstarted guard). Under the diagnostics
          (see queue_pipeline._core.settings), also: installs the session hook
          (once per process) so a runner's error replaces the consumer's
          closed-queue OutOfRangeError; warns once about partial
          fixed-length tails; cancels the queue at interpreter exit.
        """
        settings = _settings.current()
        if settings.engine == "dataset":
            # NOTE [ Queues filled from tf.data ]: Supervisor starts each runner itself.
            from queue_pipeline._engine import bridge  # noqa: PLC0415 - the engine's imports

            bridge.fill_from_datasets(sess, ours_only=True)
            if bridge.is_retired(sess.graph, self):
                # A list read before the pass still names this runner: the
                # runner filling its queue now starts instead (once per session).
                bridged = bridge.replacement(self)
                if bridged is None:
                    return []
                return bridged.create_threads(sess, coord=coord, daemon=daemon, start=start)
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        _diagnostics.mark_started(sess, self._queue_op_name)
        _diagnostics.forget_failures(sess, self)
        if settings.runner_errors:
            _session_hook.register(sess.graph)  # the consumer sees this runner's errors
        if settings.tail_warning:
            _tails.warn_partial_tails(self)
        if settings.exit_unblock:
            _diagnostics.unblock_at_exit(self, sess)
        threads = [
            threading.Thread(
                target=self._run,
                args=(sess, op, coord, settings),
                name=f"QueueRunnerThread-{self.name}-{op.name}",
            )
            for op in self._enqueue_ops
        ]
        if coord:
            threads.append(
                threading.Thread(
                    target=self._close_on_stop,
                    args=(sess, self._cancel_op, coord),
                    name=f"QueueRunnerThread-{self.name}-close_on_stop",
                )
            )
        for thread in threads:
            if coord:
                coord.register_thread(thread)
            if daemon:
                thread.daemon = True
            if start:
                thread.start()
        return threads

    def _run(self, sess, enqueue_op, coord=None, settings=None) -> None:
        """Thread body: runs `enqueue_op` until a queue-closed error, stop or error.

        See NOTE [ Queue close vs cancel ] and, for what the diagnostics
        change, NOTE [ Runner errors reach the consumer ] in _diagnostics/traps.py.
        """
        settings = settings or _settings.current()
        counted = True  # this thread still counts in _runs_per_session[sess]
        failed = False
        try:
            if settings.no_spin and _is_no_op(enqueue_op):
                # keep_input is statically False: nothing can ever be enqueued,
                # so end as if the upstream were exhausted instead of spinning.
                counted = False
                self._finish_clean(sess)
                return
            # A callable costs about half a `sess.run` per call (no fetch
            # parsing), which matters in this loop: one call per record.
            run_enqueue = _session_hook.raw_callable(sess, enqueue_op)
            closed_types = self._queue_closed_exception_types
            while not (coord and coord.should_stop()):
                try:
                    run_enqueue()
                except closed_types:
                    counted = False
                    self._finish_clean(sess)
                    return
        except Exception as raised:  # noqa: BLE001 - reported, never swallowed
            e = _compat.readable_error(raised)
            if settings.quiet_shutdown and _diagnostics.is_shutdown_error(e, sess, coord):
                logger.debug("QueueRunner %s stopped: %s", self.name, e)
                if coord:
                    coord.request_stop()  # a closed session: wind everything down
                return
            failed = True
            error: BaseException = e
            if settings.runner_errors:
                error = _diagnostics.enrich(
                    e, self, sess, enqueue_op, _locate.describe_origin(e, self, sess)
                )
                _diagnostics.record_failure(sess, self, error)
            if coord:
                _request_stop(coord, error, raised)
            else:
                logger.error("Exception in QueueRunner: %s", error)
                with self._lock:
                    self._exceptions_raised.append(error)
                if settings.runner_errors:
                    # Recorded, logged and handed to the consumer (NOTE [ Runner
                    # errors reach the consumer ]): the thread ends cleanly.
                    return
                if error is raised:
                    raise
                raise error from raised
        finally:
            if counted:
                with self._lock:
                    self._runs_per_session[sess] -= 1
                    last = self._runs_per_session[sess] == 0
                # Without a Coordinator nothing else would ever close the
                # queue, and the consumer would wait forever.
                if failed and last and coord is None and settings.runner_errors:
                    self._run_quietly(sess, self._cancel_op)

    def _finish_clean(self, sess) -> None:
        """One thread ends cleanly; the last one for `sess` closes the queue."""
        with self._lock:
            self._runs_per_session[sess] -= 1
            if self._runs_per_session[sess] == 0:
                self._run_quietly(sess, self._close_op)

    @staticmethod
    def _run_quietly(sess, op) -> None:
        try:
            sess.run(op)
        except Exception as e:  # noqa: BLE001 - closing a closed queue is fine
            logger.debug("QueueRunner ignored an error while closing: %s", e)

    def _close_on_stop(self, sess, cancel_op, coord) -> None:
        """Thread body: waits for a stop request, then cancels the queue."""
        coord.wait_for_stop()
        self._run_quietly(sess, cancel_op)

    def to_proto(self, export_scope: str | None = None):
        """Returns this runner as a ``QueueRunnerDef`` proto.

        Args:
          export_scope: optional name scope stripped from every name.

        Returns:
          The proto, or None if the queue is not inside `export_scope`.
        """
        if export_scope is not None and not self.name.startswith(export_scope):
            return None
        proto = queue_runner_pb2.QueueRunnerDef(
            queue_name=_strip_scope(self.name, export_scope),
            enqueue_op_name=[_strip_scope(op.name, export_scope) for op in self._enqueue_ops],
            close_op_name=_strip_scope(self._close_op.name, export_scope),
            cancel_op_name=_strip_scope(self._cancel_op.name, export_scope),
        )
        proto.queue_closed_exception_types.extend(
            cls(None, None, "").error_code for cls in self._queue_closed_exception_types
        )
        return proto

    @staticmethod
    def from_proto(queue_runner_def: Any | None, import_scope: str | None = None) -> "QueueRunner":
        """Builds a QueueRunner from a ``QueueRunnerDef`` in the default graph."""
        return QueueRunner(queue_runner_def=queue_runner_def, import_scope=import_scope)


def _is_no_op(enqueue_op) -> bool:
    op = enqueue_op if isinstance(enqueue_op, tf.Operation) else getattr(enqueue_op, "op", None)
    return op is not None and op.type == "NoOp" and not op.control_inputs


def _request_stop(coord, error, cause) -> None:
    """Reports `error` to `coord` from inside an ``except`` block, as TF's Coordinator needs."""
    if error is cause:
        coord.request_stop(error)
        return
    try:
        raise error from cause
    except type(error) as raised:
        coord.request_stop(raised)


def _register_proto_functions() -> None:
    """Lets meta graphs carry runners if TF itself no longer registers them.

    TensorFlow registers its own (duck-typed) exporter for ``"queue_runners"``
    (every supported version, 2.16 to 2.21), which serialises our runners too;
    registering twice is an error, so ours is only a fallback for a TF
    without it.
    """
    from tensorflow.python.framework import ops  # graph machinery, not input layer

    if ops.get_to_proto_function(QUEUE_RUNNERS) is None:  # pragma: no cover
        ops.register_proto_function(
            QUEUE_RUNNERS,
            proto_type=queue_runner_pb2.QueueRunnerDef,
            to_proto=QueueRunner.to_proto,
            from_proto=QueueRunner.from_proto,
        )


_register_proto_functions()
