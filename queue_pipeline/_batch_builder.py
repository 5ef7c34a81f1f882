"""The one engine behind the eight batching functions.

A batching call is: validate the inputs -> store SparseTensors as handles ->
build the queue (FIFO, padding FIFO or random shuffle) -> one enqueue op per
thread (the same op ``num_threads`` times) or per list (joins), each
conditional on ``keep_input`` -> a QueueRunner -> the fill summary -> dequeue
``batch_size`` (many, or up to) -> restore SparseTensors -> the caller's
structure. Each step's graph, names and errors are TF 1.x's; the public
functions in batching.py only choose a :class:`BatchKind`. Under
``queue_pipeline.engine("dataset")`` the call is then served by a tf.data
iterator instead (see :mod:`queue_pipeline._engine.serving`).
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from queue_pipeline._core import validation
from queue_pipeline import plan
from queue_pipeline._core import compat as _compat
from queue_pipeline._diagnostics import traps as _diagnostics
from queue_pipeline._core import settings as _settings
from queue_pipeline._core import sparse as _sparse
from queue_pipeline._core import structure as _structure
from queue_pipeline.runner import QueueRunner, add_queue_runner


@dataclasses.dataclass(frozen=True)
class BatchKind:
    """Which of the eight functions is being built."""

    api: str  # public name, for messages and plan nodes
    scope: str  # default name scope (TF's)
    join: bool  # a list of tensor lists, one enqueue op (thread) per list
    shuffle: bool  # RandomShuffleQueue and min_after_dequeue


def build(
    kind: BatchKind,
    tensors,
    *,
    batch_size,
    keep_input,
    capacity,
    num_threads=1,
    min_after_dequeue=None,
    seed=None,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
):
    """Builds a batching stage; returns the batch in the inputs' structure."""
    api = kind.api
    _compat.require_graph(api)
    if kind.join:
        lists = _structure.as_tensor_list_list(api, tensors)
        original = tensors[0]
    else:
        lists = [_structure.as_tensor_list(tensors)]
        original = tensors
    values = _structure.flatten(lists) + [keep_input]
    with tf.compat.v1.name_scope(name, kind.scope, values) as scope:
        if kind.shuffle:
            validation.check_capacity(api, capacity, min_after_dequeue)
        if not kind.join:
            validation.check_num_threads(api, num_threads)
        lists = [_validate(api, tensor_list) for tensor_list in lists]
        keep = _validate_keep_input(api, keep_input, enqueue_many)
        smart_cond = _compat.smart_cond
        if kind.join:
            stored, infos = _sparse.store_join(lists, enqueue_many, keep, smart_cond, api)
        else:
            first, infos = _sparse.store(lists[0], enqueue_many, keep, smart_cond)
            stored = [first]
        types = _dtypes(api, stored)
        queue_shapes = _shapes(stored, shapes, enqueue_many)
        queue = _make_queue(
            kind, capacity, min_after_dequeue, seed, types, queue_shapes, dynamic_pad, shared_name
        )
        if kind.join:
            enqueue_ops = [_enqueue_op(queue, tl, enqueue_many, keep) for tl in stored]
        else:
            enqueue_ops = [_enqueue_op(queue, stored[0], enqueue_many, keep)] * num_threads
        add_queue_runner(QueueRunner(queue, enqueue_ops))
        _add_summary(queue, capacity, min_after_dequeue if kind.shuffle else None)
        _diagnostics.guard(queue, api)
        # Under the dataset engine a dense batch keeps TF's name (`scope`) for
        # the served outputs, or for the faithful ones if the call falls back
        # (NOTE [ TF's names for served batches ] in _engine/serving.py).
        renamed = _settings.current().engine == "dataset" and not any(i.sparse for i in infos)
        dequeue_name = "faithful_dequeue" if renamed else scope
        if allow_smaller_final_batch:
            dequeued = queue.dequeue_up_to(batch_size, name=dequeue_name)
        else:
            dequeued = queue.dequeue_many(batch_size, name=dequeue_name)
        result = _structure.as_original_type(original, _sparse.restore(dequeued, infos))
    node = plan.record(
        api,
        dict(
            batch_size=batch_size,
            keep_input=keep_input,
            capacity=capacity,
            num_threads=num_threads if not kind.join else len(lists),
            min_after_dequeue=min_after_dequeue,
            seed=seed,
            enqueue_many=enqueue_many,
            shapes=shapes,
            dynamic_pad=dynamic_pad,
            allow_smaller_final_batch=allow_smaller_final_batch,
            shared_name=shared_name,
            name=name,
            num_lists=len(lists),
            structure=_structure_of(original),
        ),
        _structure.flatten(lists),
        tf.nest.flatten(result),
        fills=queue,
    )
    if _settings.current().engine == "dataset":
        # Imported here: the engine pulls in the rebuilder and the tf.data twins.
        from queue_pipeline._engine import serving as _engine  # noqa: PLC0415

        return _engine.serve(
            node, result, queue=queue, scope=scope, tf_name=scope if renamed else None
        )
    return result


