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

A name bound twice (``tgt, src = unpack(image)`` on a record, then ``tgt =
augmented[..., :3]`` after the batching call) is matched to the graph by the
binding, not by the name: the run's locals hold the last binding's value,
so a statement whose targets' values were built elsewhere is judged by what
the ops built at its own lines compute (:func:`bound_at`).

The proof sees the mistake too (NOTE [ A draw captured by the map ] in
:mod:`queue_pipeline._migrate.proof_conditions`).
"""

from __future__ import annotations

import functools
import os
from typing import Any

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts

__all__ = ["bound_at", "draw_kind", "drawn_by"]

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


Bound = tuple[list[tf.Tensor], set[str]]  # bound_at's: (values bound, names of the ops built)


def bound_at(graph: tf.Graph, path: str, function: str, lines: range) -> Bound | None:
    """What a statement at `lines` of `function` (in the file at `path`) built, by the
    graph: (the outputs of the ops built there that no other op built there reads, the
    names of all the ops built there); None when the statement built no op."""
    built = _ops_by_line(graph, path)
    ops = [op for line in lines for op in built.get((function, line), ())]
    if not ops:
        return None
    names = {op.name for op in ops}
    read = {t.op.name for op in ops for t in op.inputs if t.op.name in names}
    return [t for op in ops if op.name not in read for t in op.outputs], names


# (id(graph), path) -> (op count, (function, line) -> the ops built there)
_BY_LINE: dict[tuple, tuple[int, dict]] = {}


@functools.lru_cache(maxsize=256)
def _real(filename: str) -> str:
    return os.path.realpath(filename)


def _ops_by_line(graph: tf.Graph, path: str) -> dict[tuple[str, int], list[tf.Operation]]:
    ops = graph.get_operations()
    cached = _BY_LINE.get((id(graph), path))
    if cached is not None and cached[0] == len(ops):
        return cached[1]
    found: dict[tuple[str, int], list[tf.Operation]] = {}
    for op in ops:
        for frame in {(f.name, f.lineno) for f in op.traceback if _real(f.filename) == path}:
            found.setdefault(frame, []).append(op)
    _BY_LINE.clear()
    _BY_LINE[(id(graph), path)] = (len(ops), found)
    return found


def draw_kind(
    values: dict[str, Any],
    targets: list[str],
    record: set[str],
    batch: set[str],
    bound: Bound | None = None,
) -> tuple[str, str]:
    """(``"record"``, ``"batch"`` or ``""``, the draw's op type) for a statement binding `targets`.

    NOTE [ A draw that reads no record ]. `values` are the run's values of the
    function's locals, `record` and `batch` the run's per-record and batch
    tensor names. `bound`: what the statement bound (:func:`bound_at`); when the
    targets' values were not built by it (a later binding's), `bound` is judged.
    """
    groups = [_tensors(values.get(name)) for name in targets]
    if bound is not None and any(t.op.name not in bound[1] for ts in groups for t in ts):
        groups = [bound[0]]
    for tensors in groups:
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
