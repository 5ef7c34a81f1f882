"""The "Reading data" guide's feeding (MNIST ``fully_connected_feed.py``) and its tf.data twin.

The classic program, unchanged: ``placeholder_inputs`` -> the MNIST model ->
a training loop that feeds each step's batch from Python
(``feed_dict=fill_feed_dict(data_sets.train, ...)``, batches from
``input_data``'s ``DataSet.next_batch``) -> ``do_eval`` (precision @ 1 on the
test set, also fed). It uses no queue, reader, producer, batcher, runner or
Coordinator.

What this shows, honestly: **the feeding path needs no queue_pipeline
change.** Placeholders, ``feed_dict`` and ``Session.run`` are core
``tf.compat.v1`` graph features that TF 2.x still runs as they were; none of
the deprecated queue API is involved, so there is nothing for queue_pipeline
to replace. ``--impl qp|tf`` is accepted for the examples' uniform command
line and changes nothing: both run the very same program. The reason to touch
a feeding program at all is to migrate it to tf.data, which the twin shows:
``Dataset.from_tensor_slices(arrays).shuffle(n).repeat().batch(batch_size)``
delivers the batches that ``next_batch`` fed (``next_batch`` also wraps
epochs: the batch that crosses an epoch end takes the rest of one epoch and
the start of the next, as ``repeat`` before ``batch`` does), and the same
model trains on it: eagerly under TF 2.x, and in TF1 mode (``--tf1``, as
legacy scripts run) through a one-shot iterator in a Session (see
``legacy_examples._twin_loop``).

For ``queue-pipeline compare``, whose harness runs graphs without feeds,
:func:`legacy` emits the batches the loop feeds through a
``tf.compat.v1.numpy_function`` that calls the same ``next_batch``.

The data are MNIST's idx files from ``queue_pipeline._bundled_data``
(scikit-learn's digits at 28x28; 1,437 training and 360 test examples). The
model is ``mnist_tfrecords.py``'s (the classic ``mnist.py``).

Usage: python -m legacy_examples.feeding [--steps N] [--smoke] [--impl qp|tf] [--tf1]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from legacy_examples import _scratch, _twin_loop  # noqa: E402
from legacy_examples import mnist_tfrecords as mnist  # noqa: E402
from queue_pipeline import _bundled_data  # noqa: E402

# The program uses no queue API: both implementations are the same program.
IMPLS = {"qp": {}, "tf": {}}
BATCH_SIZE = 100
OP_TIMEOUT_MS = 60_000

Datasets = collections.namedtuple("Datasets", ["train", "test"])


class DataSet:
    """``input_data.DataSet``: in-memory images and labels served by :meth:`next_batch`.

    Args:
      images: float32 ``[N, 784]`` in [0, 1].
      labels: int32 ``[N]`` class indices.
      shuffle: permute the examples at the start of every epoch.
      seed: seed of the permutations (NumPy; the classic used the global one).
    """

    def __init__(
        self,
        images: np.ndarray,
        labels: np.ndarray,
        *,
        shuffle: bool = True,
        seed: int | None = None,
    ) -> None:
        self._images, self._labels = images, labels
        self._num_examples = len(images)
        self._shuffle = shuffle
        self._rng = np.random.default_rng(seed)
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def num_examples(self) -> int:
        """The number of examples."""
        return self._num_examples

    @property
    def epochs_completed(self) -> int:
        """Epochs that :meth:`next_batch` has finished."""
        return self._epochs_completed

    def _permute(self) -> None:
        perm = self._rng.permutation(self._num_examples)
        self._images, self._labels = self._images[perm], self._labels[perm]

    def next_batch(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """The next `batch_size` examples; a batch crossing an epoch end spans both."""
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and self._shuffle:
            self._permute()
        if start + batch_size > self._num_examples:
            self._epochs_completed += 1
            images_rest = self._images[start:]
            labels_rest = self._labels[start:]
            if self._shuffle:
                self._permute()
            self._index_in_epoch = batch_size - len(images_rest)
            end = self._index_in_epoch
            return (
                np.concatenate([images_rest, self._images[:end]]),
                np.concatenate([labels_rest, self._labels[:end]]),
            )
        self._index_in_epoch += batch_size
        return (
            self._images[start : self._index_in_epoch],
            self._labels[start : self._index_in_epoch],
        )


def load_arrays(directory: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Writes the bundled MNIST idx files; returns {"train"|"test": (images, labels)}."""
    idx = _bundled_data.write_mnist_idx(directory)
    out = {}
    for name, part in (("train", "train"), ("test", "t10k")):
        images, labels = _bundled_data.read_mnist_idx(idx[f"{part}_images"], idx[f"{part}_labels"])
        out[name] = (
            images.reshape(len(images), -1).astype(np.float32) / 255.0,
            labels.astype(np.int32),
        )
    return out


