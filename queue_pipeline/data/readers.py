"""tf.data twins of ReaderBase, TextLine/FixedLengthRecord/TFRecord/WholeFile/IdentityReader.

Each ``queue_pipeline.data.X`` reader takes the constructor parameters of
``queue_pipeline.X``. Its ``read(filenames)`` takes a Dataset of file names
(work units; a list or tensor is sliced into one), for example from
:func:`queue_pipeline.data.string_input_producer`, and returns a Dataset of
``(key, value)`` string scalars with TF 1.x's keys and values;
``read_up_to(filenames, num_records)`` returns ``(keys, values)`` vectors of
at most `num_records` records, never spanning two work units. Work units are
read one after another, in order, every record once.

Differences every reader twin shares (each class adds its own):

* There is no reader kernel or state: ``num_records_produced``,
  ``num_work_units_completed``, ``serialize_state``, ``restore_state`` and
  ``reset`` raise ``NotImplementedError`` naming the tf.data way (checkpoint
  the iterator with ``tf.train.Checkpoint(iterator=...)``, or in a Session
  with a ``Saver`` over ``make_saveable_from_iterator``; a new iterator
  starts from the beginning).
* The end of input is the end of the Dataset (``StopIteration`` eagerly,
  ``OutOfRangeError`` from a one-shot iterator's ``get_next()``); the `name`
  arguments have no effect and warn if set.
* Invalid sizes (negative header, ``record_bytes <= 0``, negative
  ``skip_header_lines``, ``num_records <= 0``) raise ``ValueError`` when the
  reader or Dataset is built; legacy fails (or spins) when first run.
"""

from __future__ import annotations


import tensorflow as tf

from queue_pipeline.data._common import warn_inert
from queue_pipeline.data._reader_base import (
    _API,
    _MAX_INT64,
    _TFRECORD_FRAME_BYTES,
    ReaderBase,
    _non_negative,
    _NumberedReader,
)

__all__ = [
    "FixedLengthRecordReader",
    "IdentityReader",
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "WholeFileReader",
]


class TextLineReader(_NumberedReader):
    """A reader that produces the lines of text files.

    Mirrors `queue_pipeline.TextLineReader`. Each file is
    ``TextLineDataset(f).skip(n)``. Key: ``b"<file>:<line>"`` with a 1-based line number that counts
    the skipped header lines. Value: the line without ``\\n`` or ``\\r\\n``.
    A last line without a newline is still produced; empty files and files no
    longer than the header produce nothing.

    Args:
      skip_header_lines: lines to skip at the start of every file; None means 0.
      name: no effect; warns if set.

    Raises:
      ValueError: `skip_header_lines` is negative (legacy fails when first run).
    """

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None) -> None:
        api = _API + "TextLineReader"
        warn_inert(api, name=name)
        self._skip = _non_negative(api, "skip_header_lines", skip_header_lines)
        super().__init__()

    def _unit_values(self, work):
        return tf.data.TextLineDataset(work).skip(self._skip)

    def _values(self, units):
        if self._skip:
            return super()._values(units)
        return tf.data.TextLineDataset(units)  # the hand-written chain exactly

    def _numbered(self, work, batch_size):
        lines = self._unit_values(work).batch(batch_size)
        firsts = tf.data.Dataset.range(self._skip + 1, _MAX_INT64, batch_size)
        return tf.data.Dataset.zip((firsts, lines))


