"""The demo's model, trained on each input pipeline: a Session loop and Keras ``fit``.

The same small fully connected network on both sides: as graph ops in a
``Session`` under the ``Coordinator`` loop for the legacy queue pipeline (and
for the twin in TF1 mode, through a one-shot iterator), as a Keras model fed
by the Dataset under TF 2.x defaults. :mod:`queue_pipeline.demo` runs them.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import tensorflow as tf

import queue_pipeline
from queue_pipeline._core import progress as _progress
from queue_pipeline._demo.inputs import (
    BATCH_SIZE,
    HIDDEN_UNITS,
    IMAGE_PIXELS,
    LEARNING_RATE,
    LEGACY_CHAIN,
    NUM_CLASSES,
    TWIN_CHAIN,
    TWIN_CHAIN_TF1,
    legacy_inputs,
    twin_inputs,
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
    loss: tf.Tensor


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
    return _GraphModel(train_op, tf.shape(labels)[0], accuracy, loss)


def _session_steps(
    sess, model: _GraphModel, bar: _progress.Progress, curves: dict, should_stop=lambda: False
) -> tuple[int, int, int, float]:
    """Runs training steps until the input ends (OutOfRangeError) or `should_stop()`.

    Appends each step's loss and batch accuracy (before the step's update)
    to ``curves["loss"]`` and ``curves["accuracy"]``.

    Returns:
      ``(examples, steps, timed examples, seconds)``: the first step pays the
      start-up and is not timed.
    """
    examples = steps = timed = 0
    t0 = None
    try:
        while not should_stop():
            _, n, loss, accuracy = sess.run(
                [model.train_op, model.count, model.loss, model.accuracy]
            )
            curves["loss"].append(float(loss))
            curves["accuracy"].append(float(accuracy))
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
    pipeline: str,
    examples: int,
    steps: int,
    timed: int,
    seconds: float,
    test_accuracy: float,
    curves: dict,
) -> dict[str, Any]:
    return {
        "pipeline": pipeline,
        "examples": examples,
        "steps": steps,
        "seconds": seconds,
        "examples_per_second": timed / seconds if seconds else None,
        "test_accuracy": float(test_accuracy),
        "curves": curves,
    }


def _new_curves() -> dict[str, list[float]]:
    """Per-step training loss and batch accuracy, filled as the steps run."""
    return {"loss": [], "accuracy": []}


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
        curves = _new_curves()
        try:
            counts = _session_steps(sess, model, bar, curves, coord.should_stop)
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        test_accuracy = sess.run(model.accuracy, {images: test_images, labels: test_labels})
    return _numbers(LEGACY_CHAIN, *counts, test_accuracy, curves)


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
    stats: dict[str, Any] = {"steps": 0, "t0": None, "t1": None, "means": []}
    bar = _progress.Progress("twin training steps", total_steps, enabled=progress)

    class _Clock(keras.callbacks.Callback):  # type: ignore[name-defined]  # tf.keras is Any
        def on_train_batch_end(self, batch, logs=None):
            logs = logs or {}
            stats["means"].append((logs.get("loss"), logs.get("accuracy")))
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
    curves = _per_step(stats["means"], examples)
    return _numbers(TWIN_CHAIN, examples, stats["steps"], timed, seconds, test_accuracy, curves)


def _per_step(means: list, examples: int) -> dict[str, list[float]]:
    """Per-step values from Keras's running means over the epoch.

    NOTE [ Keras's per-step logs ]
    ``on_train_batch_end`` gets each metric's mean so far in the epoch,
    weighted by batch size (Keras 3's loss tracker and accuracy metric both
    are), not the step's own value. With ``N_k`` examples after step ``k``
    and the means ``m_k``, step k's value is ``(N_k m_k - N_{k-1} m_{k-1}) /
    n_k``: the legacy side's per-step values, so the two curves compare.
    Batches are full but the last (``allow_smaller_final_batch``).
    """
    curves = _new_curves()
    before = {"loss": 0.0, "accuracy": 0.0}
    seen = 0
    for loss, accuracy in means:
        n = min(BATCH_SIZE, max(examples - seen, 1))
        for name, mean in (("loss", loss), ("accuracy", accuracy)):
            if mean is None:
                continue
            total = float(mean) * (seen + n)
            curves[name].append((total - before[name]) / n)
            before[name] = total
        seen += n
    return curves


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
        curves = _new_curves()
        counts = _session_steps(sess, model, bar, curves)
        # Feeding the iterator's outputs evaluates without touching the iterator.
        test_accuracy = sess.run(model.accuracy, {images: test_images, labels: test_labels})
    return _numbers(TWIN_CHAIN_TF1, *counts, test_accuracy, curves)
