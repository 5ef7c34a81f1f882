"""TF 1.x's CIFAR-10 tutorial input (``cifar10_input.py``), on queue_pipeline.

The classic program, unchanged in logic: ``string_input_producer`` over
``data_batch_*.bin`` -> ``FixedLengthRecordReader(record_bytes=1 + 32*32*3)``
-> ``decode_raw(uint8)`` -> the label is the first byte, the image the next
3,072 reshaped to ``[3, 32, 32]`` and transposed to ``[32, 32, 3]``. Training
input (``distorted_inputs``): ``random_crop`` to 24x24x3,
``random_flip_left_right``, ``random_brightness(63)``,
``random_contrast(0.2, 1.8)``, ``per_image_standardization``, then
``shuffle_batch(batch_size, num_threads=16, capacity=min_queue_examples +
3 * batch_size, min_after_dequeue=min_queue_examples)``. Evaluation input
(``inputs``): central 24x24 crop, standardization, ``batch``. Only the import
changed: ``tf.train`` and ``tf.FixedLengthRecordReader`` are queue_pipeline's
here (``--impl tf`` runs TF's own).

The tf.data twins (:func:`twin_distorted_inputs`, :func:`twin_inputs`) build
the same on ``queue_pipeline.data``: the FixedLengthRecordReader twin's
``read(keys=False)``, the same per-image ops in ``Dataset.map``, and the
``shuffle_batch``/``batch`` twins. The distortions are random, so the
comparison entry points (:func:`legacy`, :func:`twin`) use the evaluation
path, which is deterministic with one thread and unshuffled files.

The bundled CIFAR-10 files hold scikit-learn's digits, upscaled and tinted
(1,498 training and 299 test records; see ``queue_pipeline._bundled_data``),
so the epoch sizes are counted from the files instead of CIFAR-10's 50,000
and 10,000.

``--tf1`` runs the program in TF1 mode, as legacy scripts run; the twin's
batches are then read through a one-shot iterator in a Session (see
``legacy_examples/README.rst``).

Usage: python -m legacy_examples.cifar10_binary [--steps N] [--smoke] [--impl qp|tf]
       [--tf1]
"""

from __future__ import annotations

import argparse
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
    "qp": {
        "train": queue_pipeline,
        "FixedLengthRecordReader": queue_pipeline.FixedLengthRecordReader,
    },
    "tf": {
        "train": tf.compat.v1.train,
        "FixedLengthRecordReader": tf.compat.v1.FixedLengthRecordReader,
    },
}

IMAGE_SIZE = 24
NUM_CLASSES = 10
LABEL_BYTES = 1
HEIGHT, WIDTH, DEPTH = 32, 32, 3
IMAGE_BYTES = HEIGHT * WIDTH * DEPTH
RECORD_BYTES = LABEL_BYTES + IMAGE_BYTES
NUM_PREPROCESS_THREADS = 16
MIN_FRACTION_OF_EXAMPLES_IN_QUEUE = 0.4
OP_TIMEOUT_MS = 60_000


def train_files(data_dir: str) -> list[str]:
    """``data_batch_1.bin`` .. ``data_batch_5.bin`` in `data_dir`."""
    return [os.path.join(data_dir, f"data_batch_{i}.bin") for i in range(1, 6)]


def eval_files(data_dir: str) -> list[str]:
    """``test_batch.bin`` in `data_dir`."""
    return [os.path.join(data_dir, "test_batch.bin")]


def num_examples(filenames: list[str]) -> int:
    """Records in `filenames` (CIFAR-10 itself: 50,000 training, 10,000 test)."""
    return sum(os.path.getsize(f) for f in filenames) // RECORD_BYTES


def _check_files(filenames: list[str]) -> None:
    for f in filenames:
        if not tf.io.gfile.exists(f):
            raise ValueError("Failed to find file: " + f)


# --- the legacy program (cifar10_input.py) -------------------------------------------


class CIFAR10Record:
    """What :func:`read_cifar10` returns: key, label ``[1]`` int32, uint8image ``[32, 32, 3]``."""


def read_cifar10(filename_queue, impl: str = "qp") -> CIFAR10Record:
    """Reads and parses one example from CIFAR-10 binary files."""
    result = CIFAR10Record()
    result.height, result.width, result.depth = HEIGHT, WIDTH, DEPTH
    reader = IMPLS[impl]["FixedLengthRecordReader"](record_bytes=RECORD_BYTES)
    result.key, value = reader.read(filename_queue)
    record_bytes = tf.io.decode_raw(value, tf.uint8)
    result.label = tf.cast(tf.strided_slice(record_bytes, [0], [LABEL_BYTES]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record_bytes, [LABEL_BYTES], [LABEL_BYTES + IMAGE_BYTES]),
        [result.depth, result.height, result.width],
    )
    result.uint8image = tf.transpose(depth_major, [1, 2, 0])
    return result


