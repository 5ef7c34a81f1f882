"""``queue_pipeline.convert``: a source to TFRecord shards of ``tf.train.Example``, on Beam."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Sequence

import tensorflow as tf

from queue_pipeline._convert import assign as _assign
from queue_pipeline._convert import output as _output
from queue_pipeline._convert import runners as _runners
from queue_pipeline._convert.reader import reader_source
from queue_pipeline._convert.listing import Listing
from queue_pipeline._convert.sources import list_source
from queue_pipeline._version import __version__
from queue_pipeline.errors import QueuePipelineError

__all__ = ["ConvertError", "ConvertResult", "convert"]

_API = "queue_pipeline.convert"
_COMPRESSIONS = (None, "GZIP", "ZLIB")


class ConvertError(QueuePipelineError, RuntimeError):
    """A conversion failed; nothing was written under the final names."""


def _many(count: int, thing: str) -> str:
    """``"1 shard"``, ``"4 shards"``."""
    return f"{count} {thing}" if count == 1 else f"{count} {thing}s"


@dataclasses.dataclass
class ConvertResult:
    """What :func:`convert` wrote.

    Attributes:
      out: the output directory.
      counts: records written per split.
      shards: shard file names per split, in index order.
      errors: the bad records (``record``, ``file``, ``reason``), as in errors.jsonl.
      manifest: the content of manifest.json.
      verified: whether the shards were read back and checked.
    """

    out: str
    counts: dict[str, int]
    shards: dict[str, list[str]]
    errors: list[dict[str, Any]]
    manifest: dict[str, Any]
    verified: bool

    @property
    def written(self) -> int:
        """Records written over all splits."""
        return sum(self.counts.values())

    def reader_source(self) -> str:
        """The Python source of the tf.data reader of these shards (reader.py)."""
        return reader_source(self.manifest, os.path.abspath(self.out))

    def report(self) -> str:
        """A few lines for people: counts per split, errors, where the files are."""
        lines = [f"convert: {self.manifest['source']} -> {self.out}"]
        for split, count in self.counts.items():
            shards = len(self.shards[split])
            lines.append(f"  {split}: {_many(count, 'record')} in {_many(shards, 'shard')}")
        records = self.manifest["records"]
        lines.append(
            f"  {records['listed']} source records: {records['written']} written, "
            f"{records['errors']} bad (listed in {_output.ERRORS})"
            + (
                f", {_many(records['ignored'], 'non-image file')} ignored"
                if records["ignored"]
                else ""
            )
        )
        reencoded = records.get("reencoded")
        if reencoded:
            reasons = ", ".join(f"{n} {reason}" for reason, n in reencoded.items())
            lines.append(
                f"  re-encoded as RGB JPEG: {sum(reencoded.values())} ({reasons}); every "
                "RGB or grayscale JPEG stored byte for byte"
            )
        lines.append(
            "  verified: every record read back once" if self.verified else "  not verified"
        )
        return "\n".join(lines) + "\n"


def convert(
    source: str,
    out: str,
    *,
    shards: int | str | dict[str, int] | None = None,
    split: str | dict[str, float] | None = None,
    compression: str | None = None,
    labels: str | None = None,
    schema: str | dict[str, str] | None = None,
    call: str | None = None,
    argv: str | Sequence[str] | None = None,
    tf1: bool = False,
    runner: str | None = None,
    beam_options: Sequence[str] = (),
    verify: bool | None = None,
    on_error: str = "continue",
    overwrite: bool = False,
) -> ConvertResult:
    """Converts `source` to TFRecord shards of ``tf.train.Example`` in `out`, on Apache Beam.

    Every source record lands in exactly one shard of one split, chosen by a
    stable hash of its identity (NOTE [ Stable assignment ] in
    ``_convert/assign.py``): a rerun on the same input writes byte-identical
    shards. Shards are named ``<split>-<i>-of-<n>``; ``manifest.json`` has the
    counts per split and shard, the feature spec, the source and the version;
    ``errors.jsonl`` lists each bad record with its file and reason.

    Args:
      source: ``images:DIR`` (a sub-folder per class), ``csv:FILE``
        (``path,label`` rows), ``csv-table:FILE[,FILE...]`` (a header, one
        feature per column) or ``FILE.py:FUNCTION`` (a legacy input
        function, called with `call`'s arguments).
      out: the output directory; must be empty or new unless `overwrite`.
      shards: shards per split: one number for every split or
        ``"train=8,validation=2"``; default 1.
      split: ``"train=0.9,validation=0.1"``; default everything in ``train``.
      compression: None or ``"GZIP"`` (or ``"ZLIB"``).
      labels: for images: a file of class names, one a line; label ``i`` is
        line ``i`` (1-based). A record whose class is not in it is an error.
      schema: for ``csv-table``: ``"col:int64,other:string"`` (or a dict);
        columns not named are inferred (int64, then float32, else string).
      call: for ``FILE.py:FUNCTION``: the function's arguments as in a call.
        A producer that repeats forever (``num_epochs=None``) is read for one
        epoch.
      argv: for ``FILE.py:FUNCTION``: the program's own command-line
        arguments (a list, or a string split as a shell would), seen as
        ``sys.argv[1:]`` by its flags and argparse while it is loaded and
        read (``migrate``'s `argv`); default none. Only what FUNCTION needs
        of the file's top level runs.
      tf1: for ``FILE.py:FUNCTION``: the file is written for TensorFlow 1.x
        itself (``import tensorflow as tf`` meaning ``tf.compat.v1``): it is
        loaded and read as under ``queue-pipeline run --tf1``, which disables
        v2 behaviour for the rest of the process (``migrate``'s `tf1`).
      runner: the Beam runner by name (``DirectRunner``, the default, on every
        local core; ``DaskRunner``, ``PortableRunner``, ``FlinkRunner``,
        ``SparkRunner``, ``DataflowRunner``) or a runner class's full path.
      beam_options: further Beam pipeline options, as on a command line
        (``["--project=p", "--temp_location=gs://b/t"]``).
      verify: read the shards back and check counts and contents against the
        source; default on for the DirectRunner, off for other runners.
      on_error: ``"continue"`` (bad records are counted and listed) or
        ``"fail"`` (the first bad record ends the job; nothing is written).
      overwrite: allow a non-empty `out`; only a previous conversion's files
        are replaced (NOTE [ No partial shards ] in ``_convert/output.py``).

    Returns:
      A :class:`ConvertResult`.

    Raises:
      ImportError: Apache Beam is not installed.
      ValueError: a bad argument (the message names it and the fix).
      FileExistsError: `out` is not empty and `overwrite` is False.
      ConvertError: a bad record with ``on_error="fail"``, a failed job, or
        a failed verification. Nothing is left under the final names.
    """
    compression = compression.upper() if compression else None
    if compression not in _COMPRESSIONS:
        raise ValueError(
            f"{_API}: `compression` must be None, 'GZIP' or 'ZLIB'; got {compression!r}."
        )
    if on_error not in ("continue", "fail"):
        raise ValueError(f"{_API}: `on_error` must be 'continue' or 'fail'; got {on_error!r}.")
    fractions = _assign.parse_split(split)
    counts = _assign.parse_shards(shards, fractions)
    try:
        from queue_pipeline._convert import pipeline as _pipeline  # noqa: PLC0415 - Beam on use
    except ModuleNotFoundError as e:
        if e.name is None or not e.name.startswith("apache_beam"):
            raise
        raise ImportError(
            f"{_API} needs Apache Beam, which is not installed. Fix: pip install "
            "'queue_pipeline[beam]' (or apache-beam)."
        ) from e

    options = _runners.beam_options(runner, beam_options)
    runner_name = _runners.runner_name(options)
    if verify is None:
        verify = _runners.is_direct(options)
    _output.check_out(out, overwrite)
    listing = _listing(source, labels=labels, schema=schema, call=call, argv=argv, tf1=tf1)
    if on_error == "fail" and listing.errors:
        first = listing.errors[0]
        raise ConvertError(f"{_API}: {first['file']}: {first['reason']} (on_error='fail').")
    temp = _output.make_temp(out)
    try:
        try:
            _pipeline.run(
                listing.kind,
                listing.records,
                table=_table_spec(listing, fractions, counts),
                spans=listing.spans,
                split=fractions,
                shards=counts,
                temp_dir=temp,
                compression=compression,
                fail=on_error == "fail",
                options=options,
            )
        except _pipeline.JobFailed as e:
            if e.record_error:
                raise ConvertError(f"{_API}: {e.record_error} (on_error='fail').") from e
            raise ConvertError(f"{_API}: the Beam job failed: {e}") from e
        infos, job_errors, made = _results(temp)
        infos = _with_empty_shards(infos, counts, temp, compression)
        errors = sorted(listing.errors + job_errors, key=lambda e: (e["record"], e["file"]))
        # a table's rows are counted by the workers that read them
        listed = len(listing.errors) + (
            made.get("listed", 0) if listing.kind == "table" else len(listing.records)
        )
        if verify:
            from queue_pipeline._convert.verify import VerifyError, verify as check  # noqa: PLC0415

            try:
                check(
                    temp,
                    infos,
                    made,
                    listed=listed,
                    errors=len(errors),
                    compression=compression,
                )
            except VerifyError as e:
                raise ConvertError(str(e)) from e
        manifest = _manifest(
            listing, listed, fractions, infos, errors, compression, runner_name, verify
        )
        if listing.kind == "image":  # NOTE [ What a conversion re-encodes ]
            manifest["records"]["reencoded"] = made.get("reencoded", {})
        _output.finish(out, temp, manifest, errors)
    finally:
        _output.remove_temp(temp)
    return ConvertResult(
        out=out,
        counts={s: manifest["splits"][s]["count"] for s in fractions},
        shards={s: [x["file"] for x in manifest["splits"][s]["shards"]] for s in fractions},
        errors=errors,
        manifest=manifest,
        verified=verify,
    )


def _listing(source: str, *, labels, schema, call, argv, tf1) -> Listing:
    path, sep, function = source.rpartition(":")
    if sep and path.endswith(".py"):
        from queue_pipeline._convert.legacy import list_legacy  # noqa: PLC0415

        if not tf1:
            return list_legacy(source, path, function, call, argv)
        from queue_pipeline._scripts import tf1 as _tf1_script  # noqa: PLC0415

        with _tf1_script.tf1_mode():
            return list_legacy(source, path, function, call, argv)
    return list_source(source, labels=labels, schema=schema)


def _load_json(path: str) -> Any:
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def _results(temp: str):
    from queue_pipeline._convert.pipeline import RESULT_FILES  # noqa: PLC0415

    def load(key: str, empty: Any) -> Any:
        path = os.path.join(temp, RESULT_FILES[key])
        return _load_json(path) if tf.io.gfile.exists(path) else empty

    empty = {"listed": 0, "count": 0, "multiset": "0"}
    return load("shards", []), load("errors", []), load("source", empty)


def _with_empty_shards(infos, counts, temp, compression) -> list[dict[str, Any]]:
    """The writers' reports plus an empty file for each shard no record went to."""
    from queue_pipeline._convert.tfrecords import write_shard_file  # noqa: PLC0415 - Beam on use

    have = {(i["split"], i["shard"]) for i in infos}
    out = list(infos)
    for split, count in counts.items():
        for shard in range(count):
            if (split, shard) not in have:
                name = _assign.shard_name(split, shard, count)
                size = write_shard_file(os.path.join(temp, name), [], compression)
                out.append(
                    {
                        "split": split,
                        "shard": shard,
                        "file": name,
                        "count": 0,
                        "bytes": size,
                        "pieces": [],
                    }
                )
    return sorted(out, key=lambda i: (i["split"], i["shard"]))


def _table_spec(listing: Listing, fractions, counts):
    """What the workers need to convert a table's spans (rows.py), or None for other kinds."""
    if listing.kind != "table":
        return None
    from queue_pipeline._convert.rows import TableSpec  # noqa: PLC0415 - Beam on use

    header = tuple(listing.features)
    types = tuple(listing.features[name]["dtype"] for name in header)
    return TableSpec(header, types, dict(fractions), dict(counts))


def _manifest(
    listing, listed, fractions, infos, errors, compression, runner, verified
) -> dict[str, Any]:
    splits = {}
    for name, fraction in fractions.items():
        mine = [i for i in infos if i["split"] == name]
        splits[name] = {
            "fraction": fraction,
            "count": sum(i["count"] for i in mine),
            "shards": [{k: i[k] for k in ("file", "count", "bytes")} for i in mine],
        }
    written = sum(s["count"] for s in splits.values())
    return {
        "tool": "queue_pipeline.convert",
        "version": __version__,
        "source": listing.source,
        "kind": listing.kind,
        "compression": compression,
        "features": listing.features,
        "classes": listing.classes,
        "splits": splits,
        "records": {
            "listed": listed,
            "written": written,
            "errors": len(errors),
            "ignored": len(listing.ignored),
        },
        "runner": runner,
        "verified": verified,
    }
