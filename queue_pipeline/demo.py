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
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

import queue_pipeline
from queue_pipeline import _bundled_data, data
from queue_pipeline._core import progress as _progress
from queue_pipeline._core.quiet import tf_logs_hidden
from queue_pipeline._cli_support import DEMO_DESCRIPTION as DESCRIPTION
from queue_pipeline._cli_support import add_demo_arguments as add_arguments
from queue_pipeline._cli_support import report_error
from queue_pipeline.compare import compare

__all__ = ["DESCRIPTION", "add_arguments", "main", "render", "run", "run_demo", "summary_line"]

BATCH_SIZE = 64
MIN_AFTER_DEQUEUE = 1000  # as fully_connected_reader.py
CAPACITY = MIN_AFTER_DEQUEUE + 3 * BATCH_SIZE
NUM_THREADS = 2
HIDDEN_UNITS = 64
LEARNING_RATE = 3e-3
IMAGE_PIXELS = 28 * 28
NUM_CLASSES = 10
FEATURES = {
    "image_raw": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}
LEGACY_CHAIN = (
    "string_input_producer -> TFRecordReader -> parse_single_example -> "
    f"shuffle_batch({BATCH_SIZE}, num_threads={NUM_THREADS}), "
    "Coordinator + start_queue_runners, a Session loop until OutOfRangeError"
)
TWIN_CHAIN = (
    "queue_pipeline.data: string_input_producer -> "
    "TFRecordReader.read(keys=False) -> shuffle_batch(decode=parse_example) "
    "-> Keras Model.fit"
)
TWIN_CHAIN_TF1 = (
    "queue_pipeline.data: string_input_producer -> "
    "TFRecordReader.read(keys=False) -> shuffle_batch(decode=parse_example) "
    "-> make_one_shot_iterator().get_next(), the same graph ops in a "
    "Session loop until OutOfRangeError (TF1 mode: no Keras)"
)


def prepare_data(directory: str) -> dict[str, Any]:
    """Writes the bundled digits as MNIST idx files and converts them to TFRecords.

    Returns:
      ``{"train": path, "test": path}`` of the TFRecord files, the test set
      as arrays (``test_images`` float32 ``[n, 784]``, ``test_labels``),
      ``train_examples`` and ``source``.
    """
    idx = _bundled_data.write_mnist_idx(directory)
    out: dict[str, Any] = {"source": _bundled_data.source()}
    for part, name in (("train", "train"), ("t10k", "test")):
        out[name] = os.path.join(directory, f"{part}.tfrecords")
        count = _bundled_data.convert_to_tfrecords(
            idx[f"{part}_images"], idx[f"{part}_labels"], out[name]
        )
        out[f"{name}_examples"] = count
    images, labels = _bundled_data.read_mnist_idx(idx["t10k_images"], idx["t10k_labels"])
    out["test_images"] = _scale(images.reshape(len(images), IMAGE_PIXELS))
    out["test_labels"] = labels.astype(np.int32)
    return out


def _scale(pixels):
    """uint8 pixels -> float32 in [0, 1]; the same expression on every side."""
    return (
        tf.cast(pixels, tf.float32) * (1.0 / 255.0)
        if tf.is_tensor(pixels)
        else (pixels.astype(np.float32) * np.float32(1.0 / 255.0))
    )


def _read_and_decode(serialized):
    """fully_connected_reader.py's decoder: one Example -> (image [784], label [])."""
    features = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.io.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([IMAGE_PIXELS])
    return _scale(image), tf.cast(features["label"], tf.int32)


def _decode_batch(serialized):
    """The twin's decoder: a batch of Examples -> (images [n, 784], labels [n])."""
    features = tf.io.parse_example(serialized, FEATURES)
    images = tf.reshape(tf.io.decode_raw(features["image_raw"], tf.uint8), [-1, IMAGE_PIXELS])
    return _scale(images), tf.cast(features["label"], tf.int32)


def legacy_inputs(train_file: str, num_epochs: int, seed: int):
    """The legacy input pipeline; call inside a ``tf.Graph().as_default()``.

    Returns:
      ``[images [None, 784] float32, labels [None] int32]`` (the last batch may
      be smaller: ``allow_smaller_final_batch``, so every example is trained on).
    """
    filename_queue = queue_pipeline.string_input_producer(
        [train_file], num_epochs=num_epochs, seed=seed
    )
    reader = queue_pipeline.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    image, label = _read_and_decode(serialized)
    return queue_pipeline.shuffle_batch(
        [image, label],
        batch_size=BATCH_SIZE,
        num_threads=NUM_THREADS,
        capacity=CAPACITY,
        min_after_dequeue=MIN_AFTER_DEQUEUE,
        seed=seed,
        allow_smaller_final_batch=True,
    )


