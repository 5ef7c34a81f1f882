"""SparseTensors through queues: store each as an int64 handle, restore after dequeue.

Queues hold dense tensors only. Before the enqueue, every SparseTensor goes
into a ``SparseTensorsMap`` resource (``AddSparseToTensorsMap``, or
``AddManySparseToTensorsMap`` with ``enqueue_many``) and the queue carries its
handle, shaped ``[1]`` per example; after the dequeue,
``TakeManySparseFromTensorsMap`` turns a batch of handles back into one
SparseTensor with a leading batch dimension. The graph is TF 1.x's.

NOTE [ Sparse maps under cond_v2 ]
TF 1.x finds the map op to restore from by looking at the inputs of the stored
tensor's op. With a scalar, non-constant `keep_input` under TF 2.x's control
flow v2, the store op sits inside the ``If`` op's branch function, the lookup
finds an ``Identity``, and TF fails at graph construction. Here the metadata
carries the map's resource name and dtype directly; in that one case the store
op gets an explicit ``shared_name`` (unique in the outer graph), so the
restore op outside the function finds the same resource.
"""

from __future__ import annotations

import contextlib
import dataclasses

import tensorflow as tf

from queue_pipeline._core.compat import static_dim

_MAP_OPS = ("AddSparseToTensorsMap", "AddManySparseToTensorsMap")


@dataclasses.dataclass
class SparseInfo:
    """How one queue component was stored: dense, or a sparse map's handles."""

    sparse: bool
    map_name: str | None = None  # resource name of the SparseTensorsMap
    dtype: tf.DType | None = None
    rank: int | None = None  # rank of one example's SparseTensor
    map_op: tf.Operation | None = None  # the store op, when in the outer graph

    def compatible(self, other: "SparseInfo") -> bool:
        if self.sparse != other.sparse:
            return False
        if not self.sparse:
            return True
        return self.map_name == other.map_name and (
            self.rank is None or other.rank is None or self.rank == other.rank
        )

    def merged(self, other: "SparseInfo") -> "SparseInfo":
        rank = self.rank if self.rank is not None else other.rank
        return dataclasses.replace(self, rank=rank)

    def __str__(self) -> str:
        return f"SparseInfo(sparse={self.sparse}, map={self.map_name}, rank={self.rank})"


def store(tensor_list, enqueue_many, keep_input, smart_cond, shared=None):
    """Replaces each SparseTensor in `tensor_list` by its handle(s) in a map.

    Args:
      tensor_list: tensors and SparseTensors of one list.
      enqueue_many: whether the first dimension indexes examples.
      keep_input: the validated keep_input tensor (rank 0 or 1).
      smart_cond: TF's smart_cond (a cond only when `keep_input` is dynamic).
      shared: the SparseInfo list of a first list, whose maps later lists of
        a join must write into.

    Returns:
      ``(stored_list, infos)``: dense tensors unchanged, sparse ones replaced
      by int64 handles of shape ``[1]`` per example; one SparseInfo each.
    """
    shared = shared or [None] * len(tensor_list)
    stored, infos = [], []
    for t, shared_info in zip(tensor_list, shared):
        if not isinstance(t, tf.SparseTensor):
            stored.append(t)
            infos.append(SparseInfo(False))
            continue
        handle, info = _store_one(t, enqueue_many, keep_input, smart_cond, shared_info)
        stored.append(tf.expand_dims(handle, [-1]))
        infos.append(info)
    return stored, infos


