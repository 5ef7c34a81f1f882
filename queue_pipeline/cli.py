"""The ``queue-pipeline`` command (also ``python -m queue_pipeline``).

Subcommands:
  table     print the migration table (legacy symbol -> tf.data twin).
  compare   run a legacy pipeline and its tf.data twin side by side (without a
            twin: its own rebuild by ``queue_pipeline.to_dataset``); exit 0
            when they match, 1 when they differ, 2 on an error.
  demo      train one model through a legacy queue pipeline and through its
            tf.data twin on bundled digits; compare them; exit as ``compare``.
  migrate   rewrite a legacy input function as plain tf.data code and prove it
            with ``compare``; exit as ``compare``.
  run       run an unmodified TF 1.x script with ``tf.compat.v1``'s queue API
            routed to queue_pipeline; exit with the script's status (1 if it
            raised). ``--tf1`` runs a script written for TF 1.x itself
            (``import tensorflow as tf``) in TF1 mode.
  service   run a tf.data service server: ``service dispatcher [--port P]
            [--work-dir DIR]`` or ``service worker --dispatcher HOST:P``.
            Its first stdout line is ``<role> listening on grpc://HOST:PORT``;
            it serves until SIGTERM or Ctrl-C, then stops and exits 0; exit 2
            when it cannot start (port taken, dispatcher unreachable).
  convert   raw files or a legacy input function to sharded TFRecord files
            of tf.train.Example, on Apache Beam; exit 0 done, 1 done with
            bad records (listed in errors.jsonl), 2 on an error.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import sys
import traceback

from queue_pipeline._convert import command as _convert_command
from queue_pipeline._cli_support import (
    hide_tf_runtime_logs,
    DEMO_DESCRIPTION,
    TF_LOGS_ENV,
    add_demo_arguments,
    image_shape_argument,
    import_tensorflow,
    report_error,
)
from queue_pipeline._service.command import add_service_parser as _add_service_parser

__all__ = ["main"]


def _table(args) -> int:
    from queue_pipeline.data import migration

    sys.stdout.write(migration.render(args.format))
    return 0


def _load(spec: str, what: str):
    """Resolves ``module:attr`` (or ``path/to/file.py:attr``) to the object."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(
            f"compare: `{what}` must look like 'my_module:build_fn' or "
            f"'path/to/file.py:build_fn'; got {spec!r}."
        )
    if module_name.endswith(".py") or os.sep in module_name:
        file_spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(module_name))[0], module_name
        )
        if file_spec is None or file_spec.loader is None or not os.path.exists(module_name):
            raise ValueError(f"compare: `{what}`: no such file {module_name!r}.")
        module = importlib.util.module_from_spec(file_spec)
        file_spec.loader.exec_module(module)
    else:
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"compare: `{what}`: {module_name!r} has no attribute {attr!r}.")
        obj = getattr(obj, part)
    return obj


def _compare(args) -> int:
    from queue_pipeline.compare import compare

    try:
        twin = None if args.twin is None else _load(args.twin, "MODULE:TWIN")
        report = compare(
            _load(args.legacy, "MODULE:LEGACY"),
            twin,
            epochs=args.epochs,
            max_batches=args.max_batches,
            ordered=args.ordered,
            timeout=args.timeout,
            progress=None,
            image_shapes=dict(args.image or []),
        )
        if args.html is not None:
            report.to_html(args.html)
        if args.logdir is not None:
            report.to_tensorboard(args.logdir)
    except Exception as e:  # noqa: BLE001 - any failure is exit status 2
        return report_error("compare", e, as_json=args.json)
    sys.stdout.write(report.to_json() + "\n" if args.json else report.render())
    return 0 if report.matched else 1


def _demo(args) -> int:
    from queue_pipeline import demo

    return demo.run(args)


RUN_DESCRIPTION = (
    "Runs SCRIPT.py unmodified, as `python SCRIPT.py ARGS...` would (__name__ is "
    "'__main__', sys.argv is [SCRIPT.py, ARGS...], sys.path[0] is the script's "
    "directory), with queue_pipeline.install() in force: tf.compat.v1.train's "
    "producers, batchers, QueueRunner, start_queue_runners, Coordinator and the "
    "tf.compat.v1 readers are queue_pipeline's. --engine (before SCRIPT.py or right "
    "after it) picks the build engine, also for subprocesses through "
    "QUEUE_PIPELINE_ENGINE; default: that variable, else 'queue'. --tf1 (before "
    "SCRIPT.py or right after it; also QUEUE_PIPELINE_TF1=1, which it sets for "
    "subprocesses) runs a script written for TensorFlow 1.x itself: TF1 mode "
    "(tf.compat.v1.disable_v2_behavior()), and `import tensorflow` in the script and "
    "in the modules it imports gives tensorflow.compat.v1; a use of what TensorFlow "
    "2.x removed (tf.contrib, tf.estimator, ...) is reported with its replacement. "
    "Every other argument goes to the script. Exit status: the script's own (0 when "
    "it ends normally); 1 with its traceback and a one-line error if it raised; 2 if "
    "it could not be started. --service grpc://HOST:PORT (before SCRIPT.py; also "
    "QUEUE_PIPELINE_SERVICE, which it sets for subprocesses) runs the dataset engine "
    "with every batching call's pipeline read through that tf.data service dispatcher's "
    "workers; --service-job NAME lets trainer processes split one stream."
)


