"""The Beam pipeline of a conversion: encode each record, group by shard, write each shard once.

    chunks of records --Reshuffle--> _Encode --"piece"--> GroupByKey by shard --> _write_shard
    (or table spans      (_EncodeSpan)  |--"errors"--> the bad records
                                       '--"source"--> the count and digests of the pieces

Each shard is written by one worker, in the order of its records' hashes
(NOTE [ Stable assignment ] in assign.py; a table's rows in input order),
under a temporary directory; the
launching process renames the shards to their final names only when the
whole job succeeded (output.py). The three small results (shard infos, bad
records, what the encoders made) are grouped once and written by the
pipeline as JSON files in that directory (NOTE [ The job's small results ]),
so any runner (Dataflow, Flink, Spark: its workers write to the same
filesystem, gs:// included) hands them back the same way.
"""

from __future__ import annotations

import json
import os
import itertools
import pickle
import re
from typing import Any, Iterator, Sequence

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from queue_pipeline._convert import assign as _assign
from queue_pipeline._convert import features as _features
from queue_pipeline._convert import rows as _rows
from queue_pipeline._convert import runners as _runners
from queue_pipeline._convert.images import RecordError, image_example
from queue_pipeline._convert.runners import beam_options
from queue_pipeline._convert.tfrecords import (
    PIECES_MODULUS,
    piece_value,
    unframe,
    write_piece,
    write_shard_file,
)

__all__ = ["RESULT_FILES", "JobFailed", "beam_options", "run"]

RESULT_FILES = {"shards": "_shards.json", "errors": "_errors.json", "source": "_source.json"}


class JobFailed(Exception):
    """The Beam job failed; `record_error` is the bad record's message under ``on_error='fail'``."""

    def __init__(self, message: str, record_error: str | None):
        super().__init__(message)
        self.record_error = record_error


# NOTE [ The DirectRunner without Prism ]
# Beam's DirectRunner (2.6x on) first tries to run a batch job on Prism, a
# Go binary it downloads from the project's release page on first use; it
# falls back to its FnApiRunner when the download or the job fails. Prism
# does not honour ``--direct_num_workers`` / ``--direct_running_mode``, and a
# conversion must not depend on whether the machine can reach a download
# server at that moment (nor fetch a binary unasked). So for the DirectRunner
# the job goes straight to the FnApiRunner, built as the DirectRunner builds
# it (the pipeline options handed to its workers): the engine every test and
# benchmark here measures. ``--runner PrismRunner`` still picks Prism.
def _local_runner(args: Sequence[str], options: PipelineOptions):
    """The FnApiRunner for the DirectRunner (NOTE [ The DirectRunner without Prism ]), else None."""
    if not _runners.is_direct(args):
        return None
    try:
        from apache_beam.runners.portability.fn_api_runner import fn_runner  # noqa: PLC0415
        from apache_beam.runners.portability.portable_runner import (  # noqa: PLC0415
            JobServiceHandle,
        )
        from apache_beam.portability.api import beam_provision_api_pb2  # noqa: PLC0415

        encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
        info = fn_runner.ExtendedProvisionInfo(
            beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
        )
        return fn_runner.FnApiRunner(provision_info=info)
    except (ImportError, AttributeError, TypeError):  # another Beam: its own DirectRunner
        return None


def encode(kind: str, payload: Any, reencoded: dict[str, int] | None = None) -> bytes:
    """The serialized Example of one record's payload (see sources.Listing.kind);
    an image re-encoded is counted in `reencoded` by reason.

    Raises:
      RecordError: the record cannot be converted.
    """
    if kind == "image":
        path, label, synset = payload
        return image_example(path, label, synset, reencoded)
    if kind == "table":
        return _features.serialize_features(payload)
    return payload  # "example": serialized already


