"""A span of table rows -> placed, encoded Examples: the workers' side of ``csv-table:``.

See NOTE [ Table rows read in the workers ] in tables.py. A worker reads its
span's bytes, parses them with the CSV reader, types and encodes each column
in bulk, places each row by the SHA-256 of its identity ``FILE:LINE`` (as
``assign.assign`` does) and keeps each shard's records in input order. Only
a span with a bad row goes row by row, to name each bad row's reason.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
from typing import Any, Callable, NamedTuple

import numpy as np

from queue_pipeline._convert import assign as _assign
from queue_pipeline._convert import features as _features
from queue_pipeline._convert.images import open_binary
from queue_pipeline._convert.tables import INT64_RANGE, Span, plain_cells

__all__ = ["TableSpec", "convert_span", "encode_rows"]


class TableSpec(NamedTuple):
    """What every worker needs to convert a table's spans.

    Attributes:
      header: the column names, in file order.
      types: each column's type (``int64``, ``float32`` or ``string``).
      split: the split fractions (``assign.parse_split``).
      shards: the shard count of each split.
    """

    header: tuple[str, ...]
    types: tuple[str, ...]
    split: dict[str, float]
    shards: dict[str, int]


def _read_span(span: Span) -> str:
    with open_binary(span.file) as f:
        f.seek(span.start)
        data = f.read(span.end - span.start)
    return data.decode("utf-8")


def convert_span(
    span: Span, spec: TableSpec
) -> tuple[dict[tuple[str, int], list[bytes]], list[dict[str, Any]], int]:
    """The records of `span` by ``(split, shard)`` in input order, its bad rows, its row count.

    Raises:
      UnicodeDecodeError: the span is not UTF-8 (the launcher checked the whole file).
    """
    text = _read_span(span)
    width = len(spec.header)
    errors: list[dict[str, Any]] = []
    plain = plain_cells(text, width) if span.plain else None
    if plain is not None:  # no blank, short or long row: the usual case
        cells, count = plain
        rows = None
    else:
        rows = list(csv.reader(io.StringIO(text, newline="")))
        count = len(rows)
        cells = None
        if all(len(row) == width for row in rows):
            cells = list(itertools.chain.from_iterable(rows))
    lines: list[int] | range = range(span.line, span.line + count)
    records = None
    if cells is not None:
        try:
            records = encode_rows(spec, cells)
        except ValueError:  # a bad cell: row by row, for its reason
            pass
    if records is None:
        if rows is None:
            rows = list(csv.reader(io.StringIO(text, newline="")))
        numbered = [(line, row) for line, row in zip(lines, rows) if row]
        lines, records, errors = _row_by_row(span, spec, numbered)
    placed: dict[tuple[str, int], list[bytes]] = {}
    for where, record in zip(_places(span.file, lines, spec), records):
        mine = placed.get(where)
        if mine is None:
            placed[where] = [record]
        else:
            mine.append(record)
    return placed, errors, len(records) + len(errors)


def _places(file: str, lines, spec: TableSpec):
    """The ``(split, shard)`` of each row: ``assign.assign`` of ``FILE:LINE``, in bulk."""
    if len(spec.split) == 1:
        (name,) = spec.split
        count = spec.shards[name]
        if count == 1:
            return itertools.repeat((name, 0))
    place = _assign.placer(spec.split, spec.shards)
    prefix = f"{file}:".encode("utf-8")
    sha256 = hashlib.sha256
    return [place(sha256(b"%s%d" % (prefix, line)).digest()) for line in lines]


def _row_by_row(span: Span, spec: TableSpec, numbered: list[tuple[int, list[str]]]):
    width = len(spec.header)
    good_lines, good_cells, errors = [], [], []
    for line, row in numbered:
        reason = _reason(spec, row, width)
        if reason is None:
            good_lines.append(line)
            good_cells += row
        else:
            errors.append({"record": f"{span.file}:{line}", "file": span.file, "reason": reason})
    return good_lines, encode_rows(spec, good_cells), errors


def _reason(spec: TableSpec, row: list[str], width: int) -> str | None:
    """Why `row` is not a record of the table, or None."""
    if len(row) != width:
        return f"{len(row)} fields; the header has {width}"
    for name, kind, cell in zip(spec.header, spec.types, row):
        if kind == "string":
            continue
        if cell == "":
            return f"empty {kind} cell in column {name!r}"
        try:
            if kind == "int64":
                if not INT64_RANGE[0] <= int(cell) <= INT64_RANGE[1]:
                    raise ValueError(cell)
            else:
                float(cell)
        except ValueError:
            return f"column {name!r}: {cell!r} is not {kind}"
    return None


# NOTE [ Table columns encoded in bulk ]
# An Example of a table row is its map entries in key order (NOTE [ Examples
# without TensorFlow ] in features.py), each ``0x0a len key 0x12 len
# Feature``, and a Feature of one value is a few tags, lengths and the value:
# for a string ``0x0a len 0x0a len utf8``, for an int64 ``0x1a len 0x0a len
# varint``, for a float32 ``0x12 0x06 0x0a 0x04`` and its 4 bytes. So each
# column is typed with one C-level ``map(int | float, cells)`` and the
# records are built column-wise in NumPy as *ragged* byte matrices (a row of
# bytes per record and its used length): constants, varints computed in bulk,
# the values; pieces are concatenated row by row with one boolean mask, and
# Python's per-row work is one slice. The bytes are those of
# ``features.serialize_features`` of the typed row (the tests compare).

# Pieces of a record: (uint8 matrix, used bytes of each row), one after another.
_Pieces = list[tuple[np.ndarray, np.ndarray]]


def encode_rows(spec: TableSpec, flat: list[str]) -> list[bytes]:
    """The serialized Examples of rows given as their cells in order, typed by `spec`.

    Raises:
      ValueError: a cell is not of its column's type (an empty numeric cell included).
    """
    if not flat:
        return []
    width = len(spec.header)
    count = len(flat) // width
    body: _Pieces = []
    for i in sorted(range(width), key=lambda i: spec.header[i]):
        feature = _FEATURES[spec.types[i]](flat[i::width])
        key = _features.entry_key(spec.header[i])
        body += _field(count, b"\x0a", [_constant(count, key), *_field(count, b"\x12", feature)])
    return _rows(_field(count, b"\x0a", body))


def _length(pieces: _Pieces) -> np.ndarray:
    return sum(n for _, n in pieces)  # type: ignore[return-value]


def _field(count: int, tag: bytes, pieces: _Pieces) -> _Pieces:
    """A length-delimited field: its tag, its length, `pieces`."""
    return [_constant(count, tag), _varint(_length(pieces)), *pieces]


def _constant(count: int, data: bytes) -> tuple[np.ndarray, np.ndarray]:
    matrix = np.broadcast_to(np.frombuffer(data, dtype=np.uint8), (count, len(data)))
    return matrix, np.full(count, len(data), dtype=np.int64)


def _varint(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The protobuf varints of `values` (int64, two's complement for negatives)."""
    unsigned = values.astype(np.int64).view(np.uint64)
    sizes = np.ones(len(unsigned), dtype=np.int64)
    for k in range(1, 10):
        sizes += unsigned >= np.uint64(1 << (7 * k))
    width = int(sizes.max()) if len(sizes) else 1
    matrix = np.empty((len(unsigned), width), dtype=np.uint8)
    for k in range(width):
        more = (sizes > k + 1).astype(np.uint8) << np.uint8(7)
        matrix[:, k] = ((unsigned >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8) | more
    return matrix, sizes


def _rows(pieces: _Pieces) -> list[bytes]:
    """Each row's used bytes of `pieces`, one after another: one bytes object per row."""
    mask = np.concatenate([np.arange(m.shape[1]) < n[:, None] for m, n in pieces], axis=1)
    data = np.concatenate([m for m, _ in pieces], axis=1)[mask].tobytes()
    ends = np.cumsum(_length(pieces)).tolist()
    return [data[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def _int_feature(cells: list[str]) -> _Pieces:
    try:
        values = np.array(list(map(int, cells)), dtype=np.int64)
    except OverflowError:
        raise ValueError("beyond int64") from None
    return _field(len(values), b"\x1a", _field(len(values), b"\x0a", [_varint(values)]))


def _float_feature(cells: list[str]) -> _Pieces:
    with np.errstate(over="ignore"):
        packed = np.array(list(map(float, cells)), dtype=np.float64).astype("<f4")
    values = packed.view(np.uint8).reshape(-1, 4), np.full(len(packed), 4, dtype=np.int64)
    return [_constant(len(packed), b"\x12\x06\x0a\x04"), values]


def _string_feature(cells: list[str]) -> _Pieces:
    data = [cell.encode("utf-8") for cell in cells]
    lengths = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
    size = max(1, int(lengths.max()))
    values = np.array(data, dtype=f"S{size}").view(np.uint8).reshape(len(data), size), lengths
    return _field(len(data), b"\x0a", _field(len(data), b"\x0a", [values]))


_FEATURES: dict[str, Callable[[list[str]], _Pieces]] = {
    "int64": _int_feature,
    "float32": _float_feature,
    "string": _string_feature,
}
