"""Python and NumPy values -> ``tf.train.Example`` features, and the feature spec of a conversion.

A feature spec is a JSON-able dict ``{name: {"dtype": "int64"|"float32"|
"string"|..., "shape": [d0, ...]}}``: what the reader parses each feature
back into (``tf.io.FixedLenFeature(shape, dtype)``, then a cast/reshape to the
original dtype). Examples are serialized deterministically (map fields in key
order), so the same values give the same bytes.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Mapping

import numpy as np

__all__ = [
    "MULTISET_MODULUS",
    "digest",
    "feature_kind",
    "multiset_add",
    "serialize_features",
]

# Example features hold three kinds of lists; every dtype maps to one.
_BYTES = ("string", "bytes")
_FLOATS = ("float16", "bfloat16", "float32", "float64")
MULTISET_MODULUS = 2**128


def feature_kind(dtype: str) -> str:
    """``"bytes_list"``, ``"float_list"`` or ``"int64_list"``: where `dtype` values go."""
    if dtype in _BYTES:
        return "bytes_list"
    if dtype in _FLOATS:
        return "float_list"
    return "int64_list"


def _example_module():
    from tensorflow.core.example import example_pb2  # noqa: PLC0415 - only in workers

    return example_pb2


def serialize_features(values: Mapping[str, Any]) -> bytes:
    """A serialized ``tf.train.Example`` of `values` (name -> bytes/str/int/float/array/list).

    Strings are UTF-8 encoded; ints and bools go to ``int64_list``; floats to
    ``float_list``; NumPy arrays by their dtype, flattened in C order.
    """
    example_pb2 = _example_module()
    example = example_pb2.Example()
    for name in sorted(values):
        _fill(example.features.feature[name], values[name])
    return example.SerializeToString(deterministic=True)


def _fill(feature, value: Any) -> None:
    array = np.asarray(value) if not isinstance(value, (bytes, str)) else None
    if array is None or array.dtype.kind in "SUO":
        items = [value] if array is None else list(array.reshape(-1))
        feature.bytes_list.value.extend(
            v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in items
        )
    elif array.dtype.kind == "f":
        feature.float_list.value.extend(array.reshape(-1).astype(np.float64).tolist())
    else:
        feature.int64_list.value.extend(array.reshape(-1).astype(np.int64).tolist())


def digest(record: bytes) -> int:
    """A 128-bit digest of one serialized record, for order-free multiset sums."""
    return int.from_bytes(hashlib.sha256(record).digest()[:16], "big")


def multiset_add(records: Iterable[bytes], total: int = 0) -> int:
    """`total` plus the digests of `records`, modulo 2**128: equal for equal multisets."""
    for record in records:
        total = (total + digest(record)) % MULTISET_MODULUS
    return total
