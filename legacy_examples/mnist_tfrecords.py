"""TF 1.x's MNIST ``fully_connected_reader.py`` (TFRecords -> shuffle_batch), on queue_pipeline.

The classic program, unchanged in logic: MNIST's idx files are converted to
TFRecords by the classic converter (``convert_to_records.py``, here
``queue_pipeline._bundled_data.convert_to_tfrecords``), then
``string_input_producer(num_epochs)`` -> ``TFRecordReader`` ->
``parse_single_example({image_raw, label})`` -> ``decode_raw`` -> ``[784]``
floats in [0, 1] -> ``shuffle_batch`` feed a fully connected network
(``mnist.py``'s inference/loss/training, with one hidden layer) trained in a
Session by the Coordinator loop ``while not coord.should_stop()`` until
``OutOfRangeError`` ("Done training for N epochs"). The trained weights are
then evaluated on t10k by a second queue program (``batch``, one epoch, in
order), as ``cifar10_eval.py`` evaluated a checkpoint. Only the import
changed: ``tf.train`` is ``queue_pipeline`` (``--impl tf`` runs TF's own).

The tf.data twin trains the same model from the same initial weights with the
same plain gradient descent on ``queue_pipeline.data``'s twins
(``TFRecordReader.read(keys=False)`` and ``shuffle_batch(decode=...)``, which
parses whole batches with ``tf.io.parse_example``): eagerly under TF 2.x,
and in TF1 mode (``--tf1``, as legacy scripts run) through a one-shot
iterator in a Session until ``OutOfRangeError``; one step function
(:func:`training_step`) serves both (see ``legacy_examples._twin_loop``).

The images are scikit-learn's bundled 8x8 digits scaled to 28x28 (1,437
training and 360 t10k examples; see ``queue_pipeline._bundled_data``).

Usage: python -m legacy_examples.mnist_tfrecords [--num-epochs N] [--steps N]
       [--smoke] [--impl qp|tf] [--tf1]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import queue_pipeline  # noqa: E402
from legacy_examples import _scratch, _twin_loop  # noqa: E402
from queue_pipeline import _bundled_data  # noqa: E402

IMPLS = {
    "qp": {"train": queue_pipeline, "TFRecordReader": queue_pipeline.TFRecordReader},
    "tf": {"train": tf.compat.v1.train, "TFRecordReader": tf.compat.v1.TFRecordReader},
}

IMAGE_SIZE = 28
IMAGE_PIXELS = IMAGE_SIZE * IMAGE_SIZE
NUM_CLASSES = 10
HIDDEN_UNITS = 128
LEARNING_RATE = 0.1  # the classic 0.01 needs MNIST's 55,000 images; these are 1,437
BATCH_SIZE = 100
NUM_PREPROCESS_THREADS = 2
MIN_AFTER_DEQUEUE = 1000
OP_TIMEOUT_MS = 60_000
FEATURES = {
    "image_raw": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def prepare_data(directory: str) -> dict[str, str]:
    """Writes MNIST's idx files and converts them to TFRecords, as the classic converter did.

    Returns:
      ``{"train": path, "t10k": path}`` of ``train.tfrecords`` and
      ``t10k.tfrecords`` in `directory`.
    """
    idx = _bundled_data.write_mnist_idx(directory)
    paths = {}
    for part in ("train", "t10k"):
        paths[part] = os.path.join(directory, f"{part}.tfrecords")
        _bundled_data.convert_to_tfrecords(
            idx[f"{part}_images"], idx[f"{part}_labels"], paths[part]
        )
    return paths


# --- the model (mnist.py), shared by the legacy program and its twin ----------------


def initial_weights(hidden_units: int = HIDDEN_UNITS, seed: int = 0) -> list[np.ndarray]:
    """mnist.py's initial values: truncated normals (stddev 1/sqrt(fan-in)), zero biases.

    Drawn with NumPy from `seed`, so the legacy program and its twin start from
    the same weights.
    """
    rng = np.random.default_rng(seed)

    def truncated_normal(shape, stddev):
        values = rng.standard_normal(shape)
        while (outside := np.abs(values) > 2.0).any():
            values[outside] = rng.standard_normal(int(outside.sum()))
        return (values * stddev).astype(np.float32)

    return [
        truncated_normal([IMAGE_PIXELS, hidden_units], 1.0 / math.sqrt(IMAGE_PIXELS)),
        np.zeros([hidden_units], np.float32),
        truncated_normal([hidden_units, NUM_CLASSES], 1.0 / math.sqrt(hidden_units)),
        np.zeros([NUM_CLASSES], np.float32),
    ]


def make_weights(values: list[np.ndarray]) -> list[tf.Variable]:
    """The model's variables (hidden1 and softmax_linear weights and biases)."""
    names = ["hidden1/weights", "hidden1/biases", "softmax_linear/weights", "softmax_linear/biases"]
    return [tf.Variable(value, name=name.replace("/", "_")) for name, value in zip(names, values)]


