"""Graph facts every subsystem reads: queue and reader op types, queues, upstream walks.

One copy of each: the rebuilder, the dataset engine, the diagnostics and the
compare harness all classify ops with these tables and walk graphs with these
functions.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Iterator

import tensorflow as tf

__all__ = [
    "op_types",
    "BATCHED_DEQUEUE_OPS",
    "GUARD_SUFFIX",
    "DEQUEUE_MANY_OPS",
    "DEQUEUE_ONE_OPS",
    "DEQUEUE_OPS",
    "DEQUEUE_UP_TO_OPS",
    "GATHERING_QUEUE_OPS",
    "MAX_WALK_OPS",
    "READ_OPS",
    "READ_UP_TO_OPS",
    "RESOURCE_READ_OPS",
    "ancestors",
    "components",
    "dense_components",
    "error_op",
    "queue_op",
    "queue_op_name",
    "upstream_ops",
    "walk_back",
    "walk_forward",
]

# Each pair: the resource (V2) kernel, then TF's legacy ref-typed one.
DEQUEUE_ONE_OPS = ("QueueDequeueV2", "QueueDequeue")
DEQUEUE_MANY_OPS = ("QueueDequeueManyV2", "QueueDequeueMany")
DEQUEUE_UP_TO_OPS = ("QueueDequeueUpToV2", "QueueDequeueUpTo")
DEQUEUE_OPS = DEQUEUE_ONE_OPS + DEQUEUE_MANY_OPS + DEQUEUE_UP_TO_OPS
READ_UP_TO_OPS = ("ReaderReadUpToV2", "ReaderReadUpTo")
READ_OPS = ("ReaderReadV2", "ReaderReadUpToV2", "ReaderRead", "ReaderReadUpTo")
RESOURCE_READ_OPS = ("ReaderReadV2", "ReaderReadUpToV2")
"""The reads of resource readers: every reader but IdentityReader's FakeQueue shim."""
BATCHED_DEQUEUE_OPS = DEQUEUE_MANY_OPS + DEQUEUE_UP_TO_OPS + READ_UP_TO_OPS
"""Ops whose outputs have a leading batch axis."""
# Per-record counters: each run hands out the variable's value and increments it.
COUNT_UP_TO_OPS = ("CountUpTo", "ResourceCountUpTo")
GATHERING_QUEUE_OPS = ("FIFOQueueV2", "PaddingFIFOQueueV2", "RandomShuffleQueueV2")
"""Queues whose contents are plain elements (no builder needed to rebuild them)."""

GUARD_SUFFIX = "_qp_guard"
"""Name-scope suffix of the diagnostics' probe ops (``<queue>_qp_guard/``); never lifted."""

MAX_WALK_OPS = 50_000
"""Bound on the ops an upstream walk visits (diagnostics must stay cheap)."""


def queue_op(queue) -> tf.Operation | None:
    """The queue op of a ``tf.queue.QueueBase`` or of its resource tensor; None otherwise."""
    ref = getattr(queue, "queue_ref", queue)
    return getattr(ref, "op", None)


def queue_op_name(queue) -> str | None:
    """The name of the queue op behind `queue` (a QueueBase, its resource or the op); else None."""
    if isinstance(queue, tf.Operation):
        return queue.name
    op = queue_op(queue)
    return op.name if op is not None else None


def components(leaf) -> list[tf.Tensor]:
    """The dense tensors of a Tensor or SparseTensor."""
    if isinstance(leaf, tf.SparseTensor):
        return [leaf.indices, leaf.values, leaf.dense_shape]
    return [leaf]


def dense_components(values) -> list:
    """The dense tensors of `values`: a SparseTensor gives its three components."""
    out: list = []
    for value in values:
        out += components(value)
    return out


def walk_back(
    start: Iterable[tf.Operation],
    *,
    stop: Callable[[tf.Operation], bool] | None = None,
    inputs: Callable[[tf.Operation], Iterable[tf.Tensor]] | None = None,
    control: bool = False,
    limit: int = MAX_WALK_OPS,
) -> Iterator[tf.Operation]:
    """Each op `start` depends on, once, depth first from the last of `start`.

    The one backward walk of the package (queue boundaries, record sources
    and random draws are all found with it).

    Args:
      start: the ops to walk back from (yielded too).
      stop: an op for which it is true is yielded but not walked past (a
        dequeue, a reader's read: the edge of a step).
      inputs: the input tensors to follow from an op (default: all of them).
      control: follow control inputs too.
      limit: at most this many ops are yielded (MAX_WALK_OPS: walks stay cheap).

    Yields:
      tf.Operation, each at most once; a consumer may stop early.
    """
    seen: set[str] = set()
    stack = list(start)
    while stack and len(seen) < limit:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        yield op
        if stop is not None and stop(op):
            continue
        stack.extend(t.op for t in (op.inputs if inputs is None else inputs(op)))
        if control:
            stack.extend(op.control_inputs)


