"""Large constants of a legacy graph held in memory instead of in the graph's definition.

NOTE [ Constants kept out of the session's graph ]
A Session copies and optimizes the whole graph it was given, constants
included, for every new fetch signature: with W4's 188 MB ``tf.constant`` of
preloaded rows that is 1.2-1.6 s for the session's first run and 0.3-0.4 s
for each later new signature on 2 cores, whatever the step fetches (with the
constant out of the graph: 3 ms and 1-2 ms). The dataset engine does not need
the constant in the graph once it serves the ``slice_input_producer`` that
reads it (it feeds the rows to its own iterator, NOTE [ Large preloaded
arrays ] in ``_engine/serving.py``), and the faithful ops that read it are
never run: their runners are retired. So :func:`hold` keeps the value in
memory and leaves in the graph a ``Const`` of the same dtype and shape whose
definition holds one element (TF's compact form of a filled tensor): shape
inference, names and every consumer's static shape stay what they were, and
what a session copies is a few bytes.

The value is still the graph's for everything queue_pipeline reads
(:func:`static_value` and :func:`node_def`: the rebuilder, ``to_dataset``,
a region lifted out of the graph, a second served call over the same
arrays). What could read the compact value instead is a step
that runs an op computed from the constant; :func:`check` sees every step
(the session hook calls it for ``Session.run``, ``make_callable`` and the
runner threads' callables) and keeps the set of such ops (the constant's
consumers, forward, by data and control edges; extended when the graph
grows). A step fetching or targeting one of them (a runner put back by a
later call that fell back, an evaluation op over the same arrays, a direct
``sess.run`` of the constant):

* before any session has run the graph since it was held: the values go
  back into the graph (logged once, INFO) and the step runs as before; so
  they do when a runner in the ``"queue_runners"`` collection reads them
  (looked for when a later call falls back and before the first step), since
  a runner's thread is checked only when it starts;
* after: no session may read the compact value, and the sessions already
  hold it, so the step raises ``FailedPreconditionError`` naming the op, the
  constant and the fix (build it before the first ``Session.run``, or run the
  program on the queue engine).

Not covered: TF's ``tf.get_static_value`` and ``op.get_attr("value")`` called
by the user's own code read the compact value, and a graph exported with
``export_meta_graph`` (``Saver.save`` writes one) holds the compact constant,
not the rows (the served pipeline's rows are fed by this process anyway).
"""

from __future__ import annotations

import threading
import weakref
from typing import Callable, Iterable

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2, tensor_pb2

from queue_pipeline._core import step_cache
from queue_pipeline._core.compat import QUEUE_RUNNERS, logger

__all__ = ["check", "hold", "holds", "needed_by_runners", "node_def", "static_value"]

_LOCK = threading.Lock()
_MAX_SIGNATURES = 1024  # fetch signatures remembered as checked, per graph


class _Held:
    """One graph's held constants, and what reads them."""

    def __init__(self) -> None:
        self.values: dict[str, np.ndarray] = {}  # Const op name -> its value
        self.tainted: set[str] = set()  # ops computed from a held constant
        self.scanned = 0  # ops of the graph looked at for `tainted`
        self.version = -1  # the graph version `tainted` is up to date with
        self.given = False  # a session ran the graph since the values were held
        self.checked: dict[tuple, tuple] = {}  # fetch signature -> the fetched objects


_HELD: "weakref.WeakKeyDictionary[tf.Graph, _Held]" = weakref.WeakKeyDictionary()


