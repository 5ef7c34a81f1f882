"""Bundled data for the demo and legacy_examples, in each classic on-disk format; no network.

The images are scikit-learn's bundled handwritten digits (1,797 real 8x8
scans shipped inside the scikit-learn wheel) when scikit-learn is installed
(the ``examples`` and ``test`` extras install it), and otherwise a
deterministic synthetic stand-in of the same shape (each digit drawn as a
noisy template), so every example also runs on a bare install.

Formats, each from the same images:
  * CSV: ``label,p0,...,p63`` lines (:func:`write_csv`);
  * MNIST's idx files, 28x28 (:func:`write_mnist_idx`);
  * CIFAR-10's binary batches, 1 label byte + 3,072 image bytes per record,
    32x32x3 channel-major (:func:`write_cifar_binary`);
  * JPEG files with object boxes, for the detection example (:func:`write_jpegs`).
  * TFRecords of ``tf.train.Example`` (``image_raw``, ``label``, ``height``,
    ``width``, ``depth``), converted from the idx files as TF 1.x's MNIST
    ``convert_to_records.py`` did (:func:`convert_to_tfrecords`).
"""

from __future__ import annotations

import functools
import gzip
import os
import struct

import numpy as np

__all__ = [
    "convert_to_tfrecords",
    "digits",
    "prepare_all",
    "read_mnist_idx",
    "source",
    "write_cifar_binary",
    "write_csv",
    "write_jpegs",
    "write_mnist_idx",
]


@functools.lru_cache(maxsize=None)
def digits() -> tuple[np.ndarray, np.ndarray]:
    """``(images uint8 [N, 8, 8] in 0..255, labels uint8 [N])``, real when possible."""
    try:
        from sklearn.datasets import load_digits  # bundled in the wheel: no download
    except ImportError:
        return _synthetic_digits()
    bunch = load_digits()
    images = np.clip(bunch.images * 16, 0, 255).astype(np.uint8)
    return images, bunch.target.astype(np.uint8)


def source() -> str:
    """Which images :func:`digits` gives: "scikit-learn digits" or "synthetic"."""
    try:
        import sklearn.datasets  # noqa: F401
    except ImportError:
        return "synthetic digits (install scikit-learn for the real ones)"
    return "scikit-learn's bundled handwritten digits"


def _synthetic_digits(count: int = 1797) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    templates = rng.integers(0, 2, size=(10, 8, 8)) * 200
    labels = np.arange(count) % 10
    noise = rng.integers(0, 56, size=(count, 8, 8))
    return (templates[labels] + noise).astype(np.uint8), labels.astype(np.uint8)


def _upscale(images: np.ndarray, size: int) -> np.ndarray:
    """Nearest-neighbour upscale of [N, 8, 8] to [N, size, size], centred."""
    factor = size // 8
    big = images.repeat(factor, axis=1).repeat(factor, axis=2)
    pad = size - big.shape[1]
    return np.pad(big, ((0, 0), (pad // 2, pad - pad // 2), (pad // 2, pad - pad // 2)))


def write_csv(directory: str, num_files: int = 2) -> list[str]:
    """CSV files of ``label,p0..p63`` rows, split across `num_files`; returns the paths."""
    images, labels = digits()
    rows = np.concatenate([labels[:, None], images.reshape(len(images), -1)], axis=1)
    paths = []
    for i, part in enumerate(np.array_split(rows, num_files)):
        path = os.path.join(directory, f"digits{i}.csv")
        np.savetxt(path, part, fmt="%d", delimiter=",")
        paths.append(path)
    return paths


def write_mnist_idx(directory: str, test_fraction: float = 0.2) -> dict[str, str]:
    """MNIST's four gzipped idx files (28x28 images); returns {name: path}."""
    images, labels = digits()
    images = _upscale(images, 28)
    split = int(len(images) * (1 - test_fraction))
    parts = {"train": (images[:split], labels[:split]), "t10k": (images[split:], labels[split:])}
    paths = {}
    for name, (x, y) in parts.items():
        image_path = os.path.join(directory, f"{name}-images-idx3-ubyte.gz")
        with gzip.open(image_path, "wb") as f:
            f.write(struct.pack(">IIII", 2051, len(x), 28, 28) + x.tobytes())
        label_path = os.path.join(directory, f"{name}-labels-idx1-ubyte.gz")
        with gzip.open(label_path, "wb") as f:
            f.write(struct.pack(">II", 2049, len(y)) + y.tobytes())
        paths[f"{name}_images"], paths[f"{name}_labels"] = image_path, label_path
    return paths


def read_mnist_idx(image_path: str, label_path: str) -> tuple[np.ndarray, np.ndarray]:
    """Reads gzipped idx files back: ``(images [N, 28, 28], labels [N])``."""
    with gzip.open(image_path, "rb") as f:
        magic, count, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            raise ValueError(f"{image_path}: not an idx image file (magic {magic}).")
        images = np.frombuffer(f.read(), np.uint8).reshape(count, rows, cols)
    with gzip.open(label_path, "rb") as f:
        magic, count = struct.unpack(">II", f.read(8))
        if magic != 2049:
            raise ValueError(f"{label_path}: not an idx label file (magic {magic}).")
        labels = np.frombuffer(f.read(), np.uint8)
    return images, labels


def convert_to_tfrecords(image_path: str, label_path: str, out_path: str) -> int:
    """Converts MNIST idx files to a TFRecord file of ``tf.train.Example``s.

    Features, as TF 1.x's MNIST converter wrote them: ``image_raw`` (the
    28x28 uint8 pixels as bytes), ``label``, ``height``, ``width``, ``depth``
    (int64). Returns the number of examples written.
    """
    import tensorflow as tf

    images, labels = read_mnist_idx(image_path, label_path)

    def int64(value):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))

    with tf.io.TFRecordWriter(out_path) as writer:
        for image, label in zip(images, labels):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "height": int64(image.shape[0]),
                        "width": int64(image.shape[1]),
                        "depth": int64(1),
                        "label": int64(label),
                        "image_raw": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[image.tobytes()])
                        ),
                    }
                )
            )
            writer.write(example.SerializeToString())
    return len(images)


