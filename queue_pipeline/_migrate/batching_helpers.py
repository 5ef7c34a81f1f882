"""A batching helper's tf.data version: the Dataset it is handed, a record object's fields.

NOTE [ A batching helper computing on its records ]
A batching helper (``make_batch(image, label, n)``, or ``make_batch(record,
n)`` handed a record object: NOTE [ A record passed as an object ]) may do
per-record work before it batches (a cast, a random flip, a reshape of the
label). Its version ``make_batch_dataset(dataset, n)`` maps that work over the
Dataset it is handed, as a pipeline function maps the work between its reader
and its batching call; the mapped Dataset is ``records`` from there on, so the
version binds ``records = dataset`` first (before, the map read ``records``
that nothing bound, and the proof failed with an UnboundLocalError). A record
object's attributes are the element, each read in the version by the name
:func:`~queue_pipeline._migrate.record_objects.names` gives it
(``record.image`` -> ``record_image``), since the object itself is gone. The
caller maps its record to those attributes (``record = read_record_record(value);
return record.image, record.label``; a reading helper called in the batching
helper's call, ``make_batch(read_record(queue), n)``, is named first, once,
so its code runs once per record).
"""

from __future__ import annotations

import re

import libcst.matchers as m

from queue_pipeline._migrate import record_objects
from queue_pipeline._migrate.base import Function

__all__ = ["element", "finished"]

_RECORDS = re.compile(r"(?<![\w.])records\b")
_BOUND = re.compile(r"\s*records = (?!.*(?<![\w.])records\b)")


def _renamed(fn: Function) -> dict[str, str]:
    """``param.attribute`` -> its name in `fn`'s version, for each record object `fn`
    computes on."""
    out: dict[str, str] = {}
    for param, attributes in fn.record_objects.items():
        out.update(record_objects.names(fn.node, param, attributes))
    return out


def element(fn: Function) -> list[str]:
    """The names of one element of the Dataset a batching helper's version is handed."""
    renamed = _renamed(fn)
    return [renamed.get(e, e) for p in fn.record_params for e in fn.element_of(p, p)]


def finished(fn: Function, lines: list[str]) -> list[str]:
    """`fn`'s version's body `lines` reading each record object's attributes by their
    names, and ``records = dataset`` bound where the body maps ``records`` first."""
    for spelled, name in _renamed(fn).items():
        param, attribute = spelled.split(".")
        pattern = re.compile(rf"(?<![\w.]){param}\s*\.\s*{attribute}\b")
        lines = [pattern.sub(name, line) for line in lines]
    first = next((ln for ln in lines if _RECORDS.search(ln)), None)
    if first is None or _BOUND.match(first):
        return lines
    at = 1 if _docstring(fn) else 0
    return lines[:at] + ["    records = dataset\n"] + lines[at:]


def _docstring(fn: Function) -> bool:
    body = fn.node.body.body
    return bool(body) and m.matches(
        body[0],
        m.SimpleStatementLine(body=[m.Expr(value=m.SimpleString() | m.ConcatenatedString())]),
    )