def hold(graph: tf.Graph, constants: dict[tf.Operation, np.ndarray]) -> list[str]:
    """Keeps the value of each ``Const`` op in memory and a compact one in `graph`.

    Args:
      graph: the graph holding the ops.
      constants: ``Const`` op -> its value (as ``tf.get_static_value`` gave it).

    Returns:
      The names of the ops held (ops of another graph, of another type, of
      fewer than two elements, or read by the enqueue op of a runner in the
      ``"queue_runners"`` collection, are left alone).

    Side effects: rewrites the ``value`` attribute of each op held (see NOTE
    [ Constants kept out of the session's graph ]).
    """
    done = []
    running = {op.name for op in _enqueue_ops(graph)}
    with _LOCK:
        held = _HELD.get(graph)
        if held is None:
            held = _HELD[graph] = _Held()
        for op, value in constants.items():
            if op.graph is not graph or op.type != "Const" or op.name in held.values:
                continue
            value = np.asarray(value)
            if value.size < 2 or value.dtype.kind in "OSU" or _downstream(op) & running:
                continue
            op._set_attr("value", attr_value_pb2.AttrValue(tensor=_compact(op, value)))  # noqa: SLF001 - no public setter
            held.values[op.name] = value
            held.version = -1  # rescan: the new constant's consumers
            held.tainted.add(op.name)
            held.scanned = 0
            done.append(op.name)
    return done


def holds(graph: tf.Graph) -> bool:
    """Whether `graph` has constants held by :func:`hold` (and not put back)."""
    held = _HELD.get(graph)
    return held is not None and bool(held.values)


def static_value(tensor):
    """``tf.get_static_value(tensor)``, with the held value of a held constant."""
    if isinstance(tensor, tf.Tensor) and tensor.op.type == "Const":
        held = _HELD.get(tensor.graph)
        if held is not None:
            value = held.values.get(tensor.op.name)
            if value is not None:
                return value
    return tf.get_static_value(tensor)


def node_def(op: tf.Operation):
    """`op`'s NodeDef, with the held value of a held constant (for copies of the op)."""
    node = op.node_def
    held = _HELD.get(op.graph)
    value = held.values.get(op.name) if held is not None else None
    if value is not None:
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
    return node


def check(graph: tf.Graph, fetches, fetch_ops: Callable[[], Iterable[tf.Operation]]) -> None:
    """Guards one step of `graph` (NOTE [ Constants kept out of the session's graph ]).

    Args:
      graph: the session's graph.
      fetches: the step's fetches as given (the key of a checked signature).
      fetch_ops: returns the ops the step fetches or targets (called only
        for a signature not checked yet).

    Raises:
      tf.errors.FailedPreconditionError: the step runs an op computed from a
        held constant and a session already ran the graph without its value.

    Side effects: may put the held values back into `graph` (no session has
    run it since they were held); marks the graph as run.
    """
    held = _HELD.get(graph)
    if held is None or not held.values:
        return
    if held.given and graph.version == held.version:
        key = step_cache.signature(fetches)
        if key is not None and key[0] in held.checked:
            return
    with _LOCK:
        if not held.values:
            return
        if graph.version != held.version:
            _scan(graph, held)
        key = step_cache.signature(fetches)
        if key is not None and key[0] in held.checked:
            held.given = True
            return
        reader = _reader(held, fetch_ops())
        if reader is None and not held.given:  # before the first step: the runners too
            reader = _reader(held, _enqueue_ops(graph))
        if reader is None:
            held.given = True
            if key is not None and len(held.checked) < _MAX_SIGNATURES:
                held.checked[key[0]] = key[1]
            return
        if held.given:
            raise tf.errors.FailedPreconditionError(None, reader, _refusal(graph, held, reader))
        kept = _put_back(graph, held, reader)
    _log_kept(*kept)


def needed_by_runners(graph: tf.Graph) -> None:
    """Puts the held values back if a runner of `graph` reads one and no session ran it.

    A runner's enqueue op runs in its own thread, which a step check sees
    only when the thread starts: a runner put back by a call that fell back,
    or the faithful runner of a later call over the same arrays, is looked
    for when the graph changes, before the first step. Once a session ran
    the graph the values stay held, and :func:`check` refuses the runner's
    step.
    """
    held = _HELD.get(graph)
    if held is None or not held.values:
        return
    with _LOCK:
        if held.given or not held.values:
            return
        if graph.version != held.version:
            _scan(graph, held)
        reader = _reader(held, _enqueue_ops(graph))
        if reader is None:
            return
        kept = _put_back(graph, held, reader)
    _log_kept(*kept)