def twin_inputs(train_file: str, num_epochs: int, seed: int) -> tf.data.Dataset:
    """The tf.data twin of :func:`legacy_inputs`: a Dataset of (images, labels) batches."""
    names = data.string_input_producer([train_file], num_epochs=num_epochs, seed=seed)
    records = data.TFRecordReader().read(names, keys=False)
    return data.shuffle_batch(
        records,
        batch_size=BATCH_SIZE,
        num_threads=NUM_THREADS,
        capacity=CAPACITY,
        min_after_dequeue=MIN_AFTER_DEQUEUE,
        seed=seed,
        allow_smaller_final_batch=True,
        decode=_decode_batch,
    )


def _dense(name: str, x, units: int, seed: int):
    weights = tf.compat.v1.get_variable(
        f"{name}/weights",
        [x.shape[-1], units],
        initializer=tf.compat.v1.glorot_uniform_initializer(seed=seed),
    )
    biases = tf.compat.v1.get_variable(
        f"{name}/biases", [units], initializer=tf.compat.v1.zeros_initializer()
    )
    return tf.matmul(x, weights) + biases


class _GraphModel(NamedTuple):
    """The network as TF 1.x graph ops on a batch of (images, labels)."""

    train_op: tf.Operation
    count: tf.Tensor
    accuracy: tf.Tensor


def _graph_model(images, labels, seed: int) -> _GraphModel:
    """Builds the 784-64-10 network, its Adam step and its accuracy in the default graph."""
    hidden = tf.nn.relu(_dense("hidden", images, HIDDEN_UNITS, seed))
    logits = _dense("softmax_linear", hidden, NUM_CLASSES, seed + 1)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    )
    train_op = tf.compat.v1.train.AdamOptimizer(LEARNING_RATE).minimize(loss)
    accuracy = tf.reduce_mean(
        tf.cast(tf.equal(tf.argmax(logits, 1, output_type=tf.int32), labels), tf.float32)
    )
    return _GraphModel(train_op, tf.shape(labels)[0], accuracy)


def _session_steps(
    sess, model: _GraphModel, bar: _progress.Progress, should_stop=lambda: False
) -> tuple[int, int, int, float]:
    """Runs training steps until the input ends (OutOfRangeError) or `should_stop()`.

    Returns:
      ``(examples, steps, timed examples, seconds)``: the first step pays the
      start-up and is not timed.
    """
    examples = steps = timed = 0
    t0 = None
    try:
        while not should_stop():
            _, n = sess.run([model.train_op, model.count])
            examples, steps = examples + n, steps + 1
            if t0 is None:
                t0 = time.perf_counter()
            else:
                timed += n
            bar.update(steps)
    except tf.errors.OutOfRangeError:
        pass  # num_epochs done: the queues are closed and drained, or the Dataset ended
    seconds = time.perf_counter() - t0 if t0 is not None else 0.0
    return int(examples), steps, int(timed), seconds


def _session_config() -> tf.compat.v1.ConfigProto:
    return tf.compat.v1.ConfigProto(operation_timeout_in_ms=60_000)


def _numbers(
    pipeline: str, examples: int, steps: int, timed: int, seconds: float, test_accuracy: float
) -> dict[str, Any]:
    return {
        "pipeline": pipeline,
        "examples": examples,
        "steps": steps,
        "seconds": seconds,
        "examples_per_second": timed / seconds if seconds else None,
        "test_accuracy": float(test_accuracy),
    }


