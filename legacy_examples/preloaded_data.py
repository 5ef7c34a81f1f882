"""The "Reading data" guide's preloaded data (``fully_connected_preloaded*.py``), on queue_pipeline.

The classic programs, unchanged in logic: the whole training set lives in
the graph, either (a) as a constant (``fully_connected_preloaded.py``) or
(b) as a non-trainable variable created with ``collections=[]`` and
initialized once from a placeholder, so the data is not stored in the graph
nor in checkpoints (``fully_connected_preloaded_var.py``). Either is sliced
one example at a time by ``slice_input_producer(num_epochs=...)`` and batched
by ``batch``, in the guide's Coordinator loop. Only the import changed:
``tf.train`` is ``queue_pipeline`` here (``--impl tf`` runs TF's own).

The tf.data twin (:func:`build_twin`) slices the same arrays with
``queue_pipeline.data.slice_input_producer`` and batches them with
``queue_pipeline.data.batch``; in tf.data both (a) and (b) are
``Dataset.from_tensor_slices`` of the arrays. ``--tf1`` runs the program in
TF1 mode, as legacy scripts run; the twin's batches are then read through a
one-shot iterator in a Session (see ``legacy_examples/README.rst``).

The arrays are MNIST's training images ``[1437, 784]`` in [0, 1] and labels,
read from the bundled idx files (scikit-learn's digits at 28x28; see
``queue_pipeline._bundled_data``). The classic programs fed these batches to
the MNIST model that ``mnist_tfrecords.py`` trains.

Usage: python -m legacy_examples.preloaded_data [--mode constant|variable]
       [--num-epochs N] [--steps N] [--smoke] [--impl qp|tf] [--tf1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import queue_pipeline  # noqa: E402
from legacy_examples import _scratch, _twin_loop  # noqa: E402
from queue_pipeline import _bundled_data  # noqa: E402

IMPLS = {
    "qp": {"train": queue_pipeline},
    "tf": {"train": tf.compat.v1.train},
}
MODES = ("constant", "variable")
BATCH_SIZE = 100
OP_TIMEOUT_MS = 60_000


def load_training_data(directory: str) -> tuple[np.ndarray, np.ndarray]:
    """Writes the bundled MNIST idx files; returns (images ``[N, 784]``, labels ``[N]``).

    As ``input_data.read_data_sets`` did: images float32 in [0, 1], labels
    uint8 class indices.
    """
    idx = _bundled_data.write_mnist_idx(directory)
    images, labels = _bundled_data.read_mnist_idx(idx["train_images"], idx["train_labels"])
    return images.reshape(len(images), -1).astype(np.float32) / 255.0, labels


# --- the legacy programs -------------------------------------------------------------


def _slice_and_batch(
    input_images, input_labels, impl: str, num_epochs, batch_size: int, shuffle: bool, seed
):
    """The guide's shared tail: slice one example per step, then batch."""
    train = IMPLS[impl]["train"]
    image, label = train.slice_input_producer(
        [input_images, input_labels], num_epochs=num_epochs, shuffle=shuffle, seed=seed
    )
    label = tf.cast(label, tf.int32)
    return train.batch([image, label], batch_size=batch_size)


def preloaded_constant(
    images: np.ndarray,
    labels: np.ndarray,
    impl: str = "qp",
    *,
    num_epochs: int | None = None,
    batch_size: int = BATCH_SIZE,
    shuffle: bool = True,
    seed: int | None = None,
):
    """(a) The data as constants in the graph.

    Returns:
      ``(images [batch_size, 784] float32, labels [batch_size] int32)``.
    """
    with tf.name_scope("input"):
        input_images = tf.constant(images)
        input_labels = tf.constant(labels)
        return _slice_and_batch(
            input_images, input_labels, impl, num_epochs, batch_size, shuffle, seed
        )


def preloaded_variable(
    images: np.ndarray,
    labels: np.ndarray,
    impl: str = "qp",
    *,
    num_epochs: int | None = None,
    batch_size: int = BATCH_SIZE,
    shuffle: bool = True,
    seed: int | None = None,
):
    """(b) The data in non-trainable variables outside every collection, fed once.

    Returns:
      ``(images, labels, load)``: the batches as in :func:`preloaded_constant`,
      and ``load(sess)``, which runs the two variable initializers with the
      arrays fed to their placeholders (the guide's
      ``sess.run(input_images.initializer, feed_dict=...)``). The global
      variables initializer does not initialize these variables
      (``collections=[]``): call ``load`` after it.
    """
    with tf.name_scope("input"):
        images_initializer = tf.compat.v1.placeholder(dtype=images.dtype, shape=images.shape)
        labels_initializer = tf.compat.v1.placeholder(dtype=labels.dtype, shape=labels.shape)
        input_images = tf.compat.v1.Variable(images_initializer, trainable=False, collections=[])
        input_labels = tf.compat.v1.Variable(labels_initializer, trainable=False, collections=[])
        batch_images, batch_labels = _slice_and_batch(
            input_images, input_labels, impl, num_epochs, batch_size, shuffle, seed
        )

    def load(sess) -> None:
        sess.run(input_images.initializer, feed_dict={images_initializer: images})
        sess.run(input_labels.initializer, feed_dict={labels_initializer: labels})

    return batch_images, batch_labels, load