def _leading_run_flags(
    engine: str | None, tf1: bool, script_args: list[str]
) -> tuple[str | None, bool, list[str]]:
    """Takes ``--engine E`` / ``--engine=E`` / ``--tf1`` given right after SCRIPT.py.

    Each is taken once, only if not given before the script, and only while
    they lead: ``run SCRIPT.py --engine dataset --tf1 --epochs 3``. Anything
    else (``--engines``, a second ``--tf1``) is the script's own.
    """
    rest = list(script_args)
    while rest:
        flag = rest[0]
        if flag == "--tf1" and not tf1:
            tf1 = True
            rest.pop(0)
        elif engine is None and flag.startswith("--engine="):
            engine = rest.pop(0).partition("=")[2]
        elif engine is None and flag == "--engine" and len(rest) > 1:
            rest.pop(0)
            engine = rest.pop(0)
        else:
            break
    return engine, tf1, rest


def _run(args) -> int:
    from queue_pipeline._scripts import install as _install
    from queue_pipeline._scripts import tf1 as _tf1_script

    engine, tf1, script_args = _leading_run_flags(args.engine, args.tf1, args.args)
    try:
        tf1 = tf1 or _tf1_script.from_environment()
    except ValueError as e:
        return report_error("run", e, as_json=False)
    command = "run --tf1" if tf1 else "run"
    try:
        with _tf1_script.tf1_mode() if tf1 else contextlib.nullcontext():
            return _install.run_script(
                args.script,
                script_args,
                engine=engine,
                service=args.service,
                job_name=args.service_job,
            )
    except _install.ScriptError as failure:
        sys.stderr.write(failure.traceback)
        error = (_tf1_script.explain(failure.error) if tf1 else None) or failure.error
        report_error(command, error, as_json=False)
        return 1
    except (OSError, ValueError) as e:  # the script could not be started
        return report_error(command, e, as_json=False)


def _tf1_from_environment() -> bool:
    from queue_pipeline._scripts import tf1 as _tf1_script

    return _tf1_script.from_environment()


def _migrate(args) -> int:
    from queue_pipeline._migrate.api import MigrateError, migrate

    path, sep, function = args.target.rpartition(":")
    if not sep or not path.endswith(".py"):
        path, function = args.target, ""
    # What the program prints while migrate runs it (a shape, a count) goes to
    # stderr: stdout is the migrated module (`queue-pipeline migrate F.py > new.py`).
    try:
        with contextlib.redirect_stdout(sys.stderr):
            result = migrate(
                path,
                function,
                call=args.call,
                out=args.out,
                in_place=args.in_place,
                verify=args.verify,
                epochs=args.epochs,
                max_batches=args.batches,
                callers=args.callers,
                tf1=args.tf1 or _tf1_from_environment(),
                argv=args.argv,
            )
    except MigrateError as e:
        sys.stderr.write(f"{e}\n")
        return 2
    except (OSError, ValueError, TypeError) as e:
        return report_error("migrate", e, as_json=False)
    except Exception as e:  # noqa: BLE001 - NOTE [ An internal error of migrate ]
        return _migrate_bug(args.target, e)
    if args.diff:
        sys.stdout.write(result.diff)
    elif args.out is None and not args.in_place:
        sys.stdout.write(result.source)
    sys.stderr.write(result.report())
    return result.exit_status


