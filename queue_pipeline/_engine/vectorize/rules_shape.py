"""Vectorize rules for shape and indexing ops.

Reshape, slices, tile, pad, transpose, pack, concat, split, reverse, gather,
reductions, one-hot, shapes and asserts."""

from __future__ import annotations


import numpy as np
import tensorflow as tf

from queue_pipeline._engine.vectorize.base import (
    Builder,
    _In,
    _Refused,
    _axis,
    _batch_size,
    _const,
    _int_attr,
    _lift_to_batch,
    _list_attr,
)


# NOTE [ Static spec vectors ]
# A per-record spec vector (a slice's begin/end/strides, a reshape's shape,
# paddings) is almost always a constant. Its batch form is then a constant
# too, written as one: computing it in the map function (a ``ConcatV2`` of
# constants, the batch size from ``Shape``) costs each batch an op or three of
# the function's executor, about 1-2 us each, for a value known when the
# engine builds; W3's CIFAR decoder went from 48 nodes to 30 (about 15%
# faster steady reading in one TF1-mode sitting).


def _reshape(b: Builder, node, ins: list[_In]) -> None:
    x, shape = ins
    if shape.batched:
        raise _Refused("its target shape depends on the record")
    if shape.value is not None and np.all(np.asarray(shape.value) > 0):
        # every size known and non-zero: -1 on the batch axis is exactly B
        value = np.concatenate([[-1], np.asarray(shape.value).reshape(-1)])
        new = _const(b, f"{node.name}/shape", value, shape.dtype)[0]
        b.copy(node, [x.new, new], rule="reshape to [B] + shape")
        return
    new_shape = b.helper(
        f"{node.name}/shape", lambda t, s: [tf.concat([_batch_size(t, s.dtype), s], 0)], [x, shape]
    )[0]
    b.copy(node, [x.new, new_shape], rule="reshape to [B] + shape")


def _with_batch_entry(b: Builder, node, arg: _In, entry, hint: str) -> str:
    """A per-example spec vector (begin, size, multiples, paddings) with a batch entry first."""
    if arg.batched:
        raise _Refused(f"its {hint} depends on the record")
    if arg.value is not None:  # NOTE [ Static spec vectors ]
        value = np.concatenate([[entry], np.asarray(arg.value).reshape(-1)])
        return _const(b, f"{node.name}/{hint}", value, arg.dtype)[0]
    return b.helper(
        f"{node.name}/{hint}", lambda v: [tf.concat([tf.constant([entry], v.dtype), v], 0)], [arg]
    )[0]


def _strided_slice(b: Builder, node, ins: list[_In]) -> None:
    x, begin, end, strides = ins
    if not x.batched:
        raise _Refused("its begin, end or strides depend on the record")
    news = [x.new] + [
        _with_batch_entry(b, node, arg, value, hint)
        for arg, value, hint in ((begin, 0, "begin"), (end, 0, "end"), (strides, 1, "strides"))
    ]
    a = node.attr
    attrs = {
        "begin_mask": _int_attr((a["begin_mask"].i << 1) | 1),
        "end_mask": _int_attr((a["end_mask"].i << 1) | 1),
        "ellipsis_mask": _int_attr(a["ellipsis_mask"].i << 1),
        "new_axis_mask": _int_attr(a["new_axis_mask"].i << 1),
        "shrink_axis_mask": _int_attr(a["shrink_axis_mask"].i << 1),
    }
    b.copy(node, news, attrs=attrs, rule="slice with a full batch axis first")


def _slice(b: Builder, node, ins: list[_In]) -> None:
    x, begin, size = ins
    if not x.batched:
        raise _Refused("its begin or size depends on the record")
    if begin.batched:
        _slice_at_offsets(b, node, ins)
        return
    b.copy(
        node,
        [
            x.new,
            _with_batch_entry(b, node, begin, 0, "begin"),
            _with_batch_entry(b, node, size, -1, "size"),
        ],
        rule="slice with a full batch axis first",
    )


