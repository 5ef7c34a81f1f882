"""TF 1.x readers: ReaderBase, TextLine, FixedLengthRecord, TFRecord, WholeFile, Identity."""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._diagnostics import traps as _diagnostics
from queue_pipeline._core.compat import require_graph

__all__ = [
    "FixedLengthRecordReader",
    "IdentityReader",
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "WholeFileReader",
]

_ops = tf.raw_ops

# NOTE [ Reader kernels ]
# Every reader here is a thin wrapper around one resource-typed reader kernel
# (`*ReaderV2`). The kernel owns all state: the current work unit (taken from
# the work queue on demand), the counters and a mutex held for a whole read,
# so reads on one reader are serialized even when several threads run them.
# A reader resource is private to its op and session (no container or
# shared_name is exposed, as in TF 1.x). The Python object only remembers the
# handle and the constructor arguments, which go into the plan nodes.


class ReaderBase:
    """A record reader that turns string work units from a queue into records.

    A work unit is usually a file name. Reading dequeues a new work unit from
    the queue whenever the previous one is used up, and produces the unit's
    records one by one as string ``(key, value)`` pairs. End of input is
    ``tf.errors.OutOfRangeError``, raised when the work queue is closed and
    empty.

    Subclasses create the kernel; this class builds the operations on it.

    tf.data equivalent:
      Read the files with the dataset named by the subclass; the work queue
      becomes ``tf.data.Dataset.from_tensor_slices(filenames)``.

    Args:
      reader_ref: the resource handle produced by a ``*ReaderV2`` op.
      supports_serialize: whether the kernel implements
        :meth:`serialize_state` and :meth:`restore_state`.

    Raises:
      GraphModeRequiredError: eager execution is active.
    """

    def __init__(self, reader_ref: tf.Tensor, supports_serialize: bool = False) -> None:
        require_graph(type(self).__name__)
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize
        if not hasattr(self, "_ctor_args"):
            self._ctor_args = {"reader_ref": reader_ref, "supports_serialize": supports_serialize}

    @property
    def reader_ref(self) -> tf.Tensor:
        """The scalar resource handle of the reader kernel."""
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        """Whether this reader can serialize and restore its state."""
        return self._supports_serialize

    def read(
        self, queue: tf.queue.QueueBase | tf.Tensor, name: str | None = None
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Builds an op producing the next record.

        Each run returns one record; when the current work unit has no more
        records, the run dequeues (and waits for) the next one first.

        Args:
          queue: the work queue (a queue object or its resource handle) with
            one string per element.
          name: the op name; defaults to ``"ReaderReadV2"``.

        Returns:
          A ``(key, value)`` named tuple of string scalars.

        Side effects:
          Records a ``"<ClassName>.read"`` plan node whose ``reads`` is `queue`,
          and registers the read for the diagnostics (NOTE [ Unstarted guard ]
          in _diagnostics/traps.py).
        """
        _read_guard(queue, f"{type(self).__name__}.read")
        key_value = _ops.ReaderReadV2(
            reader_handle=self._reader_ref, queue_handle=_queue_handle(queue), name=name
        )
        self._record("read", {"name": name}, queue, key_value)
        return key_value

    def read_up_to(
        self, queue: tf.queue.QueueBase | tf.Tensor, num_records: Any, name: str | None = None
    ) -> tuple[tf.Tensor, tf.Tensor]:
        """Builds an op producing up to `num_records` records.

        A run stops early at the end of a work unit once it has produced at
        least one record, so it never mixes records of two work units and may
        return fewer than `num_records` records before the end of input.

        Args:
          queue: the work queue (a queue object or its resource handle).
          num_records: the largest number of records per run (int64 scalar).
          name: the op name; defaults to ``"ReaderReadUpToV2"``.

        Returns:
          A ``(keys, values)`` named tuple of string vectors of equal length
          (1 to `num_records`).

        Side effects:
          Records a ``"<ClassName>.read_up_to"`` plan node whose ``reads`` is
          `queue`, and registers the read for the diagnostics.
        """
        _read_guard(queue, f"{type(self).__name__}.read_up_to")
        keys_values = _ops.ReaderReadUpToV2(
            reader_handle=self._reader_ref,
            queue_handle=_queue_handle(queue),
            num_records=num_records,
            name=name,
        )
        self._record("read_up_to", {"num_records": num_records, "name": name}, queue, keys_values)
        return keys_values

    def num_records_produced(self, name: str | None = None) -> tf.Tensor:
        """Builds an op returning how many records the reader has produced (int64 scalar)."""
        return _ops.ReaderNumRecordsProducedV2(reader_handle=self._reader_ref, name=name)

    def num_work_units_completed(self, name: str | None = None) -> tf.Tensor:
        """Builds an op returning how many work units the reader has finished (int64 scalar)."""
        return _ops.ReaderNumWorkUnitsCompletedV2(reader_handle=self._reader_ref, name=name)

    def serialize_state(self, name: str | None = None) -> tf.Tensor:
        """Builds an op returning the reader's state as a string scalar.

        Running it raises ``UnimplementedError`` unless
        :attr:`supports_serialize` is true.
        """
        return _ops.ReaderSerializeStateV2(reader_handle=self._reader_ref, name=name)

    def restore_state(self, state: Any, name: str | None = None) -> tf.Operation:
        """Builds an op that restores a state made by :meth:`serialize_state`.

        Args:
          state: a string scalar from a reader of the same type; any other
            rank raises ``ValueError`` here.
          name: the op name; defaults to ``"ReaderRestoreStateV2"``.

        Returns:
          The restore operation. Running it raises ``UnimplementedError`` for
          readers without :attr:`supports_serialize`, and
          ``InvalidArgumentError`` for a corrupt state; either failure also
          resets the reader.
        """
        return _ops.ReaderRestoreStateV2(reader_handle=self._reader_ref, state=state, name=name)

    def reset(self, name: str | None = None) -> tf.Operation:
        """Builds an op that clears the reader's counters and current work unit."""
        return _ops.ReaderResetV2(reader_handle=self._reader_ref, name=name)

    def _record(self, method: str, call_args: dict, queue, outputs) -> None:
        args = {k: v for k, v in self._ctor_args.items() if k != "name"}
        if "name" in self._ctor_args:
            args["reader_name"] = self._ctor_args["name"]
        args.update(call_args)
        plan.record(f"{type(self).__name__}.{method}", args, (queue,), tuple(outputs), reads=queue)


def _read_guard(queue, api: str) -> None:
    """Registers a read from a queue_pipeline producer's queue for the diagnostics."""
    if isinstance(queue, tf.queue.QueueBase) and _diagnostics.is_pipeline_queue(queue):
        _diagnostics.guard(queue, api)


def _queue_handle(queue) -> tf.Tensor:
    """The resource handle of `queue`, which is a queue object or already a handle."""
    return queue if isinstance(queue, tf.Tensor) else queue.queue_ref


class TextLineReader(ReaderBase):
    """A reader that produces the lines of text files.

    Key: ``b"<filename>:<line>"`` with a 1-based line number that counts
    skipped header lines. Value: the line without its ``\\n`` or ``\\r\\n``. A
    last line without a newline is still produced; empty files and files no
    longer than the header produce nothing.

    tf.data equivalent:
      ``tf.data.TextLineDataset(filenames)``, or with headers
      ``tf.data.Dataset.from_tensor_slices(filenames).flat_map(lambda f:
      tf.data.TextLineDataset(f).skip(skip_header_lines))``; keys are not
      produced by tf.data.

    Args:
      skip_header_lines: lines to skip at the start of every file; None means
        0. A negative value fails when the reader is first run.
      name: the reader op name; defaults to ``"TextLineReaderV2"``.

    Raises:
      GraphModeRequiredError: eager execution is active.
    """

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None) -> None:
        require_graph("TextLineReader")
        self._ctor_args = {"skip_header_lines": skip_header_lines, "name": name}
        super().__init__(_ops.TextLineReaderV2(skip_header_lines=skip_header_lines, name=name))


