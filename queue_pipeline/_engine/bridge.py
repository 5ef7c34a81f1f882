"""The program's own queues, filled from tf.data: the dataset engine's pass over the graph.

NOTE [ Queues filled from tf.data ]
The dataset engine serves each batching call when the call is made
(NOTE [ The dataset engine ] in ``_engine/serving.py``). Many programs build
the queue that hands out their batches themselves: a ``RandomShuffleQueue``
or ``FIFOQueue`` filled by ``QueueRunner(queue, [enqueue_op] * 16)`` and read
with ``dequeue_many`` (CIFAR-10's official input, im2txt's prefetch queue),
a PaddingFIFOQueue of sequences, TF's own ``batch`` called through a name
bound before ``install()``, a prefetch queue of whole batches. No builder of
ours sees such a queue being made, so the engine reads it from the graph
when the runners start (queue_pipeline's ``start_queue_runners``, which
``MonitoredTrainingSession`` calls under ``install()``, and the
``create_threads`` of queue_pipeline's runners, which ``Supervisor`` calls):

* **Which queues.** Every FIFO, padding FIFO or random shuffle queue that
  runners in the ``"queue_runners"`` collection fill with plain enqueue ops
  (``enqueue`` or ``enqueue_many``) and that no builder of ours recorded
  (producers and batching calls are the builders' own; NOTE [ Stages read
  from the graph ] in ``_rebuild/graph_model.py`` for TF's producers).
  Queues downstream are taken first, so a chain of queues is one Dataset.
* **What fills it.** The values the enqueue ops enqueue are rebuilt as a
  Dataset by the engine's rebuilder (readers and producers, recorded or
  read from the graph, per-record ops lifted into a parallel ``map``;
  several enqueue ops interleaved, one record from each in turn, as any of
  TF's thread schedules could deliver them). One thread of a runner of the
  engine's runs one ``QueueEnqueueManyV2`` of the iterator's next chunk of
  records at a time: one session call per chunk instead of one per record
  and thread. Records whose static shape is not fully known (a padding
  queue's sequences) go one per chunk.
* **What stays TF's.** The queue itself and everything downstream of it:
  its shuffling (``capacity``, ``min_after_dequeue``, seed), padding,
  ``dequeue_many`` / ``dequeue_up_to`` / ``dequeue``, its size summary,
  tensor names, feeds of the dequeued tensors, ``MonitoredTrainingSession``
  and ``Supervisor``. The program sees the same queue, so it gets TF's
  semantics by construction.
* **End of input and errors.** The iterator's end closes the queue as the
  last runner thread would (NOTE [ Queue close vs cancel ] in
  ``runner.py``); a read or decode error goes to the Coordinator and the
  consumer like any runner's error, naming the file and record.
* **Runners.** The queue's runners, and the upstream ones only they
  consumed, leave the collection (kept aside, as for served calls); a
  retired runner of ours that a stale list still starts creates no thread.
  The runner filling the queue instead is ``runner.BridgeRunner``: runner.py
  calls this pass and hands its classes over, so the engine, floors above,
  imports no runner module (no import circle).
* **Falls back** (one warning naming the op, why and the fix) when the
  enqueued values cannot be rebuilt: a variable that changes while the input
  runs, a placeholder fed at each step, a queue also fed from the training
  loop, a dequeue of a queue a builder fills.
* **Not kept**: the input position in checkpoints. The queue is filled when
  the runners start, after any ``Saver`` was made, so a restored run starts
  its input from the beginning, as it does on TF's queues.

NOTE [ Per-record counters ]
``variable.count_up_to(limit)`` hands out the variable's value and adds one
at each run, and ends the input with ``OutOfRangeError`` at ``limit``. TF's
input tests and tutorials number their examples with it (``batch([counter,
...])``), or pick preloaded rows with it (``tf.gather(images, counter)``).
Its start is the variable's value when the runners start, known only in the
session, so a batching call over a counter keeps its queue when it is made
(one INFO line), and this pass fills that queue, like a program's own queue
over a counter, from tf.data:

* **The count** is a source of the rebuilt Dataset:
  ``Dataset.range(value, limit)``, with the value read in the session as the
  runners start; enqueue ops taking turns at one counter count
  ``range(value + i, limit, n)`` each, so together they hand out every value
  once (one of TF's thread schedules).
* **The variable** shows what was handed out: each enqueue of the bridge
  first sets it to the largest value of its chunk plus one, so it runs ahead
  of the consumer by what the queue and the prefetch hold, as TF's runners
  do, and ends at ``limit``.
* **Not covered**: a counter the program also runs itself (fetching it in
  its steps) takes values from TF's input; the Dataset's count does not see
  those runs (the variable is set past them at the next enqueue).
"""

