"""The command line's TensorFlow-free parts: shared arguments, errors, quiet start-up.

``queue-pipeline --help`` (and any usage error) must not import TensorFlow, so
everything the parser needs lives here, away from the modules that build
pipelines; :mod:`queue_pipeline.cli` imports the rest only for the command
that runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
from typing import Iterator

from queue_pipeline._compare.image_shapes import parse_image_shape
from queue_pipeline._core.quiet import TF_LOGS_ENV, tf_logs_requested

__all__ = [
    "DEMO_DESCRIPTION",
    "TF_LOGS_ENV",
    "add_demo_arguments",
    "hide_tf_runtime_logs",
    "image_shape_argument",
    "import_tensorflow",
    "quiet_tf_startup",
    "report_error",
]

DEMO_DESCRIPTION = (
    "Trains one small model through a TF 1.x queue pipeline (queue_pipeline) and "
    "through its tf.data twin (queue_pipeline.data) on bundled digits written "
    "as MNIST TFRecords in a temporary directory, compares the two input "
    "pipelines, and prints each side's throughput and test accuracy. Takes "
    "seconds. Exit status: 0 the input pipelines match, 1 they differ, 2 error."
)


def report_error(command: str, error: BaseException, *, as_json: bool) -> int:
    """Reports a subcommand's failure (also as JSON on stdout); returns exit status 2."""
    message = f"{type(error).__name__}: {error}"
    if as_json:
        sys.stdout.write(json.dumps({"error": message}, indent=2) + "\n")
    sys.stderr.write(f"queue-pipeline {command}: error: {message}\n")
    return 2


def image_shape_argument(text: str) -> tuple[str, tuple[int, ...]]:
    """argparse type of ``--image COMPONENT=HxW[xC]``: ``(path, shape)``."""
    try:
        return parse_image_shape(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the demo's options to `parser` (shared by the CLI and :func:`main`)."""
    parser.add_argument(
        "--epochs", type=int, default=10, help="training epochs on each side (default: 10)"
    )
    parser.add_argument("--seed", type=int, default=0, help="shuffle and initializer seed")
    parser.add_argument(
        "--json", action="store_true", help="print a machine-readable summary instead of the report"
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bar; print only the one-line summary"
    )
    parser.add_argument(
        "--html",
        metavar="PATH",
        default=None,
        help="also write a self-contained HTML page to PATH: the input pipelines' "
        "comparison drawn side by side (images, distributions, order, throughput) and "
        "both training runs' loss and accuracy curves",
    )
    parser.add_argument(
        "--tf1",
        action="store_true",
        help=(
            "run in TF1 mode: tf.compat.v1.disable_v2_behavior() before "
            "anything is built, as legacy scripts run (the twin then "
            "trains as graph ops in a Session instead of Keras)"
        ),
    )


# NOTE [ TensorFlow's start-up noise ]
# Importing TensorFlow 2.21 and listing its devices writes ten lines to the
# process's stderr from C++ before absl logging is initialized, so neither
# TF_CPP_MIN_LOG_LEVEL nor Python's logging can hide them: "All log messages
# before absl::InitializeLog() ...", INFO lines (oneDNN, CUDA drivers not
# found, CPU instructions, with a continuation line), and on a machine without
# a GPU an E line "failed call to cuInit". The commands import TensorFlow
# and list the devices once, up front, with file descriptor 2 pointed at a
# temporary file, then write back every captured line that is not one of
# those: nothing else is lost (a Python warning or a real error still shows).
# ``--tf-logs`` or QUEUE_PIPELINE_TF_LOGS=1 leaves stderr alone.
_ABSL_LINE = re.compile(r"^([IWEF])\d{4} [\d:. ]+\s+\d+ ([\w.]+):\d+\] ")
_NOISE = (
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called"),
    re.compile(r"^To enable the following instructions: .* rebuild TensorFlow"),
)
_NO_GPU_ERRORS = ("cuda_platform.cc", "cuda_executor.cc", "cuda_diagnostics.cc")


def _is_startup_noise(line: str) -> bool:
    absl = _ABSL_LINE.match(line)
    if absl:
        severity, source = absl.groups()
        return severity == "I" or (severity == "E" and source in _NO_GPU_ERRORS)
    return any(pattern.match(line) for pattern in _NOISE) or not line.strip()


@contextlib.contextmanager
def quiet_tf_startup() -> Iterator[None]:
    """Hides TensorFlow's C++ start-up lines written to stderr inside the block.

    Side effects: file descriptor 2 is redirected to a temporary file for the
    block; at exit every captured line that is not start-up noise is written
    back to stderr, in order. Python-level ``sys.stderr`` writes are flushed
    first so nothing is reordered.
    """
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr: nothing to protect
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [
                line
                for line in capture.read().decode("utf-8", "replace").splitlines(True)
                if not _is_startup_noise(line)
            ]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


def import_tensorflow(*, tf_logs: bool = False) -> None:
    """Imports TensorFlow and lists its devices; quietly unless asked (`tf_logs`).

    Listing the physical devices is what a script's own
    ``tf.config.list_physical_devices('GPU')`` does first; it leaves device
    configuration (visibility, memory growth) open to the script.

    Raises:
        TensorFlowRequiredError: no TensorFlow, or one older than supported.
    """
    loud = tf_logs_requested(tf_logs)
    from queue_pipeline._core.tf_required import require_tensorflow

    with contextlib.nullcontext() if loud else quiet_tf_startup():
        tf = require_tensorflow()  # TensorFlowRequiredError: none, or too old
        tf.config.list_physical_devices()


def hide_tf_runtime_logs() -> None:
    """Hides TensorFlow's C++ INFO and WARNING log lines for the rest of the process.

    Sets ``TF_CPP_MIN_LOG_LEVEL=2`` unless the environment already sets a
    level; TensorFlow reads it when it is imported, so this acts only before
    that (the commands call it first; nothing happens once TensorFlow is
    imported). Errors still show. For a command's own process only: ``run``
    leaves the script's TensorFlow as the script would have it.
    """
    if "tensorflow" not in sys.modules:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
