"""Vectorize rules for element-wise ops: unary, broadcasting binary, select, clip, AddN."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from queue_pipeline._engine.vectorize.base import (
    Builder,
    _In,
    _Refused,
    _canonical,
    _expand_to_rank,
    _lift_to_batch,
)


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


def _unary(b: Builder, node, ins: list[_In]) -> None:
    if node.op in _INEXACT_UNARY:
        b.check_float(ins[0].dtype, node.op)
    b.copy(node, rule="element-wise")


def _broadcasting(b: Builder, node, ins: list[_In], operands: Sequence[int]) -> list[str]:
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


def _producer(b: Builder, ref: str):
    """The region node computing `ref`, through identities; None for sources and constants."""
    while ref not in b.values:
        node = b.nodes.get(ref.partition(":")[0])
        if node is None or node.op not in _PASS_THROUGH:
            return node
        ref = _canonical(node.input[0])
    return None


def _check_regrouping(b: Builder, node, ins: list[_In]) -> None:
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


def _binary(b: Builder, node, ins: list[_In]) -> None:
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


def _select_v2(b: Builder, node, ins: list[_In]) -> None:
    cond, then, other = ins
    if (
        cond.batched
        and cond.rank == 0
        and then.batched
        and other.batched
        and then.shape.is_fully_defined()
        and then.shape == other.shape
        and then.rank
    ):
        # A scalar per record picks whole rows: v1 Select of a [B] condition
        # copies each row from one side, where SelectV2 broadcasting [B, 1, ...]
        # visits every element (43 against 13 us an example for 64 56x56x3
        # uint8 images, measured; the same values).
        b.emit(
            node,
            lambda c, t, e: [tf.raw_ops.Select(condition=c, x=t, y=e)],
            ins,
            rule="rows picked by a scalar per record (Select)",
        )
        return
    b.copy(node, _broadcasting(b, node, ins, (0, 1, 2)), rule="element-wise, broadcast")


def _select(b: Builder, node, ins: list[_In]) -> None:
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


def _clip(b: Builder, node, ins: list[_In]) -> None:
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


def _same_shape_nary(b: Builder, node, ins: list[_In]) -> None:  # AddN
    _check_regrouping(b, node, ins)
    like = next(i for i in ins if i.batched)
    news = [i.new if i.batched else _lift_to_batch(b, node, i, like) for i in ins]
    b.copy(node, news, rule="element-wise")


def _identity_n(b: Builder, node, ins: list[_In]) -> None:
    """Each output is its input (a lowered conditional or switch keeps its name as one)."""
    b.copy(node, batched=[i.batched for i in ins], rule="each output its input")