from __future__ import annotations

import logging
import threading
import weakref

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._core import settings as _settings
from queue_pipeline._core.compat import QUEUE_RUNNERS
from queue_pipeline._engine import direct_reads, fed_queues, graph_edits, runners, serving
from queue_pipeline._engine import rebuilder as engine_rebuilder
from queue_pipeline._rebuild import graph_model
from queue_pipeline.data import _common as data_common

__all__ = ["fill_from_datasets", "is_retired", "replacement"]

_LOCK = threading.RLock()
# graph -> names of the queues the pass already looked at.
_SEEN: "weakref.WeakKeyDictionary[tf.Graph, set]" = weakref.WeakKeyDictionary()
# A retired runner of a bridged queue -> the BridgeRunner filling that queue.
_REPLACED: "weakref.WeakKeyDictionary[object, object]" = weakref.WeakKeyDictionary()
_ENQUEUE_ONE = ("QueueEnqueueV2",)
_ENQUEUE_MANY = ("QueueEnqueueManyV2",)
# Records per session call of the bridge thread: large enough that the
# call's cost is small against the records' work, small enough that a queue
# of a few hundred records is never filled in one call.
_CHUNK = 64


def is_retired(graph: tf.Graph, runner) -> bool:
    """Whether the engine took `runner` out of `graph`'s collection (it must not start)."""
    return any(r is runner for r in runners.retired(graph))


def replacement(runner):
    """The BridgeRunner that fills the queue of retired `runner`, if it was bridged."""
    with _LOCK:
        return _REPLACED.get(runner)


def fill_from_datasets(sess, ours: type, bridge_runner: type, *, ours_only: bool = False) -> None:
    """Fills the program's own queues of `sess`'s graph from tf.data; see the NOTE above.

    Does nothing unless the dataset engine is on. Each queue is looked at
    once per graph; a graph finalized by ``MonitoredTrainingSession`` is
    unfinalized for the pass and finalized again.

    Args:
      sess: the Session about to start the runners.
      ours: queue_pipeline's QueueRunner class, and `bridge_runner` the
        BridgeRunner class that fills a bridged queue (both
        ``queue_pipeline.runner``'s, which calls this pass: handed over so
        that the engine, floors above the runner, imports no runner module).
      ours_only: bridge only queues whose runners are all queue_pipeline's.
        Set when one runner's ``create_threads`` triggers the pass (as
        ``Supervisor`` calls them, from a list it read before): a retired
        runner of TF's would still be started from that list and fill the
        queue a second time, whereas ours hand their call to the bridge.

    Side effects: adds each bridged queue's Dataset, iterator and enqueue op
    to the graph, swaps runners in the ``"queue_runners"`` collection, logs
    one INFO line per queue filled and one WARNING per queue left on its
    runners.
    """
    if _settings.current().engine != "dataset":
        return
    graph = sess.graph
    with _LOCK:
        seen = _SEEN.setdefault(graph, set())
        candidates = [
            (queue_op, fillers)
            for queue_op, fillers in _candidates(graph, bridge_runner)
            if queue_op.name not in seen
            and (not ours_only or all(type(qr) is ours for qr in fillers))
        ]
        reads = direct_reads.direct_reads(graph, seen)
        if not candidates and not reads:
            return
        seen.update(queue_op.name for queue_op, _ in candidates)
        seen.update(op.name for op in reads)
        finalized = graph.finalized
        if finalized:
            graph._unsafe_unfinalize()  # noqa: SLF001 - the pass adds the Dataset's ops
        try:
            with graph.as_default():
                for queue_op, fillers in reversed(candidates):
                    collection = graph.get_collection(QUEUE_RUNNERS)
                    if all(all(qr is not r for r in collection) for qr in fillers):
                        continue  # retired by a queue downstream of it
                    _bridge(sess, queue_op, fillers, bridge_runner)
                direct_reads.serve(graph, reads)
        finally:
            if finalized:
                graph.finalize()


def _candidates(graph: tf.Graph, bridge_runner: type) -> list:
    """(queue op, its runners) for each queue the pass may fill, in collection order."""
    recorded = plan.plan_nodes(graph)
    builders = {graph_facts.queue_op_name(n.fills) for n in recorded}
    builders |= {
        graph_facts.queue_op_name(n.fills) for n in graph_model.graph_nodes(graph, recorded)
    }
    by_queue: dict[str, tuple] = {}
    for qr in graph.get_collection(QUEUE_RUNNERS):
        if isinstance(qr, (runners.ServedRunner, bridge_runner)):
            continue
        queue_op = graph_facts.queue_op(getattr(qr, "queue", None))
        if queue_op is None:
            continue
        if queue_op.name in builders and not _counters(graph_facts.enqueue_ops([qr])):
            continue  # a builder's queue, unless its call left it for a counter
        by_queue.setdefault(queue_op.name, (queue_op, []))[1].append(qr)
    out = []
    for queue_op, fillers in by_queue.values():
        if queue_op.type not in graph_facts.GATHERING_QUEUE_OPS:
            continue
        reads = [
            c
            for t in queue_op.outputs
            for c in t.consumers()
            if c.type in graph_facts.READ_OPS and c.inputs[1].op is queue_op
        ]
        if not reads:  # a work queue of readers is a producer's, not a program's
            out.append((queue_op, fillers))
    return out


