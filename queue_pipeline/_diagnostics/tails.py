"""The ``tail_warning`` diagnostic: a FixedLengthRecordReader's partial tail, named once.

TF 1.x's fixed-length reader silently drops the bytes of a file after its
last whole record (spec P21). :func:`warn_partial_tails` logs one warning per
file that a runner's readers will truncate, naming the file and the bytes
dropped; :func:`partial_tail` is the arithmetic, checked against the kernel
in the tests.
"""

from __future__ import annotations

import os
import threading
import time

import tensorflow as tf

from queue_pipeline._core import settings as _settings
from queue_pipeline._core.compat import logger
from queue_pipeline._diagnostics import sources

__all__ = ["partial_tail", "warn_partial_tails"]

_WARNED_LOCK = threading.Lock()
_WARNED: set = set()
_TAIL_BUDGET_SECS = 2.0


def warn_partial_tails(runner) -> None:
    """Warns once per file that a FixedLengthRecordReader upstream will truncate.

    For every ``FixedLengthRecordReader`` whose reads `runner`'s enqueue ops
    run, and whose files are statically known (a constant list given to the
    producer, or a ``match_filenames_once`` glob), it checks each file's size:
    records start at ``header_bytes + i * stride`` and only records ending at
    or before ``size - footer_bytes`` are produced, so bytes from the first
    record start that does not fit are dropped, silently in TF 1.x. It logs
    one warning (logger ``queue_pipeline``) per file and reader configuration
    per process. Compressed files (``encoding`` GZIP or ZLIB), missing files
    and ``record_bytes=0`` are skipped; the check stops after a time budget.

    Args:
      runner: a QueueRunner (its ``enqueue_ops`` are inspected).

    It never raises, and does nothing when the ``tail_warning`` diagnostic is off.
    """
    try:
        if not _settings.current().tail_warning:
            return
        deadline = time.monotonic() + _TAIL_BUDGET_SECS
        for read_op in sources.upstream_reads(sources.runner_ops(runner)) + sources.queue_reads(
            runner
        ):
            reader = sources.reader_op(read_op)
            if reader.type != "FixedLengthRecordReaderV2":
                continue
            _warn_reader_tails(reader, sources.static_files(read_op, deadline), deadline)
    except Exception as e:  # noqa: BLE001 - a warning must never break a pipeline
        logger.debug("queue_pipeline could not check fixed-length tails: %s", e)


def _warn_reader_tails(reader: tf.Operation, files, deadline) -> None:
    attrs = {
        name: reader.get_attr(name)
        for name in ("record_bytes", "header_bytes", "footer_bytes", "hop_bytes")
    }
    encoding = reader.get_attr("encoding")
    encoding = encoding.decode() if isinstance(encoding, bytes) else encoding
    if encoding in ("GZIP", "ZLIB") or attrs["record_bytes"] <= 0:
        return
    for path in files:
        if time.monotonic() > deadline:
            return
        key = (path, *attrs.values())
        with _WARNED_LOCK:
            if key in _WARNED:
                continue
        try:
            size = tf.io.gfile.stat(path).length if "://" in path else os.stat(path).st_size
        except Exception:  # noqa: BLE001 - a missing file: the reader reports it
            continue
        tail = partial_tail(size, **attrs)
        if tail is None:
            continue
        with _WARNED_LOCK:
            if key in _WARNED:
                continue
            _WARNED.add(key)
        start, unread = tail
        logger.warning(
            "queue_pipeline: FixedLengthRecordReader '%s': file %s has %d bytes, so "
            "with record_bytes=%d, header_bytes=%d, footer_bytes=%d, hop_bytes=%d it "
            "ends in a partial record at offset %d, which is dropped: %d bytes of the "
            "file are never read. TF 1.x drops them silently; check the record size, "
            "or pad the file.",
            reader.name,
            path,
            size,
            attrs["record_bytes"],
            attrs["header_bytes"],
            attrs["footer_bytes"],
            attrs["hop_bytes"],
            start,
            unread,
        )


def partial_tail(
    size: int, record_bytes: int, header_bytes: int = 0, footer_bytes: int = 0, hop_bytes: int = 0
) -> tuple[int, int] | None:
    """(offset, bytes never read) of the partial record TF's kernel drops, or None.

    Record ``i`` starts at ``header_bytes + i * stride`` (stride: `hop_bytes`
    if positive, else `record_bytes`) and is produced only if it ends at or
    before ``size - footer_bytes``. The first start that does not fit, if it
    lies before that end, begins a partial record; its bytes after the end of
    the last produced record are never read (with overlapping records, the
    partial record may hold no unread byte at all: then there is nothing to
    report).

    >>> partial_tail(10, 4)
    (8, 2)
    >>> partial_tail(11, 4, hop_bytes=3)
    (9, 1)
    >>> partial_tail(10, 4, hop_bytes=3) is None
    True
    """
    end = size - footer_bytes
    available = end - header_bytes
    if record_bytes <= 0 or available <= 0:
        return None
    stride = hop_bytes if hop_bytes > 0 else record_bytes
    count = 0 if available < record_bytes else (available - record_bytes) // stride + 1
    start = header_bytes + count * stride
    last_end = header_bytes + (count - 1) * stride + record_bytes if count else header_bytes
    unread = end - max(start, last_end)
    if start >= end or unread <= 0:
        return None
    return start, unread