def _generate_image_and_label_batch(
    image,
    label,
    min_queue_examples: int,
    batch_size: int,
    shuffle: bool,
    impl: str = "qp",
    num_threads: int = NUM_PREPROCESS_THREADS,
):
    """Batches of ``(images [batch_size, 24, 24, 3], labels [batch_size])``."""
    train = IMPLS[impl]["train"]
    if shuffle:
        images, label_batch = train.shuffle_batch(
            [image, label],
            batch_size=batch_size,
            num_threads=num_threads,
            capacity=min_queue_examples + 3 * batch_size,
            min_after_dequeue=min_queue_examples,
        )
    else:
        images, label_batch = train.batch(
            [image, label],
            batch_size=batch_size,
            num_threads=num_threads,
            capacity=min_queue_examples + 3 * batch_size,
        )
    tf.compat.v1.summary.image("images", images)
    return images, tf.reshape(label_batch, [batch_size])


def distorted_inputs(
    data_dir: str,
    batch_size: int,
    impl: str = "qp",
    *,
    num_threads: int = NUM_PREPROCESS_THREADS,
    verbose: bool = True,
):
    """Distorted training input, shuffled, repeating forever."""
    filenames = train_files(data_dir)
    _check_files(filenames)
    filename_queue = IMPLS[impl]["train"].string_input_producer(filenames)
    with tf.name_scope("data_augmentation"):
        read_input = read_cifar10(filename_queue, impl)
        reshaped_image = tf.cast(read_input.uint8image, tf.float32)
        height, width = IMAGE_SIZE, IMAGE_SIZE
        distorted_image = tf.image.random_crop(reshaped_image, [height, width, 3])
        distorted_image = tf.image.random_flip_left_right(distorted_image)
        distorted_image = tf.image.random_brightness(distorted_image, max_delta=63)
        distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8)
        float_image = tf.image.per_image_standardization(distorted_image)
        float_image.set_shape([height, width, 3])
        read_input.label.set_shape([1])
        min_queue_examples = int(num_examples(filenames) * MIN_FRACTION_OF_EXAMPLES_IN_QUEUE)
        if verbose:
            print(f"Filling queue with {min_queue_examples} CIFAR images before starting to train.")
    return _generate_image_and_label_batch(
        float_image,
        read_input.label,
        min_queue_examples,
        batch_size,
        shuffle=True,
        impl=impl,
        num_threads=num_threads,
    )


def inputs(
    eval_data: bool,
    data_dir: str,
    batch_size: int,
    impl: str = "qp",
    *,
    num_epochs: int | None = None,
    shuffle: bool = True,
    num_threads: int = NUM_PREPROCESS_THREADS,
):
    """Evaluation input: centrally cropped, standardized, batched in queue order.

    `num_epochs`, `shuffle` and `num_threads` default to the tutorial's
    (forever, shuffled file names, 16 threads); ``num_epochs=1,
    shuffle=False, num_threads=1`` makes it deterministic.
    """
    filenames = eval_files(data_dir) if eval_data else train_files(data_dir)
    _check_files(filenames)
    with tf.name_scope("input"):
        filename_queue = IMPLS[impl]["train"].string_input_producer(
            filenames, num_epochs=num_epochs, shuffle=shuffle
        )
        read_input = read_cifar10(filename_queue, impl)
        reshaped_image = tf.cast(read_input.uint8image, tf.float32)
        height, width = IMAGE_SIZE, IMAGE_SIZE
        resized_image = tf.image.resize_with_crop_or_pad(reshaped_image, height, width)
        float_image = tf.image.per_image_standardization(resized_image)
        float_image.set_shape([height, width, 3])
        read_input.label.set_shape([1])
        min_queue_examples = int(num_examples(filenames) * MIN_FRACTION_OF_EXAMPLES_IN_QUEUE)
    return _generate_image_and_label_batch(
        float_image,
        read_input.label,
        min_queue_examples,
        batch_size,
        shuffle=False,
        impl=impl,
        num_threads=num_threads,
    )


def run(
    data_dir: str,
    steps: int,
    impl: str = "qp",
    *,
    batch_size: int = 128,
    seed: int | None = 0,
    num_threads: int = NUM_PREPROCESS_THREADS,
    verbose: bool = True,
) -> list:
    """The training input loop: start the runners, fetch `steps` distorted batches, stop, join."""
    train = IMPLS[impl]["train"]
    batches = []
    with tf.Graph().as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        images, labels = distorted_inputs(
            data_dir, batch_size, impl, num_threads=num_threads, verbose=verbose
        )
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(
                [
                    tf.compat.v1.global_variables_initializer(),
                    tf.compat.v1.local_variables_initializer(),
                ]
            )
            coord = train.Coordinator()
            threads = train.start_queue_runners(sess=sess, coord=coord)
            try:
                for _ in range(steps):
                    if coord.should_stop():
                        break
                    batches.append(sess.run([images, labels]))
            finally:
                coord.request_stop()
            coord.join(threads)
    return batches


# --- the tf.data twin ----------------------------------------------------------------


