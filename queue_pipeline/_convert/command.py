"""The ``queue-pipeline convert`` subcommand: its arguments and its run (no TF at import)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

__all__ = ["DESCRIPTION", "add_parser", "run"]

DESCRIPTION = (
    "Converts SOURCE to sharded TFRecord files of tf.train.Example in --out, on Apache Beam "
    "(pip install 'queue_pipeline[beam]'). SOURCE: images:DIR (a sub-folder per class), "
    "csv:FILE ('path,label' rows), csv-table:FILE[,FILE...] (a header; one feature per "
    "column) or FILE.py:FUNCTION (a legacy input function, with --call's arguments: what its "
    "reader and decoder produce per record). Every record lands in exactly one shard of one "
    "split, by a stable hash of its identity: a rerun writes byte-identical shards. Writes "
    "DIR/manifest.json (counts, features, source, version) and DIR/errors.jsonl (each bad "
    "record, its file and reason), prints the counts and the tf.data reader of the shards. "
    "The DirectRunner (default) uses every local core; Beam options for another runner go "
    "after `--` (-- --project P --region R --temp_location gs://B/T). Exit status: 0 done, "
    "1 done with bad records, 2 error (nothing written)."
)


def add_parser(commands: Any) -> None:
    """Adds ``convert`` to the CLI's subparsers `commands`."""
    p = commands.add_parser(
        "convert",
        help="convert raw files or a legacy pipeline to TFRecord shards (Beam)",
        description=DESCRIPTION,
        usage="queue-pipeline convert SOURCE --out DIR [options] [-- BEAM OPTIONS]",
    )
    p.add_argument("source", metavar="SOURCE")
    p.add_argument("--out", required=True, metavar="DIR", help="the output directory")
    p.add_argument(
        "--shards", default=None, metavar="N", help="shards per split: N or train=N,validation=M"
    )
    p.add_argument(
        "--split",
        default=None,
        metavar="SPEC",
        help="e.g. train=0.9,validation=0.1 (default: all in train)",
    )
    p.add_argument("--compression", choices=["GZIP", "ZLIB"], default=None)
    p.add_argument("--labels", default=None, metavar="FILE", help="class names, one a line")
    p.add_argument(
        "--schema", default=None, metavar="SPEC", help="csv-table column types: col:int64,..."
    )
    p.add_argument("--call", default=None, metavar="ARGS", help="FUNCTION's arguments")
    p.add_argument(
        "--argv",
        default="",
        metavar="'ARGS'",
        help="FILE.py's own command-line arguments (one string, split as a shell would), "
        "seen as sys.argv[1:] by its flags and argparse while it is loaded and read; default "
        "none. Convert's own arguments never reach the file",
    )
    p.add_argument(
        "--tf1",
        action="store_true",
        help="FILE.py is written for TensorFlow 1.x (`import tensorflow as tf`): load and "
        "read it in TF1 mode, as `run --tf1` does (default: $QUEUE_PIPELINE_TF1)",
    )
    p.add_argument(
        "--runner",
        default=None,
        metavar="NAME",
        help="the Beam runner: DirectRunner (default), DaskRunner, PortableRunner, FlinkRunner, "
        "SparkRunner, DataflowRunner, or a runner class's full path",
    )
    p.add_argument(
        "--on-error",
        choices=["continue", "fail"],
        default="continue",
        help="continue: count and list bad records (default); fail: stop at the first",
    )
    p.add_argument("--overwrite", action="store_true", help="allow a non-empty --out")
    verify = p.add_mutually_exclusive_group()
    verify.add_argument(
        "--verify",
        dest="verify",
        action="store_const",
        const=True,
        default=None,
        help="read the shards back and check them (default with the DirectRunner)",
    )
    verify.add_argument("--no-verify", dest="verify", action="store_const", const=False)
    p.add_argument(
        "--emit-reader", default=None, metavar="FILE.py", help="write the tf.data reader here"
    )
    p.__class__ = _ConvertParser
    p.set_defaults(run=run, beam_args=[])


class _ConvertParser(argparse.ArgumentParser):
    """Takes everything after ``--`` as Beam's options, whatever its form (``--runner X``)."""

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        beam: list[str] = []
        if "--" in args:
            at = args.index("--")
            args, beam = args[:at], args[at + 1 :]
        namespace, extras = super().parse_known_args(args, namespace)
        namespace.beam_args = beam
        return namespace, extras


def _no_bigquery_notice(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("apitools not found")


def _no_job_traceback(record: logging.LogRecord) -> bool:
    """False for a failed job's traceback that Beam's portable runner logs (on the root
    logger) as it ends: the command reports the job's error once (NOTE [ A failed job in
    one line ] in pipeline.py)."""
    from_beam = f"{os.sep}apache_beam{os.sep}" in record.pathname
    return not (from_beam and record.getMessage().startswith("Traceback (most recent call"))


def run(args: argparse.Namespace) -> int:
    """Runs ``convert``; returns the exit status (0, 1 with bad records, 2 on an error)."""
    from queue_pipeline._cli_support import report_error  # noqa: PLC0415

    if not getattr(args, "tf_logs", False):
        # Beam logs each worker error with its whole traceback; the command reports it once.
        logging.getLogger("apache_beam").setLevel(logging.CRITICAL)
        # and, on its root logger, that its BigQuery clients are missing (not used
        # here), and a failed portable job's traceback
        logging.getLogger().addFilter(_no_bigquery_notice)
        logging.getLogger().addFilter(_no_job_traceback)
    try:
        from queue_pipeline._convert.api import convert  # noqa: PLC0415
        from queue_pipeline._scripts import tf1 as _tf1_script  # noqa: PLC0415

        result = convert(
            args.source,
            args.out,
            shards=args.shards,
            split=args.split,
            compression=args.compression,
            labels=args.labels,
            schema=args.schema,
            call=args.call,
            argv=args.argv,
            tf1=args.tf1 or _tf1_script.from_environment(),
            runner=args.runner,
            beam_options=args.beam_args,
            verify=args.verify,
            on_error=args.on_error,
            overwrite=args.overwrite,
        )
    except Exception as e:  # noqa: BLE001 - any failure is exit status 2
        return report_error("convert", e, as_json=False)
    source = result.reader_source()
    if args.emit_reader:
        with open(args.emit_reader, "w", encoding="utf-8") as f:
            f.write(source)
    sys.stderr.write(result.report())
    sys.stdout.write(source)
    return 1 if result.errors else 0