class FixedLengthRecordReader(ReaderBase):
    """A reader that produces fixed-size byte records of binary files.

    Record ``i`` is the `record_bytes` bytes at offset
    ``header_bytes + i * stride`` (stride is `hop_bytes` when positive, else
    `record_bytes`, so records may overlap). Only records ending at or before
    ``file_size - footer_bytes`` are produced: a partial tail is silently
    dropped. Key: ``b"<filename>:<i>"`` (0-based).

    tf.data equivalent:
      ``tf.data.FixedLengthRecordDataset(filenames, record_bytes,
      header_bytes, footer_bytes, compression_type=encoding)``; it has no
      `hop_bytes`, and keys are not produced by tf.data.

    Args:
      record_bytes: the size of a record; 0 gives an endless stream of empty
        records.
      header_bytes: bytes skipped at the start of each file; None means 0.
      footer_bytes: bytes ignored at the end of each file; None means 0.
      hop_bytes: the distance between record starts; None or 0 means
        `record_bytes`.
      name: the reader op name; defaults to ``"FixedLengthRecordReaderV2"``.
      encoding: ``"GZIP"`` or ``"ZLIB"`` for compressed files; None, ``""``
        and any other string mean uncompressed.

    Raises:
      GraphModeRequiredError: eager execution is active.
    """

    def __init__(
        self,
        record_bytes: int,
        header_bytes: int | None = None,
        footer_bytes: int | None = None,
        hop_bytes: int | None = None,
        name: str | None = None,
        encoding: str | None = None,
    ) -> None:
        require_graph("FixedLengthRecordReader")
        self._ctor_args = {
            "record_bytes": record_bytes,
            "header_bytes": header_bytes,
            "footer_bytes": footer_bytes,
            "hop_bytes": hop_bytes,
            "name": name,
            "encoding": encoding,
        }
        super().__init__(
            _ops.FixedLengthRecordReaderV2(
                record_bytes=record_bytes,
                header_bytes=header_bytes,
                footer_bytes=footer_bytes,
                hop_bytes=hop_bytes,
                encoding=encoding,
                name=name,
            )
        )


