"""A queue whose records come from Python state through ``tf.py_func`` (a generator's ``next``).

NOTE [ A queue filled from Python state ]
A program may fill its own queue with ``queue.enqueue(tf.py_func(lambda:
next(generator), [], dtypes))`` run by a QueueRunner: no reader, producer or
batching call is in the graph, and each run of the op advances a Python
object the graph does not hold. Such a pipeline cannot be rebuilt on the
other side with the same data, so no proof is possible; and the usual answer
("builds no queue pipeline", or for its class "migrate the method") sends the
user in a circle. It is refused instead, naming the line of the ``py_func``
that takes no tensor input, with the tf.data way to write it
(``Dataset.from_generator``). A ``py_func`` that decodes what a reader read
takes tensor inputs and is not one.
"""

from __future__ import annotations

import os

import tensorflow as tf

from queue_pipeline._migrate.program_files import is_library

__all__ = ["python_filled_queue"]

_API = "queue-pipeline migrate"
_PY_FUNCS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})


def python_filled_queue(graph: tf.Graph, real: str, what: str) -> str:
    """The refusal for a queue of `graph` filled by a ``py_func`` without inputs, or "".

    Args:
      graph: the graph the traced code built.
      real: the user's file.
      what: how the traced code is named in the message (``AsyncRunner.get_inputs()``).
    """
    for op in graph.get_operations():
        if not op.type.startswith("QueueEnqueue") or not op.inputs:
            continue
        source = _inputless_py_func(op)
        if source is None:
            continue
        queue = op.inputs[0].op
        where = _where(source, real)
        return (
            f"{_API}: {where}: {what} reads a queue (`{queue.name}`, a {queue.type}) that a "
            f"QueueRunner fills with `tf.py_func` taking no tensor input (`{source.name}`): "
            "its records come from Python state (a generator's next(), an iterator, a global) "
            "that the graph does not hold, so the legacy data cannot be made again on another "
            "side and no proof is possible; migrate does not rewrite it. Fix: write that "
            "source as a Python generator for tf.data.Dataset.from_generator(gen, "
            "output_signature=...), then .shuffle(min_after_dequeue) for a "
            "RandomShuffleQueue and .batch(n) for dequeue_many(n), in place of the queue "
            "and its runner."
        )
    return ""


def _inputless_py_func(enqueue: tf.Operation) -> tf.Operation | None:
    """A ``py_func`` with no tensor input among the ops the enqueue's values come from."""
    seen: set[str] = set()
    stack = [t.op for t in enqueue.inputs[1:]]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in _PY_FUNCS and not op.inputs:
            return op
        if "Queue" in op.type or "Reader" in op.type:
            continue  # another stage's records
        stack.extend(t.op for t in op.inputs)
    return None


def _where(op: tf.Operation, real: str) -> str:
    """FILE:LINE (`source`) of the user's line that made `op`."""
    frames = list(op.traceback or ())
    mine = [f for f in frames if os.path.realpath(f.filename) == os.path.realpath(real)]
    others = [f for f in frames if not is_library(f.filename) and "/tensorflow/" not in f.filename]
    chosen = (mine or others or [None])[-1]
    if chosen is None:
        return real
    line = (chosen.line or "").strip()
    return f"{chosen.filename}:{chosen.lineno}" + (f" (`{line}`)" if line else "")
