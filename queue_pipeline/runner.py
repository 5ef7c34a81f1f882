"""Threads that run enqueue ops: QueueRunner (add_queue_runner, start_queue_runners beside it).

The implementation of TF 1.x's ``tf.compat.v1.train.QueueRunner``,
``add_queue_runner`` and ``start_queue_runners``, interoperable with TF's own:
a QueueRunner made here lives in the standard ``"queue_runners"`` collection
and is started by ``MonitoredTrainingSession``, ``Supervisor`` and TF's own
``start_queue_runners``; :func:`start_queue_runners` here starts any object in
the collection that has ``create_threads`` (TF's runners, tf-slim's).
What defines a runner (its arguments, its ``QueueRunnerDef``) is
:mod:`queue_pipeline._runner_def`'s; :class:`BridgeRunner` is the dataset
engine's runner (NOTE [ Queues filled from tf.data ] in ``_engine/bridge.py``).
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

import tensorflow as tf

from queue_pipeline import _runner_def
from queue_pipeline._core import compat as _compat
from queue_pipeline._diagnostics import traps as _diagnostics
from queue_pipeline._diagnostics import locate as _locate
from queue_pipeline._diagnostics import session_hook as _session_hook
from queue_pipeline._diagnostics import tails as _tails
from queue_pipeline._core import settings as _settings
from queue_pipeline._core.compat import QUEUE_RUNNERS, logger
from queue_pipeline._core.graph import queue_op_name

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
            fields = _runner_def.fields_from_proto(
                queue_runner_def, import_scope, queue, enqueue_ops
            )
        else:
            fields = _runner_def.fields_from_args(
                queue, enqueue_ops, close_op, cancel_op, queue_closed_exception_types
            )
        # `_queue_closed_exception_types`: the attribute name of TF's QueueRunner,
        # which TF's registered meta-graph exporter reads from any runner.
        (
            self._queue,
            self._enqueue_ops,
            self._close_op,
            self._cancel_op,
            self._queue_closed_exception_types,
        ) = fields
        self._lock = threading.Lock()
        # Session -> number of this runner's enqueue threads not yet finished.
        self._runs_per_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._exceptions_raised: list[BaseException] = []

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

            bridge.fill_from_datasets(sess, QueueRunner, BridgeRunner, ours_only=True)
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
        return _runner_def.to_proto(
            self.name,
            self._enqueue_ops,
            self._close_op,
            self._cancel_op,
            self._queue_closed_exception_types,
            export_scope,
        )

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


_runner_def.register_proto_functions(QueueRunner.to_proto, QueueRunner.from_proto)


class BridgeRunner(QueueRunner):
    """The runner the dataset engine puts in place of a queue's runners (one thread).

    Its one enqueue op enqueues a tf.data iterator's next chunk (NOTE [ Queues
    filled from tf.data ] in ``_engine/bridge.py``, which makes it: the class
    lives here, below the engine, so that the engine imports no runner
    module). An initializable iterator's initializer runs first, once per
    session.
    """

    def __init__(self, queue, enqueue, close_op, cancel_op, initializer=None, feeds=None) -> None:
        super().__init__(queue, [enqueue], close_op=close_op, cancel_op=cancel_op)
        self._initializer = initializer
        self._feeds = dict(feeds) if feeds else None
        self._initialized: weakref.WeakSet = weakref.WeakSet()

    def create_threads(self, sess, coord=None, daemon=False, start=False) -> list:
        if self._initializer is not None:
            with self._lock:
                first = sess not in self._initialized
                self._initialized.add(sess)
            if first:
                sess.run(self._initializer, feed_dict=self._feeds)
        return super().create_threads(sess, coord=coord, daemon=daemon, start=start)


def add_queue_runner(qr: QueueRunner, collection: str = QUEUE_RUNNERS) -> None:
    """Adds `qr` to a collection (default ``"queue_runners"``) of the default graph.

    :func:`start_queue_runners`, ``MonitoredTrainingSession`` and
    ``Supervisor`` start every runner in that collection.

    Args:
      qr: a QueueRunner (anything with ``create_threads``).
      collection: the graph collection key.

    tf.data equivalent:
      none needed; a Dataset needs no registration.
    """
    tf.compat.v1.add_to_collection(collection, qr)


def start_queue_runners(
    sess: SessionLike | None = None,
    coord: Coordinator | None = None,
    daemon: bool = True,
    start: bool = True,
    collection: str = QUEUE_RUNNERS,
) -> list:
    """Creates (and by default starts) the threads of every runner in `collection`.

    Args:
      sess: the Session; default: the default session.
      coord: optional Coordinator for the threads (see
        :meth:`QueueRunner.create_threads`).
      daemon: mark the threads daemon (the default here, unlike
        ``create_threads``), so a script can exit with runners still blocked.
      start: start the threads.
      collection: the collection of the **session's graph** to read runners from.

    Returns:
      All threads created. Runners whose threads are still running for `sess`
      contribute none, so a second call returns only new threads.

    Raises:
      GraphModeRequiredError: under eager execution (a RuntimeError).
      ValueError: `sess` is None and there is no default session.
      TypeError: `sess` is not a Session. A ``MonitoredSession`` or
        ``SingularMonitoredSession`` returns ``[]`` instead, since it starts
        the runners itself.

    Side effects:
      Logs a warning when the default graph's collection is empty.

    tf.data equivalent:
      none needed: iterate the Dataset.
    """
    _compat.require_graph("start_queue_runners")
    if sess is None:
        sess = tf.compat.v1.get_default_session()
        if not sess:
            raise ValueError(
                "start_queue_runners: Cannot start queue runners: No default "
                "session is registered. Use `with sess.as_default()` or pass an "
                "explicit session to tf.start_queue_runners(sess=sess)"
            )
    if not isinstance(sess, _compat.SessionInterface):
        if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
            return []
        raise TypeError(
            "start_queue_runners: sess must be a `tf.Session` object. "
            f"Given class: {sess.__class__}"
        )
    if not tf.compat.v1.get_collection(collection):
        logger.warning(
            "`tf.train.start_queue_runners()` was called when no queue runners "
            "were defined. You can safely remove the call to this deprecated "
            "function."
        )
    if _settings.current().engine == "dataset":
        # NOTE [ Queues filled from tf.data ]: the program's own queues, before any starts.
        from queue_pipeline._engine import bridge  # noqa: PLC0415 - the engine's imports

        bridge.fill_from_datasets(sess, QueueRunner, BridgeRunner)
    threads: list[Any] = []
    with sess.graph.as_default():
        for qr in tf.compat.v1.get_collection(collection):
            if not isinstance(qr, QueueRunner):  # ours mark in create_threads
                _diagnostics.mark_started(sess, queue_op_name(getattr(qr, "queue", None)) or "")
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