def _slice_at_offsets(b: Builder, node, ins: list[_In]) -> None:
    """A slice at per-record offsets (``random_crop``) of a per-record constant size.

    Each axis whose size is less than the full one is cut per record: the
    outermost one by gathering rows ``begin[:, d, None] + range(size)`` with
    ``batch_dims=1``; an inner one, when it has at most ``_WINDOWS`` possible
    offsets, by stacking the slice at each offset and gathering one per
    record (a gather of inner rows copies a few bytes at a time: for 64
    images 64x64x3 uint8 cropped to 56 columns, 23 us an example against 12
    for the 9 stacked windows, measured), else by gathering its rows too. An
    axis kept whole needs offset 0. One ``Assert`` first checks every
    record's offsets as ``Slice`` does (``0 <= begin <= dim - size``), so a
    batch fails iff a record would. The values are moved, not computed:
    bitwise the same.
    """
    x, begin, size = ins
    if size.batched:
        raise _Refused("its size depends on the record")
    sizes = np.asarray(size.static("size")).reshape(-1).tolist()
    if not x.shape.is_fully_defined() or begin.rank != 1 or len(sizes) != x.rank:
        raise _Refused(
            "per-record offsets need a fully known per-record shape and one offset per axis"
        )
    dims = x.shape.as_list()
    if any(not 0 <= s <= d for s, d in zip(sizes, dims)):
        raise _Refused(
            f"its size {sizes} is -1 or exceeds the per-record shape {dims} "
            "(records would get different shapes, or fail)"
        )
    axes = [d for d, (s, full) in enumerate(zip(sizes, dims)) if s < full]
    limits = [full - s for s, full in zip(sizes, dims)]

    def build(t, offsets):
        ok = tf.reduce_all((offsets >= 0) & (offsets <= tf.constant(limits, offsets.dtype)))
        check = tf.raw_ops.Assert(
            condition=ok,
            data=[
                tf.constant(
                    f"Slice: expected every record's begin in [0, {limits}] (the "
                    f"input's shape {dims} minus the size {sizes}); got"
                ),
                offsets,
            ],
            summarize=3 * len(dims),
        )
        with tf.control_dependencies([check]):
            t = tf.identity(t)
        for d in axes:
            if d == axes[0] or limits[d] >= _WINDOWS:
                rows = offsets[:, d : d + 1] + tf.range(sizes[d], dtype=offsets.dtype)
                t = tf.gather(t, rows, axis=d + 1, batch_dims=1)
                continue
            cut = [slice(None)] * (d + 1)
            windows = [t[tuple(cut + [slice(k, k + sizes[d])])] for k in range(limits[d] + 1)]
            t = tf.gather(tf.stack(windows, axis=1), offsets[:, d], axis=1, batch_dims=1)
        return [t]

    b.emit(
        node,
        build,
        [x, begin],
        rule=f"gather at per-record offsets on axes {[d + 1 for d in axes]} (batch_dims=1)",
    )


# Most offsets of an inner axis a slice at per-record offsets stacks (see _slice_at_offsets).
_WINDOWS = 16


def _tile(b: Builder, node, ins: list[_In]) -> None:
    x, multiples = ins
    if not x.batched:
        raise _Refused("its multiples depend on the record")
    b.copy(
        node,
        [x.new, _with_batch_entry(b, node, multiples, 1, "multiples")],
        rule="tile with multiple 1 on the batch axis",
    )


def _pad(b: Builder, node, ins: list[_In]) -> None:
    x, paddings = ins[:2]
    if not x.batched or any(i.batched for i in ins[1:]):
        raise _Refused("its paddings or constant depend on the record")
    if paddings.value is not None:  # NOTE [ Static spec vectors ]
        value = np.concatenate([np.zeros((1, 2)), np.asarray(paddings.value).reshape(-1, 2)])
        padded = _const(b, f"{node.name}/paddings", value, paddings.dtype)[0]
    else:
        padded = b.helper(
            f"{node.name}/paddings",
            lambda p: [tf.concat([tf.zeros([1, 2], p.dtype), p], 0)],
            [paddings],
        )[0]
    b.copy(
        node,
        [x.new, padded] + [i.new for i in ins[2:]],
        rule="pad with no padding on the batch axis",
    )