def inference(images, weights):
    """mnist.inference with one hidden layer: ``[batch, 784]`` -> logits ``[batch, 10]``."""
    w1, b1, w2, b2 = weights
    hidden1 = tf.nn.relu(tf.matmul(images, w1) + b1)
    return tf.matmul(hidden1, w2) + b2


def loss(logits, labels):
    """mnist.loss: mean sparse softmax cross-entropy."""
    labels = tf.cast(labels, tf.int64)
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits),
        name="xentropy_mean",
    )


def evaluation(logits, labels):
    """mnist.evaluation: the number of examples whose top logit is the label."""
    return tf.reduce_sum(tf.cast(tf.nn.in_top_k(predictions=logits, targets=labels, k=1), tf.int32))


def training_step(weights: list[tf.Variable], learning_rate: float):
    """The twins' mnist.training: a step ``(images, labels) -> loss`` of plain gradient descent.

    The step applies ``weights -= learning_rate * gradient`` (what
    ``GradientDescentOptimizer`` does) and returns the loss before the update,
    under the updates' control dependencies, so fetching it runs them. It
    builds the same ops in a ``tf.function`` and in a TF1 graph (see NOTE
    [ Eager loop vs Session loop ] in ``legacy_examples._twin_loop``).
    """

    def step(images, labels):
        with tf.GradientTape() as tape:
            loss_value = loss(inference(images, weights), labels)
        gradients = tape.gradient(loss_value, weights)
        updates = [
            variable.assign_sub(learning_rate * gradient)
            for variable, gradient in zip(weights, gradients)
        ]
        with tf.control_dependencies(updates):
            return tf.identity(loss_value)

    return step


def evaluation_step(weights):
    """The twins' evaluation step: ``(images, labels) -> (correct, examples)`` of one batch."""

    def step(images, labels):
        return evaluation(inference(images, weights), labels), tf.shape(labels)[0]

    return step


# --- the legacy program (fully_connected_reader.py) ----------------------------------


def read_and_decode(filename_queue, impl: str = "qp"):
    """One example: (image ``[784]`` float32 in [0, 1], label int32)."""
    reader = IMPLS[impl]["TFRecordReader"]()
    _, serialized_example = reader.read(filename_queue)
    features = tf.io.parse_single_example(serialized_example, features=FEATURES)
    image = tf.io.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([IMAGE_PIXELS])
    image = tf.cast(image, tf.float32) * (1.0 / 255)
    label = tf.cast(features["label"], tf.int32)
    return image, label


def inputs(
    filename: str,
    batch_size: int,
    num_epochs: int | None,
    impl: str = "qp",
    *,
    seed: int | None = None,
):
    """The classic training input: shuffled batches for `num_epochs` epochs.

    Returns:
      ``(images [batch_size, 784] float32, labels [batch_size] int32)``; the
      last, partial batch is dropped (its dequeue raises OutOfRangeError).
    """
    train = IMPLS[impl]["train"]
    with tf.name_scope("input"):
        filename_queue = train.string_input_producer([filename], num_epochs=num_epochs, seed=seed)
        image, label = read_and_decode(filename_queue, impl)
        images, sparse_labels = train.shuffle_batch(
            [image, label],
            batch_size=batch_size,
            num_threads=NUM_PREPROCESS_THREADS,
            capacity=MIN_AFTER_DEQUEUE + 3 * batch_size,
            min_after_dequeue=MIN_AFTER_DEQUEUE,
            seed=seed,
        )
    return images, sparse_labels


