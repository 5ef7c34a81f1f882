"""Queues whose records come from Python: ``tf.py_func`` state (a generator's ``next``), a feed.

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

import linecache
import os

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._migrate.program_files import is_library

__all__ = ["FED_QUEUE_READ", "fed_from_python", "fed_queue_read", "made_at", "python_filled_queue"]

# Why a read of a queue no producer of the traced code filled is refused (the rewriter
# says it too, at a read whose queue it did not see built).
FED_QUEUE_READ = (
    "it reads from a queue no producer of this function filled (one the program fills "
    "from Python with feed_dict, as facenet's `enqueue_many` of placeholders, or one another "
    "function builds): write the fed arrays as tf.data.Dataset.from_tensor_slices (or a "
    "generator as from_generator), or migrate the function that builds the whole pipeline"
)

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
        at = made_at(source, real)
        return (
            f"{_API}: {at}: {what} reads a queue (`{queue.name}`, a {queue.type}) that a "
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


def fed_from_python(outputs) -> tf.Operation | None:
    """The queue `outputs` are dequeued from whose enqueues take placeholders, or None.

    NOTE [ A queue the program feeds from Python ]
    WaveNet's ``AudioReader`` loads audio in Python threads and runs
    ``queue.enqueue([placeholder])`` with ``feed_dict``; its ``dequeue(n)`` is
    ``queue.dequeue_many(n)``. No reader, producer or batching call is in the
    graph: the data comes from the program's own loop, which migrate does not
    run or rewrite. Refused with what the queue is and the way to tf.data.
    The same holds for a reader's queue of file names that the session fills
    (Hands-on ML: ``sess.run(enqueue_filename, feed_dict={filename: ...})``):
    refused at the read (:func:`fed_queue_read`) before anything behind it is
    looked at, whatever follows (a batching call, the program's own
    RandomShuffleQueue and runner), so the user sees the cause, not a
    placeholder found on the way.
    """
    for t in tf.nest.flatten(outputs, expand_composites=False):
        op = getattr(t, "op", None)
        if op is None or op.type not in graph_facts.DEQUEUE_OPS or not op.inputs:
            continue
        if _placeholder_enqueue(op.inputs[0].op) is not None:
            return op.inputs[0].op
    return None


def fed_queue_read(reads: list[tf.Operation], built: set, real: str) -> str:
    """The refusal for a reader's read of a queue the program feeds, or "".

    Args:
      reads: the traced code's reader read ops.
      built: the names of the queues its producers built or filled.
      real: the user's file.
    """
    for read in reads:
        queue = _queue_behind(read.inputs[1]) if len(read.inputs) > 1 else None
        if queue is None or queue.name in built or _run_by_a_runner(queue):
            continue
        if _placeholder_enqueue(queue) is not None:
            frame = _user_frame(read, real)
            if frame is None:
                return f"{_API}: {real}: {FED_QUEUE_READ}."
            at = f"{frame.filename}:{frame.lineno}"
            code = f"`{_code(frame)}`" if _code(frame) else "the read"
            return f"{_API}: {at}: cannot migrate {code}: {FED_QUEUE_READ}."
    return ""


def _placeholder_enqueue(queue_op: tf.Operation) -> tf.Operation | None:
    """An enqueue into `queue_op` that takes a placeholder, or None."""
    for use in queue_op.outputs[0].consumers():
        if use.type.startswith("QueueEnqueue") and any(
            i.op.type.startswith("Placeholder") for i in use.inputs[1:]
        ):
            return use
    return None


def _queue_behind(tensor: tf.Tensor) -> tf.Operation | None:
    """The queue op `tensor` (a read's queue input) is, through identities."""
    op = tensor.op
    while op.type == "Identity" and op.inputs:
        op = op.inputs[0].op
    return op if op.type.endswith(("Queue", "QueueV2")) else None


def _run_by_a_runner(queue_op: tf.Operation) -> bool:
    runners = queue_op.graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
    return any(graph_facts.queue_op(getattr(qr, "queue", None)) is queue_op for qr in runners)


def _user_frame(op: tf.Operation, real: str):
    """The innermost frame of the user's files that made `op`, or None."""
    frames = list(op.traceback or ())
    mine = [f for f in frames if os.path.realpath(f.filename) == os.path.realpath(real)]
    others = [f for f in frames if not is_library(f.filename) and "/tensorflow/" not in f.filename]
    return (mine or others or [None])[-1]


def made_at(op: tf.Operation, real: str) -> str:
    """FILE:LINE (`source`) of the user's line that made `op` (`real`: the user's file)."""
    chosen = _user_frame(op, real)
    if chosen is None:
        return real
    line = _code(chosen)
    return f"{chosen.filename}:{chosen.lineno}" + (f" (`{line}`)" if line else "")


def _code(frame) -> str:
    """The source line of `frame`, stripped ("" if unknown)."""
    return (frame.line or linecache.getline(frame.filename, frame.lineno) or "").strip()