def _bridge(sess, queue_op: tf.Operation, fillers: list, bridge_runner: type) -> None:
    """Fills `queue_op` from tf.data instead of `fillers`, or logs why it cannot."""
    graph = sess.graph
    name = queue_op.name
    enqueue = graph_facts.enqueue_ops(fillers)
    threads = sum(len(getattr(qr, "enqueue_ops", None) or ()) for qr in fillers)
    where = f"queue '{name}' ({queue_op.type.replace('V2', '')}, {threads} enqueue thread(s))"
    ops_before = len(graph.get_operations())
    try:
        fns = fed_queues.feed_functions(fillers, enqueue)
        built = _build(sess, queue_op, enqueue, where, fns)
    except Exception as e:  # noqa: BLE001 - any failure keeps the program's runners
        serving.log_once(
            graph,
            ("bridge", name),
            logging.WARNING,
            "queue_pipeline dataset engine: %s stays on its QueueRunners: %s",
            where,
            e,
        )
        return
    enqueue_op, initializer, feeds, paths = built
    engine_ops = {op.name for op in graph.get_operations()[ops_before:]}
    engine_ops |= {e.name for e in enqueue}
    first = fillers[0]
    with tf.compat.v1.name_scope(f"{name}_dataset/"):
        close_op = getattr(first, "close_op", None)
        cancel_op = getattr(first, "cancel_op", None)
        queue = first.queue  # a candidate's runners all have one (see _candidates)
        runner = bridge_runner(
            queue,
            enqueue_op,
            close_op if close_op is not None else queue.close(),
            cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True),
            initializer,
            feeds,
        )
    collection = graph.get_collection_ref(QUEUE_RUNNERS)
    position = min(i for i, qr in enumerate(collection) if any(qr is f for f in fillers))
    runners.retire(graph, fillers)
    with _LOCK:
        for qr in fillers:
            _REPLACED[qr] = runner
    collection.insert(min(position, len(collection)), runner)
    leaves = [t for e in enqueue for t in e.inputs[1:]]
    runners.retire_runners(graph, leaves, engine_ops=engine_ops)
    serving.log_once(
        graph,
        ("bridge-path", name),
        logging.INFO,
        "queue_pipeline dataset engine: %s is filled from tf.data (%s).",
        where,
        "; ".join(paths) or "no per-record ops",
    )