def _structure_of(original) -> str:
    if isinstance(original, dict):
        return "dict"
    if _structure.is_bare_tensor(original):
        return "tensor"
    return type(original).__name__


def _validate(api, tensor_list):
    """Converts Python values to constants; SparseTensors pass through."""
    converted = [
        t if isinstance(t, (tf.SparseTensor, tf.IndexedSlices)) else tf.convert_to_tensor(t)
        for t in tensor_list
    ]
    if not converted:
        raise ValueError(f"{api}: Expected at least one tensor in batch(); `tensors` is empty.")
    return converted


def _validate_keep_input(api, keep_input, enqueue_many):
    keep = tf.convert_to_tensor(keep_input)
    rank = keep.shape.ndims
    if rank is None:
        raise ValueError(
            f"{api}: `keep_input` dimensions must be known at graph construction; got {keep}."
        )
    if rank == 1 and not enqueue_many:
        raise ValueError(
            f"{api}: `keep_input` cannot be a vector when "
            "`enqueue_many=False`; pass a scalar, or set enqueue_many=True "
            "to filter rows."
        )
    if rank > 1:
        raise ValueError(f"{api}: `keep_input` must be 0 or 1 dimensions; got shape {keep.shape}.")
    return keep


def _dtypes(api, stored_lists):
    types = [t.dtype for t in stored_lists[0]]
    for tensor_list in stored_lists[1:]:
        other = [t.dtype for t in tensor_list]
        if other != types:
            raise TypeError(
                f"{api}: Expected types to be consistent: "
                f"{', '.join(t.name for t in types)} vs. "
                f"{', '.join(t.name for t in other)}."
            )
    return types


def _shapes(stored_lists, shapes, enqueue_many):
    """The queue's component shapes: `shapes`, or inferred as TF 1.x does.

    As in TF 1.x, the shapes of later lists are checked for compatibility with
    list 0's, and list 0's shape is used.
    """
    if shapes is not None:
        return shapes
    for tensor_list in stored_lists:
        for t in tensor_list[: len(stored_lists[0])]:
            if t.shape.ndims is None:
                raise ValueError(f"Cannot infer Tensor's rank: {t}")
    inferred = []
    for i in range(len(stored_lists[0])):
        candidates = [tl[i].shape for tl in stored_lists]
        if enqueue_many:
            candidates = [s.with_rank_at_least(1)[1:] for s in candidates]
        for other in candidates[1:]:
            candidates[0].merge_with(other)  # raises if incompatible
        inferred.append(candidates[0].as_list())
    return inferred


def _make_queue(kind, capacity, min_after_dequeue, seed, types, shapes, dynamic_pad, shared_name):
    if kind.shuffle:
        return tf.queue.RandomShuffleQueue(
            capacity=capacity,
            min_after_dequeue=min_after_dequeue,
            seed=seed,
            dtypes=types,
            shapes=shapes,
            shared_name=shared_name,
        )
    queue_class = tf.queue.PaddingFIFOQueue if dynamic_pad else tf.queue.FIFOQueue
    return queue_class(capacity=capacity, dtypes=types, shapes=shapes, shared_name=shared_name)


def _enqueue_op(queue, tensor_list, enqueue_many, keep):
    """The op that enqueues one list, subject to `keep` (scalar or per row)."""
    enqueue = queue.enqueue_many if enqueue_many else queue.enqueue
    if keep.shape.ndims == 1:
        selector = tf.cast(keep, tf.int32)
        kept = [tf.dynamic_partition(t, selector, num_partitions=2)[1] for t in tensor_list]
        return enqueue(kept)
    return _compat.smart_cond(keep, lambda: enqueue(tensor_list), tf.no_op)


def _add_summary(queue, capacity, min_after_dequeue):
    """TF 1.x's fill summary; see spec 1.8.7 for the shuffle variant's name."""
    if min_after_dequeue is None:
        tf.compat.v1.summary.scalar(
            f"fraction_of_{capacity}_full", tf.cast(queue.size(), tf.float32) * (1.0 / capacity)
        )
        return
    spare = capacity - min_after_dequeue
    full = tf.cast(tf.maximum(0, queue.size() - min_after_dequeue), tf.float32) * (1.0 / spare)
    tf.compat.v1.summary.scalar(f"fraction_over_{min_after_dequeue}_of_{spare}_full", full)
