"""Python and NumPy values -> ``tf.train.Example`` features, and the feature spec of a conversion.

A feature spec is a JSON-able dict ``{name: {"dtype": "int64"|"float32"|
"string"|..., "shape": [d0, ...]}}``: what the reader parses each feature
back into (``tf.io.FixedLenFeature(shape, dtype)``, then a cast/reshape to the
original dtype). Examples are serialized deterministically (map fields in key
order), so the same values give the same bytes.
"""

from __future__ import annotations

import struct
from typing import Any, Mapping

import numpy as np

__all__ = [
    "entry_key",
    "feature_kind",
    "serialize_features",
]

# Example features hold three kinds of lists; every dtype maps to one.
_BYTES = ("string", "bytes")
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def feature_kind(dtype: str) -> str:
    """``"bytes_list"``, ``"float_list"`` or ``"int64_list"``: where `dtype` values go."""
    if dtype in _BYTES:
        return "bytes_list"
    if dtype in _FLOATS:
        return "float_list"
    return "int64_list"


# NOTE [ Examples without TensorFlow ]
# Beam's workers encode every record, and importing TensorFlow (for its
# ``example_pb2``) costs each worker process seconds of start-up. So an
# Example is written here straight in the protobuf wire format, which is
# small and fixed: ``Example.features`` (field 1) holds ``Features.feature``
# (field 1), a map whose entries are ``key`` (1) and a ``Feature`` (2), and a
# Feature is one of ``bytes_list`` (1), ``float_list`` (2) or ``int64_list``
# (3), each a ``value`` field 1 (bytes one by one; floats as packed
# little-endian float32; ints as packed varints, negatives in two's
# complement). Entries go in the order of their keys' UTF-8 bytes, so the
# bytes depend only on the values, not on the protobuf library's version or
# backend (its own "deterministic" map order is its own business). The tests
# parse every form back with TensorFlow's ``tf.train.Example``.


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = [bytes([i]) for i in range(0x80)]


def _field(tag: bytes, payload: bytes) -> bytes:
    return tag + _varint(len(payload)) + payload


_FLOAT32 = struct.Struct("<f")


def _ints(values) -> bytes:
    packed = b"".join(_varint(v if v >= 0 else v + 2**64) for v in values)
    return _field(b"\x1a", _field(b"\x0a", packed) if packed else b"")


def _floats(array: np.ndarray) -> bytes:
    with np.errstate(over="ignore"):
        packed = array.astype("<f4").tobytes()
    return _field(b"\x12", _field(b"\x0a", packed) if packed else b"")


def _bytes(values) -> bytes:
    items = b"".join(
        _field(b"\x0a", v.encode("utf-8") if isinstance(v, str) else bytes(v)) for v in values
    )
    return _field(b"\x0a", items)


def _feature(value: Any) -> bytes:
    if isinstance(value, (bytes, str)):
        return _bytes((value,))
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        number = int(value)
        packed = _varint(number if number >= 0 else number + 2**64)  # 1 to 10 bytes
        return b"\x1a" + _SMALL[len(packed) + 2] + b"\x0a" + _SMALL[len(packed)] + packed
    if isinstance(value, (float, np.floating)):
        try:
            return b"\x12\x06\x0a\x04" + _FLOAT32.pack(value)
        except OverflowError:  # beyond float32: numpy's cast gives the infinity protobuf stores
            return _floats(np.asarray([value], dtype=np.float64))
    array = np.asarray(value)
    if array.dtype.kind in "SUO":
        return _bytes(array.reshape(-1).tolist())
    if array.dtype.kind == "f":
        return _floats(array.reshape(-1).astype(np.float64))
    return _ints(array.reshape(-1).astype(np.int64).tolist())


def serialize_features(values: Mapping[str, Any]) -> bytes:
    """A serialized ``tf.train.Example`` of `values` (name -> bytes/str/int/float/array/list).

    Strings are UTF-8 encoded; ints and bools go to ``int64_list``; floats to
    ``float_list`` (as float32); NumPy arrays by their dtype, flattened in C
    order. No TensorFlow is imported (NOTE [ Examples without TensorFlow ]);
    the same values give the same bytes.
    """
    if not values:
        return b""
    # str order is code-point order, which is the UTF-8 bytes' order
    entries = b"".join(
        _field(b"\x0a", entry_key(name) + _field(b"\x12", _feature(values[name])))
        for name in sorted(values)
    )
    return _field(b"\x0a", entries)


def entry_key(name: str) -> bytes:
    """The ``key`` field of a map entry named `name` (a table's few names, cached)."""
    field = _KEYS.get(name)
    if field is None:
        field = _field(b"\x0a", name.encode("utf-8"))
        if len(_KEYS) < 10_000:
            _KEYS[name] = field
    return field


_KEYS: dict[str, bytes] = {}
