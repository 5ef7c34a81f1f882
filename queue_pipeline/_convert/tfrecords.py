"""TFRecord shard files written by Beam's workers, without TensorFlow where it can be done.

NOTE [ TFRecord framing ]
A TFRecord file is its records one after another, each framed as: the
record's length (uint64, little-endian), the masked CRC-32C of those 8
bytes (uint32), the record, the masked CRC-32C of the record. A CRC is
masked as ``((crc >> 15 | crc << 17) + 0xA282EAD8) mod 2**32``. Uncompressed,
the framing is all there is, so any writer of it gives the same bytes as
TensorFlow's ``TFRecordWriter``; workers that write it themselves need no
TensorFlow (seconds of start-up per worker process) when a compiled CRC-32C
is at hand (``google-crc32c``, the one Beam's own GCS and TFRecord I/O use).
Without it, or for ``GZIP``/``ZLIB`` shards (whose compressed bytes are
TensorFlow's zlib stream), the shard goes through ``tf.io.TFRecordWriter``.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Callable, Iterable, Iterator

__all__ = [
    "PIECES_MODULUS",
    "crc32c_function",
    "frame",
    "frames",
    "piece_value",
    "unframe",
    "write_piece",
    "write_shard_file",
]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")


def crc32c_function(compiled: bool = True) -> Callable[[bytes], int] | None:
    """``google_crc32c.value`` if installed and compiled (or any, if not `compiled`), else None."""
    try:
        import google_crc32c  # noqa: PLC0415 - optional
    except ImportError:
        return None
    if compiled and getattr(google_crc32c, "implementation", None) != "c":
        return None  # its pure-Python fallback is slower than TensorFlow's writer
    value: Callable[[bytes], int] = google_crc32c.value
    return value


def _masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record: bytes, crc32c: Callable[[bytes], int]) -> bytes:
    """One record with its TFRecord framing (NOTE [ TFRecord framing ])."""
    length = _LENGTH.pack(len(record))
    return length + _CRC.pack(_masked(crc32c(length))) + record + _CRC.pack(_masked(crc32c(record)))


def unframe(data: bytes) -> Iterator[bytes]:
    """The records of an uncompressed TFRecord file's bytes (this job's own pieces).

    The checksums are not checked: `verify` checks every record's digest.

    Raises:
      ValueError: `data` ends inside a record.
    """
    at, end = 0, len(data)
    while at < end:
        if at + 12 > end:
            raise ValueError(f"a TFRecord piece ends inside a record header at byte {at}")
        (length,) = _LENGTH.unpack_from(data, at)
        start = at + 12
        at = start + length + 4
        if at > end:
            raise ValueError(f"a TFRecord piece ends inside a record at byte {start}")
        yield data[start : start + length]


def write_shard_file(path: str, records: Iterable[bytes], compression: str | None) -> int:
    """Writes `records` as one TFRecord file at `path` (local or remote); returns its size.

    See NOTE [ TFRecord framing ] for when TensorFlow's writer is used.
    """
    if compression or crc32c_function() is None:
        return _write_with_tensorflow(path, records, compression)
    return write_piece(path, records)[1]  # the same framing; its digest is not needed here


# NOTE [ Pieces and their digests ]
# A worker writes the records of one chunk (or of one table span) that go to
# one shard as a *piece*: an uncompressed TFRecord file. Its digest is the
# SHA-256 of the piece's bytes, framing included, hashed as they are written
# (one C call per 1,024 records, where a digest per record cost a Python call
# each: ~1 us a table row, in the workers and again in verify). A shard is
# its pieces one after another, so verify checks each piece's byte range of
# the shard against its digest, in order: the exact bytes the encoders made.
# The job's count of what the encoders made sums ``piece_value`` of every
# digest (a multiset of pieces, modulo ``PIECES_MODULUS``), so verify also
# finds a piece that reached no shard, or two.
PIECES_MODULUS = 2**128


def piece_value(digest: str) -> int:
    """The 128-bit number of a piece's hex digest, summed over pieces (NOTE [ Pieces and ... ])."""
    return int(digest[:32], 16)


def write_piece(path: str, records: Iterable[bytes]) -> tuple[int, int, str]:
    """Writes `records` as one uncompressed TFRecord piece; returns ``(count, size, SHA-256 hex)``.

    See NOTE [ Pieces and their digests ]; `records` may be a generator.
    """
    from apache_beam.io.filesystem import CompressionTypes  # noqa: PLC0415 - workers only
    from apache_beam.io.filesystems import FileSystems  # noqa: PLC0415

    counted = _Counted(records)
    crc32c = crc32c_function()
    digest = hashlib.sha256()
    if crc32c is None:
        size = _write_with_tensorflow(path, counted, None)
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            digest.update(f.read())
        return counted.count, size, digest.hexdigest()
    size = 0
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for data in frames(counted, crc32c):
            f.write(data)
            digest.update(data)
            size += len(data)
    return counted.count, size, digest.hexdigest()


class _Counted:
    """An iterable of records that counts what it has given."""

    def __init__(self, records: Iterable[bytes]):
        self._records, self.count = records, 0

    def __iter__(self) -> Iterator[bytes]:
        for record in self._records:
            self.count += 1
            yield record


def frames(records: Iterable[bytes], crc32c: Callable[[bytes], int]) -> Iterator[bytes]:
    """`records` framed (NOTE [ TFRecord framing ]), in batches of up to 1,024 records."""
    heads: dict[int, bytes] = {}  # a length's 12 bytes, for the few lengths a table has
    pack = _CRC.pack
    batch: list[bytes] = []
    for record in records:
        head = heads.get(len(record))
        if head is None:
            length = _LENGTH.pack(len(record))
            head = length + pack(_masked(crc32c(length)))
            if len(heads) < 4096:
                heads[len(record)] = head
        crc = crc32c(record)
        batch += (head, record, pack((((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF))
        if len(batch) >= 3072:
            yield b"".join(batch)
            batch = []
    if batch:
        yield b"".join(batch)


def _write_with_tensorflow(path: str, records: Iterable[bytes], compression: str | None) -> int:
    import tensorflow as tf  # noqa: PLC0415 - only without a compiled CRC-32C, or compressed

    options = tf.io.TFRecordOptions(compression_type=compression or "")
    with tf.io.TFRecordWriter(path, options) as writer:
        for record in records:
            writer.write(record)
    size: int = tf.io.gfile.stat(path).length
    return size
