"""Batching: batch, batch_join, shuffle_batch, shuffle_batch_join and their maybe_* variants.

The implementation of TF 1.x's eight ``tf.compat.v1.train`` batching
functions, with TF's signatures and positional order, all built by one engine
(``_batch_builder.build``). :func:`batch` documents the arguments they share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from queue_pipeline import _batch_builder
from queue_pipeline._batch_builder import BatchKind

if TYPE_CHECKING:
    from typing import Sequence

    from queue_pipeline._core.types import (
        Batch,
        BoolLike,
        IntLike,
        ShapesLike,
        TensorStructure,
    )

__all__ = [
    "batch",
    "batch_join",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "shuffle_batch",
    "shuffle_batch_join",
]

_BATCH = BatchKind("batch", "batch", join=False, shuffle=False)
_MAYBE_BATCH = BatchKind("maybe_batch", "batch", join=False, shuffle=False)
_BATCH_JOIN = BatchKind("batch_join", "batch_join", join=True, shuffle=False)
_MAYBE_BATCH_JOIN = BatchKind("maybe_batch_join", "batch_join", join=True, shuffle=False)
_SHUFFLE = BatchKind("shuffle_batch", "shuffle_batch", join=False, shuffle=True)
_MAYBE_SHUFFLE = BatchKind("maybe_shuffle_batch", "shuffle_batch", join=False, shuffle=True)
_SHUFFLE_JOIN = BatchKind("shuffle_batch_join", "shuffle_batch_join", join=True, shuffle=True)
_MAYBE_SHUFFLE_JOIN = BatchKind(
    "maybe_shuffle_batch_join", "shuffle_batch_join", join=True, shuffle=True
)


def batch(
    tensors: TensorStructure,
    batch_size: IntLike,
    num_threads: int = 1,
    capacity: IntLike = 32,
    enqueue_many: bool = False,
    shapes: ShapesLike | None = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Batch:
    """Batches `tensors` through a FIFO queue filled by `num_threads` threads.

    With ``enqueue_many=False`` each tensor is one example of shape
    ``[x, y, z]`` and the output has shape ``[batch_size, x, y, z]``; with
    ``enqueue_many=True`` the first dimension of every tensor indexes
    examples (``[n, x, y, z]`` in, ``[batch_size, x, y, z]`` out).

    All `num_threads` threads run the same enqueue op, so each evaluation of
    the upstream graph (a ``reader.read``, a dequeue) is enqueued exactly
    once, in an order that is not deterministic for more than one thread.

    Args:
      tensors: a list, tuple or dict of tensors or SparseTensors (a bare
        tensor is taken as a one-element list).
      batch_size: the number of examples per batch (an int or int32 tensor).
      num_threads: the number of threads running the enqueue op.
      capacity: the queue's capacity in examples.
      enqueue_many: whether each tensor is a batch of examples.
      shapes: the shape of one example per component; default inferred from
        `tensors` (each must have a known rank).
      dynamic_pad: use a padding queue: dimensions that are None may vary
        between examples and are padded on the right (0 or ``b""``) up to
        the longest example of each batch.
      allow_smaller_final_batch: return the last, smaller batch at the end of
        input instead of leaving it in the closed queue; the static batch
        dimension is then None.
      shared_name: share the queue under this name across sessions.
      name: the name scope (default ``"batch"``); the dequeue op takes it.

    Returns:
      The batch in the structure of `tensors`: a dict for a dict, a bare
      tensor (or SparseTensor) for one component, otherwise a list.

    Raises:
      ValueError: no tensors; an unknown rank or shape that the queue cannot
        hold (use `shapes` or `dynamic_pad`); `num_threads` < 1.
      TypeError: inconsistent dtypes.
      GraphModeRequiredError: under eager execution (a ValueError and a
        RuntimeError).
      tf.errors.OutOfRangeError: at run time, after the input is exhausted
        (and the tail, unless `allow_smaller_final_batch`).

    Side effects:
      Adds a QueueRunner to ``"queue_runners"`` and the summary
      ``<scope>/fraction_of_<capacity>_full`` to ``"summaries"``; records a
      plan node.

    tf.data equivalent:
      ``dataset.batch(batch_size, drop_remainder=not allow_smaller_final_batch)``
      (``padded_batch`` for `dynamic_pad`, ``unbatch()`` first for
      `enqueue_many`); twin ``queue_pipeline.data.batch``.
    """
    return _batch_builder.build(
        _BATCH,
        tensors,
        batch_size=batch_size,
        keep_input=True,
        num_threads=num_threads,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def maybe_batch(
    tensors: TensorStructure,
    keep_input: BoolLike,
    batch_size: IntLike,
    num_threads: int = 1,
    capacity: IntLike = 32,
    enqueue_many: bool = False,
    shapes: ShapesLike | None = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Batch:
    """:func:`batch`, enqueuing only the examples that `keep_input` keeps.

    Args:
      keep_input: a bool scalar (keep the example, or with `enqueue_many` the
        whole input batch) or, with `enqueue_many`, a bool vector (keep each
        row). A Python bool or constant builds no condition.
      others: as :func:`batch`.

    Returns:
      As :func:`batch`.

    tf.data equivalent:
      ``dataset.filter(keep).batch(batch_size)``; twin
      ``queue_pipeline.data.maybe_batch``.
    """
    return _batch_builder.build(
        _MAYBE_BATCH,
        tensors,
        batch_size=batch_size,
        keep_input=keep_input,
        num_threads=num_threads,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def batch_join(
    tensors_list: Sequence[TensorStructure],
    batch_size: IntLike,
    capacity: IntLike = 32,
    enqueue_many: bool = False,
    shapes: ShapesLike | None = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Batch:
    """Batches examples from several tensor lists, one enqueue thread per list.

    Each list (typically the output of its own reader) gets its own enqueue op
    and thread: reading runs in parallel across lists, the order within one
    list is preserved in the output, and the interleaving of lists is not
    deterministic. Every list must have the same dtypes (and the same keys for
    dicts).

    Args:
      tensors_list: a list of lists, tuples or dicts of tensors.
      others: as :func:`batch` (scope ``"batch_join"``).

    Returns:
      The batch in the structure of ``tensors_list[0]`` (see :func:`batch`).

    tf.data equivalent:
      ``Dataset.from_tensor_slices(...).interleave(...).batch(batch_size)``;
      twin ``queue_pipeline.data.batch_join``.
    """
    return _batch_builder.build(
        _BATCH_JOIN,
        tensors_list,
        batch_size=batch_size,
        keep_input=True,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def maybe_batch_join(
    tensors_list: Sequence[TensorStructure],
    keep_input: BoolLike,
    batch_size: IntLike,
    capacity: IntLike = 32,
    enqueue_many: bool = False,
    shapes: ShapesLike | None = None,
    dynamic_pad: bool = False,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Batch:
    """:func:`batch_join`, enqueuing only what `keep_input` keeps (see :func:`maybe_batch`).

    tf.data equivalent:
      ``interleave(...).filter(keep).batch(batch_size)``; twin
      ``queue_pipeline.data.maybe_batch_join``.
    """
    return _batch_builder.build(
        _MAYBE_BATCH_JOIN,
        tensors_list,
        batch_size=batch_size,
        keep_input=keep_input,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def shuffle_batch(
    tensors: TensorStructure,
    batch_size: IntLike,
    capacity: IntLike,
    min_after_dequeue: IntLike,
    num_threads: int = 1,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: ShapesLike | None = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Batch:
    """Batches `tensors` in random order through a RandomShuffleQueue.

    While the input lasts, each dequeue leaves at least `min_after_dequeue`
    examples in the queue, so a batch mixes roughly the last
    ``min_after_dequeue + batch_size`` examples; after the input ends the
    rest drains in random order.

    Args:
      tensors, batch_size, num_threads, enqueue_many: as :func:`batch`.
      shapes, allow_smaller_final_batch, shared_name: as :func:`batch`.
      capacity: the queue's capacity; must exceed `min_after_dequeue`.
      min_after_dequeue: the examples kept back for mixing.
      seed: the queue's op seed (the order is still nondeterministic with
        more than one thread).
      name: the name scope (default ``"shuffle_batch"``).

    Returns:
      As :func:`batch`.

    Raises:
      ValueError: ``capacity <= min_after_dequeue``, and as :func:`batch`.

    Side effects:
      As :func:`batch`, with the summary
      ``<scope>/fraction_over_<mad>_of_<capacity - mad>_full`` (the fraction of
      the capacity above `min_after_dequeue` that is filled).

    tf.data equivalent:
      ``dataset.shuffle(min_after_dequeue + batch_size, seed).batch(batch_size)``;
      twin ``queue_pipeline.data.shuffle_batch``.
    """
    return _batch_builder.build(
        _SHUFFLE,
        tensors,
        batch_size=batch_size,
        keep_input=True,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        num_threads=num_threads,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def maybe_shuffle_batch(
    tensors: TensorStructure,
    batch_size: IntLike,
    capacity: IntLike,
    min_after_dequeue: IntLike,
    keep_input: BoolLike,
    num_threads: int = 1,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: ShapesLike | None = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Batch:
    """:func:`shuffle_batch`, enqueuing only what `keep_input` keeps (see :func:`maybe_batch`).

    tf.data equivalent:
      ``dataset.filter(keep).shuffle(...).batch(batch_size)``; twin
      ``queue_pipeline.data.maybe_shuffle_batch``.
    """
    return _batch_builder.build(
        _MAYBE_SHUFFLE,
        tensors,
        batch_size=batch_size,
        keep_input=keep_input,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        num_threads=num_threads,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def shuffle_batch_join(
    tensors_list: Sequence[TensorStructure],
    batch_size: IntLike,
    capacity: IntLike,
    min_after_dequeue: IntLike,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: ShapesLike | None = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Batch:
    """:func:`batch_join` through a RandomShuffleQueue (see :func:`shuffle_batch`).

    The order within one list is not preserved.

    Raises:
      ValueError: ``capacity <= min_after_dequeue`` (TF 1.x raises
        ZeroDivisionError for equal values and fails at run time for less).

    tf.data equivalent:
      ``interleave(...).shuffle(...).batch(batch_size)``; twin
      ``queue_pipeline.data.shuffle_batch_join``.
    """
    return _batch_builder.build(
        _SHUFFLE_JOIN,
        tensors_list,
        batch_size=batch_size,
        keep_input=True,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )


def maybe_shuffle_batch_join(
    tensors_list: Sequence[TensorStructure],
    batch_size: IntLike,
    capacity: IntLike,
    min_after_dequeue: IntLike,
    keep_input: BoolLike,
    seed: int | None = None,
    enqueue_many: bool = False,
    shapes: ShapesLike | None = None,
    allow_smaller_final_batch: bool = False,
    shared_name: str | None = None,
    name: str | None = None,
) -> Batch:
    """:func:`shuffle_batch_join`, enqueuing only what `keep_input` keeps.

    tf.data equivalent:
      ``interleave(...).filter(keep).shuffle(...).batch(batch_size)``; twin
      ``queue_pipeline.data.maybe_shuffle_batch_join``.
    """
    return _batch_builder.build(
        _MAYBE_SHUFFLE_JOIN,
        tensors_list,
        batch_size=batch_size,
        keep_input=keep_input,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        shared_name=shared_name,
        name=name,
    )