# NOTE [ Records travel in chunks ]
# Beam's per-element cost on the DirectRunner's worker processes (a few
# hundred microseconds through the runner's channels) dwarfs encoding a CSV
# row, and sending every encoded record through the shuffle to its shard's
# writer costs each record its bytes pickled and copied twice more (for
# images, most of a worker's time beyond the decode). So the launching
# process places every record first (NOTE [ Stable assignment ]: the place
# depends on the identity alone), sorts each shard's records into their
# final order and cuts them into chunks of one shard (``chunks_of``).
# A chunk is one element: its worker encodes it and writes its records,
# framed, as a TFRecord *piece* file beside it (NOTE [ Pieces and their
# digests ] in tfrecords.py); what goes through GroupByKey is one small line
# per piece (its place in the shard, path, count, size, digest). A shard's
# writer then puts its pieces in order into the shard (a shard of one piece
# is the piece, renamed): the same bytes as writing the sorted records one by
# one, whatever the runner, the chunks and the number of workers. A shard is
# cut into as few chunks as keep every worker busy: at least MIN_CHUNKS in
# the job (so 2 to 4 workers share the work evenly), of MIN_CHUNK records or
# more (each element costs the runner a little), and none over MAX_CHUNK
# (a worker holds no more than that in memory, and retries no more). The
# chunks are pickled to files in the job's
# temporary directory and the pipeline carries only their paths: values
# given to ``beam.Create`` are pickled and bz2-compressed into the job's
# graph (seconds per megabyte, and a size limit on Dataflow), while any
# worker reads a file of the shared filesystem.
MIN_CHUNKS, MIN_CHUNK, MAX_CHUNK = 8, 64, 1024