def _store_one(t, enqueue_many, keep_input, smart_cond, shared_info):
    outer = tf.compat.v1.get_default_graph()
    shared_name = shared_info.map_name if shared_info is not None else None
    made = []  # (store op, resource name) of the map op built, if any

    def add(many):
        name = shared_name
        if name is None and tf.compat.v1.get_default_graph() is not outer:
            # Inside a cond_v2 branch: see NOTE [ Sparse maps under cond_v2 ].
            name = outer.unique_name("AddSparseToTensorsMap", mark_as_used=True)
        op_fn = tf.raw_ops.AddManySparseToTensorsMap if many else tf.raw_ops.AddSparseToTensorsMap
        handle = op_fn(
            sparse_indices=t.indices,
            sparse_values=t.values,
            sparse_shape=t.dense_shape,
            shared_name=name or "",
        )
        made.append((handle.op, name or handle.op.name))
        return handle

    if keep_input.shape.ndims == 1:
        kept_values = tf.gather(keep_input, t.indices[:, 0])
        t = tf.sparse.retain(t, kept_values)
        handle = add(True)
    elif enqueue_many:
        handle = smart_cond(
            keep_input, lambda: add(True), lambda: -1 * tf.ones(tf.shape(t)[0:1], tf.int64)
        )
        handle.set_shape([None])  # needed when t's rank is unknown
    else:
        handle = smart_cond(keep_input, lambda: add(False), lambda: tf.constant(-1, tf.int64))
    rank = static_dim(t.dense_shape.shape.with_rank(1), 0)
    if rank is not None and enqueue_many:
        rank -= 1
    if shared_info is not None:
        map_op, map_name = shared_info.map_op, shared_info.map_name
    elif made:
        op, map_name = made[0]
        map_op = op if op.graph is outer else None
    else:  # statically never kept: nothing is stored, the map stays empty
        map_op, map_name = None, outer.unique_name("AddSparseToTensorsMap")
    return handle, SparseInfo(True, map_name, t.dtype, rank, map_op)


def store_join(tensor_list_list, enqueue_many, keep_input, smart_cond, api):
    """:func:`store` for every list of a join; later lists share list 0's maps."""
    first, infos = store(tensor_list_list[0], enqueue_many, keep_input, smart_cond)
    stored_lists = [first]
    for tensor_list in tensor_list_list[1:]:
        stored, candidate = store(tensor_list, enqueue_many, keep_input, smart_cond, shared=infos)
        if not all(a.compatible(b) for a, b in zip(infos, candidate)):
            raise ValueError(
                f"{api}: Inconsistent SparseTensors list: {tensor_list_list[0]} vs. "
                f"{tensor_list} (each position must be sparse in every list or in "
                "none, with the same rank)."
            )
        infos = [a.merged(b) for a, b in zip(infos, candidate)]
        stored_lists.append(stored)
    return stored_lists, infos


def restore(dequeued, infos):
    """Turns dequeued handles back into SparseTensors (TF 1.x's graph).

    When any component is sparse, every output is an identity that depends on
    all dense outputs and all sparse values, so fetching any output runs the
    whole restore in the same step.
    """
    single = not isinstance(dequeued, (list, tuple))
    items = [dequeued] if single else list(dequeued)
    tensors = [
        _take(handles, info) if info.sparse else handles for handles, info in zip(items, infos)
    ]
    if any(isinstance(x, tf.SparseTensor) for x in tensors):
        deps = [x.values if isinstance(x, tf.SparseTensor) else x for x in tensors]
        tensors = [
            tf.SparseTensor(
                _after(deps, x.indices), _after(deps, x.values), _after(deps, x.dense_shape)
            )
            if isinstance(x, tf.SparseTensor)
            else _after(deps, x)
            for x in tensors
        ]
    return tensors[0] if single else tensors


def _take(handles, info):
    rank = None if info.rank is None else info.rank + 1
    handles = tf.squeeze(handles, [1])
    colocation = (
        tf.compat.v1.colocate_with(info.map_op)
        if info.map_op is not None
        else contextlib.nullcontext()
    )
    with colocation:
        indices, values, shape = tf.raw_ops.TakeManySparseFromTensorsMap(
            sparse_handles=handles, dtype=info.dtype, shared_name=info.map_name
        )
    indices.set_shape([None, rank])
    values.set_shape([None])
    shape.set_shape([rank])
    return tf.SparseTensor(indices, values, shape)


def _after(deps, x):
    with tf.compat.v1.name_scope(None, "control_dependency", list(deps) + [x]) as name:
        with tf.compat.v1.colocate_with(x), tf.control_dependencies(deps):
            return tf.identity(x, name=name)
