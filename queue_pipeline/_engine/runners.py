"""The engine's runner surgery: stand-ins for served calls, and the runners it retires.

A batching call the dataset engine serves keeps a :class:`ServedRunner` in
the ``"queue_runners"`` collection in place of its faithful runner, and the
faithful runners that only the rebuilt pipeline consumed leave the
collection (kept aside in the graph, to come back if a later call falls
back to the queue engine).
"""

from __future__ import annotations

import threading
import weakref

import tensorflow as tf
from tensorflow.core.protobuf import queue_runner_pb2

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._core.compat import QUEUE_RUNNERS, PrivateKey

__all__ = [
    "ServedRunner",
    "restore_retired",
    "retire",
    "retire_runners",
    "retired",
    "runner_of",
    "start_inputs",
]

_LOCK = threading.Lock()
# The faithful runners the engine took out of a graph's collection, kept in
# that graph (a dictionary keyed by graph would keep it alive).
_RETIRED = PrivateKey("retired queue runners")


class ServedRunner:
    """Stands in the ``"queue_runners"`` collection for a call the Dataset serves.

    It has a QueueRunner's interface (TF's meta-graph exporter reads
    ``queue``, ``enqueue_ops``, ``close_op``, ``cancel_op`` and the closed
    exception types) but no enqueue op, so it starts no thread. When the
    call's iterator is initializable (the pipeline reads variables, or is
    fed large preloaded arrays), starting the runner initializes it, once per
    session; see NOTE [ Variables read when the input starts ] and NOTE
    [ Large preloaded arrays ].

    Args:
      queue: the faithful batching queue (its name is the runner's).
      faithful: the faithful runner it replaces (its close and cancel ops).
      initializer: the iterator's initializer, or None (a one-shot iterator).
      watch: the tf.data service watchdog factory, or None.
      feeds: placeholder -> numpy array fed to `initializer`.
    """

    def __init__(self, queue, faithful, initializer=None, watch=None, feeds=None) -> None:
        self._initializer = initializer
        self._feeds = dict(feeds) if feeds else None
        self._watch = watch
        self._started: "weakref.WeakSet" = weakref.WeakSet()  # sessions whose input started
        self._watched: "weakref.WeakSet" = weakref.WeakSet()  # sessions given the watchdog
        self._queue = queue
        self._enqueue_ops: list = []
        close_op = getattr(faithful, "close_op", None)
        cancel_op = getattr(faithful, "cancel_op", None)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (
            cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        )
        self._queue_closed_exception_types = (tf.errors.OutOfRangeError,)
        self.exceptions_raised: list = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: self._enqueue_ops)
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types)
    name = property(lambda self: self._queue.name)

    def create_threads(self, sess, coord=None, daemon=False, start=False) -> list:
        """Returns ``[]``: the Dataset runs its own threads inside the session.

        Side effects: the first call for `sess` starts the input
        (:meth:`initialize`), unless a checkpoint restore already did. A
        call read through tf.data service returns its one watchdog thread
        instead, once per session (a daemon, started if `start`, stopping
        with `coord`): NOTE [ Legacy pipelines on tf.data service ] in
        ``_engine/service.py``.
        """
        del daemon
        self.initialize(sess)
        if self._watch is None:
            return []
        with _LOCK:
            first = sess not in self._watched
            self._watched.add(sess)
        if not first:
            return []
        thread = self._watch(sess, coord)
        if start:
            thread.start()
        return [thread]

    def initialize(self, sess) -> None:
        """Starts the call's input in `sess`, once: runs the iterator's initializer, if any.

        Side effects: the initializer reads the variables, or is fed the
        preloaded arrays, the Dataset captures.
        """
        with _LOCK:
            first = sess not in self._started
            self._started.add(sess)
        if self._initializer is not None and first:
            sess.run(self._initializer, feed_dict=self._feeds)

    def to_proto(self, export_scope=None):
        """A ``QueueRunnerDef`` with no enqueue op, or None outside `export_scope`."""
        name = self._queue.queue_ref.op.name
        if export_scope is not None and not name.startswith(export_scope):
            return None
        strip = (
            (lambda s: s[len(export_scope.rstrip("/")) + 1 :]) if export_scope else (lambda s: s)
        )
        proto = queue_runner_pb2.QueueRunnerDef(
            queue_name=strip(name),
            close_op_name=strip(self._close_op.name),
            cancel_op_name=strip(self._cancel_op.name),
        )
        proto.queue_closed_exception_types.append(tf.errors.OUT_OF_RANGE)
        return proto


def start_inputs(sess) -> None:
    """Initializes, once per session, every served call of `sess`'s graph that needs it.

    What ``start_queue_runners`` does for them, done earlier: an iterator's
    saved position can only be restored into an initialized iterator (TF's
    ``FailedPreconditionError`` otherwise), and ``MonitoredTrainingSession``
    and ``Supervisor`` restore the checkpoint before they start the runners.
    """
    for qr in sess.graph.get_collection(QUEUE_RUNNERS):
        if isinstance(qr, ServedRunner):
            qr.initialize(sess)