def _build(sess, queue_op: tf.Operation, enqueue: list, where: str, fns):
    """(enqueue-many op, initializer or None, feeds, paths) filling `queue_op` from tf.data.

    `fns`: per enqueue op, the feed function its runner calls, or None (NOTE
    [ Queues fed from Python ] in ``_engine/fed_queues.py``). Per-record
    counters upstream are read in `sess` (NOTE [ Per-record counters ]).
    """
    graph = sess.graph
    kinds = {e.type for e in enqueue}
    if not enqueue or not (kinds <= set(_ENQUEUE_ONE) or kinds <= set(_ENQUEUE_MANY)):
        raise TypeError(
            f"its runners run {sorted(kinds) or 'no op'}, not only enqueue ops of one kind "
            "(enqueue or enqueue_many) of upstream tensors"
        )
    many = kinds <= set(_ENQUEUE_MANY)
    leaves = [t for e in enqueue for t in e.inputs[1:]]
    rebuilder = engine_rebuilder.EngineRebuilder(
        graph,
        api=f"{where} (dataset engine)",
        deterministic=serving.is_seeded(graph, leaves) or _seeded_queue(queue_op),
        vectorizer=None,
    )
    rebuilder.restrict_to(leaves)
    own = [_counters([e]) for e in enqueue]
    counters = list({c.name: c for cs in own for c in cs}.values())
    if counters:
        if fns is not None:
            raise TypeError("its values are fed from Python and counted by a counter")
        rebuilder.counter_starts = {c.name: _counter_value(sess, c) for c in counters}
    with graph_edits.quiet_tf_data(), tf.compat.v1.name_scope(f"{queue_op.name}_dataset/"):
        if fns is not None:
            streams = fed_queues.fed_streams(rebuilder, enqueue, fns, where)
        else:
            streams = rebuilder.rebuild_each(
                [list(e.inputs[1:]) + [c.outputs[0] for c in cs] for e, cs in zip(enqueue, own)],
                [f"enqueue {e.name}" for e in enqueue],
                exact=True,
            )
            for stream, e, cs in zip(streams, enqueue, own):
                stream.dataset = _with_every_count(
                    stream.dataset, len(e.inputs) - 1, cs, counters, rebuilder.counter_starts
                )
        specs = {repr(s.dataset.element_spec) for s in streams}
        if len(specs) != 1:
            raise TypeError(
                "its enqueue ops enqueue values of different kinds: " + "; ".join(specs)
            )
        datasets = [s.dataset for s in streams]
        dataset = datasets[0] if len(datasets) == 1 else data_common.round_robin(datasets)
        components = tf.nest.flatten(dataset.element_spec)
        if not all(isinstance(c, tf.TensorSpec) for c in components):
            raise TypeError("its enqueued values are not dense tensors")
        if not many:
            whole = all(c.shape.is_fully_defined() for c in components)
            dataset = dataset.batch(_CHUNK if whole else 1)
        values, initializer = rebuilder.start(dataset.prefetch(2))
        split = len(values) - len(counters)
        values, counted = values[:split], values[split:]
        # NOTE [ Per-record counters ]: the variables show what the counters handed out.
        updates = [_advance_counter(c, tf.reduce_max(v) + 1) for c, v in zip(counters, counted)]
        dtypes = queue_op.get_attr("component_types")
        if [v.dtype for v in values] != list(dtypes):
            raise TypeError(
                f"the rebuilt values have dtypes {[v.dtype.name for v in values]}, "
                f"the queue {[tf.as_dtype(d).name for d in dtypes]}"
            )
        with tf.control_dependencies(updates):
            enqueue_op = tf.raw_ops.QueueEnqueueManyV2(
                handle=queue_op.outputs[0],
                components=values,
                timeout_ms=-1,
                name="fill_from_dataset",
            )
    return enqueue_op, initializer, dict(rebuilder.feeds), rebuilder.paths


def _counters(enqueue: list[tf.Operation]) -> list[tf.Operation]:
    """The per-record counters the values of `enqueue` are computed from, in graph order.

    Walks data inputs back to the queues and readers before them.
    """
    edges = graph_facts.COUNT_UP_TO_OPS + graph_facts.DEQUEUE_OPS + graph_facts.READ_OPS
    walk = graph_facts.walk_back(
        [t.op for e in enqueue for t in e.inputs[1:]], stop=lambda op: op.type in edges
    )
    found = {op.name: op for op in walk if op.type in graph_facts.COUNT_UP_TO_OPS}
    if not found:
        return []
    order = {op.name: i for i, op in enumerate(enqueue[0].graph.get_operations())}
    return sorted(found.values(), key=lambda op: order[op.name])


def _counter_value(sess, counter: tf.Operation) -> int:
    """The current value of `counter`'s variable in `sess` (where its count starts)."""
    variable = counter.inputs[0]
    if counter.type == "ResourceCountUpTo":
        variable = tf.raw_ops.ReadVariableOp(resource=variable, dtype=counter.get_attr("T"))
    return int(sess.run(variable))


def _with_every_count(dataset, width: int, own: list, counters: list, starts) -> tf.data.Dataset:
    """`dataset` (`width` values, then the counts of `own`) with a count for each of `counters`.

    A counter the stream does not run gets ``start - 1``, which moves no
    variable (see :func:`_advance_counter`): the enqueue ops of one queue
    then deliver elements of one kind.
    """
    if [c.name for c in own] == [c.name for c in counters]:
        return dataset
    where = {c.name: i for i, c in enumerate(own)}

    def every_count(*xs):
        filled = [
            xs[width + where[c.name]]
            if c.name in where
            else tf.constant(starts[c.name] - 1, c.outputs[0].dtype)
            for c in counters
        ]
        return (*xs[:width], *filled)

    return dataset.map(every_count)


def _advance_counter(counter: tf.Operation, value: tf.Tensor) -> tf.Operation:
    """An op raising `counter`'s variable to `value` (never lowering it)."""
    variable = counter.inputs[0]
    if counter.type == "ResourceCountUpTo":
        current = tf.raw_ops.ReadVariableOp(resource=variable, dtype=value.dtype)
        return tf.raw_ops.AssignVariableOp(resource=variable, value=tf.maximum(current, value))
    return tf.compat.v1.assign(variable, tf.maximum(variable, value)).op


def _seeded_queue(queue_op: tf.Operation) -> bool:
    if queue_op.type != "RandomShuffleQueueV2":
        return False
    return bool(queue_op.get_attr("seed") or queue_op.get_attr("seed2"))