def _log_kept(names: list[str], reader: tf.Operation, source: str) -> None:
    many = len(names) > 1
    logger.info(
        "queue_pipeline dataset engine: the preloaded constant%s %s stay%s in the session's "
        "graph: %r reads %r (each new fetch signature then copies %s).",
        "s" if many else "",
        ", ".join(repr(n) for n in names),
        "" if many else "s",
        reader.name,
        source,
        "them" if many else "it",
    )


def _compact(op: tf.Operation, value: np.ndarray) -> tensor_pb2.TensorProto:
    """A TensorProto of `op`'s dtype and `value`'s shape holding one zero (filled on use)."""
    dtype = op.get_attr("dtype")
    return tf.make_tensor_proto(np.zeros((), dtype.as_numpy_dtype), dtype=dtype, shape=value.shape)


def _enqueue_ops(graph: tf.Graph) -> list[tf.Operation]:
    """The enqueue ops of the runners in `graph`'s ``"queue_runners"`` collection."""
    return [
        getattr(e, "op", e)
        for qr in graph.get_collection(QUEUE_RUNNERS)
        for e in getattr(qr, "enqueue_ops", None) or ()
    ]


def _downstream(op: tf.Operation) -> set[str]:
    """The names of the ops computed from `op`'s outputs (data edges), `op` included."""
    seen, stack = {op.name}, [op]
    while stack:
        for t in stack.pop().outputs:
            for user in t.consumers():
                if user.name not in seen:
                    seen.add(user.name)
                    stack.append(user)
    return seen


def _scan(graph: tf.Graph, held: _Held) -> None:
    """Extends `held.tainted` over the ops added since the last scan (in creation order)."""
    ops = graph.get_operations()
    for op in ops[held.scanned :]:
        if op.name in held.tainted:
            continue
        if any(t.op.name in held.tainted for t in op.inputs) or any(
            c.name in held.tainted for c in op.control_inputs
        ):
            held.tainted.add(op.name)
    held.scanned = len(ops)
    held.version = graph.version
    held.checked.clear()


def _reader(held: _Held, ops: Iterable[tf.Operation]) -> tf.Operation | None:
    """The first of `ops` computed from a held constant, or None."""
    return next((op for op in ops if op.name in held.tainted), None)


def _put_back(
    graph: tf.Graph, held: _Held, reader: tf.Operation
) -> tuple[list[str], tf.Operation, str]:
    """Writes every held value back into its op, for `reader`.

    Returns:
      What :func:`_log_kept` says: the ops' names, `reader`, and the held
      constant it reads.
    """
    source = _held_source(graph, held, reader)
    names = sorted(held.values)
    for name, value in held.values.items():
        op = graph.get_operation_by_name(name)
        op._set_attr("value", attr_value_pb2.AttrValue(tensor=tf.make_tensor_proto(value)))  # noqa: SLF001
    held.values.clear()
    held.tainted.clear()
    held.checked.clear()
    return names, reader, source


def _refusal(graph: tf.Graph, held: _Held, reader: tf.Operation) -> str:
    const = _held_source(graph, held, reader)
    value = held.values[const]
    shape = "x".join(map(str, value.shape))
    return (
        f"queue_pipeline dataset engine: {reader.name!r} ({reader.type}) reads the preloaded "
        f"constant {const!r} ({shape} {value.dtype}), which the engine serves from memory and "
        "keeps out of the session's graph since the graph first ran (NOTE [ Constants kept "
        "out of the session's graph ]). Fix: build what reads the arrays before the first "
        "Session.run, feed it the numpy arrays instead, or run the program with "
        "queue_pipeline.engine('queue')."
    )


def _held_source(graph: tf.Graph, held: _Held, op: tf.Operation) -> str:
    """The name of a held constant `op` is computed from."""
    seen, stack = set(), [op]
    while stack:
        current = stack.pop()
        if current.name in held.values:
            return current.name
        for upstream in [t.op for t in current.inputs] + list(current.control_inputs):
            if upstream.name in held.tainted and upstream.name not in seen:
                seen.add(upstream.name)
                stack.append(upstream)
    return sorted(held.values)[0]