def walk_forward(start: Iterable[tf.Tensor], limit: int = MAX_WALK_OPS) -> Iterator[tf.Tensor]:
    """Each tensor computed from `start` (through data edges), `start` included, once.

    Yields:
      tf.Tensor, depth first, at most `limit` of them; a consumer may stop early.
    """
    seen: set[str] = set()
    stack = list(start)
    while stack and len(seen) < limit:
        t = stack.pop()
        if t.name in seen:
            continue
        seen.add(t.name)
        yield t
        stack.extend(out for consumer in t.consumers() for out in consumer.outputs)


def ancestors(start: Iterable[tf.Operation], limit: int = MAX_WALK_OPS) -> set[tf.Operation]:
    """Ops `start` depends on (data and control inputs), `start` included; at most `limit`."""
    return set(walk_back(start, control=True, limit=limit))


def enqueue_ops(runners, queue_name: str | None = None) -> list[tf.Operation]:
    """The distinct enqueue ops `runners` run (of the queue named `queue_name` only, if given),
    in the order the runners list them (a runner's ``[op] * 16`` is one op)."""
    ops: dict[str, tf.Operation] = {}
    for qr in runners:
        if queue_name is not None:
            op = queue_op(getattr(qr, "queue", None))
            if op is None or op.name != queue_name:
                continue
        for e in getattr(qr, "enqueue_ops", None) or ():
            e = getattr(e, "op", e)
            ops.setdefault(e.name, e)
    return list(ops.values())


def upstream_ops(leaves, runners) -> set[str]:
    """Names of the ops `leaves` depend on, through data and control inputs and queues.

    A queue op counts as depending on the enqueue ops of the `runners` that
    fill it, so the walk crosses every stage of a legacy pipeline.

    Args:
      leaves: Tensors or SparseTensors.
      runners: QueueRunner-like objects (``queue``, ``enqueue_ops``).
    """
    enqueues: dict[str, list] = {}
    for qr in runners:
        op = queue_op(getattr(qr, "queue", None))
        if op is not None:
            enqueues.setdefault(op.name, []).extend(getattr(e, "op", e) for e in qr.enqueue_ops)
    seen: set[str] = set()
    stack = [t.op for leaf in leaves for t in components(leaf)]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
        stack.extend(enqueues.get(op.name, ()))
    return seen


_NODE = re.compile(r"\{\{node ([^}]+)\}\}")


def error_op(error, graph) -> tf.Operation | None:
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


def op_types(graph: tf.Graph, ops: Iterable[tf.Operation], functions: Iterable[str]) -> set[str]:
    """The op types of `ops` and of the bodies of `graph`'s functions named in `functions`.

    A Dataset's map bodies live in the graph's function library, not among
    its operations: what they run is seen only there.
    """
    types = {op.type for op in ops}
    library = graph._functions  # noqa: SLF001 - the graph's function library
    for name in functions:
        function = library.get(name)
        if function is not None:
            types |= {node.op for node in function.definition.node_def}
    return types


def enqueued_from(enqueue: tf.Operation) -> tuple[str, tf.Operation | None]:
    """What the values `enqueue` enqueues are made of.

    ``("constant", None)`` when only graph constants and stateless ops (every
    run enqueues the same values: NOTE [ A queue filled from arrays in memory ]
    in :mod:`queue_pipeline._migrate.constant_queues`); else ``(why, op)``
    naming the first op that is not: ``"placeholder"``, ``"stage"`` (a
    dequeue, reader or queue: another stage's records) or ``"stateful"`` (a
    random draw, a variable). Control inputs are not followed.
    """
    for op in walk_back([t.op for t in enqueue.inputs[1:]]):
        if not op.inputs and op.type == "Const":
            continue
        if op.type.startswith("Placeholder"):
            return "placeholder", op
        if op.type in DEQUEUE_OPS or "Reader" in op.type or "Queue" in op.type:
            return "stage", op
        if op.op_def.is_stateful or "Variable" in op.type:
            return "stateful", op
    return "constant", None