def _transpose(b: Builder, node, ins: list[_In]) -> None:
    x, perm = ins
    values = perm.static("permutation")
    rank = x.rank
    if rank is None or sorted(values.tolist()) != list(range(rank)):
        raise _Refused("its permutation is not one of the per-record axes")
    new = _const(b, f"{node.name}/perm", [0] + [p + 1 for p in values.tolist()], perm.dtype)[0]
    b.copy(node, [x.new, new], rule="transpose with the batch axis first")


def _axis_const(b: Builder, node, arg: _In, axis: int) -> str:
    value = np.asarray(axis).reshape(arg.value.shape) if arg.value is not None else axis
    return _const(b, f"{node.name}/axis", value, arg.dtype)[0]


def _expand_dims(b: Builder, node, ins: list[_In]) -> None:
    x, axis = ins
    if not x.batched:
        raise _Refused("its axis depends on the record")
    shifted = _axis(axis.static("axis"), x.rank, extra=1)
    b.copy(node, [x.new, _axis_const(b, node, axis, shifted)], rule="axis + 1")


def _squeeze(b: Builder, node, ins: list[_In]) -> None:
    dims = list(node.attr["squeeze_dims"].list.i)
    shape = ins[0].shape
    if not dims:
        if not shape.is_fully_defined():
            raise _Refused(
                "it squeezes every size-1 axis of a per-record shape that is "
                "not fully known (it would also squeeze a batch of 1)"
            )
        dims = [i for i, d in enumerate(shape.as_list()) if d == 1]
    b.copy(
        node,
        attrs={"squeeze_dims": _list_attr([_axis(d, shape.rank) for d in dims])},
        rule="explicit axes + 1",
    )


def _batched_operands(b: Builder, node, ins: list[_In]) -> list[str]:
    like = next(i for i in ins if i.batched)
    return [i.new if i.batched else _lift_to_batch(b, node, i, like) for i in ins]


def _pack(b: Builder, node, ins: list[_In]) -> None:
    axis = _axis(node.attr["axis"].i, ins[0].rank, extra=1)
    b.copy(
        node,
        _batched_operands(b, node, ins),
        attrs={"axis": _int_attr(axis)},
        rule="stack on axis + 1",
    )


def _unpack(b: Builder, node, ins: list[_In]) -> None:
    axis = _axis(node.attr["axis"].i, ins[0].rank)
    b.copy(node, attrs={"axis": _int_attr(axis)}, rule="unstack on axis + 1")


def _concat_v2(b: Builder, node, ins: list[_In]) -> None:
    values, axis = ins[:-1], ins[-1]
    if axis.batched:
        raise _Refused("its axis depends on the record")
    shifted = _axis(axis.static("axis"), values[0].rank)
    news = _batched_operands(b, node, values) + [_axis_const(b, node, axis, shifted)]
    b.copy(node, news, rule="concat on axis + 1")


def _split(b: Builder, node, ins: list[_In]) -> None:
    if node.op == "Split":
        axis, x = ins
        others = []
    else:  # SplitV
        x, sizes, axis = ins
        if sizes.batched:
            raise _Refused("its size_splits depend on the record")
        others = [sizes.new]
    if axis.batched or not x.batched:
        raise _Refused("its axis depends on the record")
    new_axis = _axis_const(b, node, axis, _axis(axis.static("axis"), x.rank))
    news = [new_axis, x.new] if node.op == "Split" else [x.new] + others + [new_axis]
    b.copy(node, news, rule="split on axis + 1")


def _reverse(b: Builder, node, ins: list[_In]) -> None:
    x, axes = ins
    if not x.batched:
        raise _Refused("its axes depend on the record")
    shifted = [_axis(a, x.rank) for a in np.ravel(axes.static("axes"))]
    new = _const(
        b, f"{node.name}/axes", np.asarray(shifted).reshape(axes.static("axes").shape), axes.dtype
    )[0]
    b.copy(node, [x.new, new], rule="reverse axes + 1")


def _reduction(b: Builder, node, ins: list[_In]) -> None:
    x, axes = ins
    if not x.batched:
        raise _Refused("its axes depend on the record")
    if node.op not in ("All", "Any"):
        b.check_float(x.dtype, f"reduction {node.op}")
    shifted = [_axis(a, x.rank) for a in np.ravel(axes.static("axes"))]
    new = _const(
        b,
        f"{node.name}/axes",
        np.asarray(shifted, dtype=axes.static("axes").dtype).reshape(axes.static("axes").shape),
        axes.dtype,
    )[0]
    b.copy(node, [x.new, new], rule="reduce over axes + 1")