class FixedLengthRecordReader(_NumberedReader):
    """A reader that produces fixed-size byte records of binary files.

    Mirrors `queue_pipeline.FixedLengthRecordReader`. Record ``i`` is the
    `record_bytes` bytes at ``header_bytes + i * stride`` of the
    (decompressed) file, where the stride is `hop_bytes` if set, else
    `record_bytes`. Key: ``b"<file>:<i>"`` (0-based).

    Without `hop_bytes` this is ``tf.data.FixedLengthRecordDataset(f,
    record_bytes, header_bytes, footer_bytes, compression_type=encoding)``,
    which streams the file. tf.data has no hop, so with `hop_bytes` each file
    is read (and decompressed) whole into memory and the records are cut from
    it with one ``tf.strings.substr``; only records ending at or before
    ``size - footer_bytes`` are produced, as in the legacy reader.

    Args:
      record_bytes: the size of a record, > 0.
      header_bytes: bytes skipped at the start of each file; None means 0.
      footer_bytes: bytes ignored at the end of each file; None means 0.
      hop_bytes: the distance between record starts; None or 0 means
        `record_bytes`.
      name: no effect; warns if set.
      encoding: ``"GZIP"`` or ``"ZLIB"`` for compressed files; None, ``""``
        and any other string mean uncompressed (as in the legacy reader).

    Raises:
      ValueError: a size is negative or `record_bytes` is not positive (legacy
        gives an endless stream of empty records for 0).

    Differences from the legacy class:
      Without `hop_bytes`, a file whose body (size minus header and footer)
      is not a multiple of `record_bytes` fails when read:
      ``InvalidArgumentError`` ("... is not an exact multiple of the record
      length") before its first record if uncompressed, ``DataLossError`` at
      its end if compressed (the file's last batch of whole records, up to
      about 1 MiB, is then not delivered); legacy silently drops the partial
      tail. To get legacy's silent drop, pass
      ``hop_bytes=record_bytes`` (same records; reads each file whole).
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
        api = _API + "FixedLengthRecordReader"
        warn_inert(api, name=name)
        if not isinstance(record_bytes, int) or isinstance(record_bytes, bool) or record_bytes <= 0:
            raise ValueError(f"{api}: `record_bytes` must be an int > 0; got {record_bytes!r}.")
        if encoding is not None and not isinstance(encoding, str):
            raise TypeError(f"{api}: `encoding` must be a string or None; got {encoding!r}.")
        self._record_bytes = record_bytes
        self._header = _non_negative(api, "header_bytes", header_bytes)
        self._footer = _non_negative(api, "footer_bytes", footer_bytes)
        self._hop = _non_negative(api, "hop_bytes", hop_bytes)
        self._encoding = encoding if encoding in ("GZIP", "ZLIB") else ""
        # Batches of about 1 MiB in read().
        self._read_batch_size = max(1, min(1024, (1 << 20) // record_bytes))
        super().__init__()

    def _unit_values(self, work):
        if self._hop:
            return self._hopped(work)
        return tf.data.FixedLengthRecordDataset(
            work, self._record_bytes, self._header, self._footer, compression_type=self._encoding
        )

    def _values(self, units):
        if self._hop:
            return super()._values(units)
        return tf.data.FixedLengthRecordDataset(  # the hand-written chain exactly
            units, self._record_bytes, self._header, self._footer, compression_type=self._encoding
        )

    def _numbered(self, work, batch_size):
        firsts = tf.data.Dataset.range(0, _MAX_INT64, batch_size)
        return tf.data.Dataset.zip((firsts, self._unit_values(work).batch(batch_size)))

    def _hopped(self, work) -> tf.data.Dataset:
        """The records of one whole file read into memory, `hop_bytes` apart."""
        contents = tf.io.read_file(work)
        if self._encoding:
            contents = tf.io.decode_compressed(contents, self._encoding)
        size = tf.cast(tf.strings.length(contents, unit="BYTE"), tf.int64)
        room = size - self._footer - self._header - self._record_bytes
        count = tf.where(room >= 0, room // self._hop + 1, 0)
        starts = self._header + tf.range(count) * self._hop
        records = tf.strings.substr(
            contents, starts, tf.fill([count], tf.constant(self._record_bytes, tf.int64))
        )
        return tf.data.Dataset.from_tensor_slices(records)


class TFRecordReader(_NumberedReader):
    """A reader that produces the records of TFRecord files.

    Mirrors `queue_pipeline.TFRecordReader`. Each file is
    ``tf.data.TFRecordDataset(f, compression_type)``. Key: ``b"<file>:<offset>"``, the byte
    offset of the record's frame in the (decompressed) stream, as the legacy
    reader reports it also for GZIP and ZLIB files (0, 20, 40, ... for 4-byte
    payloads). Value: the payload. A corrupt frame or a compressed file read
    without the matching `options` raises ``DataLossError``.

    Args:
      name: no effect; warns if set.
      options: the compression: a ``tf.io.TFRecordOptions``, a
        ``TFRecordCompressionType``, ``"ZLIB"``, ``"GZIP"``, ``""`` or None.

    Raises:
      ValueError: `options` names no known compression type.
    """

    _read_batch_size = 256  # payloads may be large: keep batches moderate

    def __init__(
        self, name: str | None = None, options: tf.io.TFRecordOptions | int | str | None = None
    ) -> None:
        api = _API + "TFRecordReader"
        warn_inert(api, name=name)
        try:
            self._compression = tf.io.TFRecordOptions.get_compression_type_string(options)
        except ValueError as e:
            raise ValueError(
                f"{api}: `options` {options!r} is not a valid compression "
                f"type (use None, '', 'ZLIB', 'GZIP' or a "
                f"tf.io.TFRecordOptions): {e}"
            ) from e
        super().__init__()

    def _numbered(self, work, batch_size):
        def frame_offsets(offset, payloads):
            frames = (
                tf.cast(tf.strings.length(payloads, unit="BYTE"), tf.int64) + _TFRECORD_FRAME_BYTES
            )
            starts = offset + tf.cumsum(frames, exclusive=True)
            return offset + tf.reduce_sum(frames), (starts, payloads)

        records = self._unit_values(work)
        return records.batch(batch_size).scan(tf.constant(0, tf.int64), frame_offsets)

    def _unit_values(self, work):
        return tf.data.TFRecordDataset(work, compression_type=self._compression)

    def _values(self, units):
        return tf.data.TFRecordDataset(units, compression_type=self._compression)


class WholeFileReader(ReaderBase):
    """A reader that produces each file whole, as one record.

    Mirrors `queue_pipeline.WholeFileReader`. The chain is
    ``files.map(lambda f: (f, tf.io.read_file(f)))``. Key: the file name (the work unit). Value: the
    file's contents. ``read_up_to`` gives one record per batch.

    Args:
      name: no effect; warns if set.
    """

    def __init__(self, name: str | None = None) -> None:
        warn_inert(_API + "WholeFileReader", name=name)
        super().__init__(
            lambda work: tf.data.Dataset.from_tensors(_whole_file(work)), supports_serialize=True
        )

    def _records(self, units):
        return units.map(_whole_file)

    def _unit_values(self, work):
        return tf.data.Dataset.from_tensors(tf.io.read_file(work))

    def _values(self, units):
        return units.map(tf.io.read_file)

    def _batches(self, units, num_records):
        return units.map(lambda work: _as_batch(*_whole_file(work)))


class IdentityReader(ReaderBase):
    """A reader that produces each work unit as both key and value.

    Mirrors `queue_pipeline.IdentityReader`. The chain is
    ``units.map(lambda w: (w, w))``. ``read_up_to`` gives one record per batch.

    Args:
      name: no effect; warns if set.
    """

    def __init__(self, name: str | None = None) -> None:
        warn_inert(_API + "IdentityReader", name=name)
        super().__init__(
            lambda work: tf.data.Dataset.from_tensors((work, work)), supports_serialize=True
        )

    def _records(self, units):
        return units.map(lambda work: (work, work))

    def _unit_values(self, work):
        return tf.data.Dataset.from_tensors(work)

    def _values(self, units):
        return units

    def _batches(self, units, num_records):
        return units.map(lambda work: _as_batch(work, work))


def _whole_file(work):
    return work, tf.io.read_file(work)


def _as_batch(key, value):
    return tf.expand_dims(key, 0), tf.expand_dims(value, 0)
