"""What a convert SOURCE names, listed into records: ``images:``, ``csv:``, ``csv-table:``.

Listing happens once, in the launching process (as the TPU tool reads its
CSV): each record is ``(identity, payload)`` (a table lists byte ranges of
rows instead: NOTE [ Table rows read in the workers ] in tables.py); ``identity`` is stable across
runs (NOTE [ Stable assignment ] in assign.py). A record that is wrong
before any file is opened (a CSV row with the wrong number of fields, a
label not in ``--labels``, a value that is not of its column's type) goes to
the listing's ``errors``, with the file, the line and the reason. The
per-record work (reading and decoding an image) is done by the pipeline's
workers.
"""

from __future__ import annotations

import csv
import os
from typing import Any

from queue_pipeline._convert.images import IMAGE_EXTENSIONS, IMAGE_FEATURES
from queue_pipeline._convert.listing import Listing
from queue_pipeline._convert.tables import list_tables

__all__ = ["SOURCE_FORMS", "Listing", "list_source"]

_API = "queue_pipeline.convert"
SOURCE_FORMS = "'images:DIR', 'csv:FILE', 'csv-table:FILE[,FILE...]' or 'FILE.py:FUNCTION'"


def _error(record: str, file: str, reason: str) -> dict[str, Any]:
    return {"record": record, "file": file, "reason": reason}


def list_source(source: str, *, labels: str | None = None, schema: Any = None) -> Listing:
    """Lists the records of `source` (see :data:`SOURCE_FORMS`) except ``FILE.py:FUNCTION``.

    Raises:
      ValueError: `source` has no known form, names no existing file or
        directory, or its tables disagree on their header.
    """
    form, sep, rest = source.partition(":")
    if not sep or not rest:
        raise ValueError(f"{_API}: `source` must be {SOURCE_FORMS}; got {source!r}.")
    if form == "images":
        return _images(source, rest, labels)
    if form == "csv":
        return _image_csv(source, rest, labels)
    if form == "csv-table":
        return list_tables(source, rest.split(","), schema)
    raise ValueError(f"{_API}: `source` must be {SOURCE_FORMS}; got {source!r}.")


def _read_labels(labels: str | None) -> list[str] | None:
    if labels is None:
        return None
    if not os.path.isfile(labels):
        raise ValueError(f"{_API}: `labels` file {labels!r} does not exist.")
    with open(labels, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def _images(source: str, directory: str, labels: str | None) -> Listing:
    if not os.path.isdir(directory):
        raise ValueError(f"{_API}: `source` {source!r}: {directory!r} is not a directory.")
    found = sorted(d for d in os.listdir(directory) if os.path.isdir(os.path.join(directory, d)))
    found = [d for d in found if not d.startswith(".")]
    classes = _read_labels(labels) or found
    listing = Listing(source, "image", dict(IMAGE_FEATURES), [], classes=list(classes))
    index = {name: i + 1 for i, name in enumerate(classes)}
    for name in found:
        root = os.path.join(directory, name)
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for file in sorted(files):
                path = os.path.join(folder, file)
                identity = os.path.relpath(path, directory).replace(os.sep, "/")
                if file.startswith(".") or not file.lower().endswith(IMAGE_EXTENSIONS):
                    listing.ignored.append(identity)
                elif name not in index:
                    listing.errors.append(_error(identity, path, f"label {name!r} not in `labels`"))
                else:
                    listing.records.append((identity, (path, index[name], name)))
    return listing


def _image_csv(source: str, file: str, labels: str | None) -> Listing:
    if not os.path.isfile(file):
        raise ValueError(f"{_API}: `source` {source!r}: no such file {file!r}.")
    base = os.path.dirname(os.path.abspath(file))
    rows: list[tuple[int, list[str]]] = []
    with open(file, encoding="utf-8", newline="") as f:
        for line, row in enumerate(csv.reader(f), start=1):
            if row and any(cell.strip() for cell in row):
                rows.append((line, [cell.strip() for cell in row]))
    if rows and [c.lower() for c in rows[0][1]] in (["path", "label"], ["image", "label"]):
        rows = rows[1:]  # a header
    classes = _read_labels(labels)
    if classes is None:
        classes = sorted({row[1] for _, row in rows if len(row) == 2})
    listing = Listing(source, "image", dict(IMAGE_FEATURES), [], classes=list(classes))
    index = {name: i + 1 for i, name in enumerate(classes)}
    seen: dict[str, int] = {}
    name = os.path.basename(file)
    for line, row in rows:
        where = f"{name}:{line}"
        if len(row) != 2:
            reason = f"line {line} has {len(row)} fields; `csv:` rows are 'path,label'"
            listing.errors.append(_error(where, file, reason))
            continue
        path, label = row
        full = path if os.path.isabs(path) or "://" in path else os.path.join(base, path)
        # The identity is the row's path and label (and its repeat count), not its line:
        # reordering the CSV changes no shard.
        key = f"{path},{label}"
        seen[key] = seen.get(key, 0) + 1
        identity = key if seen[key] == 1 else f"{key}#{seen[key]}"
        if label not in index:
            listing.errors.append(_error(where, full, f"label {label!r} not in `labels`"))
        else:
            listing.records.append((identity, (full, index[label], label)))
    return listing
