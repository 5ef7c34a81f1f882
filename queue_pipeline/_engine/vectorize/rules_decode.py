"""Vectorize rules for decoding ops: strings, regexes, DecodeCSV, DecodeRaw, ParseExample."""

from __future__ import annotations


import numpy as np
import tensorflow as tf

from queue_pipeline._engine.vectorize.base import (
    Builder,
    _In,
    _Refused,
    _const,
)


def _string_join(b: Builder, node, ins: list[_In]) -> None:
    if any(not i.batched and i.rank != 0 for i in ins):
        raise _Refused("a constant input that is not a scalar does not broadcast against the batch")
    ranks = {i.rank for i in ins if i.batched}
    if len(ranks) != 1 or None in ranks:
        raise _Refused("its per-record inputs differ in rank")
    b.copy(node, rule="element-wise")


def _regex(b: Builder, node, ins: list[_In]) -> None:  # RegexReplace, RegexFullMatch
    if not ins[0].batched or any(i.batched for i in ins[1:]):
        raise _Refused("its pattern or rewrite depends on the record")
    b.copy(node, rule="element-wise")


def _substr(b: Builder, node, ins: list[_In]) -> None:
    x, pos, length = ins
    for arg in (pos, length):
        if (not arg.batched and arg.rank != 0) or (arg.batched and arg.rank != x.rank):
            raise _Refused("`pos` and `len` must be scalars or of the input's shape")
    if not x.batched:
        raise _Refused("the input does not depend on the record but `pos` or `len` does")
    b.copy(node, rule="element-wise")


def _decode_csv(b: Builder, node, ins: list[_In]) -> None:
    if any(i.batched for i in ins[1:]):
        raise _Refused("its record_defaults depend on the record")
    b.copy(node, rule="element-wise over records")


def _decode_raw(b: Builder, node, ins: list[_In]) -> None:
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
    b: Builder,
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


def _parse_example_v2(b: Builder, node, ins: list[_In]) -> None:
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


def _parse_single_example(b: Builder, node, ins: list[_In]) -> None:
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
