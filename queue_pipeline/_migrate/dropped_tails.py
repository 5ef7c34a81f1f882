"""The final partial batch each side of a proof drops, where TF does not fix which records it holds.

NOTE [ The tail each side drops ]
A pipeline that drops its last partial batch (``shuffle_batch`` without
``allow_smaller_final_batch``, an own queue's ``dequeue_many(n)``) drops the
records that come last. Where TF fixes no order, which records those are
differs between runs of the legacy program itself, so the twin's dropped
records are other ones, and the multisets differ by fewer than one batch,
the same number on each side:

* a shuffle (a RandomShuffleQueue, shuffled file names) may leave any record
  last: the count is all the proof can hold (fewer than one batch per epoch,
  equal on both sides);
* threads alone (``QueueRunner([enqueue] * 4)`` filling a FIFOQueue, a
  batching call's ``num_threads``) let a record reach the queue early by at
  most one record per other thread (each holds one record in flight), but
  late by any amount (a thread the system stalls): TF itself may drop a
  record read in the middle. The twin's order is the records' order, so what
  only the legacy side holds is the twin's dropped tail, which the legacy
  side delivers within its last batch plus one record per enqueue thread.
  Besides the count, that is required: a twin that loses a record in the
  middle (a filter that drops one, an off-by-one skip) still DIFFERs, as the
  legacy side then holds that record far from its end.

The verdict says which it accepted and why (:func:`accepted_tail`).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._migrate import object_returns_places as _places
from queue_pipeline._migrate.trace import Trace, graph_of

__all__ = ["DroppedTail", "accepted_tail", "batch_size"]

_SHUFFLE_OPS = frozenset({"RandomShuffleQueueV2", "RandomShuffleQueue", "RandomShuffle"})


@dataclasses.dataclass
class DroppedTail:
    """A difference the dropped tails explain.

    Attributes:
      count: the examples that differ on each side.
      size: the batch size.
      threads: the enqueue threads that set the order (0: a shuffle does).
      window: how far from the legacy side's end the examples only it holds
        lie at most (threads only; 0 for a shuffle).
    """

    count: int
    size: int
    threads: int = 0
    window: int = 0

    def described(self, mode: str) -> str:
        """The verdict's reason: `mode`, and the tail it accepted."""
        if not self.threads:
            return (
                f"{mode}, but for the shuffled tail each side drops ({self.count} example(s) "
                f"differ on each side; batch_size {self.size})"
            )
        return (
            f"{mode}, but for the tail each side drops, whose records the timing of "
            f"{self.threads} enqueue threads chooses in TF itself ({self.count} example(s) "
            f"differ on each side, the legacy side's among its last {self.window}; "
            f"batch_size {self.size})"
        )


def batch_size(trace: Trace) -> tuple[int | None, bool]:
    """The batch size and whether a final partial batch is dropped.

    A batching call's; else the returned batches' own queue: ``dequeue_many(n)``
    drops the tail, ``dequeue_up_to(n)`` keeps it.
    """
    for node in trace.nodes:
        if node.kind in plan.BATCHING_KINDS and isinstance(node.args.get("batch_size"), int):
            drops = any(
                n.kind in plan.BATCHING_KINDS and not n.args.get("allow_smaller_final_batch")
                for n in trace.nodes
            )
            return node.args["batch_size"], drops
    for op in _batched_dequeues(trace):
        n = tf.get_static_value(op.inputs[1])
        if n is not None:
            return int(n), op.type in graph_facts.DEQUEUE_MANY_OPS
    return None, False


def accepted_tail(trace: Trace, report) -> DroppedTail | None:
    """The dropped tails that explain all `report`'s difference, or None.

    See NOTE [ The tail each side drops ].
    """
    size, drops = batch_size(trace)
    if size is None or not drops or report.mode != "multiset" or not report.counts_equal:
        return None
    if not report.structure_equal:
        return None
    only_legacy = sum(e.only_in_legacy for e in report.epochs)
    only_twin = sum(e.only_in_twin for e in report.epochs)
    if only_legacy != only_twin or only_legacy > max(len(report.epochs), 1) * (size - 1):
        return None
    graph = graph_of(_places.leaf_tensors(trace.outputs))
    if any(op.type in _SHUFFLE_OPS for op in graph.get_operations()):
        return DroppedTail(only_legacy, size)
    threads = sum(
        len(ops)
        for qr in graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
        if len(ops := getattr(qr, "enqueue_ops", ())) > 1
    )
    window = size + threads
    reach = report.tail_reach or (0, 0)
    if not threads or reach[0] > window:
        return None
    return DroppedTail(only_legacy, size, threads, window)


def _batched_dequeues(trace: Trace) -> list[tf.Operation]:
    """The ``dequeue_many`` / ``dequeue_up_to`` ops the returned tensors are computed from
    (the nearest ones)."""
    leaves = tf.nest.flatten(_places.leaf_tensors(trace.outputs), expand_composites=True)
    walk = graph_facts.walk_back(
        [t.op for t in leaves if hasattr(t, "op")],
        stop=lambda op: op.type in graph_facts.DEQUEUE_OPS,
    )
    found = {op.name: op for op in walk if op.type in graph_facts.BATCHED_DEQUEUE_OPS}
    return [found[name] for name in sorted(found)]