def _migrate_bug(target: str, error: Exception) -> int:
    """Exit status 2 for an exception migrate did not expect (never 1, DIFFER's status): what
    it was and the innermost line of migrate's own code it came from, for the report."""
    from queue_pipeline._migrate.internal_errors import BUG

    frames = traceback.extract_tb(error.__traceback__)
    own = [f for f in frames if f"{os.sep}queue_pipeline{os.sep}" in f.filename]
    at = f" (at {os.path.basename(own[-1].filename)}:{own[-1].lineno})" if own else ""
    sys.stderr.write(
        f"queue-pipeline migrate: migrating {target} failed inside migrate{at}: "
        f"{type(error).__name__}: {error}; {BUG}.\n"
    )
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="queue-pipeline",
        description="TF 1.x queue input pipelines on TensorFlow 2.x, and their tf.data twins.",
    )
    parser.add_argument(
        "--tf-logs",
        action="store_true",
        help="show TensorFlow's own log output on stderr: its C++ start-up and "
        "runtime lines, its deprecation notices and tf.data's graph-mode warnings "
        f"(hidden by default; also ${TF_LOGS_ENV}=1, which this flag sets)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    table = commands.add_parser("table", help="print the migration table")
    table.add_argument("--format", choices=["text", "rst", "json"], default="text")
    table.set_defaults(run=_table)
    cmp = commands.add_parser(
        "compare",
        help="compare a legacy pipeline with its tf.data twin",
        description="Runs MODULE:LEGACY (builds a queue pipeline in a fresh graph and "
        "returns its output tensors) and MODULE:TWIN (returns a "
        "tf.data.Dataset) and reports how they differ. Without "
        "MODULE:TWIN the twin is the legacy pipeline rebuilt by "
        "queue_pipeline.to_dataset(). Exit status: 0 match, 1 differ, "
        "2 error.",
    )
    cmp.add_argument("legacy", metavar="MODULE:LEGACY")
    cmp.add_argument(
        "twin",
        metavar="MODULE:TWIN",
        nargs="?",
        default=None,
        help="the twin (default: the legacy pipeline's own to_dataset() rebuild)",
    )
    cmp.add_argument(
        "--epochs",
        type=int,
        default=1,
        help="epochs the legacy side delivers, if its plan records none",
    )
    order = cmp.add_mutually_exclusive_group()
    order.add_argument(
        "--ordered",
        dest="ordered",
        action="store_const",
        const=True,
        default=None,
        help="require the same order",
    )
    order.add_argument(
        "--unordered",
        dest="ordered",
        action="store_const",
        const=False,
        help="compare multisets only",
    )
    cmp.add_argument(
        "--max-batches", type=int, default=None, help="stop the legacy side after this many batches"
    )
    cmp.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds one batch may take before the pipeline counts as stalled",
    )
    cmp.add_argument("--json", action="store_true", help="print the report as JSON")
    cmp.add_argument(
        "--html",
        metavar="PATH",
        default=None,
        help="also write the report as one self-contained HTML page to PATH: both sides' "
        "distributions, images, order and throughput drawn side by side",
    )
    cmp.add_argument(
        "--image",
        metavar="COMPONENT=HxW[xC]",
        action="append",
        type=image_shape_argument,
        default=None,
        help="draw COMPONENT (e.g. 0, image or [0]) as images of this shape on the page, "
        "e.g. 0=28x28 for flat 784-value vectors (repeatable; HxW and HxWxC examples "
        "are drawn without it)",
    )
    cmp.add_argument(
        "--logdir",
        metavar="DIR",
        default=None,
        help="also write the comparison as TensorBoard summaries, one run per side "
        "(DIR/legacy, DIR/twin): first images, value histograms, throughput, the verdict; "
        "then `tensorboard --logdir DIR`",
    )
    cmp.set_defaults(run=_compare)
    demo_parser = commands.add_parser(
        "demo",
        help="train a model through a legacy pipeline and its tf.data twin",
        description=DEMO_DESCRIPTION,
    )
    add_demo_arguments(demo_parser)
    demo_parser.set_defaults(run=_demo)
    mig = commands.add_parser(
        "migrate",
        help="rewrite a legacy input function as tf.data code, verified by compare",
        description="Runs FUNCTION of FILE.py once (with --call's arguments), writes a "
        "`<FUNCTION>_dataset` version of it in plain tf.data (and of the helpers it calls), "
        "and compares the two with `compare`. Without --out, --diff or --in-place the "
        "migrated module goes to stdout; the report goes to stderr. Exit status: 0 MATCH "
        "(or not verifiable), 1 DIFFER (nothing written), 2 error.",
    )
    mig.add_argument(
        "target",
        metavar="FILE.py[:FUNCTION]",
        help="the file and the function that builds the pipeline and returns its tensors; "
        "FUNCTION may be Class.method (--call: the constructor's arguments, or "
        "'Class(ARGS), METHOD ARGS') or Class (a constructor keeping its batches as "
        "attributes); without FUNCTION, the pipeline a script builds at module level",
    )
    mig.add_argument(
        "--call", default=None, metavar="ARGS", help="the function's arguments, as in a call"
    )
    mig.add_argument(
        "--argv",
        default="",
        metavar="'ARGS'",
        help="the program's own command-line arguments (one string, split as a shell "
        "would), seen as sys.argv[1:] by FILE.py's flags and argparse while it is loaded "
        "and proven; default none: flags keep their defaults. Migrate's own arguments "
        "never reach the file, and only what FUNCTION needs of its top level is run",
    )
    where = mig.add_mutually_exclusive_group()
    where.add_argument("--out", default=None, metavar="NEW.py", help="write the migrated module")
    where.add_argument("--diff", action="store_true", help="print a unified diff")
    where.add_argument(
        "--in-place",
        action="store_true",
        help="rewrite FILE.py, keeping the original as FILE.py.orig",
    )
    mig.add_argument("--no-verify", dest="verify", action="store_false", help="do not run compare")
    mig.add_argument("--epochs", type=int, default=1, help="epochs to compare if the plan has none")
    mig.add_argument(
        "--batches", type=int, default=None, help="compare at most this many legacy batches"
    )
    mig.add_argument(
        "--callers",
        action="store_true",
        help="also rewrite the session code that calls FUNCTION: read it through a "
        "one-shot iterator, drop the Coordinator lines when no queue remains",
    )
    mig.add_argument(
        "--tf1",
        action="store_true",
        help="FILE.py is written for TensorFlow 1.x (`import tensorflow as tf`): run it "
        "in TF1 mode, as `run --tf1` does (default: $QUEUE_PIPELINE_TF1)",
    )
    mig.set_defaults(run=_migrate)
    run_parser = commands.add_parser(
        "run",
        help="run an unmodified TF 1.x script on queue_pipeline",
        usage="queue-pipeline run [--engine {queue,dataset}] [--tf1] "
        "[--service grpc://HOST:PORT [--service-job NAME]] SCRIPT.py "
        "[--engine {queue,dataset}] [--tf1] [ARGS...]",
        description=RUN_DESCRIPTION,
    )
    run_parser.add_argument(
        "--engine",
        choices=["queue", "dataset"],
        default=None,
        help="build engine (default: $QUEUE_PIPELINE_ENGINE, else 'queue')",
    )
    run_parser.add_argument(
        "--tf1",
        action="store_true",
        help="run a script written for TensorFlow 1.x (`import tensorflow as "
        "tf`) in TF1 mode (default: $QUEUE_PIPELINE_TF1)",
    )
    run_parser.add_argument(
        "--service",
        metavar="grpc://HOST:PORT",
        default=None,
        help="read each batching call's rebuilt pipeline through the tf.data service at "
        "this dispatcher (implies --engine dataset; default: $QUEUE_PIPELINE_SERVICE)",
    )
    run_parser.add_argument(
        "--service-job",
        metavar="NAME",
        default=None,
        help="job name shared by trainer processes that split one stream "
        "(default: $QUEUE_PIPELINE_SERVICE_JOB; none: each process reads its own)",
    )
    run_parser.add_argument("script", metavar="SCRIPT.py")
    run_parser.add_argument(
        "args", nargs=argparse.REMAINDER, metavar="ARGS", help="arguments passed to the script"
    )
    run_parser.set_defaults(run=_run)
    _add_service_parser(commands)
    _convert_command.add_parser(commands)
    return parser


