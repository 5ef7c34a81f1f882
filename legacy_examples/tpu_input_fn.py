"""The input function of the TPU performance articles, on tf.data alone (no legacy side).

It reproduces the ``input_fn(params)`` that Cloud TPU's "Using TPUs" and
"Input pipeline performance" guides (and the TPU reference models' MNIST)
gave ``TPUEstimator``, the tf.data endpoint a queue pipeline migrates to::

    files = tf.data.Dataset.list_files(file_pattern)
    dataset = files.apply(tf.contrib.data.parallel_interleave(
        tf.data.TFRecordDataset, cycle_length=4, sloppy=True))
    dataset = dataset.shuffle(1024).repeat()
    dataset = dataset.apply(tf.contrib.data.map_and_batch(
        parser, batch_size=params["batch_size"], drop_remainder=True))
    dataset = dataset.prefetch(2)

On TF 2.x ``parallel_interleave(sloppy=True)`` is ``interleave(...,
num_parallel_calls=..., deterministic=False)`` and ``map_and_batch`` is
``map(...).batch(...)``, which tf.data's default ``map_and_batch_fusion``
optimization fuses into the same kernel. ``drop_remainder=True`` is what TPUs
need: XLA compiles for static shapes, so every batch must have the same,
known, batch dimension; :func:`static_shapes` shows it.

The data are the bundled digits as MNIST TFRecords (``image_raw``,
``label``, ...), split into shards so the interleave has files to read in
parallel. ``--tf1`` runs the program in TF1 mode, as TPUEstimator's
graph-mode callers did: the batches are then read through a one-shot
iterator in a Session (see ``legacy_examples._twin_loop``).

Usage: python -m legacy_examples.tpu_input_fn [--steps N] [--smoke]
       [--batch-size N] [--tf1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from legacy_examples import _twin_loop  # noqa: E402
from queue_pipeline import _bundled_data  # noqa: E402

IMAGE_PIXELS = 28 * 28
FEATURES = {
    "image_raw": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def write_shards(directory: str, num_shards: int = 4) -> str:
    """Writes the bundled training digits as `num_shards` MNIST TFRecord files.

    Returns:
      The file pattern that matches the shards (``<dir>/train-*.tfrecords``).
    """
    idx = _bundled_data.write_mnist_idx(directory)
    whole = os.path.join(directory, "train.tfrecords")
    _bundled_data.convert_to_tfrecords(idx["train_images"], idx["train_labels"], whole)

    # The records, in file order: eagerly, or through a Session in TF1 mode.
    records = _twin_loop.values(lambda: tf.data.TFRecordDataset(whole))
    writers = [
        tf.io.TFRecordWriter(os.path.join(directory, f"train-{i:05d}.tfrecords"))
        for i in range(num_shards)
    ]
    try:
        for i, record in enumerate(records):
            writers[i % num_shards].write(record)
    finally:
        for writer in writers:
            writer.close()
    os.remove(whole)
    return os.path.join(directory, "train-*.tfrecords")


def parser(serialized):
    """One serialized MNIST Example -> (image float32 [784] in [0, 1], label int32 [])."""
    features = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.io.decode_raw(features["image_raw"], tf.uint8)
    image = tf.reshape(tf.cast(image, tf.float32) / 255.0, [IMAGE_PIXELS])
    return image, tf.cast(features["label"], tf.int32)


def make_input_fn(
    file_pattern: str,
    *,
    is_training: bool = True,
    seed: int | None = None,
    cycle_length: int = 4,
    shuffle_buffer: int = 1024,
) -> Callable[[dict], tf.data.Dataset]:
    """Returns the TPU-style ``input_fn(params)`` over the files of `file_pattern`.

    Args:
      file_pattern: a glob of TFRecord files of MNIST Examples.
      is_training: shuffle the files and records and repeat forever (else:
        one pass, in file order).
      seed: seeds the file and record shuffles (reproducible runs).
      cycle_length: files read in parallel by the interleave.
      shuffle_buffer: records in the shuffle buffer.

    Returns:
      ``input_fn(params)``: ``params["batch_size"]`` is the per-core batch
      size, as TPUEstimator passes it. It returns a Dataset of
      ``(images [batch_size, 784] float32, labels [batch_size] int32)`` whose
      batch dimension is static.
    """

    def input_fn(params: dict) -> tf.data.Dataset:
        batch_size = params["batch_size"]
        files = tf.data.Dataset.list_files(file_pattern, shuffle=is_training, seed=seed)
        dataset = files.interleave(
            lambda path: tf.data.TFRecordDataset(path, buffer_size=8 * 1024 * 1024),
            cycle_length=cycle_length,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=not is_training,
        )  # sloppy=True when training
        if is_training:
            dataset = dataset.shuffle(shuffle_buffer, seed=seed).repeat()
        dataset = dataset.map(parser, num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.batch(batch_size, drop_remainder=True)  # fused: map_and_batch
        return dataset.prefetch(tf.data.AUTOTUNE)

    return input_fn


def static_shapes(dataset: tf.data.Dataset) -> list[tuple[str, list]]:
    """The static (graph-time) shape and dtype of each component of `dataset`.

    Returns:
      ``[(dtype name, shape as a list with None for unknown dimensions)]``.
    """
    return [
        (spec.dtype.name, spec.shape.as_list()) for spec in tf.nest.flatten(dataset.element_spec)
    ]


def run(file_pattern: str, steps: int, batch_size: int = 64, seed: int | None = 0) -> dict:
    """Reads `steps` batches; returns their static shapes, count and labels.

    Eagerly under TF 2.x defaults, through a one-shot iterator in a Session
    otherwise (TPUEstimator called ``input_fn`` in a graph).
    """
    shapes = []

    def make_dataset() -> tf.data.Dataset:
        dataset = make_input_fn(file_pattern, seed=seed)({"batch_size": batch_size})
        shapes.extend(static_shapes(dataset))
        return dataset.take(steps)

    labels = []
    for images, batch_labels in _twin_loop.values(make_dataset):
        if images.shape != (batch_size, IMAGE_PIXELS):
            raise AssertionError(f"tpu_input_fn: batch of shape {images.shape}")
        labels.extend(batch_labels.tolist())
    return {"static_shapes": shapes, "batches": steps, "labels": labels}


def main(argv=None) -> int:
    """Runs the example from the command line; returns the exit status."""
    parser_ = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser_.add_argument("--steps", type=int, default=200, help="batches to read")
    parser_.add_argument("--smoke", action="store_true", help="a few steps, in seconds")
    parser_.add_argument("--batch-size", type=int, default=64)
    args = _twin_loop.parse_args(parser_, argv)
    steps = 5 if args.smoke else args.steps
    with tempfile.TemporaryDirectory() as tmp:
        result = run(write_shards(tmp), steps, args.batch_size)
    shapes = ", ".join(f"{dtype}{shape}" for dtype, shape in result["static_shapes"])
    print(
        f"tf.data: {result['batches']} batches; static shapes {shapes}; "
        f"{len(set(result['labels']))} distinct labels"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
