"""Checks on the graph a traced call built, where the source alone cannot tell.

* :func:`identical_copies`: whether the N copies of a join's per-record code
  built the same ops. Used by NOTE [ Copies of the per-record code for a
  join ] (in stages.py): a copy whose code reads the loop's variable
  (``thread_id``) may still build the same ops in every copy (im2txt's
  ``process_image(image, thread_id=thread_id)`` uses it only for summaries).
* :func:`reads_model` / :func:`input_tensor`: whether a tensor is the
  model's (it reads a variable or a placeholder) or the input's.
* :func:`reads_in_lockstep`: whether one record is read from two queues at
  once (an image and its label from two producers).
* :func:`variables_read`: the variables a pipeline's outputs are computed
  from, through its queues (a one-shot iterator cannot read them).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts

__all__ = [
    "MODEL_OPS",
    "identical_copies",
    "input_tensor",
    "nearest",
    "reads_in_lockstep",
    "reads_model",
    "settings_fed",
    "variables_read",
]

# attributes that name an op rather than say what it computes
_IDENTITY_ATTRS = frozenset({"seed", "seed2", "_class", "shared_name", "container"})
_LEAVES = ("Dequeue", "ReaderRead", "Placeholder", "Variable", "VarHandleOp")


def identical_copies(nodes) -> bool:
    """Whether every join among the plan `nodes` takes lists built by the same ops.

    Two lists are the same when each tensor's ops, back to the dequeues and
    reads they start from, have the same types, attributes (seeds and names
    aside) and inputs. False when there is no join with two lists or more.
    """
    joins = [n for n in nodes if n.kind.endswith("_join")]
    seen = False
    for node in joins:
        count = node.args.get("num_lists") or 0
        tensors = [t for t in node.inputs if hasattr(t, "op")]  # the lists, flattened in order
        if count < 2 or len(tensors) % count:
            continue
        seen = True
        size = len(tensors) // count
        memo: dict[str, Any] = {}
        signatures = {
            tuple(_signature(t, memo) for t in tensors[i * size : (i + 1) * size])
            for i in range(count)
        }
        if len(signatures) != 1:
            return False
    return seen


def _signature(tensor, memo: dict, depth: int = 0) -> Any:
    op = tensor.op
    key = f"{op.name}:{tensor.value_index}"
    if key in memo:
        return memo[key]
    if depth > 400 or op.type.startswith(_LEAVES):
        # a leaf: what it reads from (the same queue or reader for every copy)
        sources = tuple(sorted(i.op.name for i in op.inputs))
        result: Any = (op.type, tensor.value_index, sources)
    else:
        attrs = tuple(
            sorted((k, str(v)) for k, v in op.node_def.attr.items() if k not in _IDENTITY_ATTRS)
        )
        inputs = tuple(_signature(i, memo, depth + 1) for i in op.inputs)
        result = (op.type, tensor.value_index, attrs, inputs)
    memo[key] = result
    return result


# ops whose tensors make a tensor the model's, not the input's
MODEL_OPS = frozenset(
    {"VariableV2", "VarHandleOp", "ReadVariableOp", "Placeholder", "PlaceholderWithDefault"}
)


def _walk(tensor, stop=None, limit: int = 2000):
    """The ops `tensor` is computed from (its own first), not past those `stop` accepts."""
    return graph_facts.walk_back([tensor.op], stop=stop, limit=limit)


def nearest(tensor, accept) -> set[str]:
    """The names of the ops `accept` takes that `tensor` is computed from, the nearest
    ones only (not those behind them)."""
    return {op.name for op in _walk(tensor, accept) if accept(op)}


def variables_read(ops, limit: int = 20000) -> set[str]:
    """The names of the variable ops `ops` are computed from, through the queues they
    dequeue from (each queue's enqueues, its runners' inputs)."""
    seen: set[str] = set()
    found: set[str] = set()
    stack = list(ops)
    while stack and len(seen) < limit:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in ("VariableV2", "VarHandleOp", "Variable"):
            found.add(op.name)
        stack.extend(t.op for t in op.inputs)
        if op.type.endswith(("Queue", "QueueV2")):
            stack.extend(c for c in op.outputs[0].consumers() if c.type.startswith("QueueEnqueue"))
    return found


def reads_model(tensor) -> bool:
    """Whether `tensor` is computed from a variable or a placeholder (the model's)."""
    return any(op.type in MODEL_OPS for op in _walk(tensor))


# a batching call's arguments that carry what it batches, not how
_BATCHED_ARGS = frozenset({"tensors", "tensors_list", "keep_input", "shapes", "name"})


def settings_fed(node) -> list[str]:
    """The arguments of the batching plan `node` (``batch_size``, ``capacity``, ...)
    whose value is a variable or is computed from one or from a placeholder: a
    setting the program feeds when the session runs, not one fixed when it builds."""
    found = []
    for name, value in node.args.items():
        if name in _BATCHED_ARGS:
            continue
        if isinstance(value, tf.Variable) or (isinstance(value, tf.Tensor) and reads_model(value)):
            found.append(name)
    return found


def input_tensor(tensor, reads: bool = False) -> bool:
    """Whether `tensor` is read from a queue (or, with `reads`, a reader) and from no
    variable or placeholder: the input's, not the model's."""

    def source(op) -> bool:
        return "Dequeue" in op.type or (reads and op.type.startswith("ReaderRead"))

    found = False
    for op in _walk(tensor, source):
        if op.type in MODEL_OPS:
            return False
        found = found or source(op)
    return found


def reads_in_lockstep(nodes) -> bool:
    """Whether one list a batching call among the plan `nodes` batches is computed from
    reads (or one-row dequeues) of two queues or more (NOTE [ Records read in
    lockstep ], in lockstep.py).

    A join's lists are taken one by one: N readers of one queue, each in a list
    of its own, are a join, not a lockstep.
    """

    def is_read(op) -> bool:  # a reader's read, or one row dequeued from a queue
        return op.type.startswith("ReaderRead") or op.type in ("QueueDequeueV2", "QueueDequeue")

    def queue_of(op) -> str:
        return op.inputs[1 if op.type.startswith("ReaderRead") else 0].op.name

    for node in nodes:
        if node.kind not in plan.BATCHING_KINDS:
            continue
        tensors = [t for t in node.inputs if hasattr(t, "op")]
        count = (node.args.get("num_lists") or 1) if node.kind.endswith("_join") else 1
        if not tensors or len(tensors) % count:
            continue
        size = len(tensors) // count
        for i in range(count):
            queues = {
                queue_of(op)
                for t in tensors[i * size : (i + 1) * size]
                for op in _walk(t, is_read)
                if is_read(op) and op.inputs
            }
            if len(queues) > 1:
                return True
    return False