def eval_inputs(filename: str, batch_size: int, impl: str = "qp"):
    """The evaluation input: every example of `filename` once, in order.

    Returns:
      ``(images [None, 784] float32, labels [None] int32)``; the last batch
      may be smaller.
    """
    train = IMPLS[impl]["train"]
    with tf.name_scope("eval_input"):
        filename_queue = train.string_input_producer([filename], num_epochs=1, shuffle=False)
        image, label = read_and_decode(filename_queue, impl)
        return train.batch(
            [image, label],
            batch_size=batch_size,
            num_threads=1,
            capacity=3 * batch_size,
            allow_smaller_final_batch=True,
        )


def _session():
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
    return tf.compat.v1.Session(config=config)


def run_training(
    train_file: str,
    num_epochs: int,
    impl: str = "qp",
    *,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = LEARNING_RATE,
    max_steps: int | None = None,
    seed: int = 0,
    verbose: bool = True,
) -> tuple[list[np.ndarray], int]:
    """The classic training loop; returns (trained weights, steps run)."""
    train = IMPLS[impl]["train"]
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(seed)
        images, labels = inputs(train_file, batch_size, num_epochs, impl, seed=seed)
        weights = make_weights(initial_weights(seed=seed))
        logits = inference(images, weights)
        loss_op = loss(logits, labels)
        global_step = tf.Variable(0, name="global_step", trainable=False)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(learning_rate).minimize(
            loss_op, global_step=global_step
        )
        init_op = tf.group(
            tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer()
        )
        with _session() as sess:
            sess.run(init_op)
            coord = train.Coordinator()
            threads = train.start_queue_runners(sess=sess, coord=coord)
            step = 0
            try:
                while not coord.should_stop():
                    _, loss_value = sess.run([train_op, loss_op])
                    if verbose and step % 100 == 0:
                        print(f"Step {step}: loss = {loss_value:.2f}")
                    step += 1
                    if max_steps is not None and step >= max_steps:
                        coord.request_stop()
            except tf.errors.OutOfRangeError:
                if verbose:
                    print(f"Done training for {num_epochs} epochs, {step} steps.")
            finally:
                coord.request_stop()
            coord.join(threads)
            return sess.run(weights), step


def evaluate(
    eval_file: str, weights: list[np.ndarray], impl: str = "qp", *, batch_size: int = BATCH_SIZE
) -> float:
    """Precision @ 1 of `weights` on every example of `eval_file`, by a queue program."""
    train = IMPLS[impl]["train"]
    with tf.Graph().as_default():
        images, labels = eval_inputs(eval_file, batch_size, impl)
        eval_correct = evaluation(inference(images, make_weights(weights)), labels)
        count = tf.shape(labels)[0]
        with _session() as sess:
            sess.run(
                [
                    tf.compat.v1.global_variables_initializer(),
                    tf.compat.v1.local_variables_initializer(),
                ]
            )
            coord = train.Coordinator()
            threads = train.start_queue_runners(sess=sess, coord=coord)
            true_count = num_examples = 0
            try:
                while not coord.should_stop():
                    correct, n = sess.run([eval_correct, count])
                    true_count, num_examples = true_count + correct, num_examples + n
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
    return true_count / max(num_examples, 1)


# --- the tf.data twin ----------------------------------------------------------------


def decode_batch(serialized):
    """Parses a batch of serialized Examples: (images ``[n, 784]``, labels ``[n]``)."""
    features = tf.io.parse_example(serialized, FEATURES)
    images = tf.reshape(tf.io.decode_raw(features["image_raw"], tf.uint8), [-1, IMAGE_PIXELS])
    return (tf.cast(images, tf.float32) * (1.0 / 255), tf.cast(features["label"], tf.int32))


def twin_inputs(
    filename: str, batch_size: int, num_epochs: int | None, *, seed: int | None = None
) -> tf.data.Dataset:
    """The twin of :func:`inputs`: shuffled, parsed batches.

    One thread (the legacy program's two make its order depend on timing; the
    twin's order depends only on `seed`).
    """
    from queue_pipeline import data

    filenames = data.string_input_producer([filename], num_epochs=num_epochs, seed=seed)
    records = data.TFRecordReader().read(filenames, keys=False)
    return data.shuffle_batch(
        records,
        batch_size,
        capacity=MIN_AFTER_DEQUEUE + 3 * batch_size,
        min_after_dequeue=MIN_AFTER_DEQUEUE,
        seed=seed,
        decode=decode_batch,
    )


