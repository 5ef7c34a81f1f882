"""Plan nodes: what each queue_pipeline builder recorded about what it built.

Every producer, reader and batcher records one :class:`PlanNode` on the graph it
builds into: its public API name, its arguments, the tensors (or queues) it
consumed, the tensors it returned, the queue it reads from and the queue it
fills. :func:`plan_for` walks back from any tensor a pipeline produced and
returns the :class:`Plan` behind it, upstream first. The comparison harness
and the tf.data rebuilder read these plans; nothing else depends on them.

Recording costs one small object per builder call, kept in the graph under a
private non-string collection key: ``get_all_collection_keys()`` and
meta-graph export skip it, and the nodes die with their graph.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Iterable, Iterator, Mapping

import tensorflow as tf

from queue_pipeline._core.compat import PrivateKey

__all__ = [
    "BATCHING_KINDS",
    "PRODUCER_KINDS",
    "Plan",
    "PlanNode",
    "epochs_of",
    "plan_for",
    "plan_nodes",
]

BATCHING_KINDS = frozenset(
    {
        "batch",
        "batch_join",
        "maybe_batch",
        "maybe_batch_join",
        "shuffle_batch",
        "shuffle_batch_join",
        "maybe_shuffle_batch",
        "maybe_shuffle_batch_join",
    }
)
"""The ``kind`` of the plan nodes the eight batching functions record."""
PRODUCER_KINDS = frozenset({"string_input_producer", "range_input_producer", "input_producer"})
"""The ``kind`` of the plan nodes of the producers that fill a queue of rows."""

_LOCK = threading.Lock()


# The PlanNodes, in recording (therefore topological) order, live in the
# graph itself, in a collection under a private key (see _compat.PrivateKey).
_KEY = PrivateKey("plan nodes")


@dataclasses.dataclass(frozen=True, eq=False)
class PlanNode:
    """One builder call, as recorded on its graph.

    Attributes:
      kind: the public API that built it, e.g. ``"string_input_producer"`` or
        ``"TextLineReader.read"``.
      args: the call's arguments by name, defaults filled in (tensors stay tensors).
      inputs: the tensors or queues the builder consumed.
      outputs: the tensors (or the queue) the builder returned.
      reads: the queue this node dequeues from at run time, or None.
      fills: the queue this node's QueueRunner enqueues into, or None.
      index: the position of the node in its graph's recording order.
    """

    kind: str
    args: Mapping[str, Any]
    inputs: tuple
    outputs: tuple
    reads: Any = None
    fills: Any = None
    index: int = 0

    def __repr__(self) -> str:
        names = ", ".join(_name_of(o) for o in self.outputs)
        return f"PlanNode({self.kind!r}, outputs=[{names}])"


@dataclasses.dataclass(frozen=True)
class Plan:
    """The plan behind some tensors: the nodes they depend on, upstream first."""

    nodes: tuple[PlanNode, ...]

    def __iter__(self) -> Iterator[PlanNode]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def kinds(self) -> list[str]:
        """The kinds of the nodes, upstream first."""
        return [node.kind for node in self.nodes]

    def describe(self) -> str:
        """A readable one-line-per-node rendering, upstream first."""
        lines = []
        for node in self.nodes:
            args = ", ".join(f"{k}={_short(v)}" for k, v in node.args.items())
            lines.append(f"{node.kind}({args})")
        return "\n".join(lines)


def record(
    kind: str,
    args: Mapping[str, Any],
    inputs: Iterable,
    outputs: Iterable,
    *,
    reads=None,
    fills=None,
    graph: tf.Graph | None = None,
) -> PlanNode:
    """Records a plan node on `graph` (default: the current default graph)."""
    graph = graph if graph is not None else tf.compat.v1.get_default_graph()
    with _LOCK:
        nodes = graph.get_collection_ref(_KEY)
        node = PlanNode(
            kind=kind,
            args=dict(args),
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            reads=reads,
            fills=fills,
            index=len(nodes),
        )
        nodes.append(node)
    return node


def plan_nodes(graph: tf.Graph | None = None) -> tuple[PlanNode, ...]:
    """Every plan node recorded on `graph` (default: the default graph), in order."""
    graph = graph if graph is not None else tf.compat.v1.get_default_graph()
    with _LOCK:
        return tuple(graph.get_collection(_KEY))


def plan_for(*fetches) -> Plan:
    """Returns the plan behind tensors, queues or ops that a pipeline produced.

    It walks the graph backwards from `fetches` along data inputs, and from
    each recorded node to that node's own inputs, so it crosses the queues
    between stages and any user ops (decoders, casts) between builders.

    Args:
      *fetches: tensors, SparseTensors, operations or queues, possibly nested
        in lists, tuples or dicts; all from one graph.

    Returns:
      A :class:`Plan` with the nodes the fetches depend on, upstream first; it
      is empty if nothing upstream was built by queue_pipeline.
    """
    ops = (_op_of(x) for x in tf.nest.flatten(fetches, expand_composites=True))
    start = [op for op in ops if op is not None]
    if not start:
        return Plan(())
    by_op = _index_by_op(start[0].graph)
    seen_ops: set[str] = set()
    found: dict[int, PlanNode] = {}
    stack = list(start)
    while stack:
        op = stack.pop()
        if op.name in seen_ops:
            continue
        seen_ops.add(op.name)
        for node in by_op.get(op.name, ()):
            if node.index not in found:
                found[node.index] = node
                stack.extend(
                    o
                    for o in map(_op_of, tf.nest.flatten(node.inputs, expand_composites=True))
                    if o is not None
                )
        stack.extend(t.op for t in op.inputs)
    return Plan(tuple(found[i] for i in sorted(found)))


_EPOCH_KINDS = PRODUCER_KINDS | {"slice_input_producer", "limit_epochs"}


def epochs_of(*fetches) -> tuple[str, int | None]:
    """Whether the pipeline behind `fetches` ends, from its producers' ``num_epochs``.

    Returns:
      ``("finite", n)`` when every producer has ``num_epochs=n``;
      ``("finite", None)`` when they differ; ``("infinite", None)`` when one
      repeats forever (``num_epochs=None``); ``("unknown", None)`` when the
      plan records no producer.
    """
    values = []
    for node in plan_for(*fetches):
        if node.kind in _EPOCH_KINDS:
            n = node.args.get("num_epochs")
            if n is None and node.kind == "limit_epochs":
                continue  # limit_epochs(None) records nothing; a producer's own node counts
            values.append(n)
    if not values:
        return "unknown", None
    if any(v is None for v in values):
        return "infinite", None
    return "finite", values[0] if len(set(values)) == 1 else None


def _index_by_op(graph: tf.Graph) -> dict[str, list[PlanNode]]:
    index: dict[str, list[PlanNode]] = {}
    for node in plan_nodes(graph):
        members = list(tf.nest.flatten(node.outputs, expand_composites=True))
        members += [node.fills]
        for member in members:
            op = _op_of(member)
            if op is not None:
                index.setdefault(op.name, []).append(node)
    return index


def _op_of(x) -> tf.Operation | None:
    if x is None:
        return None
    if isinstance(x, tf.Operation):
        return x
    if hasattr(x, "queue_ref"):  # a tf.queue.QueueBase
        return x.queue_ref.op
    op = getattr(x, "op", None)
    return op if isinstance(op, tf.Operation) else None


def _name_of(x) -> str:
    op = _op_of(x)
    if op is None:
        return repr(x)
    return getattr(x, "name", op.name)


def _short(value) -> str:
    if _op_of(value) is not None:
        return f"<{_name_of(value)}>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
