"""``csv-table:FILE[,FILE...]``: CSV files with a header, one Example feature per column.

Each column's type comes from `schema` (``"age:int64,name:string"``) or is
inferred from its non-empty cells: ``int64`` if every one is an integer, else
``float32`` if every one is a number, else ``string``. A row with the wrong
number of fields, an empty numeric cell or a cell that is not of its
column's type is a bad record (file, line, reason); the other rows are
records whose identity is ``FILE:LINE`` (the row's number in its file,
blank rows counted, the header being row 1 when it is the first line).

NOTE [ Table rows read in the workers ]
The launching process reads each file's header and cuts the rest into
*spans*: byte ranges of about RANGE_BYTES that start and end at row
boundaries, each with the number of its first row, so a worker that parses
a span alone names its rows ``FILE:LINE`` as a parse of the whole file
would. When a file has no ``"`` and no lone ``\\r`` its rows end at its
``\\n`` bytes and cutting is a byte search; otherwise the launcher runs the
CSV reader over it to find row ends. Without a `schema` for every column
the launcher also reads every row once to infer the missing types (the
same types as typing each cell would give; a bulk ``map(int, ...)`` per
column). Parsing, typing, encoding, placing and writing each row is the
workers' (``rows.py``); bad rows are found there. Spans are a function of
the file's bytes and RANGE_BYTES alone, and a shard holds its rows in input
order (file, then row), so reruns write the same bytes whatever the number
of workers.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
from typing import NamedTuple

from queue_pipeline._convert.listing import Listing

__all__ = [
    "COLUMN_TYPES",
    "INT64_RANGE",
    "RANGE_BYTES",
    "Span",
    "infer_column",
    "list_tables",
    "parse_schema",
    "plain_cells",
]

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
RANGE_BYTES = 1 << 20
INT64_RANGE = (-(2**63), 2**63 - 1)  # the int64 cells' values, both ends included


class Span(NamedTuple):
    """Rows of one table file that a worker converts: bytes ``[start, end)`` of `file`.

    Attributes:
      file_index: the file's place in the source (spans sort in input order).
      start: the offset of the span's first row.
      end: the offset just past its last row.
      line: the row number of its first row in the file (1-based).
      file: the file's path, as named in the source.
      plain: the file has no ``"`` and no lone ``\r``: its rows are its lines
        and its cells what ``,`` separates (``plain_cells``).
    """

    file_index: int
    start: int
    end: int
    line: int
    file: str
    plain: bool


def plain_cells(text: str, width: int) -> tuple[list[str], int] | None:
    """The cells of `text`'s rows in order and the row count, if each row has `width` cells.

    `text` is whole rows of a plain file (``Span.plain``), where the CSV
    reader's rows are the lines split at ``,``. None when a row is blank or
    has another number of cells: the caller then reads it row by row.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    if not text:
        return [], 0
    if "\n\n" in text or text.startswith("\n"):
        return None
    lines = text.split("\n")
    if any(count != width - 1 for count in map(str.count, lines, itertools.repeat(","))):
        return None
    return text.replace("\n", ",").split(","), len(lines)


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


def infer_column(cells: list[str]) -> str:
    """``int64`` if every non-empty cell is an int64, else ``float32`` if a number, else string."""
    filled = [c for c in cells if c != ""]
    if not filled:
        return "string"
    try:
        ints = list(map(int, filled))
        if INT64_RANGE[0] <= min(ints) and max(ints) <= INT64_RANGE[1]:
            return "int64"
    except ValueError:
        pass
    try:
        for _ in map(float, filled):  # float32 takes any float (beyond its range: inf)
            pass
    except ValueError:
        return "string"
    return "float32"


def _rows_with_ends(text: str, ascii_only: bool):
    """``(row, byte offset just past it)`` of each CSV row of `text`."""
    lines = io.StringIO(text, newline="")
    at = 0

    def counted():
        nonlocal at
        for line in lines:
            at += len(line) if ascii_only else len(line.encode("utf-8"))
            yield line

    for row in csv.reader(counted()):
        yield row, at