def read_data_sets(arrays: dict, *, seed: int | None = 0) -> Datasets:
    """``input_data.read_data_sets``: a shuffled training DataSet and an in-order test one."""
    return Datasets(
        train=DataSet(*arrays["train"], seed=seed), test=DataSet(*arrays["test"], shuffle=False)
    )


# --- the legacy program (fully_connected_feed.py) ------------------------------------


def placeholder_inputs(batch_size: int):
    """Placeholders for one batch: images ``[batch_size, 784]``, labels ``[batch_size]``."""
    images_placeholder = tf.compat.v1.placeholder(
        tf.float32, shape=(batch_size, mnist.IMAGE_PIXELS)
    )
    labels_placeholder = tf.compat.v1.placeholder(tf.int32, shape=(batch_size,))
    return images_placeholder, labels_placeholder


def fill_feed_dict(data_set: DataSet, images_pl, labels_pl, batch_size: int) -> dict:
    """The feed for the next step: ``{images_pl: images, labels_pl: labels}``."""
    images_feed, labels_feed = data_set.next_batch(batch_size)
    return {images_pl: images_feed, labels_pl: labels_feed}


def do_eval(
    sess, eval_correct, images_placeholder, labels_placeholder, data_set: DataSet, batch_size: int
) -> float:
    """Precision @ 1 over the whole batches of one epoch of `data_set`."""
    true_count = 0
    steps_per_epoch = data_set.num_examples // batch_size
    num_examples = steps_per_epoch * batch_size
    for _ in range(steps_per_epoch):
        feed_dict = fill_feed_dict(data_set, images_placeholder, labels_placeholder, batch_size)
        true_count += sess.run(eval_correct, feed_dict=feed_dict)
    return float(true_count) / num_examples


def run_training(
    data_sets: Datasets,
    max_steps: int,
    *,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = mnist.LEARNING_RATE,
    seed: int = 0,
    verbose: bool = True,
) -> tuple[list[float], float]:
    """The classic loop; returns (the loss of every step, test precision @ 1)."""
    losses = []
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(seed)
        images_placeholder, labels_placeholder = placeholder_inputs(batch_size)
        logits = mnist.inference(
            images_placeholder, mnist.make_weights(mnist.initial_weights(seed=seed))
        )
        loss = mnist.loss(logits, labels_placeholder)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(learning_rate).minimize(loss)
        eval_correct = mnist.evaluation(logits, labels_placeholder)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step in range(max_steps):
                feed_dict = fill_feed_dict(
                    data_sets.train, images_placeholder, labels_placeholder, batch_size
                )
                _, loss_value = sess.run([train_op, loss], feed_dict=feed_dict)
                losses.append(float(loss_value))
                if verbose and step % 100 == 0:
                    print(f"Step {step}: loss = {loss_value:.2f}")
            precision = do_eval(
                sess,
                eval_correct,
                images_placeholder,
                labels_placeholder,
                data_sets.test,
                batch_size,
            )
    return losses, precision


# --- the tf.data twin ----------------------------------------------------------------


def build_twin(
    images: np.ndarray,
    labels: np.ndarray,
    batch_size: int = BATCH_SIZE,
    *,
    shuffle: bool = True,
    seed: int | None = None,
) -> tf.data.Dataset:
    """What ``next_batch`` fed, as a Dataset: reshuffled epochs, batches across their ends."""
    ds = tf.data.Dataset.from_tensor_slices((images, labels))
    if shuffle:
        ds = ds.shuffle(len(images), seed=seed, reshuffle_each_iteration=True)
    return ds.repeat().batch(batch_size, drop_remainder=True)