def build_legacy(
    images: np.ndarray, labels: np.ndarray, impl: str = "qp", *, mode: str = "constant", **kwargs
) -> tuple[tf.Tensor, tf.Tensor, Callable[[object], None]]:
    """(images, labels, load) of `mode` (``"constant"`` or ``"variable"``).

    For ``"constant"``, ``load`` does nothing. Keyword arguments go to
    :func:`preloaded_constant` / :func:`preloaded_variable`.
    """
    if mode == "constant":
        return (*preloaded_constant(images, labels, impl, **kwargs), lambda sess: None)
    if mode == "variable":
        return preloaded_variable(images, labels, impl, **kwargs)
    raise ValueError(f"preloaded_data: `mode` must be one of {MODES}; got {mode!r}.")


def run(
    images: np.ndarray,
    labels: np.ndarray,
    steps: int | None,
    impl: str = "qp",
    *,
    mode: str = "constant",
    num_epochs: int | None = 1,
    shuffle: bool = True,
    seed: int | None = None,
    batch_size: int = BATCH_SIZE,
) -> list:
    """The guide's loop: fetch batches until OutOfRangeError or `steps`, stop, join."""
    train = IMPLS[impl]["train"]
    batches = []
    with tf.Graph().as_default():
        batch_images, batch_labels, load = build_legacy(
            images,
            labels,
            impl,
            mode=mode,
            num_epochs=num_epochs,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
        )
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(
                tf.group(
                    tf.compat.v1.global_variables_initializer(),
                    tf.compat.v1.local_variables_initializer(),
                )
            )
            load(sess)
            coord = train.Coordinator()
            threads = train.start_queue_runners(sess=sess, coord=coord)
            try:
                while not coord.should_stop():
                    batches.append(sess.run([batch_images, batch_labels]))
                    if steps is not None and len(batches) >= steps:
                        coord.request_stop()
            except tf.errors.OutOfRangeError:
                pass  # the guide: "Done training -- epoch limit reached"
            finally:
                coord.request_stop()
            coord.join(threads)
    return batches


# --- the tf.data twin ----------------------------------------------------------------


def build_twin(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    num_epochs: int | None = None,
    batch_size: int = BATCH_SIZE,
    shuffle: bool = True,
    seed: int | None = None,
) -> tf.data.Dataset:
    """The twin of both programs: the arrays sliced, then batched, via tf.data."""
    from queue_pipeline import data

    examples = data.slice_input_producer(
        [images, labels], num_epochs=num_epochs, shuffle=shuffle, seed=seed
    )
    examples = examples.map(lambda image, label: (image, tf.cast(label, tf.int32)))
    return data.batch(examples, batch_size)


# --- entry points for `queue-pipeline compare` ---------------------------------------

_COMPARE_DATA: list[tuple[np.ndarray, np.ndarray]] = []


def _compare_data() -> tuple[np.ndarray, np.ndarray]:
    """The bundled arrays for the comparison entry points, written once per process."""
    if not _COMPARE_DATA:
        _COMPARE_DATA.append(load_training_data(_scratch.scratch_dir("queue_pipeline_preloaded_")))
    return _COMPARE_DATA[0]


def legacy():
    """Entry point for ``queue-pipeline compare``: (a) for one epoch, in order.

    (b) needs its initializers fed, which the harness does not do; its batches
    equal (a)'s (the tests check this).
    """
    return preloaded_constant(*_compare_data(), num_epochs=1, shuffle=False)


def twin():
    """Entry point for ``queue-pipeline compare``: the tf.data twin of :func:`legacy`."""
    return build_twin(*_compare_data(), num_epochs=1, shuffle=False)


def main(argv=None) -> int:
    """Reads preloaded batches with the legacy program and its twin.

    Prints a summary. Returns the exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, default="variable")
    parser.add_argument("--num-epochs", type=int, default=2)
    parser.add_argument(
        "--steps", type=int, default=None, help="stop after this many batches (default: all epochs)"
    )
    parser.add_argument("--smoke", action="store_true", help="a few batches, in seconds")
    parser.add_argument("--impl", choices=sorted(IMPLS), default="qp")
    parser.add_argument("--seed", type=int, default=0)
    args = _twin_loop.parse_args(parser, argv)
    steps = 5 if args.smoke else args.steps
    with tempfile.TemporaryDirectory() as tmp:
        images, labels = load_training_data(tmp)
    batches = run(
        images, labels, steps, args.impl, mode=args.mode, num_epochs=args.num_epochs, seed=args.seed
    )
    twin_batches = _twin_loop.values(
        lambda: build_twin(images, labels, num_epochs=args.num_epochs, seed=args.seed).take(
            len(batches)
        )
    )
    for name, got in ((f"{args.impl} ({args.mode})", batches), ("twin (tf.data)", twin_batches)):
        seen = np.concatenate([np.asarray(b[1]) for b in got])
        print(
            f"{name}: {len(got)} batches of {BATCH_SIZE} from {len(images)} preloaded "
            f"examples x {args.num_epochs} epochs; label counts "
            f"{np.bincount(seen, minlength=10).tolist()}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