def twin_eval_inputs(filename: str, batch_size: int) -> tf.data.Dataset:
    """The twin of :func:`eval_inputs`: every example once, in order."""
    from queue_pipeline import data

    filenames = data.string_input_producer([filename], num_epochs=1, shuffle=False)
    records = data.TFRecordReader().read(filenames, keys=False)
    return data.batch(
        records,
        batch_size,
        capacity=3 * batch_size,
        allow_smaller_final_batch=True,
        decode=decode_batch,
    )


def train_twin(
    train_file: str,
    num_epochs: int,
    *,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = LEARNING_RATE,
    max_steps: int | None = None,
    seed: int = 0,
) -> tuple[list[np.ndarray], int]:
    """Trains the same model on the twin; returns (trained weights, steps).

    Eagerly under TF 2.x defaults, through a one-shot iterator in a Session
    otherwise (``legacy_examples._twin_loop.run``).
    """

    def build() -> _twin_loop.Loop:
        weights = make_weights(initial_weights(seed=seed))
        batches = twin_inputs(train_file, batch_size, num_epochs, seed=seed)
        if max_steps is not None:
            batches = batches.take(max_steps)
        return _twin_loop.Loop(batches, training_step(weights, learning_rate), final=weights)

    losses, weights = _twin_loop.run(build)
    return weights, len(losses)


def evaluate_twin(
    eval_file: str, weights: list[np.ndarray], *, batch_size: int = BATCH_SIZE
) -> float:
    """Precision @ 1 of `weights` on every example of `eval_file`, via tf.data."""
    counts = _twin_loop.run(
        lambda: _twin_loop.Loop(twin_eval_inputs(eval_file, batch_size), evaluation_step(weights))
    ).outputs
    true_count = sum(int(correct) for correct, _ in counts)
    num_examples = sum(int(n) for _, n in counts)
    return true_count / max(num_examples, 1)


# --- entry points for `queue-pipeline compare` ---------------------------------------

_COMPARE_FILES: dict[str, str] = {}


def _compare_files() -> dict[str, str]:
    """Bundled TFRecords for the comparison entry points, written once per process."""
    if not _COMPARE_FILES:
        _COMPARE_FILES.update(prepare_data(_scratch.scratch_dir("queue_pipeline_mnist_")))
    return dict(_COMPARE_FILES)


def legacy():
    """Entry point for ``queue-pipeline compare``: the t10k evaluation input, in order."""
    return eval_inputs(_compare_files()["t10k"], BATCH_SIZE)


def twin():
    """Entry point for ``queue-pipeline compare``: the tf.data twin of :func:`legacy`."""
    return twin_eval_inputs(_compare_files()["t10k"], BATCH_SIZE)


def main(argv=None) -> int:
    """Trains and evaluates the legacy program and its twin.

    Prints both accuracies. Returns the exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-epochs", type=int, default=5)
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="stop training after this many steps (default: all epochs)",
    )
    parser.add_argument("--smoke", action="store_true", help="2 epochs, in seconds")
    parser.add_argument("--impl", choices=sorted(IMPLS), default="qp")
    parser.add_argument("--seed", type=int, default=0)
    args = _twin_loop.parse_args(parser, argv)
    num_epochs = 2 if args.smoke else args.num_epochs
    with tempfile.TemporaryDirectory() as tmp:
        files = prepare_data(tmp)
        weights, steps = run_training(
            files["train"], num_epochs, args.impl, max_steps=args.steps, seed=args.seed
        )
        accuracy = evaluate(files["t10k"], weights, args.impl)
        twin_weights, twin_steps = train_twin(
            files["train"], num_epochs, max_steps=args.steps, seed=args.seed
        )
        twin_accuracy = evaluate_twin(files["t10k"], twin_weights)
    print(f"{args.impl}: {steps} steps, t10k accuracy {accuracy:.3f}")
    print(f"twin (tf.data): {twin_steps} steps, t10k accuracy {twin_accuracy:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
