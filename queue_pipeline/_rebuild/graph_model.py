"""Stages read from the graph itself: producers and readers that no builder recorded.

NOTE [ Stages read from the graph ]
queue_pipeline's own builders record a plan node for every stage they build
(:mod:`queue_pipeline.plan`). Programs also build stages with TF's own
``tf.compat.v1`` functions and classes: code that imported them before
``install()`` (``from tensorflow.python.training import input``), a reader
class passed in as an argument, tf-slim's readers, or a program that never
installs queue_pipeline at all. Their ops say what they are, so this module
reads those stages from the graph and describes each as the plan node our
builder would have recorded; the rebuilder then treats both alike. Recorded
nodes win: a stage with a recorded node is not read again.

Recognized:

* **Readers**: every ``ReaderReadV2`` / ``ReaderReadUpToV2`` whose reader op
  is one of TF's five reader kernels becomes ``<Reader>.read`` (or
  ``read_up_to``) with the reader's attributes as arguments
  (``record_bytes``, ``header_bytes``, ``compression_type``, ...).
* **Producers**: a FIFO queue filled by one QueueRunner enqueue op of type
  ``QueueEnqueueManyV2`` whose one component is, from the queue back: an
  optional ``limit_epochs`` identity (a ``CountUpTo`` control input: its
  ``limit`` is ``num_epochs``), an optional ``RandomShuffle`` (``shuffle``,
  with its seed), then any tensor (the rows). Strings are a
  ``string_input_producer``, anything else an ``input_producer`` (whose
  twin, like ``range_input_producer``'s, hands out the rows in the same
  order). TF's producers build exactly this shape; a queue filled any other
  way is not a producer and stays for the gathering-queue rules (NOTE
  [ Queues no builder recorded ] in ``_rebuild/gathering.py``).
"""

from __future__ import annotations

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._core.compat import QUEUE_RUNNERS

__all__ = ["graph_nodes"]

# TF's reader kernels -> the reader class whose plan node they stand for, and
# the (attribute, argument) pairs the class's plan node records.
_READERS = {
    "TextLineReaderV2": ("TextLineReader", (("skip_header_lines", "skip_header_lines"),)),
    "FixedLengthRecordReaderV2": (
        "FixedLengthRecordReader",
        (
            ("record_bytes", "record_bytes"),
            ("header_bytes", "header_bytes"),
            ("footer_bytes", "footer_bytes"),
            ("hop_bytes", "hop_bytes"),
            ("encoding", "encoding"),
        ),
    ),
    "TFRecordReaderV2": ("TFRecordReader", (("compression_type", "options"),)),
    "WholeFileReaderV2": ("WholeFileReader", ()),
    "IdentityReaderV2": ("IdentityReader", ()),
}


def graph_nodes(graph: tf.Graph, recorded: tuple) -> tuple[plan.PlanNode, ...]:
    """Plan nodes for the producers and readers of `graph` that `recorded` lacks.

    See NOTE [ Stages read from the graph ].

    Args:
      graph: the legacy graph.
      recorded: the plan nodes queue_pipeline's builders recorded on it.

    Returns:
      The nodes read from the graph (not recorded on it), indexed after
      `recorded`.
    """
    known_outputs = set()
    known_queues = set()
    for node in recorded:
        for t in tf.nest.flatten(node.outputs, expand_composites=True):
            name = getattr(t, "name", None)
            if name is not None:
                known_outputs.add(name)
        filled = graph_facts.queue_op_name(node.fills)
        if filled is not None:
            known_queues.add(filled)
    found: list[plan.PlanNode] = []

    def add(kind, args, inputs, outputs, reads=None, fills=None):
        found.append(
            plan.PlanNode(
                kind=kind,
                args=args,
                inputs=tuple(inputs),
                outputs=tuple(outputs),
                reads=reads,
                fills=fills,
                index=len(recorded) + len(found),
            )
        )

    for qr in graph.get_collection(QUEUE_RUNNERS):
        queue_op = graph_facts.queue_op(getattr(qr, "queue", None))
        if queue_op is None or queue_op.name in known_queues:
            continue
        producer = _producer(queue_op, list(getattr(qr, "enqueue_ops", None) or ()))
        if producer is not None:
            known_queues.add(queue_op.name)
            add(*producer)
    for op in graph.get_operations():
        if op.type not in graph_facts.RESOURCE_READ_OPS or op.outputs[0].name in known_outputs:
            continue
        reader = _reader(op)
        if reader is not None:
            add(*reader)
    return tuple(found)


def _reader(read_op: tf.Operation):
    """(kind, args, inputs, outputs, reads) of a read by one of TF's reader kernels, or None."""
    reader_op = read_op.inputs[0].op
    known = _READERS.get(reader_op.type)
    if known is None:
        return None
    class_name, attributes = known
    args = {}
    for attribute, argument in attributes:
        value = reader_op.get_attr(attribute)
        args[argument] = value.decode() if isinstance(value, bytes) else value
    if class_name == "FixedLengthRecordReader" and not args.get("encoding"):
        args["encoding"] = None
    method = "read"
    if read_op.type in graph_facts.READ_UP_TO_OPS:
        method = "read_up_to"
        args["num_records"] = read_op.inputs[2]
    queue = read_op.inputs[1]
    return f"{class_name}.{method}", args, (queue,), tuple(read_op.outputs), queue


def _producer(queue_op: tf.Operation, enqueue_ops: list):
    """(kind, args, inputs, outputs, None, fills) if `queue_op` is filled like a producer."""
    ops = {getattr(e, "op", e).name: getattr(e, "op", e) for e in enqueue_ops}
    if queue_op.type != "FIFOQueueV2" or len(ops) != 1:
        return None
    (enqueue,) = ops.values()
    if enqueue.type != "QueueEnqueueManyV2" or len(enqueue.inputs) != 2:
        return None
    rows = enqueue.inputs[1]
    num_epochs = None
    counters = [c for c in rows.op.control_inputs if c.type in graph_facts.COUNT_UP_TO_OPS]
    if rows.op.type == "Identity" and counters:
        num_epochs = int(counters[0].get_attr("limit"))
        rows = rows.op.inputs[0]
    shuffle, seed = False, None
    if rows.op.type == "RandomShuffle":
        shuffle = True
        seeds = (rows.op.get_attr("seed"), rows.op.get_attr("seed2"))
        # With the graph's seed (or TF's default one) first, the op's own
        # seed is seed2: the twin built in this graph derives the same pair.
        seed = seeds[1] if any(seeds) else None
        rows = rows.op.inputs[0]
    if rows.shape.rank is None or rows.shape.rank < 1:
        return None
    args = {
        "num_epochs": num_epochs,
        "shuffle": shuffle,
        "seed": seed,
        "capacity": int(queue_op.get_attr("capacity")),
        "name": queue_op.name,
    }
    if rows.dtype == tf.string and rows.shape.rank == 1:
        kind = "string_input_producer"
    else:
        kind = "input_producer"
        args["element_shape"] = rows.shape[1:]
    queue = queue_op.outputs[0]
    return kind, args, (rows,), (queue,), None, queue