def chunks_of(count: int, shards: int) -> list[int]:
    """The sizes of the chunks a shard of `count` records is cut into, of `shards` in the job."""
    if count == 0:
        return []
    pieces = max(
        -(-count // MAX_CHUNK), min(-(-MIN_CHUNKS // max(shards, 1)), -(-count // MIN_CHUNK))
    )
    size, extra = divmod(count, pieces)
    return [size + (i < extra) for i in range(pieces)]


def _create(path: str):
    # Beam's filesystems (local, gs://, ...): no TensorFlow in the workers.
    # See NOTE [ Examples without TensorFlow ] in features.py.
    return FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _open(path: str):
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _save_chunks(
    records: list, directory: str, split: dict[str, float], shards: dict[str, int]
) -> list[tuple[str, int, int, str]]:
    """``(split, shard, index in the shard, path)`` of each chunk file written."""
    placed = sorted(
        (_assign.assign(identity, split, shards), identity, payload)
        for identity, payload in records
    )
    out: list[tuple[str, int, int, str]] = []
    total = sum(shards.values())
    for (name, shard), group in itertools.groupby(placed, key=lambda p: p[0][:2]):
        mine = [(identity, payload) for _, identity, payload in group]
        start = 0
        for index, size in enumerate(chunks_of(len(mine), total)):
            path = FileSystems.join(directory, f"{name}-{shard:05d}-{index:07d}.pickle")
            with _create(path) as f:
                f.write(pickle.dumps(mine[start : start + size], pickle.HIGHEST_PROTOCOL))
            out.append((name, shard, index, path))
            start += size
    return out


# NOTE [ One output per step ]
# The encoders yield one stream of ``(tag, value)`` pairs: a piece for its
# shard's writer (``PIECE``), a bad record (``errors``) or a chunk's counts
# (``source``), which later steps pick apart. Beam's tagged outputs
# (``ParDo.with_outputs``) would say the same, but the Dask runner (Beam 2.78)
# puts every output of a step into its one bag: the shard writers' grouping
# met the counts' 4-tuples ("too many values to unpack"). One stream works on
# every runner.
PIECE = "piece"


def _tagged(element: tuple[str, Any], tag: str) -> list:
    """The value of `element` (``(tag, value)``) when its tag is `tag`, as a list of 0 or 1."""
    return [element[1]] if element[0] == tag else []


def _load_chunk(path: str) -> list:
    with _open(path) as f:
        return pickle.loads(f.read())  # noqa: S301 - written by this job, in its own directory


@beam.typehints.with_output_types(Any)
class _Encode(beam.DoFn):
    def __init__(self, kind, fail):
        self._kind, self._fail = kind, fail

    def process(self, chunk):
        split, shard, index, path = chunk
        errors: list[dict[str, Any]] = []
        listed = 0
        reencoded: dict[str, int] = {}

        def records() -> Iterator[bytes]:  # encoded as the piece is written
            nonlocal listed
            for identity, payload in _load_chunk(path):
                listed += 1
                try:
                    yield encode(self._kind, payload, reencoded)
                except RecordError as e:
                    if self._fail:
                        raise RecordError(e.file, f"{e.reason} (record {identity!r})") from e
                    errors.append({"record": identity, "file": e.file, "reason": e.reason})

        piece = path[: -len(".pickle")] + ".tfrecord"
        count, size, digest = write_piece(piece, records())
        for error in errors:
            yield "errors", error
        yield PIECE, ((split, shard), ((index,), piece, count, size, digest))
        yield "source", (listed, count, piece_value(digest), reencoded)


@beam.typehints.with_output_types(Any)
class _EncodeSpan(beam.DoFn):
    """A span of table rows -> a piece per shard its rows go to (rows.py)."""

    def __init__(self, table: _rows.TableSpec, pieces: str, fail: bool):
        self._table, self._pieces, self._fail = table, pieces, fail

    def process(self, span):
        placed, errors, listed = _rows.convert_span(span, self._table)
        if errors and self._fail:
            first = errors[0]
            raise RecordError(first["file"], f"{first['reason']} (record {first['record']!r})")
        for error in errors:
            yield "errors", error
        made, made_total = 0, 0
        for (split, shard), records in sorted(placed.items()):
            name = f"{split}-{shard:05d}-{span.file_index:05d}-{span.start:015d}.tfrecord"
            piece = FileSystems.join(self._pieces, name)
            count, size, digest = write_piece(piece, records)
            made, made_total = made + count, made_total + piece_value(digest)
            yield (
                PIECE,
                ((split, shard), ((span.file_index, span.start), piece, count, size, digest)),
            )
        yield "source", (listed, made, made_total % _MODULUS, {})


_MODULUS = PIECES_MODULUS


def _write_shard(element, temp_dir, shards, compression) -> dict[str, Any]:
    (split, shard), pieces = element
    pieces = sorted(pieces)
    name = _assign.shard_name(split, shard, shards[split])
    path = FileSystems.join(temp_dir, name)
    local = "://" not in path and all("://" not in p[1] for p in pieces)
    if compression:
        size = write_shard_file(path, _piece_records(pieces), compression)
    elif len(pieces) == 1:  # the piece is the shard
        size = pieces[0][3]
        if not local:  # a copy on the store's side: a retried bundle finds its piece again
            FileSystems.copy([pieces[0][1]], [path])
        elif os.path.exists(pieces[0][1]) or os.path.getsize(path) != size:
            os.replace(pieces[0][1], path)  # (a retry of a bundle that renamed it: done)
    elif local:
        size = _concatenate_local(path, [p[1] for p in pieces])
    else:  # framed pieces, one after another, are the shard (NOTE [ TFRecord framing ])
        size = 0
        with _create(path) as out:
            for piece in pieces:
                with _open(piece[1]) as f:
                    data = f.read()
                out.write(data)
                size += len(data)
    # verify reads the file back against the pieces' digests (NOTE [ Pieces and their digests ])
    return {
        "split": split,
        "shard": shard,
        "file": name,
        "count": sum(p[2] for p in pieces),
        "bytes": size,
        "pieces": [[count, piece_size, digest] for _, _, count, piece_size, digest in pieces],
    }


def _concatenate_local(path: str, pieces: list[str]) -> int:
    """Local pieces copied into `path` in the kernel (``copy_file_range``) where it can."""
    size = 0
    with open(path, "wb", buffering=0) as out:  # unbuffered: kernel copies and writes interleave
        for piece in pieces:
            with open(piece, "rb") as f:
                left = os.fstat(f.fileno()).st_size
                size += left
                try:
                    while left > 0:
                        done = os.copy_file_range(f.fileno(), out.fileno(), left)
                        if done == 0:
                            break
                        left -= done
                except (AttributeError, OSError):  # no such call here, or not on this filesystem
                    pass
                if left:
                    f.seek(os.fstat(f.fileno()).st_size - left)
                    out.write(f.read())
    return size


def _piece_records(pieces) -> Iterator[bytes]:
    for _, piece, *_ in pieces:
        with _open(piece) as f:
            yield from unframe(f.read())


# NOTE [ The job's small results ]
# The shard infos, the bad records and the (listed, count, multiset, re-encoded) of every
# chunk or span are keyed by the result they belong to, flattened into one
# collection and grouped once; one Map writes each group as its JSON file.
# Beam's combiners (``ToList``, ``CombineGlobally``) would do the same with
# a stage graph of their own each: three of them were 0.3-0.4 s of a
# 0.65 s fixed start on the DirectRunner (``benchmarks/convert_profile.md``),
# where this is one shuffle. A result with no values (no bad record) has no
# group and no file; the launcher reads a missing file as empty.
def _counted(made: list) -> dict[str, Any]:
    """The (listed, count, multiset sum, re-encoded by reason) of every chunk or span,
    added up."""
    listed, count, total = (sum(m[i] for m in made) for i in range(3))
    reencoded: dict[str, int] = {}
    for *_, reasons in made:
        for reason, n in reasons.items():
            reencoded[reason] = reencoded.get(reason, 0) + n
    return {
        "listed": listed,
        "count": count,
        "multiset": str(total % _MODULUS),
        "reencoded": dict(sorted(reencoded.items())),
    }


def _write_result(element, paths: dict[str, str]) -> None:
    """One of the job's small results (RESULT_FILES), as JSON."""
    key, values = element
    value = _counted(list(values)) if key == "source" else list(values)
    with _create(paths[key]) as f:
        f.write(json.dumps(value, sort_keys=True).encode("utf-8"))


def run(
    kind: str,
    records: list[tuple[str, Any]],
    *,
    table: _rows.TableSpec | None = None,
    spans: Sequence[Any] = (),
    split: dict[str, float],
    shards: dict[str, int],
    temp_dir: str,
    compression: str | None,
    fail: bool,
    options: Sequence[str],
) -> None:
    """Runs the job; its results are the files :data:`RESULT_FILES` in `temp_dir`.

    The work is `records` (``(identity, payload)`` of `kind`), or for a
    ``table`` the `spans` of rows that `table` describes.

    Raises:
      JobFailed: the runner reported a failure.
    """
    paths = {k: FileSystems.join(temp_dir, v) for k, v in RESULT_FILES.items()}
    try:
        pipeline_options = PipelineOptions(list(options))
        runner = _local_runner(options, pipeline_options)
        p = beam.Pipeline(runner=runner, options=pipeline_options)
        encode: beam.DoFn
        if table is not None:
            work = list(spans)
            encode = _EncodeSpan(table, FileSystems.join(temp_dir, "_pieces"), fail)
        else:
            chunks = FileSystems.join(temp_dir, "_chunks")
            work, encode = _save_chunks(records, chunks, split, shards), _Encode(kind, fail)
        encoded = (
            p
            | "Work" >> beam.Create(work, reshuffle=False)
            | "Spread" >> beam.Reshuffle()
            | "Encode" >> beam.ParDo(encode)
        )  # NOTE [ One output per step ]
        infos = (
            encoded
            | "Pieces" >> beam.FlatMap(_tagged, PIECE)
            | "ByShard" >> beam.GroupByKey()
            | "WriteShards" >> beam.Map(_write_shard, temp_dir, shards, compression)
        )
        # NOTE [ The job's small results ]
        (
            (
                infos | "KeyInfos" >> beam.Map(lambda info: ("shards", info)),
                encoded | "Small" >> beam.Filter(lambda tagged: tagged[0] != PIECE),
            )
            | "Results" >> beam.Flatten()
            | "ByResult" >> beam.GroupByKey()
            | "SaveResults" >> beam.Map(_write_result, paths)
        )
        result = p.run()
        try:
            result.wait_until_finish()
        finally:
            # the Dask runner's own Client of the cluster: closed with the job (the
            # cluster is the user's, and goes on)
            client = getattr(result, "client", None)
            if client is not None and hasattr(client, "close"):
                client.close()
    except Exception as e:  # noqa: BLE001 - every runner wraps worker errors its own way
        found = re.search(r"RecordError: ([^\n]*)", f"{type(e).__name__}: {e}")
        raise JobFailed(_job_error(e), found.group(1) if found else None) from e


# NOTE [ A failed job in one line ]
# Runners report a worker's failure with its whole traceback inside the
# exception's message (the portable runner: "Pipeline job-... failed in state
# FAILED: Traceback ..."). The message keeps the runner's words before the
# traceback and its last line, the error itself; the exception, traceback
# and all, is chained (``raise ... from``). A connection to the workers lost
# mid-job (a worker process or the worker pool killed: the FnApiRunner behind
# the portable runner does not retry a bundle) is said as such.
_LOST = ("Channel closed prematurely", "Socket closed", "StatusCode.UNAVAILABLE")


def _job_error(error: BaseException) -> str:
    """`error`, a failed job's, in one line (NOTE [ A failed job in one line ])."""
    text = f"{type(error).__name__}: {error}"
    head, traceback, tail = text.partition("Traceback (most recent call last):")
    if traceback:
        last = [line.strip() for line in tail.splitlines() if line.strip()][-1:]
        text = " ".join([head.strip(), *last])
    if any(lost in text for lost in _LOST):
        text += (
            " (the job lost its connection to a worker: a worker process or the worker pool"
            " stopped mid-job; nothing was written, rerun when the workers are back)"
        )
    return text
