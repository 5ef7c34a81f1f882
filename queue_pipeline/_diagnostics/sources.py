"""What a failing step read: the reads a runner or a step performs, and the files behind them.

Shared by the error locator (``locate``) and the partial-tail warning
(``tails``): the reader ops upstream of an op or behind a queue, the reads a
dataset-engine iterator stands for, and the file names a producer holds
statically.
"""

from __future__ import annotations

import time

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts

__all__ = [
    "constant_text",
    "fills",
    "queue_reads",
    "reader_op",
    "runner_ops",
    "served_reads",
    "static_files",
    "upstream_reads",
]


def runner_ops(runner) -> list:
    ops = []
    for item in list(getattr(runner, "enqueue_ops", None) or []):
        op = item if isinstance(item, tf.Operation) else getattr(item, "op", None)
        if isinstance(op, tf.Operation):
            ops.append(op)
    return ops


def upstream_reads(start) -> list:
    """The reader read ops `start` runs in its own step, in name order."""
    return sorted(
        (op for op in graph_facts.ancestors(start) if op.type in graph_facts.READ_OPS),
        key=lambda op: op.name,
    )


def reader_op(read_op: tf.Operation) -> tf.Operation:
    return read_op.inputs[0].op


def queue_reads(runner) -> list:
    """The reads that take work units from `runner`'s queue (in any thread)."""
    queue = graph_facts.queue_op(getattr(runner, "queue", None))
    if queue is None:
        return []
    return sorted(
        (
            op
            for op in queue.graph.get_operations()
            if op.type in graph_facts.READ_OPS and op.inputs[1].op is queue
        ),
        key=lambda op: op.name,
    )


def served_reads(iterator_op: tf.Operation) -> list:
    """The legacy reads behind a batching call the dataset engine serves from `iterator_op`."""
    reads: dict = {}
    for node in plan.plan_nodes(iterator_op.graph):
        if node.args.get("engine") != "dataset":
            continue
        ops = {getattr(t, "op", None) for t in node.outputs}
        if not any(iterator_op in graph_facts.ancestors([op]) for op in ops if op is not None):
            continue
        for read_op in upstream_reads([t.op for t in node.inputs if isinstance(t, tf.Tensor)]):
            reads[read_op.name] = read_op
    return [reads[name] for name in sorted(reads)]


def static_files(read_op: tf.Operation, deadline) -> list[str]:
    """The file names the producer feeding `read_op`'s queue holds, if known statically.

    Known are a constant list given to a queue_pipeline producer, and the
    glob of a ``match_filenames_once`` (evaluated now, in Python).
    """
    queue_op = read_op.inputs[1].op
    files: list[str] = []
    for node in plan.plan_for(queue_op):
        if node.kind == "match_filenames_once":
            for pattern in (constant_text(node.args.get("pattern")) or "").split(", "):
                if pattern and time.monotonic() < deadline:
                    files.extend(sorted(tf.io.gfile.glob(pattern)))
        elif (
            node.kind in ("string_input_producer", "input_producer")
            and fills(node, queue_op)
            and node.inputs
        ):
            try:
                static = tf.get_static_value(node.inputs[0])
            except Exception:  # noqa: BLE001
                static = None
            if static is not None:
                files.extend(
                    v.decode() if isinstance(v, bytes) else str(v)
                    for v in getattr(static, "flat", [static])
                )
    return list(dict.fromkeys(files))


def fills(node, queue_op) -> bool:
    queue = node.fills
    return queue is not None and graph_facts.queue_op(queue) is queue_op


def constant_text(value) -> str | None:
    if isinstance(value, (str, bytes)):
        return value.decode() if isinstance(value, bytes) else value
    try:
        static = tf.get_static_value(value)
    except Exception:  # noqa: BLE001
        return None
    if static is None:
        return None
    flat = [
        v.decode() if isinstance(v, bytes) else str(v) for v in getattr(static, "flat", [static])
    ]
    return ", ".join(flat)