def write_cifar_binary(directory: str, num_batches: int = 5) -> dict[str, list[str]]:
    """CIFAR-10 binary batches (``data_batch_<i>.bin``, ``test_batch.bin``).

    Each record is 1 label byte then 3,072 image bytes: the 32x32 red, green
    and blue planes, as in the real CIFAR-10 files.
    """
    images, labels = digits()
    planes = _upscale(images, 32)
    rng = np.random.default_rng(1)
    tint = rng.integers(60, 256, size=(len(images), 3, 1, 1))
    rgb = (planes[:, None, :, :].astype(np.int32) * tint // 255).astype(np.uint8)
    records = np.concatenate([labels[:, None], rgb.reshape(len(images), -1)], axis=1)
    test = records[: len(records) // 6]
    train = records[len(records) // 6 :]
    paths: dict[str, list[str]] = {"train": [], "test": []}
    for i, part in enumerate(np.array_split(train, num_batches), start=1):
        path = os.path.join(directory, f"data_batch_{i}.bin")
        part.astype(np.uint8).tofile(path)
        paths["train"].append(path)
    path = os.path.join(directory, "test_batch.bin")
    test.astype(np.uint8).tofile(path)
    paths["test"].append(path)
    return paths


def write_jpegs(directory: str, count: int = 24) -> list[tuple[str, np.ndarray]]:
    """JPEG scenes of varying size, each with 1-3 digits pasted in; returns
    ``[(path, boxes [k, 4] as ymin, xmin, ymax, xmax in pixels)]``.

    It encodes in a private graph and Session, so it works the same whether
    the caller is eager or building a graph.
    """
    import tensorflow as tf

    images, _ = digits()
    rng = np.random.default_rng(2)
    scenes = []
    for i in range(count):
        height, width = rng.integers(24, 49, size=2)
        scene = np.zeros((height, width, 3), np.uint8)
        boxes = []
        for _ in range(rng.integers(1, 4)):
            digit = _upscale(images[rng.integers(len(images))][None], 16)[0]
            y, x = rng.integers(0, height - 16), rng.integers(0, width - 16)
            scene[y : y + 16, x : x + 16] = np.maximum(
                scene[y : y + 16, x : x + 16], digit[:, :, None]
            )
            boxes.append([y, x, y + 16, x + 16])
        scenes.append(
            (os.path.join(directory, f"scene{i:03d}.jpg"), scene, np.array(boxes, np.int32))
        )
    graph = tf.Graph()
    with graph.as_default():
        pixels = tf.compat.v1.placeholder(tf.uint8, [None, None, 3])
        path = tf.compat.v1.placeholder(tf.string, [])
        write = tf.io.write_file(path, tf.io.encode_jpeg(pixels))
    with tf.compat.v1.Session(graph=graph) as sess:
        for scene_path, scene, _ in scenes:
            sess.run(write, {pixels: scene, path: scene_path})
    return [(scene_path, boxes) for scene_path, _, boxes in scenes]


def prepare_all(directory: str) -> dict:
    """Writes every format into `directory`; returns where each went."""
    os.makedirs(directory, exist_ok=True)
    idx = write_mnist_idx(directory)
    tfrecords = {}
    for part in ("train", "t10k"):
        tfrecords[part] = os.path.join(directory, f"{part}.tfrecords")
        convert_to_tfrecords(idx[f"{part}_images"], idx[f"{part}_labels"], tfrecords[part])
    return {
        "csv": write_csv(directory),
        "mnist_idx": idx,
        "mnist_tfrecords": tfrecords,
        "cifar": write_cifar_binary(directory),
        "jpegs": write_jpegs(directory),
        "source": source(),
    }
