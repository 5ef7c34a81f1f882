"""``verify``: the shards read back, checked against what the job's encoders made.

For each shard: TensorFlow's reader reads every record (framing and CRCs
checked) and their number is the writer's count; the shard's bytes are its
pieces', in order, each equal to the SHA-256 its encoder took as it wrote it
(NOTE [ Pieces and their digests ] in tfrecords.py; a compressed shard's
records are framed again to compare). Over all shards, the count and the
sum of the pieces' digests equal those of every piece the encoders made
(none lost, none twice), and every source record is either written or listed
as an error.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import itertools
import os
from typing import Any

import tensorflow as tf

from queue_pipeline._convert import tfrecords as _tfrecords

__all__ = ["VerifyError", "read_records", "verify"]


class VerifyError(Exception):
    """The shards read back do not hold exactly the records of the source."""


def read_records(path: str, compression: str | None):
    """Yields the serialized records of one TFRecord file (no graph, no session: both TF modes)."""
    from tensorflow.python.util import deprecation  # noqa: PLC0415 - its warning is not the user's

    options = tf.io.TFRecordOptions(compression_type=compression or "")
    with deprecation.silence():
        records = tf.compat.v1.io.tf_record_iterator(path, options=options)
    yield from records


def _read_back(path: str, shard: dict[str, Any], compression: str | None) -> str | None:
    """What is wrong with one shard file, or None when it holds exactly its pieces."""
    try:
        count = sum(1 for _ in read_records(path, compression))
    except tf.errors.OpError as e:
        return f"TensorFlow cannot read it: {type(e).__name__}: {e.message}"
    if count != shard["count"]:
        return f"it reads back {count} records, its writer wrote {shard['count']}"
    pieces = shard["pieces"]
    if compression:
        crc32c = _tfrecords.crc32c_function(compiled=False)
        if crc32c is None:
            return "google-crc32c (the [beam] extra) is needed to check a compressed shard"
        records = read_records(path, compression)
        for index, (records_in, _, digest) in enumerate(pieces):
            framed = b"".join(_tfrecords.frames(itertools.islice(records, records_in), crc32c))
            if hashlib.sha256(framed).hexdigest() != digest:
                return f"its records of piece {index} differ from what the encoder made"
        return None
    with open(path, "rb") if "://" not in path else tf.io.gfile.GFile(path, "rb") as f:
        for index, (_, size, digest) in enumerate(pieces):
            if hashlib.sha256(f.read(size)).hexdigest() != digest:
                return f"its bytes of piece {index} differ from what the encoder wrote"
        if f.read(1):
            return "it holds more bytes than its pieces"
    return None


def verify(
    directory: str,
    shards: list[dict[str, Any]],
    source: dict[str, Any],
    *,
    listed: int,
    errors: int,
    compression: str | None,
) -> None:
    """Reads every shard in `directory` back and checks it (see the module docstring).

    Args:
      directory: where the shards are (the temporary directory, before the rename).
      shards: the writers' reports (``file``, ``count``, ``pieces``: ``[count, size,
        SHA-256 hex]`` of each piece in order).
      source: the encoders' ``count`` and ``multiset`` (the sum of ``piece_value``
        of every piece made, as a string).
      listed: how many records the source listing had (errors included).
      errors: how many records failed (listing and workers).
      compression: the shards' compression.

    Raises:
      VerifyError: naming the shard or the count that differs.
    """
    # shards read in threads: TensorFlow's reader and SHA-256 release the GIL
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        problems = list(
            pool.map(
                lambda s: _read_back(os.path.join(directory, s["file"]), s, compression), shards
            )
        )
    for shard, problem in zip(shards, problems):
        if problem is not None:
            raise VerifyError(f"queue_pipeline.convert: verify: shard {shard['file']}: {problem}.")
    total = sum(shard["count"] for shard in shards)
    made = sum(_tfrecords.piece_value(p[2]) for s in shards for p in s["pieces"])
    if total != source["count"] or str(made % _tfrecords.PIECES_MODULUS) != source["multiset"]:
        raise VerifyError(
            f"queue_pipeline.convert: verify: the shards hold {total} records, the encoders "
            f"made {source['count']}, or a piece they made is in no shard or in two."
        )
    if total + errors != listed:
        raise VerifyError(
            f"queue_pipeline.convert: verify: {listed} source records, {total} written and "
            f"{errors} failed: {listed - total - errors} are missing."
        )