class TFRecordReader(ReaderBase):
    """A reader that produces the records of TFRecord files.

    Key: ``b"<filename>:<offset>"``, the byte offset of the record's frame.
    Value: the record payload. A corrupt frame or checksum, or a compressed
    file read without the matching `options`, raises ``DataLossError``.

    tf.data equivalent:
      ``tf.data.TFRecordDataset(filenames, compression_type=...)``; keys are
      not produced by tf.data.

    Args:
      name: the reader op name; defaults to ``"TFRecordReaderV2"``.
      options: the compression: a ``tf.io.TFRecordOptions``, a
        ``TFRecordCompressionType``, ``"ZLIB"``, ``"GZIP"``, ``""`` or None.

    Raises:
      ValueError: `options` names no known compression type.
      GraphModeRequiredError: eager execution is active.
    """

    def __init__(
        self, name: str | None = None, options: tf.io.TFRecordOptions | int | str | None = None
    ) -> None:
        require_graph("TFRecordReader")
        compression = tf.io.TFRecordOptions.get_compression_type_string(options)
        self._ctor_args = {"name": name, "options": options}
        super().__init__(_ops.TFRecordReaderV2(compression_type=compression, name=name))


class WholeFileReader(ReaderBase):
    """A reader that produces each file whole, as one record.

    Key: the file name (the work unit). Value: the file's entire contents.
    Its state can be serialized and restored.

    tf.data equivalent:
      ``tf.data.Dataset.from_tensor_slices(filenames).map(lambda f:
      (f, tf.io.read_file(f)))``.

    Args:
      name: the reader op name; defaults to ``"WholeFileReaderV2"``.

    Raises:
      GraphModeRequiredError: eager execution is active.
    """

    def __init__(self, name: str | None = None) -> None:
        require_graph("WholeFileReader")
        self._ctor_args = {"name": name}
        super().__init__(_ops.WholeFileReaderV2(name=name), supports_serialize=True)


class IdentityReader(ReaderBase):
    """A reader that produces each work unit as both key and value.

    Its state can be serialized and restored.

    tf.data equivalent:
      ``tf.data.Dataset.from_tensor_slices(work).map(lambda w: (w, w))``.

    Args:
      name: the reader op name; defaults to ``"IdentityReaderV2"``.

    Raises:
      GraphModeRequiredError: eager execution is active.
    """

    def __init__(self, name: str | None = None) -> None:
        require_graph("IdentityReader")
        self._ctor_args = {"name": name}
        super().__init__(_ops.IdentityReaderV2(name=name), supports_serialize=True)
