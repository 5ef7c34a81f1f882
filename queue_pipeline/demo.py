"""``queue-pipeline demo``: one model trained on a legacy queue pipeline and on its tf.data twin.

The legacy side is TF 1.x's ``mnist/fully_connected_reader.py`` with
``tf.train`` replaced by ``queue_pipeline``: ``string_input_producer``
(``num_epochs``) -> ``TFRecordReader`` -> ``parse_single_example`` ->
``shuffle_batch`` (two enqueue threads) -> a small fully connected network
trained in a ``Session`` under the ``Coordinator`` loop until the input ends.
The twin is the same pipeline in ``queue_pipeline.data`` (a Dataset, batches
decoded with ``parse_example``) feeding Keras ``Model.fit`` under TF 2.x
defaults. In TF1 mode (``--tf1``: ``tf.compat.v1.disable_v2_behavior()``
first, as legacy scripts run, or a caller that already disabled v2
behaviour) there is no eager execution and Keras 3 does not run, so the twin
takes a session script's first migration step instead: the same network as
graph ops, fed by ``tf.compat.v1.data.make_one_shot_iterator(dataset)
.get_next()`` and trained in a ``Session`` until ``OutOfRangeError``.

The data are the bundled digits (scikit-learn's real scans when it is
installed), written as MNIST idx files and converted to TFRecords exactly as
TF 1.x's ``convert_to_records.py`` did, in a temporary directory. The demo
prints where the data came from, ``queue_pipeline.compare``'s side-by-side
report of one epoch of both input pipelines (as multisets: both shuffle), and
each side's training throughput and test accuracy. A progress bar is drawn
on stderr when it is a terminal.

Exit status: 0 when the two input pipelines deliver the same examples, 1 when
they differ, 2 on an error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time
from typing import Any

import tensorflow as tf

from queue_pipeline._compare.page import write as write_page
from queue_pipeline._core.quiet import tf_logs_hidden
from queue_pipeline._cli_support import DEMO_DESCRIPTION as DESCRIPTION
from queue_pipeline._cli_support import add_demo_arguments as add_arguments
from queue_pipeline._cli_support import report_error

# The names demo.py has always had, where they live now (explicit re-exports).
from queue_pipeline._demo.inputs import (
    BATCH_SIZE as BATCH_SIZE,
    CAPACITY as CAPACITY,
    FEATURES as FEATURES,
    HIDDEN_UNITS as HIDDEN_UNITS,
    IMAGE_PIXELS as IMAGE_PIXELS,
    LEARNING_RATE as LEARNING_RATE,
    LEGACY_CHAIN as LEGACY_CHAIN,
    MIN_AFTER_DEQUEUE as MIN_AFTER_DEQUEUE,
    NUM_CLASSES as NUM_CLASSES,
    NUM_THREADS as NUM_THREADS,
    TWIN_CHAIN as TWIN_CHAIN,
    TWIN_CHAIN_TF1 as TWIN_CHAIN_TF1,
    legacy_inputs as legacy_inputs,
    prepare_data as prepare_data,
    twin_inputs as twin_inputs,
)
from queue_pipeline._demo.training import train_legacy as train_legacy
from queue_pipeline._demo.training import train_twin as train_twin
from queue_pipeline.compare import compare

_IMAGE_SIDE = 28  # the images are flat IMAGE_PIXELS = 28 * 28 vectors

__all__ = ["DESCRIPTION", "add_arguments", "main", "render", "run", "run_demo", "summary_line"]


def run_demo(
    *,
    epochs: int = 10,
    seed: int = 0,
    progress: bool | None = None,
    html: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Runs the whole demo and returns its summary (what ``--json`` prints).

    Args:
      epochs: training epochs on each side.
      seed: seeds the shuffles and the weight initializers.
      progress: progress bars on stderr: None when it is a terminal, or
        True / False.
      html: also write the comparison's page (``ComparisonReport.to_html``,
        images drawn 28x28) with both training runs' loss and accuracy curves
        to this path.

    Returns:
      A dict: ``source``, ``train_examples``, ``test_examples``, ``epochs``,
      ``comparison`` (the compare report's dict), ``comparison_text``,
      ``legacy`` and ``twin`` (``examples``, ``steps``, ``seconds``,
      ``examples_per_second``, ``test_accuracy``, ``pipeline``, ``curves``:
      per-step training ``loss`` and batch ``accuracy``), ``ok`` (the
      pipelines matched), ``total_seconds``, and ``html`` (the page's path,
      or None).
    """
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"demo: `epochs` must be a positive int; got {epochs!r}.")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="queue_pipeline_demo_") as tmp:
        files = prepare_data(tmp)
        report = compare(
            lambda: legacy_inputs(files["train"], 1, seed),
            lambda: twin_inputs(files["train"], 1, seed),
            timeout=30.0,
            progress=progress,
            image_shapes={"0": (_IMAGE_SIDE, _IMAGE_SIDE)},
        )
        total_steps = -(-files["train_examples"] * epochs // BATCH_SIZE)
        common = dict(epochs=epochs, seed=seed, progress=progress, total_steps=total_steps)
        legacy = train_legacy(files["train"], files["test_images"], files["test_labels"], **common)
        twin = train_twin(
            files["train"],
            files["test_images"],
            files["test_labels"],
            examples_per_epoch=files["train_examples"],
            **common,
        )
    page = None
    if html is not None:
        page = write_page(
            report,
            html,
            training={"legacy": legacy["curves"], "twin": twin["curves"]},
            title="queue_pipeline demo",
            intro=f"One model trained through a TF 1.x queue pipeline ({legacy['pipeline']}) "
            f"and through its tf.data twin ({twin['pipeline']}) on {files['source']}; the "
            "input pipelines compared over one epoch, and both training runs.",
        )
    return {
        "source": files["source"],
        "train_examples": files["train_examples"],
        "test_examples": files["test_examples"],
        "epochs": epochs,
        "batch_size": BATCH_SIZE,
        "comparison": report.to_dict(),
        "comparison_text": report.render(),
        "legacy": legacy,
        "twin": twin,
        "ok": bool(report.matched),
        "total_seconds": time.perf_counter() - start,
        "html": page,
    }


def _rate(side: dict) -> str:
    rate = side["examples_per_second"]
    return f"{rate:,.0f}" if rate else "-"


def render(summary: dict) -> str:
    """The human-readable report of a :func:`run_demo` summary."""
    legacy, twin = summary["legacy"], summary["twin"]
    lines = [
        "queue-pipeline demo: one model trained through a TF 1.x queue pipeline and "
        "through its tf.data twin",
        "",
        f"data    {summary['source']}: {summary['train_examples']:,} train / "
        f"{summary['test_examples']:,} test images,",
        "        upscaled to 28x28, written as MNIST idx files and converted to TFRecords",
        "        (tf.train.Example: image_raw, label, height, width, depth) in a temp dir",
        textwrap.fill(legacy["pipeline"], 92, initial_indent="legacy  ", subsequent_indent=" " * 8),
        textwrap.fill(twin["pipeline"], 92, initial_indent="twin    ", subsequent_indent=" " * 8),
        "",
        "1. The two input pipelines, one epoch side by side (queue_pipeline.compare):",
        "",
        *("   " + line if line else "" for line in summary["comparison_text"].splitlines()),
        "",
        f"2. Training: {IMAGE_PIXELS}-{HIDDEN_UNITS}-{NUM_CLASSES} network, Adam "
        f"{LEARNING_RATE:g}, batch {BATCH_SIZE}, {summary['epochs']} epoch(s)",
        "",
        f"   {'':<18}{'examples':>10}{'examples/s':>13}{'test accuracy':>16}{'seconds':>10}",
    ]
    for name, side in (("legacy (queues)", legacy), ("twin (tf.data)", twin)):
        lines.append(
            f"   {name:<18}{side['examples']:>10,}{_rate(side):>13}"
            f"{side['test_accuracy']:>16.3f}{side['seconds']:>10.2f}"
        )
    lines += ["   (examples/s: training steps, input and model, after the first step)", ""]
    if summary.get("html"):
        lines += [f"page    {summary['html']}", ""]
    lines.append(summary_line(summary))
    return "\n".join(lines) + "\n"


def summary_line(summary: dict) -> str:
    """One line: the verdict, both accuracies and the wall time."""
    verdict = (
        "OK: both pipelines deliver the same examples"
        if summary["ok"]
        else "MISMATCH: the pipelines deliver different examples (see the report)"
    )
    return (
        f"{verdict}; test accuracy legacy {summary['legacy']['test_accuracy']:.3f}, "
        f"twin {summary['twin']['test_accuracy']:.3f}; "
        f"{summary['total_seconds']:.1f} s for data, comparison and training."
    )


def run(args: argparse.Namespace) -> int:
    """Runs the demo for parsed `args`; returns the exit status (0, 1 or 2).

    With ``args.tf1``, ``tf.compat.v1.disable_v2_behavior()`` runs first,
    before anything is built.
    """
    if getattr(args, "tf1", False):
        with tf_logs_hidden():  # TF's notice that ref variables are deprecated
            tf.compat.v1.disable_v2_behavior()
    if args.epochs < 1:
        sys.stderr.write(
            f"queue-pipeline demo: error: `--epochs` must be at least 1; got {args.epochs}.\n"
        )
        return 2
    try:
        summary = run_demo(
            epochs=args.epochs,
            seed=args.seed,
            progress=False if args.quiet or args.json else None,
            html=getattr(args, "html", None),
        )
    except Exception as e:  # noqa: BLE001 - any failure is exit status 2
        return report_error("demo", e, as_json=args.json)
    if args.json:
        sys.stdout.write(
            json.dumps({k: v for k, v in summary.items() if k != "comparison_text"}, indent=2)
            + "\n"
        )
    elif args.quiet:
        sys.stdout.write(summary_line(summary) + "\n")
    else:
        sys.stdout.write(render(summary))
    sys.stdout.flush()
    return 0 if summary["ok"] else 1


def main(argv=None) -> int:
    """``python -m queue_pipeline.demo``; also ``queue-pipeline demo``."""
    parser = argparse.ArgumentParser(prog="queue-pipeline demo", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
