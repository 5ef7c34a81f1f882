"""``csv-table:FILE[,FILE...]``: CSV files with a header, one Example feature per column.

Each column's type comes from `schema` (``"age:int64,name:string"``) or is
inferred from its non-empty cells: ``int64`` if every one is an integer, else
``float32`` if every one is a number, else ``string``. A row with the wrong
number of fields, an empty numeric cell or a cell that is not of its
column's type is a listing error (file, line, reason); the other rows are
records whose identity is ``FILE:LINE``.
"""

from __future__ import annotations

import csv
import os
from typing import Any, Callable

import numpy as np

from queue_pipeline._convert.sources import Listing

__all__ = ["COLUMN_TYPES", "list_tables", "parse_schema"]

_API = "queue_pipeline.convert"
COLUMN_TYPES = {
    "int64": "int64",
    "int": "int64",
    "float32": "float32",
    "float": "float32",
    "string": "string",
    "str": "string",
    "bytes": "string",
}


def _int64(cell: str) -> int:
    value = int(cell)
    if not -(2**63) <= value < 2**63:
        raise ValueError(cell)
    return value


_PARSERS: dict[str, Callable[[str], Any]] = {
    "int64": _int64,
    # a Python float holding the float32 value: the Example stores the same
    # float32, and the listing's chunks pickle several times faster than with
    # NumPy scalars (benchmarks/convert_profile.md)
    "float32": lambda cell: float(np.float32(float(cell))),
    "string": str,
}


def parse_schema(schema: str | dict[str, str] | None) -> dict[str, str]:
    """``"a:int64,b:string"`` (or a dict) -> ``{"a": "int64", "b": "string"}``.

    Raises:
      ValueError: a bad spelling or an unknown type.
    """
    if not schema:
        return {}
    if isinstance(schema, str):
        pairs = [p.strip().rpartition(":") for p in schema.split(",") if p.strip()]
        if any(not sep or not name for name, sep, _ in pairs):
            raise ValueError(
                f"{_API}: `schema` must look like 'age:int64,name:string'; got {schema!r}."
            )
        schema = {name.strip(): kind.strip() for name, _, kind in pairs}
    bad = {n: t for n, t in schema.items() if t not in COLUMN_TYPES}
    if bad:
        raise ValueError(
            f"{_API}: `schema` types must be one of {sorted(set(COLUMN_TYPES.values()))}; got "
            f"{bad!r}."
        )
    return {name: COLUMN_TYPES[kind] for name, kind in schema.items()}


def _infer(cells: list[str]) -> str:
    filled = [c for c in cells if c != ""]
    for kind in ("int64", "float32"):
        try:
            for cell in filled:
                _PARSERS[kind](cell)
        except ValueError:
            continue
        return kind if filled else "string"
    return "string"


def _read(file: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    if not os.path.isfile(file):
        raise ValueError(f"{_API}: `source`: no such file {file!r}.")
    with open(file, encoding="utf-8", newline="") as f:
        rows = [(line, row) for line, row in enumerate(csv.reader(f), start=1) if row]
    if not rows:
        raise ValueError(f"{_API}: `source`: {file!r} has no header row.")
    return rows[0][1], rows[1:]


def list_tables(source: str, files: list[str], schema: str | dict[str, str] | None) -> Listing:
    """The rows of `files` (one header, shared) as ``table`` records.

    Raises:
      ValueError: a file is missing or empty, the headers differ, or `schema`
        names a column no file has.
    """
    types = parse_schema(schema)
    tables = [(file, *_read(file)) for file in files if file]
    if not tables:
        raise ValueError(f"{_API}: `source` {source!r} names no file.")
    header = tables[0][1]
    for file, other, _ in tables[1:]:
        if other != header:
            raise ValueError(
                f"{_API}: `source`: {file!r} has the header {other!r}, {tables[0][0]!r} "
                f"has {header!r}. Fix: convert tables of one layout together."
            )
    unknown = sorted(set(types) - set(header))
    if unknown or len(set(header)) != len(header):
        raise ValueError(
            f"{_API}: the header {header!r} must name each column once and every `schema` "
            f"column; unknown: {unknown!r}."
        )
    width = len(header)
    for i, name in enumerate(header):
        if name not in types:
            types[name] = _infer(
                [row[i] for _, _, rows in tables for _, row in rows if len(row) == width]
            )
    features = {name: {"dtype": types[name], "shape": []} for name in header}
    listing = Listing(source, "table", features, [])
    for file, _, rows in tables:
        for line, row in rows:
            identity = f"{file}:{line}"
            values, reason = _typed(header, types, row)
            if reason:
                listing.errors.append({"record": identity, "file": file, "reason": reason})
            else:
                listing.records.append((identity, values))
    return listing


def _typed(header: list[str], types: dict[str, str], row: list[str]):
    if len(row) != len(header):
        return None, f"{len(row)} fields; the header has {len(header)}"
    values: dict[str, Any] = {}
    for name, cell in zip(header, row):
        kind = types[name]
        if cell == "" and kind != "string":
            return None, f"empty {kind} cell in column {name!r}"
        try:
            values[name] = _PARSERS[kind](cell)
        except ValueError:
            return None, f"column {name!r}: {cell!r} is not {kind}"
    return values, None