def runner_of(graph: tf.Graph, queue):
    name = graph_facts.queue_op_name(queue)
    for qr in graph.get_collection(QUEUE_RUNNERS):
        if graph_facts.queue_op_name(getattr(qr, "queue", None)) == name:
            return qr
    return None


def _consumers(graph: tf.Graph) -> dict[str, list[str]]:
    """queue op name -> the dequeue and reader-read ops that take from it."""
    out: dict[str, list[str]] = {}
    for op in graph.get_operations():
        if op.type in graph_facts.DEQUEUE_OPS:
            out.setdefault(op.inputs[0].op.name, []).append(op.name)
        elif op.type in graph_facts.READ_OPS:
            out.setdefault(op.inputs[1].op.name, []).append(op.name)
    return out


def retire_runners(graph: tf.Graph, leaves: list, engine_ops=frozenset()) -> list:
    """Removes the faithful runners only the rebuilt pipeline consumed.

    A runner stays when a consumer of its queue is outside the pipeline, or
    when anything outside the pipeline is computed from what a consumer
    delivers (an image summary of a dequeued record, a reader's value also
    fetched directly), and so does every runner upstream of a runner that
    stays (the reader it runs needs its filename queue filled): no queue a
    program can still read is left unfilled.

    Args:
      graph: the legacy graph.
      leaves: the faithful outputs of the served call.
      engine_ops: names of the ops the engine built for the call (its
        Dataset), which do not count as consumers outside the pipeline.
    """
    collection = graph.get_collection_ref(QUEUE_RUNNERS)
    scope = graph_facts.upstream_ops(leaves, list(collection))
    consumers = _consumers(graph)

    def only_the_pipeline(consumer: str) -> bool:
        if consumer not in scope:
            return False
        return not _feeds_outside(graph.get_operation_by_name(consumer), scope, engine_ops)

    candidates, staying = [], []
    for qr in list(collection):
        name = graph_facts.queue_op_name(getattr(qr, "queue", None))
        if name is None or name not in scope or isinstance(qr, ServedRunner):
            staying.append(qr)
        elif all(only_the_pipeline(c) for c in consumers.get(name, ())):
            candidates.append(qr)
        else:
            staying.append(qr)
    needed = graph_facts.upstream_ops(
        [
            t
            for qr in staying
            for e in getattr(qr, "enqueue_ops", None) or ()
            for t in getattr(e, "op", e).inputs
        ],
        list(collection),
    )
    retired = [qr for qr in candidates if graph_facts.queue_op_name(qr.queue) not in needed]
    for qr in retired:
        collection.remove(qr)
    with _LOCK:
        graph.get_collection_ref(_RETIRED).extend(retired)
    return retired


def retire(graph: tf.Graph, runners: list) -> None:
    """Takes `runners` out of `graph`'s collection, kept aside like the retired ones."""
    collection = graph.get_collection_ref(QUEUE_RUNNERS)
    collection[:] = [qr for qr in collection if all(qr is not r for r in runners)]
    with _LOCK:
        graph.get_collection_ref(_RETIRED).extend(runners)


def retired(graph: tf.Graph) -> list:
    """The runners the engine took out of `graph`'s collection."""
    with _LOCK:
        return graph.get_collection(_RETIRED)


def _feeds_outside(op: tf.Operation, scope: set, engine_ops) -> bool:
    """Whether an op outside `scope` (and not the engine's) is computed from `op`'s outputs."""
    seen: set[str] = set()
    stack = [op]
    while stack:
        current = stack.pop()
        for t in current.outputs:
            for user in t.consumers():
                if user.name in seen:
                    continue
                seen.add(user.name)
                if user.name not in scope and user.name not in engine_ops:
                    return True
                stack.append(user)
    return False


def restore_retired(graph: tf.Graph, leaves: list) -> None:
    """Puts back the retired runners that the faithful pipeline of `leaves` needs."""
    with _LOCK:
        retired = graph.get_collection(_RETIRED)
    if not retired:
        return
    scope = graph_facts.upstream_ops(leaves, graph.get_collection(QUEUE_RUNNERS) + retired)
    back = [qr for qr in retired if graph_facts.queue_op_name(qr.queue) in scope]
    # Upstream first, as they were: runners start in collection order, and a
    # consumer's first dequeue must not come before its producer is marked
    # started (see NOTE [ Unstarted guard ] in _diagnostics/traps.py).
    graph.get_collection_ref(QUEUE_RUNNERS)[:0] = back
    with _LOCK:
        graph.get_collection_ref(_RETIRED)[:] = [qr for qr in retired if qr not in back]
