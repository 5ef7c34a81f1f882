"""Queues no builder recorded: prefetch and gathering queues rebuilt from their enqueues.

NOTE [ Queues no builder recorded ]
A queue that no queue_pipeline builder recorded is rebuilt only when its
contents are plain: a FIFO, padding FIFO or random shuffle queue, filled by
QueueRunners whose enqueue ops each enqueue one element of upstream tensors
that can themselves be rebuilt (a queue filled like a producer is one:
NOTE [ Stages read from the graph ] in ``_rebuild/graph_model.py``). One
enqueue op is a prefetch queue (the Object Detection API's prefetcher,
tf-slim's ``prefetch_queue``); several are a gathering queue (tf-slim's
``parallel_reader``: N readers on one filename queue, each enqueueing what it
reads), whose rebuilt streams are interleaved one element from each in turn
(the queue's order is whichever thread comes first, so any interleaving is
one it could deliver). A random shuffle queue adds ``shuffle(capacity)``
(with the queue's seed). A ``dequeue_many(n)`` batches the elements with
the tail dropped, a ``dequeue_up_to(n)`` keeps it, and a padding FIFO queue
pads each batch to its longest element, with zeros, as the queue does; every
one ends in ``prefetch(capacity)``.

When several dequeue ops of the pipeline take from one such queue (im2txt:
one per preprocessing thread, each into a list of ``batch_join``), each
element goes to one of them. So dequeue `i` of `n` gets the streams rebuilt
with their producers' rows (file names) split `n` ways, `i`-th share (the
rebuilder's :meth:`split_sources`): together they read every file once. A
queue whose streams start from no producer cannot be split that way and is
refused (the call stays on the queue engine).
"""

from __future__ import annotations

import contextlib
from typing import Protocol

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._rebuild import walk as _walk
from queue_pipeline._rebuild.stream import SourceSplit, Stream
from queue_pipeline.data import _common as data_common


class Rebuilder(Protocol):
    """What this module needs of the Rebuilder (which imports it, so it is not imported here)."""

    graph: tf.Graph
    api: str

    def rebuild(self, leaves, *, role: str = ..., exact: bool = ...) -> Stream: ...

    def _value(self, value, what: str): ...

    def queue_runners(self) -> list: ...

    def consumers(self, queue_op: tf.Operation) -> list[tf.Operation]: ...

    def split_sources(
        self, index: int, count: int
    ) -> contextlib.AbstractContextManager[SourceSplit]: ...


__all__ = ["gathering_stream"]


def gathering_stream(rebuilder: Rebuilder, op: tf.Operation) -> Stream:
    """The stream a queue no builder recorded delivers, if it is a plain gathering queue.

    Args:
      rebuilder: the Rebuilder whose graph holds the queue; it rebuilds the
        enqueued tensors.
      op: the dequeue op (one element at a time) taking from the queue.

    Returns:
      A :class:`Stream` of the dequeue's outputs.

    Raises:
      NotRebuildableError: the queue is not a plain gathering queue, or its
        enqueue ops' rebuilt elements differ.
    """
    queue_op = op.inputs[0].op
    enqueue = graph_facts.enqueue_ops(rebuilder.queue_runners(), queue_op.name)
    plain = (
        queue_op.type in graph_facts.GATHERING_QUEUE_OPS
        and op.type in graph_facts.DEQUEUE_OPS
        and enqueue
        and all(e.type in ("QueueEnqueueV2", "QueueEnqueue") for e in enqueue)
    )
    if not plain:
        found = (
            f"{len(enqueue)} enqueue op(s) of type(s) {sorted({e.type for e in enqueue})}"
            if enqueue
            else "no QueueRunner filling it"
        )
        raise _walk.not_rebuildable(
            rebuilder.api,
            queue_op,
            "is a queue that no queue_pipeline builder recorded, "
            f"and not a plain gathering queue ({found}; {op.type} on it by "
            f"{op.name!r}); its contents cannot be rebuilt",
            "fill it with QueueRunners running plain enqueue ops (`queue.enqueue`) "
            "of upstream tensors, or build the stage with queue_pipeline's "
            "producers and batching functions; only a FIFO, padding FIFO or random "
            "shuffle queue filled that way is rebuilt (a prefetch, tf-slim's "
            "parallel_reader, a program's own shuffling queue).",
        )
    inner = _split_streams(rebuilder, queue_op, op, enqueue)
    if len({repr(s.dataset.element_spec) for s in inner}) != 1:
        raise _walk.not_rebuildable(
            rebuilder.api,
            queue_op,
            "is filled by enqueue ops whose rebuilt elements differ in structure, dtype or shape",
            "enqueue tensors of one kind.",
        )
    dataset = (
        inner[0].dataset if len(inner) == 1 else data_common.round_robin([s.dataset for s in inner])
    )
    capacity = queue_op.get_attr("capacity")
    if queue_op.type == "RandomShuffleQueueV2":
        seeds = (queue_op.get_attr("seed"), queue_op.get_attr("seed2"))
        dataset = dataset.shuffle(
            max(capacity, 1),
            seed=seeds[1] if any(seeds) else None,
            reshuffle_each_iteration=True,
        )
    if op.type not in graph_facts.DEQUEUE_ONE_OPS:
        count = rebuilder._value(op.inputs[1], "dequeue count")  # noqa: SLF001 - its mixin's
        drop = op.type in graph_facts.DEQUEUE_MANY_OPS
        if queue_op.type == "PaddingFIFOQueueV2":
            dataset = dataset.padded_batch(count, drop_remainder=drop)
        else:
            dataset = dataset.batch(count, drop_remainder=drop)
    dataset = dataset.prefetch(capacity if capacity > 0 else tf.data.AUTOTUNE)
    return Stream(dataset, list(op.outputs), inner[0].form)


def _split_streams(rebuilder: Rebuilder, queue_op, op, enqueue: list) -> list[Stream]:
    """The enqueued streams, split between the queue's dequeue ops (see the NOTE)."""
    dequeues = [c for c in rebuilder.consumers(queue_op) if c.type in graph_facts.DEQUEUE_OPS]
    index = next((i for i, c in enumerate(dequeues) if c is op), 0)
    count = max(len(dequeues), 1)
    with rebuilder.split_sources(index, count) as split:
        inner = [
            rebuilder.rebuild(list(e.inputs[1:]), role=f"enqueue {e.name}", exact=True)
            for e in enqueue
        ]
    if count > 1 and not split.used:
        raise _walk.not_rebuildable(
            rebuilder.api,
            queue_op,
            f"is a queue that no queue_pipeline builder recorded, read by {count} dequeue "
            "ops, and what fills it starts from no producer whose rows can be split "
            "between them",
            "dequeue it once, or fill it from readers of a string_input_producer.",
        )
    return inner
