"""The data and calls of the programs in tests/scripts/real_*.py (shaped like public TF 1.x code).

Each :class:`Program` names a script, the function ``queue-pipeline migrate`` is
given, its ``--call`` / ``--argv``, and writes the files it reads beside the copy
of the script in a test's directory (the scripts find their data relative to
``__file__`` or through their flags, as the public programs do).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
import zlib
from typing import Callable

import numpy as np

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def _png(path: str, pixels: np.ndarray) -> None:
    """A grayscale or RGB 8-bit PNG, written with zlib (no image library needed)."""
    height, width = pixels.shape[:2]
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    raw = b"".join(b"\x00" + pixels[y].astype(np.uint8).tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    color = {1: 0, 3: 2}[channels]
    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header))
        f.write(chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _csv_dir(directory: str) -> None:
    os.makedirs(directory)
    rng = np.random.RandomState(0)
    for i in range(3):
        with open(os.path.join(directory, f"part-{i}.csv"), "w") as f:
            for _ in range(5 + i):
                a, b = rng.rand(2)
                f.write(f"{a:.4f},{b:.4f},{a + 2 * b:.4f}\n")


def _images(directory: str, count: int = 5, channels: int = 3) -> None:
    os.makedirs(directory)
    rng = np.random.RandomState(1)
    for i in range(count):
        shape = (6 + i, 7, channels) if channels > 1 else (6 + i, 7)
        _png(os.path.join(directory, f"img{i}.png"), rng.randint(0, 256, shape))


def _class_folders(directory: str) -> None:
    for c, count in (("cat", 3), ("dog", 2), ("emu", 4)):
        _images(os.path.join(directory, c), count)
        with open(os.path.join(directory, c, "README.txt"), "w") as f:
            f.write("not an image\n")


def _tfrecords(directory: str) -> None:
    import tensorflow as tf  # noqa: PLC0415 - only tests that run TF call this

    os.makedirs(directory)
    for i in range(2):
        with tf.io.TFRecordWriter(os.path.join(directory, f"train-{i}.tfrecords")) as w:
            for j in range(6):
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, j / 10])),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[(i + j) % 3])),
                }
                w.write(
                    tf.train.Example(
                        features=tf.train.Features(feature=feature)
                    ).SerializeToString()
                )


def _cifar(directory: str) -> None:
    os.makedirs(directory)
    rng = np.random.RandomState(2)
    for i in (1, 2):
        rows = [
            bytes([k % 10]) + rng.randint(0, 256, 192).astype(np.uint8).tobytes() for k in range(7)
        ]
        with open(os.path.join(directory, f"data_batch_{i}.bin"), "wb") as f:
            f.write(b"".join(rows))


def _census(directory: str) -> None:
    os.makedirs(directory)
    for i in range(2):
        with open(os.path.join(directory, f"census-{i}.csv"), "w") as f:
            f.write("a,b,c,word,label\n")
            for j in range(4 + i):
                b = "" if j == 1 else f"{j * 0.5}"
                f.write(f"{i}.5,{b},{j},w{j},{(i + j) % 2}\n")


def _image_examples(directory: str, size: int = 4) -> None:
    """``train-*`` and ``validation-*`` TFRecord files of CHW uint8 images with labels."""
    import tensorflow as tf  # noqa: PLC0415 - only tests that run TF call this

    os.makedirs(directory)
    rng = np.random.RandomState(3)
    for subset in ("train", "validation"):
        for i in range(2):
            path = os.path.join(directory, f"{subset}-0000{i}-of-00002")
            with tf.io.TFRecordWriter(path) as w:
                for j in range(10):
                    pixels = rng.randint(0, 256, 3 * size * size).astype(np.uint8).tobytes()
                    feature = {
                        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels])),
                        "label": tf.train.Feature(
                            int64_list=tf.train.Int64List(value=[10 * i + j])
                        ),
                    }
                    w.write(
                        tf.train.Example(
                            features=tf.train.Features(feature=feature)
                        ).SerializeToString()
                    )


def _boxes(directory: str) -> None:
    """``boxes-*.tfrecords``: 4x4x3 float images with 1 to 3 boxes of six columns."""
    import tensorflow as tf  # noqa: PLC0415 - only tests that run TF call this

    os.makedirs(directory)
    rng = np.random.RandomState(4)
    for i in range(2):
        with tf.io.TFRecordWriter(os.path.join(directory, f"boxes-{i}.tfrecords")) as w:
            for j in range(4):
                boxes = 1 + (i + j) % 3
                feature = {
                    "image": tf.train.Feature(
                        bytes_list=tf.train.BytesList(
                            value=[rng.rand(48).astype(np.float32).tobytes()]
                        )
                    )
                }
                for column in ("xmin", "ymin", "xmax", "ymax", "class", "hard"):
                    feature["label_" + column] = tf.train.Feature(
                        float_list=tf.train.FloatList(value=list(rng.rand(boxes)))
                    )
                w.write(
                    tf.train.Example(
                        features=tf.train.Features(feature=feature)
                    ).SerializeToString()
                )


@dataclasses.dataclass
class Program:
    """One real-shaped program of tests/scripts/ and how migrate is run on it."""

    script: str
    function: str
    make_data: Callable[[str], None]
    call: str | None = None
    argv: str | None = None
    max_batches: int | None = None
    # why the program runs only in TF1 mode (natively too), or "" for both modes
    tf1_only: str = ""

    def lay_out(self, directory: str) -> str:
        """Copies the script into `directory`, writes its data under ``directory/data``."""
        path = os.path.join(directory, self.script)
        shutil.copy(os.path.join(SCRIPTS, self.script), path)
        self.make_data(os.path.join(directory, "data"))
        return path


PROGRAMS = {
    "absl_flags": Program("real_absl_inputs.py", "inputs", _csv_dir, argv="--batch_size 3"),
    "argparse_wholefile": Program(
        "real_argparse_examples.py", "load_examples", _images, argv="--input_dir data"
    ),
    "module_level_training": Program(
        "real_module_level_training.py", "read_inputs", _tfrecords, call="DATA_FILES"
    ),
    "cifar_record_helper": Program("real_cifar_helper.py", "inputs", _cifar, call="'data', 3"),
    "counter_reused": Program(
        "real_counter_reuse.py", "read_images", _class_folders, call="'data', 'folder', 2"
    ),
    "list_edits": Program(
        "real_list_edits.py",
        "input_fn",
        _census,
        call="['data/census-0.csv', 'data/census-1.csv'], 2",
    ),
    "ptb_producer": Program(
        "real_ptb_producer.py",
        "ptb_producer",
        lambda d: os.makedirs(d),
        call="list(range(53)), 3, 4",
        max_batches=12,
    ),
    "inception_train": Program(
        "real_inception_batches.py",
        "Preprocessor.batch_inputs",
        _image_examples,
        call="Preprocessor('train', RecordsDataset('data'), 4, 5)",
    ),
    "inception_eval": Program(
        "real_inception_batches.py",
        "Preprocessor.batch_inputs",
        _image_examples,
        call="Preprocessor('eval', RecordsDataset('data', 'validation'), 4, 5)",
    ),
    "detection_script": Program(
        "real_detection_script.py",
        "",
        _boxes,
        tf1_only="TF's own string_input_producer cannot take match_filenames_once's resource "
        "variable under TF 2.x defaults: the script fails natively there too",
    ),
    "wholefile_keys": Program(
        "real_wholefile_keys.py", "image_batches", lambda d: _images(d, 7, 1), call="'data/*.png'"
    ),
}