# Options whose value is the program's own text, which may start with "-".
_VERBATIM_OPTIONS = ("--argv", "--call")


def joined_values(argv: list[str]) -> list[str]:
    """`argv` with ``--argv --flag=value`` joined as ``--argv=--flag=value``.

    argparse takes a lone value starting with ``-`` for an option (``expected
    one argument``); a program's own arguments often are one. Only the options
    of ``migrate`` and ``convert`` are joined: ``run`` hands everything after
    its script to the script untouched.
    """
    argv = list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in ("migrate", "convert"):
        return argv
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in _VERBATIM_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            out.append(f"{token}={argv[i + 1]}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


def main(argv=None) -> int:
    """Runs the command line; returns the exit status.

    0: success (for ``compare``: the pipelines match); 1: ``compare`` found
    differences; 2: a usage error or a failure.
    """
    args = build_parser().parse_args(joined_values(sys.argv[1:] if argv is None else argv))
    check = getattr(args, "check", None)  # what can fail before TensorFlow's import
    status = check(args) if check is not None else 0
    if status:
        return status
    from queue_pipeline._core import quiet
    from queue_pipeline._core.tf_required import TensorFlowRequiredError

    if args.tf_logs:  # for the whole process, TF1 switch and subprocesses included
        os.environ[quiet.TF_LOGS_ENV] = "1"
    # A command prints its report and its errors, nothing of TensorFlow's own
    # unless --tf-logs; `run` leaves the script's TensorFlow as it would be.
    own = args.command != "run" and not quiet.tf_logs_requested()
    if own:
        hide_tf_runtime_logs()
    try:
        import_tensorflow(tf_logs=args.tf_logs)
    except TensorFlowRequiredError as err:
        return report_error(args.command, err, as_json=bool(getattr(args, "json", False)))
    with quiet.tf_logs_hidden() if own else contextlib.nullcontext():
        return args.run(args)