def _gather(b: Builder, node, ins: list[_In]) -> None:
    params, indices = ins[:2]
    if node.op == "Gather":
        if params.batched:
            raise _Refused("Gather (v1) of per-record params; use tf.gather (GatherV2)")
        axis, batch_dims = 0, 0
    else:
        if ins[2].batched:
            raise _Refused("its axis depends on the record")
        batch_dims = node.attr["batch_dims"].i
        axis = int(np.asarray(ins[2].static("axis")).reshape(()))
    if params.rank is None or indices.rank is None:
        raise _Refused("the rank of its params or indices is unknown")
    if axis < 0:
        axis += params.rank
    if batch_dims < 0:
        batch_dims += indices.rank
    if not 0 <= axis < params.rank:
        raise _Refused(f"axis {axis} is out of range for params of rank {params.rank}")
    if params.batched and indices.batched:
        new_axis, new_batch_dims = axis + 1, batch_dims + 1
    elif params.batched:
        if batch_dims:
            raise _Refused("batch_dims with per-record params and constant indices")
        new_axis, new_batch_dims = axis + 1, 0
    else:
        if axis != 0 or batch_dims:
            raise _Refused(
                "gathering per-record indices from constant params on an axis "
                "other than 0 (or with batch_dims) would put the batch axis "
                "inside the result"
            )
        new_axis, new_batch_dims = 0, 0
    if node.op == "Gather":
        b.copy(node, rule="gather")
        return
    attrs = {"batch_dims": _int_attr(new_batch_dims)}
    b.copy(
        node,
        [params.new, indices.new, _axis_const(b, node, ins[2], new_axis)],
        attrs=attrs,
        rule="gather on axis + 1" if params.batched else "gather",
    )


def _one_hot(b: Builder, node, ins: list[_In]) -> None:
    if not ins[0].batched or any(i.batched for i in ins[1:]):
        raise _Refused("its depth or values depend on the record")
    axis = node.attr["axis"].i
    attrs = {"axis": _int_attr(axis + 1 if axis >= 0 else axis)}
    b.copy(node, attrs=attrs, rule="one-hot on axis + 1")


def _ensure_shape(b: Builder, node, ins: list[_In]) -> None:
    shape = tf.TensorShape(node.attr["shape"].shape)
    if shape.rank is None:
        b.copy(node, rule="element-wise")
        return
    batched = tf.TensorShape([None]).concatenate(shape)
    b.copy(
        node,
        attrs={"shape": tf.compat.v1.AttrValue(shape=batched.as_proto())},
        rule="shape [None] + shape",
    )


def _shape(b: Builder, node, ins: list[_In]) -> None:
    x = ins[0]
    out_type = tf.as_dtype(node.attr["out_type"].type) if "out_type" in node.attr else tf.int32
    if x.shape.is_fully_defined():
        dims = x.shape.as_list()
        value = {"Shape": dims, "Size": int(np.prod(dims)), "Rank": len(dims)}[node.op]
        ref = _const(b, node.name, np.asarray(value), out_type)[0]
        b.ops[node.name] = ref.partition(":")[0]
        b._register(node, [ref], False)
        b.rules.append((node.name, node.op, "per-example shape, known (constant)"))
        return

    def build(t):
        shape = tf.shape(t, out_type=out_type)
        if node.op == "Shape":
            return [shape[1:]]
        if node.op == "Size":
            return [tf.reduce_prod(shape[1:])]
        return [tf.rank(t) - 1]  # Rank

    b.emit(node, build, [x], batched=False, rule="per-example shape (unbatched)")


def _assert(b: Builder, node, ins: list[_In]) -> None:
    cond = ins[0]
    if not cond.batched:
        b.copy(node, batched=False, rule="unbatched")
        return

    def build(c, *data):
        summarize = node.attr["summarize"].i
        return [tf.raw_ops.Assert(condition=tf.reduce_all(c), data=list(data), summarize=summarize)]

    b.emit(node, build, ins, rule="assert on every record of the batch")