def decode_record(record):
    """One CIFAR-10 record: (uint8image ``[32, 32, 3]``, label int32 scalar)."""
    record_bytes = tf.io.decode_raw(record, tf.uint8)
    label = tf.cast(record_bytes[0], tf.int32)
    depth_major = tf.reshape(
        record_bytes[LABEL_BYTES : LABEL_BYTES + IMAGE_BYTES], [DEPTH, HEIGHT, WIDTH]
    )
    return tf.transpose(depth_major, [1, 2, 0]), label


def twin_distorted_inputs(
    data_dir: str, batch_size: int, *, seed: int | None = None
) -> tf.data.Dataset:
    """The twin of :func:`distorted_inputs`: distorted, shuffled batches, forever."""
    from queue_pipeline import data

    filenames = train_files(data_dir)
    _check_files(filenames)
    names = data.string_input_producer(filenames, seed=seed)
    records = data.FixedLengthRecordReader(record_bytes=RECORD_BYTES).read(names, keys=False)

    def distort(record):
        uint8image, label = decode_record(record)
        image = tf.image.random_crop(tf.cast(uint8image, tf.float32), [IMAGE_SIZE, IMAGE_SIZE, 3])
        image = tf.image.random_flip_left_right(image)
        image = tf.image.random_brightness(image, max_delta=63)
        image = tf.image.random_contrast(image, lower=0.2, upper=1.8)
        return tf.image.per_image_standardization(image), label

    examples = records.map(distort, num_parallel_calls=tf.data.AUTOTUNE)
    min_queue_examples = int(num_examples(filenames) * MIN_FRACTION_OF_EXAMPLES_IN_QUEUE)
    return data.shuffle_batch(
        examples,
        batch_size,
        capacity=min_queue_examples + 3 * batch_size,
        min_after_dequeue=min_queue_examples,
        seed=seed,
    )


def twin_inputs(
    eval_data: bool,
    data_dir: str,
    batch_size: int,
    *,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
) -> tf.data.Dataset:
    """The twin of :func:`inputs`: centrally cropped, standardized batches."""
    from queue_pipeline import data

    filenames = eval_files(data_dir) if eval_data else train_files(data_dir)
    _check_files(filenames)
    names = data.string_input_producer(filenames, num_epochs=num_epochs, shuffle=shuffle, seed=seed)
    records = data.FixedLengthRecordReader(record_bytes=RECORD_BYTES).read(names, keys=False)

    def crop(record):
        uint8image, label = decode_record(record)
        image = tf.image.resize_with_crop_or_pad(
            tf.cast(uint8image, tf.float32), IMAGE_SIZE, IMAGE_SIZE
        )
        return tf.image.per_image_standardization(image), label

    examples = records.map(crop, num_parallel_calls=tf.data.AUTOTUNE)
    return data.batch(examples, batch_size)


# --- entry points for `queue-pipeline compare` ---------------------------------------

_COMPARE_DIR: list[str] = []
COMPARE_BATCH_SIZE = 50


def _compare_dir() -> str:
    """Bundled CIFAR-10 files for the comparison entry points, written once per process."""
    if not _COMPARE_DIR:
        directory = _scratch.scratch_dir("queue_pipeline_cifar_")
        _bundled_data.write_cifar_binary(directory)
        _COMPARE_DIR.append(directory)
    return _COMPARE_DIR[0]


def legacy():
    """Entry point for ``queue-pipeline compare``: one epoch of the eval input, in order."""
    return inputs(
        True, _compare_dir(), COMPARE_BATCH_SIZE, num_epochs=1, shuffle=False, num_threads=1
    )


def twin():
    """Entry point for ``queue-pipeline compare``: the tf.data twin of :func:`legacy`."""
    return twin_inputs(True, _compare_dir(), COMPARE_BATCH_SIZE, num_epochs=1, shuffle=False)


def _summary(name: str, batches: list) -> str:
    images = np.concatenate([b[0] for b in batches])
    labels = np.concatenate([b[1] for b in batches])
    return (
        f"{name}: {len(batches)} batches of {list(batches[0][0].shape)} images; "
        f"pixel mean {images.mean():+.3f} std {images.std():.3f}; "
        f"labels {np.bincount(labels, minlength=NUM_CLASSES).tolist()}"
    )


def main(argv=None) -> int:
    """Reads distorted batches with the legacy program and its twin.

    Prints a summary. Returns the exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="distorted batches to read")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--smoke", action="store_true", help="a few batches, in seconds")
    parser.add_argument("--impl", choices=sorted(IMPLS), default="qp")
    args = _twin_loop.parse_args(parser, argv)
    steps, batch_size = (3, 32) if args.smoke else (args.steps, args.batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        _bundled_data.write_cifar_binary(tmp)
        legacy_batches = run(tmp, steps, args.impl, batch_size=batch_size)
        twin_batches = _twin_loop.values(
            lambda: twin_distorted_inputs(tmp, batch_size, seed=0).take(steps)
        )
    print(_summary(args.impl, legacy_batches))
    print(_summary("twin (tf.data)", twin_batches))
    return 0


if __name__ == "__main__":
    sys.exit(main())
