"""The rule table of batch-vectorized decoding: op type -> rule."""

from __future__ import annotations

from typing import Callable


from queue_pipeline._engine.vectorize.rules_decode import (
    _decode_csv,
    _decode_raw,
    _parse_example_v2,
    _parse_single_example,
    _regex,
    _string_join,
    _substr,
)
from queue_pipeline._engine.vectorize.rules_elementwise import (
    _BINARY,
    _EXACT_UNARY,
    _INEXACT_UNARY,
    _binary,
    _clip,
    _identity_n,
    _same_shape_nary,
    _select,
    _select_v2,
    _unary,
)
from queue_pipeline._engine.vectorize.rules_image import _adjust_contrast
from queue_pipeline._engine.vectorize.rules_random import DRAWS, draw
from queue_pipeline._engine.vectorize.rules_shape import (
    _assert,
    _concat_v2,
    _ensure_shape,
    _expand_dims,
    _gather,
    _one_hot,
    _pack,
    _pad,
    _reduction,
    _reshape,
    _reverse,
    _shape,
    _slice,
    _split,
    _squeeze,
    _strided_slice,
    _tile,
    _transpose,
    _unpack,
)


_RULES: dict[str, Callable] = {
    **{op: _unary for op in _EXACT_UNARY | _INEXACT_UNARY},
    **{op: _binary for op in _BINARY},
    "IdentityN": _identity_n,
    "AdjustContrastv2": _adjust_contrast,
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


# Unseeded random draws, applied only when the caller allows draws per batch
# (see NOTE [ Vectorizing a region ]).
_DRAW_RULES: dict[str, Callable] = {op: draw for op in DRAWS}
