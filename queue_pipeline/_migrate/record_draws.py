"""Random draws a legacy pipeline makes once per record (or per batch), kept where they run.

NOTE [ A draw that reads no record ]
monodepth's loader flips and recolours an image pair at random::

    do_flip = tf.random_uniform([], 0, 1)
    left = tf.cond(do_flip > 0.5, lambda: flip(right_o), lambda: left_o)

``do_flip`` reads no record tensor, so a rule that moves into the mapped
function only the statements reading the record would leave it where the
Dataset is built. In TF 1.x it is part of what the enqueue op runs: a new
draw for every record. Left outside, it is one tensor the map captures: a
one-shot iterator cannot be made at all ("Cannot capture a stateful
node"), and an initializable iterator (or eager iteration) flips every
record of an epoch or none. So the rule is on the graph the run built, not
on names: a statement binding a value of the per-record region (the run's
``record`` tensors, :func:`queue_pipeline._migrate.trace.trace`) that is
computed from a stateful op (any random op: uniform, normal, shuffle, crop,
``tf.image.random_*``, multinomial, ``sample_distorted_bounding_box``; a
``py_func``; a cond or loop holding one) is per-record code, whatever it
reads. One that feeds the code on the batches after the batching call is
per-batch code (the legacy graph draws it at every step). Stateful ops that
give the same result each time (``Assert``, ``Print``), variables, tables,
queues and readers do not count: a value computed once from them is the
same value. Statements that only compute constants still move out (once is
the same as per record).

The proof sees the mistake too (NOTE [ A draw captured by the map ] in
:mod:`queue_pipeline._migrate.proof_conditions`).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts

__all__ = ["draw_kind", "drawn_by"]

# Stateful ops whose value is the same at every run (NOTE [ A draw that reads no record ]).
_REPEATABLE = frozenset({"Assert", "Print", "PrintV2", "VarHandleOp", "ReadVariableOp"})
_RESOURCE_WORDS = ("Variable", "HashTable", "LookupTable", "InitializeTable", "Queue", "Reader")


def is_draw(op: tf.Operation) -> bool:
    """Whether running `op` again may give another value (a random op, a py_func...)."""
    if op.type in _REPEATABLE or any(w in op.type for w in _RESOURCE_WORDS):
        return False
    if op.type in graph_facts.DEQUEUE_OPS or op.type in graph_facts.READ_OPS:
        return False
    try:
        return bool(op.op_def.is_stateful)
    except (AttributeError, ValueError):  # an op without a registered definition
        return False


def drawn_by(tensors: list[tf.Tensor]) -> tf.Operation | None:
    """The first stateful op `tensors` are computed from (the walk stops at record sources)."""
    sources = graph_facts.DEQUEUE_OPS + graph_facts.READ_OPS
    walk = graph_facts.walk_back(
        [t.op for t in tensors], stop=lambda op: is_draw(op) or op.type in sources
    )
    return next((op for op in walk if is_draw(op)), None)


def _tensors(value: Any) -> list[tf.Tensor]:
    try:
        leaves = tf.nest.flatten(value)
    except Exception:  # noqa: BLE001 - the user's object, whatever it raises
        return []
    return [
        c
        for v in leaves
        if isinstance(v, (tf.Tensor, tf.SparseTensor))
        for c in graph_facts.components(v)
    ]


def _feeds(tensors: list[tf.Tensor], names: set[str]) -> bool:
    """Whether one of `tensors`, or what is computed from it, is named in `names`."""
    return any(t.name in names for t in graph_facts.walk_forward(tensors))


def draw_kind(
    values: dict[str, Any], targets: list[str], record: set[str], batch: set[str]
) -> tuple[str, str]:
    """(``"record"``, ``"batch"`` or ``""``, the draw's op type) for a statement binding `targets`.

    NOTE [ A draw that reads no record ]. `values` are the run's values of the
    function's locals, `record` and `batch` the run's per-record and batch
    tensor names.
    """
    for name in targets:
        tensors = _tensors(values.get(name))
        if not tensors:
            continue
        op = drawn_by(tensors)
        if op is None:
            continue
        if any(t.name in record for t in tensors):
            return "record", op.type
        if _feeds(tensors, batch):
            return "batch", op.type
    return "", ""
