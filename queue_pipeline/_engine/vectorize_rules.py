"""The rewrite rules of batch-vectorized decoding, one small function per op family.

Each rule rebuilds one node of a lifted per-record region in batched form
(see NOTE [ Vectorizing a region ] in :mod:`queue_pipeline._engine.vectorize`, which
owns the walk and the public API). A rule receives the :class:`_Builder`
doing the rewrite, the node, and one :class:`_In` per input; it copies the
node (``b.copy``) or emits a batched replacement (``b.emit`` / ``b.helper``),
or raises :class:`_Refused` with the reason. ``_RULES`` maps op types to rules.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import tensorflow as tf

if TYPE_CHECKING:
    from queue_pipeline._engine.vectorize import _Builder


class _Refused(Exception):
    def __init__(self, reason: str, node=None):
        super().__init__(reason)
        self.reason = reason
        self.node = node


@dataclasses.dataclass
class _In:
    """One input of a node: where it is, whether batched, its per-example facts."""

    ref: str  # legacy tensor name, "op:i"
    new: str  # its name in the new GraphDef
    batched: bool
    shape: tf.TensorShape  # per example
    dtype: tf.DType
    value: np.ndarray | None  # static value, for unbatched tensors

    def static(self, what: str) -> np.ndarray:
        if self.batched or self.value is None:
            raise _Refused(f"its {what} is not a constant")
        return self.value

    @property
    def rank(self) -> int | None:
        return self.shape.rank

    def known_rank(self, what: str = "its input") -> int:
        """The per-example rank, or _Refused when it is unknown."""
        if self.shape.rank is None:
            raise _Refused(f"the rank of {what} is unknown")
        return self.shape.rank


def _canonical(ref: str) -> str:
    name, _, index = ref.partition(":")
    return f"{name}:{index or 0}"


def _axis(value, rank: int | None, extra: int = 0) -> int:
    """A per-example axis as a batched one: +1 if non-negative, unchanged if negative.

    `extra` widens the valid range for ops whose output gains axes (ExpandDims, Pack).
    """
    axis = int(np.asarray(value).reshape(()))
    if rank is None:
        raise _Refused("the rank of its input is unknown, so its axis cannot be shifted")
    if not -(rank + extra) <= axis < rank + extra:
        raise _Refused(f"axis {axis} is out of range for rank {rank}")
    return axis + 1 if axis >= 0 else axis


def _int_attr(value: int) -> tf.compat.v1.AttrValue:
    return tf.compat.v1.AttrValue(i=value)


def _list_attr(values: Sequence[int]) -> tf.compat.v1.AttrValue:
    return tf.compat.v1.AttrValue(list=tf.compat.v1.AttrValue.ListValue(i=list(values)))


def _const(b: _Builder, hint: str, value, dtype: tf.DType) -> tuple:
    """A constant in the new GraphDef, as a helper argument spec."""
    name = b.fresh(hint)
    node = b.out.node.add()
    node.name, node.op = name, "Const"
    node.attr["dtype"].type = dtype.as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
    return f"{name}:0", dtype, tf.TensorShape(np.shape(value))


def _batch_size(x: tf.Tensor, dtype=tf.int32) -> tf.Tensor:
    return tf.shape(x, out_type=dtype)[:1]


def _lift_to_batch(b: _Builder, node, operand: _In, like: _In) -> str:
    """An unbatched operand broadcast to ``[B] + shape`` (B taken from `like`)."""
    return b.helper(
        f"{node.name}/broadcast",
        lambda c, x: [tf.broadcast_to(c[tf.newaxis], tf.concat([_batch_size(x), tf.shape(c)], 0))],
        [operand, like],
    )[0]


def _expand_to_rank(b: _Builder, node, operand: _In, rank: int) -> str:
    """A batched operand with size-1 axes inserted after the batch axis up to `rank`."""
    count = rank - operand.known_rank()
    return b.helper(
        f"{node.name}/expand",
        lambda x: [
            tf.reshape(
                x, tf.concat([_batch_size(x), tf.ones([count], tf.int32), tf.shape(x)[1:]], 0)
            )
        ],
        [operand],
    )[0]


# ------------------------------------------------------------------------- rules

# Element-wise ops whose every element is one exact operation (see NOTE).
_EXACT_UNARY = frozenset(
    {
        "Identity",
        "StopGradient",
        "Snapshot",
        "PreventGradient",
        "Cast",
        "Neg",
        "Abs",
        "Sqrt",
        "Floor",
        "Ceil",
        "Round",
        "Rint",
        "Sign",
        "Square",
        "IsNan",
        "IsInf",
        "IsFinite",
        "LogicalNot",
        "Invert",
        "ZerosLike",
        "OnesLike",
        "CheckNumerics",
        "Real",
        "Imag",
        "Conj",
        "Bitcast",
        "StringStrip",
        "StringLower",
        "StringUpper",
        "DecodeBase64",
        "EncodeBase64",
        "StringLength",
        "StringToNumber",
        "AsString",
        "StringToHashBucketFast",
        "StringToHashBucketStrong",
        "StringToHashBucket",
        "StaticRegexReplace",
        "StaticRegexFullMatch",
    }
)
# Element-wise float functions computed by SIMD polynomials (see NOTE).
_INEXACT_UNARY = frozenset(
    {
        "Exp",
        "Expm1",
        "Log",
        "Log1p",
        "Sin",
        "Cos",
        "Tan",
        "Asin",
        "Acos",
        "Atan",
        "Sinh",
        "Cosh",
        "Tanh",
        "Asinh",
        "Acosh",
        "Atanh",
        "Sigmoid",
        "Rsqrt",
        "Erf",
        "Erfc",
        "Softplus",
        "Softsign",
        "Elu",
        "Selu",
        "Relu",
        "Relu6",
        "Lgamma",
        "Digamma",
        "Reciprocal",
        "Inv",
    }
)
_SIZE_KEEPING_UNARY = (_EXACT_UNARY | _INEXACT_UNARY) - {"Bitcast"}
_BINARY = frozenset(
    {
        "Add",
        "AddV2",
        "Sub",
        "Mul",
        "RealDiv",
        "Div",
        "DivNoNan",
        "MulNoNan",
        "TruncateDiv",
        "FloorDiv",
        "FloorMod",
        "Mod",
        "TruncateMod",
        "Maximum",
        "Minimum",
        "SquaredDifference",
        "Equal",
        "NotEqual",
        "Less",
        "LessEqual",
        "Greater",
        "GreaterEqual",
        "LogicalAnd",
        "LogicalOr",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
        "LeftShift",
        "RightShift",
        "Pow",
        "Atan2",
        "Xlogy",
        "Xdivy",
    }
)
_INEXACT_BINARY = frozenset({"Pow", "Atan2", "Xlogy", "Xdivy"})


def _unary(b: _Builder, node, ins: list[_In]) -> None:
    if node.op in _INEXACT_UNARY:
        b.check_float(ins[0].dtype, node.op)
    b.copy(node, rule="element-wise")


def _broadcasting(b: _Builder, node, ins: list[_In], operands: Sequence[int]) -> list[str]:
    """Inputs of a broadcasting op, batched operands expanded to the common rank."""
    if any(ins[i].rank is None for i in operands):
        raise _Refused(
            "an operand's rank is unknown, so broadcasting against the batch axis cannot be checked"
        )
    ranks = {i: ins[i].known_rank() for i in operands}
    top = max(ranks.values())
    news = [i.new for i in ins]
    for i in operands:
        if ins[i].batched and ranks[i] < top:
            news[i] = _expand_to_rank(b, node, ins[i], top)
    return news


_ADDS = frozenset({"Add", "AddV2", "Sub", "AddN", "BiasAdd"})
_MULS = frozenset({"Mul", "RealDiv", "Div"})
_PASS_THROUGH = frozenset({"Identity", "StopGradient", "Snapshot"})


def _producer(b: _Builder, ref: str):
    """The region node computing `ref`, through identities; None for sources and constants."""
    while ref not in b.values:
        node = b.nodes.get(ref.partition(":")[0])
        if node is None or node.op not in _PASS_THROUGH:
            return node
        ref = _canonical(node.input[0])
    return None


def _check_regrouping(b: _Builder, node, ins: list[_In]) -> None:
    """Refuses float arithmetic that Grappler may regroup differently per shape.

    See NOTE [ Grappler and float arithmetic ].
    """
    if not b.exact or not ins[0].dtype.is_floating:
        return
    why = "may be regrouped by Grappler's arithmetic optimizer depending on static shapes"
    producers = [_producer(b, i.ref) for i in ins]
    kinds = [p.op if p is not None else None for p in producers]
    if node.op == "AddN":
        raise _Refused(f"a float AddN {why}")
    if node.op in _ADDS and any(k in _ADDS for k in kinds):
        raise _Refused(
            f"a chain of float additions {why} (pass exact=False to accept last-bit differences)"
        )
    if node.op in _MULS and any(k in _MULS for k in kinds):
        raise _Refused(
            f"a chain of float multiplications or divisions {why} (pass "
            "exact=False to accept last-bit differences)"
        )
    if node.op in _ADDS and all(k in _MULS for k in kinds):
        raise _Refused(f"a float sum of products {why} (common factors are hoisted)")
    if node.op in ("RealDiv", "Div") and kinds[1] in ("Sqrt", "Rsqrt"):
        raise _Refused(f"a float division by a square root {why} (into Rsqrt)")
    zero = [i.value is not None and not np.any(i.value) for i in ins]
    if (node.op in ("Add", "AddV2", "Mul") and any(zero)) or (
        node.op in ("Sub", "RealDiv", "Div") and zero[0]
    ):
        raise _Refused(
            f"a float {node.op} with a constant zero {why} (dropping it changes the sign of zero)"
        )


def _binary(b: _Builder, node, ins: list[_In]) -> None:
    if node.op in _INEXACT_BINARY:
        b.check_float(ins[0].dtype, node.op)
    _check_regrouping(b, node, ins)
    if (
        node.op in ("Equal", "NotEqual")
        and "incompatible_shape_error" in node.attr
        and not node.attr["incompatible_shape_error"].b
    ):
        raise _Refused(
            "incompatible_shape_error=False returns a scalar for mismatched "
            "shapes, which differs per record"
        )
    b.copy(node, _broadcasting(b, node, ins, (0, 1)), rule="element-wise, broadcast")


def _select_v2(b: _Builder, node, ins: list[_In]) -> None:
    b.copy(node, _broadcasting(b, node, ins, (0, 1, 2)), rule="element-wise, broadcast")


def _select(b: _Builder, node, ins: list[_In]) -> None:
    cond, then, other = ins
    if (
        not (then.batched and other.batched)
        or cond.rank is None
        or then.rank is None
        or cond.rank not in (0, then.rank)
    ):
        raise _Refused(
            "Select needs batched branches and a condition that is a scalar "
            "or of the branches' rank per record"
        )
    news = [cond.new, then.new, other.new]
    if not cond.batched:
        news[0] = _lift_to_batch(b, node, cond, then)
    b.copy(node, news, rule="element-wise")


def _clip(b: _Builder, node, ins: list[_In]) -> None:
    x = ins[0]
    for bound in ins[1:]:
        if not bound.batched and bound.rank != 0:
            raise _Refused(
                "a constant bound that is not a scalar does not broadcast against the batch"
            )
        if bound.batched and bound.rank != x.rank:
            raise _Refused("a bound and the input differ in rank")
    if not x.batched:
        raise _Refused("the clipped input does not depend on the record but a bound does")
    b.copy(node, rule="element-wise")


def _same_shape_nary(b: _Builder, node, ins: list[_In]) -> None:  # AddN
    _check_regrouping(b, node, ins)
    like = next(i for i in ins if i.batched)
    news = [i.new if i.batched else _lift_to_batch(b, node, i, like) for i in ins]
    b.copy(node, news, rule="element-wise")


def _string_join(b: _Builder, node, ins: list[_In]) -> None:
    if any(not i.batched and i.rank != 0 for i in ins):
        raise _Refused("a constant input that is not a scalar does not broadcast against the batch")
    ranks = {i.rank for i in ins if i.batched}
    if len(ranks) != 1 or None in ranks:
        raise _Refused("its per-record inputs differ in rank")
    b.copy(node, rule="element-wise")


def _regex(b: _Builder, node, ins: list[_In]) -> None:  # RegexReplace, RegexFullMatch
    if not ins[0].batched or any(i.batched for i in ins[1:]):
        raise _Refused("its pattern or rewrite depends on the record")
    b.copy(node, rule="element-wise")


def _substr(b: _Builder, node, ins: list[_In]) -> None:
    x, pos, length = ins
    for arg in (pos, length):
        if (not arg.batched and arg.rank != 0) or (arg.batched and arg.rank != x.rank):
            raise _Refused("`pos` and `len` must be scalars or of the input's shape")
    if not x.batched:
        raise _Refused("the input does not depend on the record but `pos` or `len` does")
    b.copy(node, rule="element-wise")


def _decode_csv(b: _Builder, node, ins: list[_In]) -> None:
    if any(i.batched for i in ins[1:]):
        raise _Refused("its record_defaults depend on the record")
    b.copy(node, rule="element-wise over records")


def _decode_raw(b: _Builder, node, ins: list[_In]) -> None:
    source = ins[0]
    if any(i.batched for i in ins[1:]):
        raise _Refused("its fixed_length depends on the record")
    if source.ref not in b.lengths and not b.forced_length(f"{node.name}:0"):
        raise _Refused(
            "the byte length of its input may differ between records, and a batch of "
            "strings of different lengths has no dense decoding (declare the source "
            "fixed-length, or reshape the result to a fully known shape)"
        )
    b.copy(node, rule="element-wise over strings of one length")


def _parse_check(
    b: _Builder,
    node,
    ins: list[_In],
    num_sparse: int,
    num_dense: int,
    num_ragged: int,
    dense_shapes,
    sparse_keys,
) -> None:
    if not ins[0].batched or any(i.batched for i in ins[1:]):
        raise _Refused("its keys, names or defaults depend on the record")
    outputs = b._num_outputs(node)
    sparse = range(3 * num_sparse)
    ragged = range(3 * num_sparse + num_dense, outputs)
    for i in list(sparse) + list(ragged):
        if b.used(f"{node.name}:{i}"):
            key = ""
            if i < 3 * num_sparse and sparse_keys is not None:
                key = f" {sparse_keys[i % num_sparse]!r}"
            raise _Refused(
                f"sparse or ragged feature{key} is used, and a batch of "
                "per-record sparse values has no dense batch form"
            )
    for shape in dense_shapes:
        if not tf.TensorShape(shape).is_fully_defined():
            raise _Refused(
                f"a dense feature has shape {tf.TensorShape(shape)} with an "
                "unknown size (FixedLenSequenceFeature), which batching would "
                "pad"
            )
    if ins[0].rank not in (0, 1):
        raise _Refused(f"it parses a per-record tensor of rank {ins[0].rank}")


def _parse_example_v2(b: _Builder, node, ins: list[_In]) -> None:
    num_sparse = node.attr["num_sparse"].i
    dense = [tf.TensorShape(s) for s in node.attr["dense_shapes"].list.shape]
    keys = ins[2].value
    _parse_check(
        b,
        node,
        ins,
        num_sparse,
        len(dense),
        len(node.attr["ragged_value_types"].list.type),
        dense,
        None if keys is None else [k.decode() for k in np.ravel(keys)],
    )
    names = ins[1].value
    news = [i.new for i in ins]
    if names is None or np.size(names):
        news[1] = _const(b, f"{node.name}/names", np.zeros([0], object), tf.string)[0]
    if ins[0].rank == 0:
        b.copy(node, news, rule="parse on the batch (ParseExampleV2 on a vector)")
        return
    attrs = {k: node.attr[k] for k in node.attr}

    def parse(serialized, *rest):
        flat = tf.reshape(serialized, [-1])
        out = tf.raw_ops.ParseExampleV2(
            serialized=flat,
            names=rest[0],
            sparse_keys=rest[1],
            dense_keys=rest[2],
            ragged_keys=rest[3],
            dense_defaults=list(rest[4:]),
            num_sparse=num_sparse,
            sparse_types=list(attrs["sparse_types"].list.type),
            ragged_value_types=list(attrs["ragged_value_types"].list.type),
            ragged_split_types=list(attrs["ragged_split_types"].list.type),
            dense_shapes=dense,
        )
        lead = tf.shape(serialized)
        values = [
            tf.reshape(v, tf.concat([lead, s.as_list()], 0))
            for v, s in zip(out.dense_values, dense)
        ]
        return (
            [None] * (3 * num_sparse)
            + values
            + [None] * (b._num_outputs(node) - 3 * num_sparse - len(dense))
        )

    args: list[_In | tuple] = [ins[0], (news[1], tf.string, tf.TensorShape([0])), *ins[2:]]
    b.emit(node, parse, args, rule="parse on the flattened batch, reshaped back")


def _parse_single_example(b: _Builder, node, ins: list[_In]) -> None:
    num_sparse = node.attr["num_sparse"].i
    dense = [tf.TensorShape(s) for s in node.attr["dense_shapes"].list.shape]
    sparse_keys = [k.decode() for k in node.attr["sparse_keys"].list.s]
    dense_keys = [k.decode() for k in node.attr["dense_keys"].list.s]
    _parse_check(b, node, ins, num_sparse, len(dense), 0, dense, sparse_keys)
    if ins[0].rank != 0:
        raise _Refused("ParseSingleExample of a non-scalar")
    sparse_types = list(node.attr["sparse_types"].list.type)

    def parse(serialized, *defaults):
        out = tf.raw_ops.ParseExampleV2(
            serialized=serialized,
            names=tf.zeros([0], tf.string),
            sparse_keys=tf.constant(sparse_keys, tf.string, shape=[num_sparse]),
            dense_keys=tf.constant(dense_keys, tf.string, shape=[len(dense_keys)]),
            ragged_keys=tf.zeros([0], tf.string),
            dense_defaults=list(defaults),
            num_sparse=num_sparse,
            sparse_types=sparse_types,
            ragged_value_types=[],
            ragged_split_types=[],
            dense_shapes=dense,
        )
        return [None] * (3 * num_sparse) + list(out.dense_values)

    b.emit(node, parse, ins, rule="ParseSingleExample -> ParseExampleV2 on the batch")


def _reshape(b: _Builder, node, ins: list[_In]) -> None:
    x, shape = ins
    if shape.batched:
        raise _Refused("its target shape depends on the record")
    new_shape = b.helper(
        f"{node.name}/shape", lambda t, s: [tf.concat([_batch_size(t, s.dtype), s], 0)], [x, shape]
    )[0]
    b.copy(node, [x.new, new_shape], rule="reshape to [B] + shape")


def _with_batch_entry(b: _Builder, node, arg: _In, entry, hint: str) -> str:
    """A per-example spec vector (begin, size, multiples, paddings) with a batch entry first."""
    if arg.batched:
        raise _Refused(f"its {hint} depends on the record")
    return b.helper(
        f"{node.name}/{hint}", lambda v: [tf.concat([tf.constant([entry], v.dtype), v], 0)], [arg]
    )[0]


def _strided_slice(b: _Builder, node, ins: list[_In]) -> None:
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


def _slice(b: _Builder, node, ins: list[_In]) -> None:
    x, begin, size = ins
    if not x.batched:
        raise _Refused("its begin or size depends on the record")
    b.copy(
        node,
        [
            x.new,
            _with_batch_entry(b, node, begin, 0, "begin"),
            _with_batch_entry(b, node, size, -1, "size"),
        ],
        rule="slice with a full batch axis first",
    )


def _tile(b: _Builder, node, ins: list[_In]) -> None:
    x, multiples = ins
    if not x.batched:
        raise _Refused("its multiples depend on the record")
    b.copy(
        node,
        [x.new, _with_batch_entry(b, node, multiples, 1, "multiples")],
        rule="tile with multiple 1 on the batch axis",
    )


def _pad(b: _Builder, node, ins: list[_In]) -> None:
    x, paddings = ins[:2]
    if not x.batched or any(i.batched for i in ins[1:]):
        raise _Refused("its paddings or constant depend on the record")
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


def _transpose(b: _Builder, node, ins: list[_In]) -> None:
    x, perm = ins
    values = perm.static("permutation")
    rank = x.rank
    if rank is None or sorted(values.tolist()) != list(range(rank)):
        raise _Refused("its permutation is not one of the per-record axes")
    new = _const(b, f"{node.name}/perm", [0] + [p + 1 for p in values.tolist()], perm.dtype)[0]
    b.copy(node, [x.new, new], rule="transpose with the batch axis first")


def _axis_const(b: _Builder, node, arg: _In, axis: int) -> str:
    value = np.asarray(axis).reshape(arg.value.shape) if arg.value is not None else axis
    return _const(b, f"{node.name}/axis", value, arg.dtype)[0]


def _expand_dims(b: _Builder, node, ins: list[_In]) -> None:
    x, axis = ins
    if not x.batched:
        raise _Refused("its axis depends on the record")
    shifted = _axis(axis.static("axis"), x.rank, extra=1)
    b.copy(node, [x.new, _axis_const(b, node, axis, shifted)], rule="axis + 1")


def _squeeze(b: _Builder, node, ins: list[_In]) -> None:
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


def _batched_operands(b: _Builder, node, ins: list[_In]) -> list[str]:
    like = next(i for i in ins if i.batched)
    return [i.new if i.batched else _lift_to_batch(b, node, i, like) for i in ins]


def _pack(b: _Builder, node, ins: list[_In]) -> None:
    axis = _axis(node.attr["axis"].i, ins[0].rank, extra=1)
    b.copy(
        node,
        _batched_operands(b, node, ins),
        attrs={"axis": _int_attr(axis)},
        rule="stack on axis + 1",
    )


def _unpack(b: _Builder, node, ins: list[_In]) -> None:
    axis = _axis(node.attr["axis"].i, ins[0].rank)
    b.copy(node, attrs={"axis": _int_attr(axis)}, rule="unstack on axis + 1")


def _concat_v2(b: _Builder, node, ins: list[_In]) -> None:
    values, axis = ins[:-1], ins[-1]
    if axis.batched:
        raise _Refused("its axis depends on the record")
    shifted = _axis(axis.static("axis"), values[0].rank)
    news = _batched_operands(b, node, values) + [_axis_const(b, node, axis, shifted)]
    b.copy(node, news, rule="concat on axis + 1")


def _split(b: _Builder, node, ins: list[_In]) -> None:
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


def _reverse(b: _Builder, node, ins: list[_In]) -> None:
    x, axes = ins
    if not x.batched:
        raise _Refused("its axes depend on the record")
    shifted = [_axis(a, x.rank) for a in np.ravel(axes.static("axes"))]
    new = _const(
        b, f"{node.name}/axes", np.asarray(shifted).reshape(axes.static("axes").shape), axes.dtype
    )[0]
    b.copy(node, [x.new, new], rule="reverse axes + 1")


def _reduction(b: _Builder, node, ins: list[_In]) -> None:
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


def _gather(b: _Builder, node, ins: list[_In]) -> None:
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


def _one_hot(b: _Builder, node, ins: list[_In]) -> None:
    if not ins[0].batched or any(i.batched for i in ins[1:]):
        raise _Refused("its depth or values depend on the record")
    axis = node.attr["axis"].i
    attrs = {"axis": _int_attr(axis + 1 if axis >= 0 else axis)}
    b.copy(node, attrs=attrs, rule="one-hot on axis + 1")


def _ensure_shape(b: _Builder, node, ins: list[_In]) -> None:
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


def _shape(b: _Builder, node, ins: list[_In]) -> None:
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


def _assert(b: _Builder, node, ins: list[_In]) -> None:
    cond = ins[0]
    if not cond.batched:
        b.copy(node, batched=False, rule="unbatched")
        return

    def build(c, *data):
        summarize = node.attr["summarize"].i
        return [tf.raw_ops.Assert(condition=tf.reduce_all(c), data=list(data), summarize=summarize)]

    b.emit(node, build, ins, rule="assert on every record of the batch")


_RULES: dict[str, Callable] = {
    **{op: _unary for op in _EXACT_UNARY | _INEXACT_UNARY},
    **{op: _binary for op in _BINARY},
    "SelectV2": _select_v2,
    "Select": _select,
    "ClipByValue": _clip,
    "AddN": _same_shape_nary,
    "StringJoin": _string_join,
    "RegexReplace": _regex,
    "RegexFullMatch": _regex,
    "Substr": _substr,
    "DecodeCSV": _decode_csv,
    "DecodeRaw": _decode_raw,
    "ParseExampleV2": _parse_example_v2,
    "ParseSingleExample": _parse_single_example,
    "Reshape": _reshape,
    "StridedSlice": _strided_slice,
    "Slice": _slice,
    "Tile": _tile,
    "Pad": _pad,
    "PadV2": _pad,
    "MirrorPad": _pad,
    "Transpose": _transpose,
    "ExpandDims": _expand_dims,
    "Squeeze": _squeeze,
    "Pack": _pack,
    "Unpack": _unpack,
    "ConcatV2": _concat_v2,
    "Split": _split,
    "SplitV": _split,
    "ReverseV2": _reverse,
    **{op: _reduction for op in ("Sum", "Prod", "Max", "Min", "Mean", "All", "Any")},
    "GatherV2": _gather,
    "Gather": _gather,
    "OneHot": _one_hot,
    "EnsureShape": _ensure_shape,
    "Shape": _shape,
    "Size": _shape,
    "Rank": _shape,
    "Assert": _assert,
}