def train_twin(
    arrays: dict,
    max_steps: int,
    *,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = mnist.LEARNING_RATE,
    shuffle: bool = True,
    seed: int = 0,
) -> tuple[list[float], float]:
    """Trains the same model on the twin; returns (losses, test precision @ 1).

    Eagerly under TF 2.x defaults, through a one-shot iterator in a Session
    otherwise (``legacy_examples._twin_loop.run``). With ``shuffle=False`` it
    sees the batches of an unshuffled :class:`DataSet`, so its losses follow
    :func:`run_training`'s.
    """

    def build() -> _twin_loop.Loop:
        weights = mnist.make_weights(mnist.initial_weights(seed=seed))
        batches = build_twin(*arrays["train"], batch_size, shuffle=shuffle, seed=seed)
        return _twin_loop.Loop(
            batches.take(max_steps), mnist.training_step(weights, learning_rate), final=weights
        )

    losses, weights = _twin_loop.run(build)

    def build_eval() -> _twin_loop.Loop:
        test = tf.data.Dataset.from_tensor_slices(arrays["test"]).batch(
            batch_size, drop_remainder=True
        )
        return _twin_loop.Loop(test, mnist.evaluation_step(weights))

    counts = _twin_loop.run(build_eval).outputs
    true_count = sum(int(correct) for correct, _ in counts)
    return [float(value) for value in losses], true_count / (len(counts) * batch_size)


# --- entry points for `queue-pipeline compare` ---------------------------------------

_COMPARE_ARRAYS: dict = {}
COMPARE_STEPS = 8  # 800 test examples: crosses the 360-example epoch ends twice


def _compare_arrays() -> dict:
    """The bundled arrays for the comparison entry points, written once per process."""
    if not _COMPARE_ARRAYS:
        _COMPARE_ARRAYS.update(load_arrays(_scratch.scratch_dir("queue_pipeline_feed_")))
    return _COMPARE_ARRAYS


def fed_batches(data_set: DataSet, batch_size: int, steps: int):
    """The batches the training loop would feed, as graph tensors (no queue).

    ``next_batch`` runs in a ``tf.compat.v1.numpy_function``, which raises
    ``OutOfRangeError`` after `steps` batches.
    """
    remaining = [steps]

    def next_batch():
        if remaining[0] <= 0:
            raise StopIteration  # numpy_function turns it into OutOfRangeError
        remaining[0] -= 1
        return data_set.next_batch(batch_size)

    images, labels = tf.compat.v1.numpy_function(
        next_batch, [], [tf.float32, tf.int32], name="next_batch"
    )
    images.set_shape([batch_size, mnist.IMAGE_PIXELS])
    labels.set_shape([batch_size])
    return images, labels


def legacy():
    """Entry point for ``queue-pipeline compare``: the fed test batches, in order."""
    data_set = DataSet(*_compare_arrays()["test"], shuffle=False)
    return fed_batches(data_set, BATCH_SIZE, COMPARE_STEPS)


def twin():
    """Entry point for ``queue-pipeline compare``: the tf.data twin of :func:`legacy`."""
    return build_twin(*_compare_arrays()["test"], shuffle=False).take(COMPARE_STEPS)


def main(argv=None) -> int:
    """Trains with feed_dict and with the twin.

    Prints both losses and precisions. Returns the exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="training steps")
    parser.add_argument("--smoke", action="store_true", help="a few steps, in seconds")
    parser.add_argument(
        "--impl",
        choices=sorted(IMPLS),
        default="qp",
        help="no effect: the program uses no queue API",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = _twin_loop.parse_args(parser, argv)
    steps = 30 if args.smoke else args.steps
    with tempfile.TemporaryDirectory() as tmp:
        arrays = load_arrays(tmp)
    losses, precision = run_training(read_data_sets(arrays, seed=args.seed), steps, seed=args.seed)
    twin_losses, twin_precision = train_twin(arrays, steps, seed=args.seed)
    print(
        f"{args.impl} (feed_dict, no queues): {len(losses)} steps, final loss "
        f"{losses[-1]:.3f}, test precision @ 1 {precision:.3f}"
    )
    print(
        f"twin (tf.data): {len(twin_losses)} steps, final loss {twin_losses[-1]:.3f}, "
        f"test precision @ 1 {twin_precision:.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