def _scan(file_index: int, file: str) -> tuple[list[str], list[Span], bytes]:
    """The header, the spans and the bytes of one table file."""
    if not os.path.isfile(file):
        raise ValueError(f"{_API}: `source`: no such file {file!r}.")
    with open(file, "rb") as f:
        data = f.read()
    text = data.decode("utf-8")  # a file that is not UTF-8 fails here, before the job
    header: list[str] | None = None
    spans: list[Span] = []
    if b'"' not in data and data.count(b"\r") == data.count(b"\r\n"):
        # rows end at "\n" (NOTE [ Table rows read in the workers ])
        at, line = 0, 1
        while at < len(data) and header is None:
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end + 1
            if data[at:end].rstrip(b"\r\n"):
                header = next(csv.reader([data[at:end].decode("utf-8")]))
            at, line = end, line + 1
        while at < len(data):
            end = len(data)
            if at + RANGE_BYTES < len(data):
                cut = data.find(b"\n", at + RANGE_BYTES - 1)
                end = end if cut < 0 else cut + 1
            spans.append(Span(file_index, at, end, line, file, True))
            line += data.count(b"\n", at, end)
            at = end
    else:
        start = line = 0
        for number, (row, end) in enumerate(_rows_with_ends(text, len(text) == len(data)), 1):
            if header is None:
                if row:
                    header, start, line = row, end, number + 1
            elif end - start >= RANGE_BYTES:
                spans.append(Span(file_index, start, end, line, file, False))
                start, line = end, number + 1
        if header is not None and start < len(data):
            spans.append(Span(file_index, start, len(data), line, file, False))
    if header is None:
        raise ValueError(f"{_API}: `source`: {file!r} has no header row.")
    return header, spans, data


def list_tables(source: str, files: list[str], schema: str | dict[str, str] | None) -> Listing:
    """The header, column types and spans of `files` (one header, shared) as a ``table`` listing.

    Raises:
      ValueError: a file is missing or empty, the headers differ, or `schema`
        names a column no file has.
    """
    types = parse_schema(schema)
    files = [file for file in files if file]
    tables = [_scan(i, file) for i, file in enumerate(files)]
    if not tables:
        raise ValueError(f"{_API}: `source` {source!r} names no file.")
    header = tables[0][0]
    for file, (other, _, _) in zip(files[1:], tables[1:]):
        if other != header:
            raise ValueError(
                f"{_API}: `source`: {file!r} has the header {other!r}, {files[0]!r} "
                f"has {header!r}. Fix: convert tables of one layout together."
            )
    unknown = sorted(set(types) - set(header))
    if unknown or len(set(header)) != len(header):
        raise ValueError(
            f"{_API}: the header {header!r} must name each column once and every `schema` "
            f"column; unknown: {unknown!r}."
        )
    missing = [i for i, name in enumerate(header) if name not in types]
    if missing:
        columns = _columns(tables, len(header))
        for i in missing:
            types[header[i]] = infer_column(columns[i])
    features = {name: {"dtype": types[name], "shape": []} for name in header}
    listing = Listing(source, "table", features, [])
    listing.spans = [span for _, spans, _ in tables for span in spans]
    return listing


def _columns(tables, width: int) -> list[list[str]]:
    """The cells of every data row of `width` fields, column by column."""
    flat: list[str] = []
    for _, spans, data in tables:
        if not spans:
            continue
        body = data[spans[0].start :].decode("utf-8")
        cells = plain_cells(body, width) if spans[0].plain else None
        if cells is None:
            rows = [r for r in csv.reader(io.StringIO(body, newline="")) if len(r) == width]
            flat += itertools.chain.from_iterable(rows)
        else:
            flat += cells[0]
    return [flat[i::width] for i in range(width)]
