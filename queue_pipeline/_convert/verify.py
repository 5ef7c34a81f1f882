"""``verify``: the shards read back, checked against the job's own count of the source.

The check is exact up to 128-bit hash collisions: for each shard, the number
of records and the sum of their digests (features.multiset_add) read back
from the file equal what its writer reported; over all shards, the total
and the sum equal those of every record the encoder made from the source;
and every source record is either written or listed as an error.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
from typing import Any

import tensorflow as tf

from queue_pipeline._convert import features as _features

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


def _read_back(path: str, compression: str | None) -> tuple[int, int]:
    """The record count and the digest sum of one shard file."""
    count, value = 0, 0
    records = read_records(path, compression)
    while batch := list(itertools.islice(records, 4096)):  # digests summed in bulk
        count += len(batch)
        value = (value + _features.multiset_sum(batch)) % _features.MULTISET_MODULUS
    return count, value


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
      shards: the writers' reports (``file``, ``count``, ``multiset``).
      source: the encoder's ``count`` and ``multiset`` of every record made.
      listed: how many records the source listing had (errors included).
      errors: how many records failed (listing and workers).
      compression: the shards' compression.

    Raises:
      VerifyError: naming the shard or the count that differs.
    """
    total, multiset = 0, 0
    # shards read in threads: TensorFlow's reader and SHA-256 of large records release the GIL
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        read = list(
            pool.map(lambda s: _read_back(os.path.join(directory, s["file"]), compression), shards)
        )
    for shard, (count, value) in zip(shards, read):
        if count != shard["count"] or str(value) != shard["multiset"]:
            raise VerifyError(
                f"queue_pipeline.convert: verify: shard {shard['file']} reads back {count} "
                f"records, its writer wrote {shard['count']}, or they differ in content."
            )
        total += count
        multiset = (multiset + value) % _features.MULTISET_MODULUS
    if total != source["count"] or str(multiset) != source["multiset"]:
        raise VerifyError(
            f"queue_pipeline.convert: verify: the shards hold {total} records, the source "
            f"gave {source['count']}, or they differ in content."
        )
    if total + errors != listed:
        raise VerifyError(
            f"queue_pipeline.convert: verify: {listed} source records, {total} written and "
            f"{errors} failed: {listed - total - errors} are missing."
        )
