"""What listing a convert SOURCE gives: :class:`Listing`, the records and what was wrong.

The type every kind of source lists into (sources.py for ``images:`` and
``csv:``, tables.py for ``csv-table:``, legacy.py for ``FILE.py:FUNCTION``)
and api.py reads: its own module, below all of them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Listing"]


@dataclasses.dataclass
class Listing:
    """The records of a source and what was wrong with it before any worker ran.

    Attributes:
      source: the SOURCE as given.
      kind: ``"image"`` (payload ``(path, label, synset)``), ``"table"``
        (payload: the row's typed values) or ``"example"`` (payload: a
        serialized Example).
      features: the feature spec (features.py).
      records: ``[(identity, payload), ...]``.
      errors: ``[{"record", "file", "reason"}, ...]``.
      classes: image classes in label order (label ``i + 1`` is ``classes[i]``).
      ignored: files of an ``images:DIR`` that are not images (by extension).
      spans: for ``table``: the byte ranges of rows the workers read
        (``tables.Span``); `records` is empty and bad rows are the job's.
    """

    source: str
    kind: str
    features: dict[str, dict[str, Any]]
    records: list[tuple[str, Any]]
    errors: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    classes: list[str] = dataclasses.field(default_factory=list)
    ignored: list[str] = dataclasses.field(default_factory=list)
    spans: list[Any] = dataclasses.field(default_factory=list)
