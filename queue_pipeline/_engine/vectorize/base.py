"""What every vectorize module shares.

An input's facts (``_In``), a refusal (``_Refused``), small graph helpers,
and the ``Builder`` interface the rules use.

The rewrite rules of batch-vectorized decoding, one small function per op family.

Each rule rebuilds one node of a lifted per-record region in batched form
(see NOTE [ Vectorizing a region ] in :mod:`queue_pipeline._engine.vectorize`, which
owns the walk and the public API). A rule receives the :class:`_Builder`
doing the rewrite, the node, and one :class:`_In` per input; it copies the
node (``b.copy``) or emits a batched replacement (``b.emit`` / ``b.helper``),
or raises :class:`_Refused` with the reason. ``_RULES`` (``rules.py``) maps op types to
rules.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np
import tensorflow as tf


_UNBATCHED = "unbatched (no source reaches it)"


class Builder(Protocol):
    """What a rule may use of the builder rewriting a region (builder._Builder).

    A rule copies its node (``copy``), emits a batched replacement (``emit``,
    ``helper``), or reads the builder's facts about the region so far.
    """

    exact: bool  # for the node being rewritten (False downstream of a random draw)
    out: Any  # the new GraphDef
    nodes: Mapping[str, Any]  # legacy node name -> NodeDef
    values: Any  # static values of unbatched tensors
    lengths: Mapping[str, int]  # fixed record lengths of sources
    ops: dict  # new node name -> legacy node name
    rules: list  # (node, op type, rule) applied so far

    def fresh(self, hint: str) -> str: ...
    def copy(self, node: Any, inputs: Sequence[str] | None = None, **kwargs: Any) -> None: ...
    def emit(self, node: Any, fn: Callable, args: Sequence[Any], **kwargs: Any) -> None: ...
    def helper(self, hint: str, fn: Callable, args: Sequence[Any]) -> list: ...
    def check_float(self, dtype: tf.DType, what: str) -> None: ...
    def forced_length(self, ref: str) -> bool: ...
    def batch_like(self) -> _In: ...
    def used(self, ref: str) -> bool: ...
    def _num_outputs(self, node: Any) -> int: ...
    def _register(self, node: Any, news: Sequence[str | None], batched: Any) -> None: ...


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


def _const(b: Builder, hint: str, value, dtype: tf.DType) -> tuple:
    """A constant in the new GraphDef, as a helper argument spec."""
    name = b.fresh(hint)
    node = b.out.node.add()
    node.name, node.op = name, "Const"
    node.attr["dtype"].type = dtype.as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
    return f"{name}:0", dtype, tf.TensorShape(np.shape(value))


def _batch_size(x: tf.Tensor, dtype=tf.int32) -> tf.Tensor:
    return tf.shape(x, out_type=dtype)[:1]


def _lift_to_batch(b: Builder, node, operand: _In, like: _In) -> str:
    """An unbatched operand broadcast to ``[B] + shape`` (B taken from `like`)."""
    return b.helper(
        f"{node.name}/broadcast",
        lambda c, x: [tf.broadcast_to(c[tf.newaxis], tf.concat([_batch_size(x), tf.shape(c)], 0))],
        [operand, like],
    )[0]


def _expand_to_rank(b: Builder, node, operand: _In, rank: int) -> str:
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


def _gd_ref(name: str) -> str:
    """A tensor name in GraphDef input spelling (``op`` for output 0)."""
    op, _, index = name.partition(":")
    return op if index in ("", "0") else name


def _with_shape(value: tf.Tensor, shape: tf.TensorShape, size) -> tf.Tensor:
    """`value` with static shape ``[size] + shape``, checked at run time as per record."""
    if shape.rank is not None:
        wanted = tf.TensorShape([None]).concatenate(shape)
        if value.shape.is_compatible_with(wanted) and value.shape.merge_with(wanted) != value.shape:
            value = tf.ensure_shape(value, wanted)
    if size is not None and value.shape.rank:
        value.set_shape(tf.TensorShape([size]).concatenate(value.shape[1:]))
    return value