def train_legacy(
    train_file: str,
    test_images,
    test_labels,
    *,
    epochs: int,
    seed: int,
    progress: bool | None,
    total_steps: int,
) -> dict[str, Any]:
    """Trains the network on the legacy pipeline, TF 1.x style; returns its numbers."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(seed)
        images, labels = legacy_inputs(train_file, epochs, seed)
        model = _graph_model(images, labels, seed)
        init = [
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
        ]
    with (
        tf.compat.v1.Session(graph=graph, config=_session_config()) as sess,
        _progress.Progress("legacy training steps", total_steps, enabled=progress) as bar,
    ):
        sess.run(init)
        coord = queue_pipeline.Coordinator()
        threads = queue_pipeline.start_queue_runners(sess=sess, coord=coord)
        try:
            counts = _session_steps(sess, model, bar, coord.should_stop)
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        test_accuracy = sess.run(model.accuracy, {images: test_images, labels: test_labels})
    return _numbers(LEGACY_CHAIN, *counts, test_accuracy)


def train_twin(
    train_file: str,
    test_images,
    test_labels,
    *,
    epochs: int,
    seed: int,
    progress: bool | None,
    total_steps: int,
    examples_per_epoch: int,
) -> dict[str, Any]:
    """Trains the same network on the tf.data twin; returns its numbers.

    Under TF 2.x defaults (eager) with Keras ``Model.fit``; without eager
    execution (TF1 mode) as graph ops fed by the Dataset's one-shot iterator
    in a Session, since Keras 3 needs eager execution.
    `examples_per_epoch` is the size of the training file: Keras does not
    report example counts, and every example is delivered.
    """
    if not tf.executing_eagerly():
        return _train_twin_session(
            train_file,
            test_images,
            test_labels,
            epochs=epochs,
            seed=seed,
            progress=progress,
            total_steps=total_steps,
        )
    keras = tf.keras
    model = keras.Sequential(
        [
            keras.Input((IMAGE_PIXELS,)),
            keras.layers.Dense(
                HIDDEN_UNITS,
                activation="relu",
                kernel_initializer=keras.initializers.GlorotUniform(seed),
            ),
            keras.layers.Dense(
                NUM_CLASSES, kernel_initializer=keras.initializers.GlorotUniform(seed + 1)
            ),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(LEARNING_RATE),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    stats: dict[str, Any] = {"steps": 0, "t0": None, "t1": None}
    bar = _progress.Progress("twin training steps", total_steps, enabled=progress)

    class _Clock(keras.callbacks.Callback):  # type: ignore[name-defined]  # tf.keras is Any
        def on_train_batch_end(self, batch, logs=None):
            stats["steps"] += 1
            now = time.perf_counter()
            if stats["t0"] is None:  # the first step pays the tracing: not timed
                stats["t0"] = now
            stats["t1"] = now
            bar.update(stats["steps"])

    # Every example is delivered (allow_smaller_final_batch), so the number of
    # batches is known: asserting it tells Keras the epoch's length and checks it.
    dataset = twin_inputs(train_file, epochs, seed).apply(
        tf.data.experimental.assert_cardinality(total_steps)
    )
    with bar:
        model.fit(dataset, epochs=1, shuffle=False, verbose=0, callbacks=[_Clock()])
    _, test_accuracy = model.evaluate(test_images, test_labels, batch_size=512, verbose=0)
    # Only the last batch may be smaller, and the first one (full) is not timed.
    examples = examples_per_epoch * epochs
    seconds = (stats["t1"] - stats["t0"]) if stats["t0"] is not None else 0.0
    timed = examples - min(BATCH_SIZE, examples)
    return _numbers(TWIN_CHAIN, examples, stats["steps"], timed, seconds, test_accuracy)


def _train_twin_session(
    train_file: str,
    test_images,
    test_labels,
    *,
    epochs: int,
    seed: int,
    progress: bool | None,
    total_steps: int,
) -> dict[str, Any]:
    """The twin without eager execution: the legacy network on ``get_next()``, in a Session."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(seed)
        dataset = twin_inputs(train_file, epochs, seed)
        images, labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        model = _graph_model(images, labels, seed)
        init = [
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
        ]
    with (
        tf.compat.v1.Session(graph=graph, config=_session_config()) as sess,
        _progress.Progress("twin training steps", total_steps, enabled=progress) as bar,
    ):
        sess.run(init)
        counts = _session_steps(sess, model, bar)
        # Feeding the iterator's outputs evaluates without touching the iterator.
        test_accuracy = sess.run(model.accuracy, {images: test_images, labels: test_labels})
    return _numbers(TWIN_CHAIN_TF1, *counts, test_accuracy)


def run_demo(*, epochs: int = 10, seed: int = 0, progress: bool | None = None) -> dict[str, Any]:
    """Runs the whole demo and returns its summary (what ``--json`` prints).

    Args:
      epochs: training epochs on each side.
      seed: seeds the shuffles and the weight initializers.
      progress: progress bars on stderr: None when it is a terminal, or
        True / False.

    Returns:
      A dict: ``source``, ``train_examples``, ``test_examples``, ``epochs``,
      ``comparison`` (the compare report's dict), ``comparison_text``,
      ``legacy`` and ``twin`` (``examples``, ``steps``, ``seconds``,
      ``examples_per_second``, ``test_accuracy``, ``pipeline``), ``ok``
      (the pipelines matched), ``total_seconds``.
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
    lines += [
        "   (examples/s: training steps, input and model, after the first step)",
        "",
        summary_line(summary),
    ]
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
            epochs=args.epochs, seed=args.seed, progress=False if args.quiet or args.json else None
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
