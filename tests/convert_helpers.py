"""Small generated inputs for the convert tests: class folders of images, CSV files, read-back."""

from __future__ import annotations

import io
import os

import numpy as np
import tensorflow as tf
from PIL import Image

__all__ = [
    "IN_MEMORY",
    "blocked_opening_a_fifo",
    "image_bytes",
    "make_image_tree",
    "parse_image_records",
    "records_of",
]

# One in-process worker: the tests' conversions are tiny, and a process pool
# costs seconds. The slow tests run the default (a process per core).
IN_MEMORY = ["--direct_running_mode=in_memory"]


def image_bytes(seed: int, *, height: int = 9, width: int = 11, fmt: str = "JPEG", mode="RGB"):
    """An image of random pixels, encoded as `fmt`."""
    rng = np.random.default_rng(seed)
    shape = (height, width, 3) if mode == "RGB" else (height, width)
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, shape, dtype=np.uint8), mode).save(buffer, format=fmt)
    return buffer.getvalue()


def make_image_tree(root, classes=("cat", "dog"), per_class: int = 4) -> dict[str, tuple]:
    """``root/<class>/<i>.jpg|png``; returns ``{relative path: (class, height, width, bytes)}``."""
    made = {}
    for c, name in enumerate(classes):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        for i in range(per_class):
            fmt = "PNG" if i % 3 == 2 else "JPEG"
            h, w = 6 + i, 7 + c
            data = image_bytes(100 * c + i, height=h, width=w, fmt=fmt)
            rel = f"{name}/{i}.{'png' if fmt == 'PNG' else 'jpg'}"
            with open(os.path.join(root, rel), "wb") as f:
                f.write(data)
            made[rel] = (name, h, w, data)
    return made


def records_of(directory, compression=None, pattern="*-of-*") -> dict[str, list[bytes]]:
    """``{shard file: [serialized records]}`` of the shards in `directory` (both TF modes)."""
    from queue_pipeline._convert.verify import read_records

    out = {}
    for path in sorted(tf.io.gfile.glob(os.path.join(str(directory), pattern))):
        out[os.path.basename(path)] = list(read_records(path, compression))
    return out


def parse_image_records(records) -> list[dict]:
    """The TPU-format features of serialized Examples, as Python values."""
    out = []
    for record in records:
        example = tf.train.Example.FromString(record)
        feature = example.features.feature
        values = {}
        for key, value in feature.items():
            kind = value.WhichOneof("kind")
            values[key] = list(getattr(value, kind).value)[0]
        out.append(values)
    return out


def blocked_opening_a_fifo(pids) -> list[int]:
    """The pids with a thread blocked opening a FIFO for reading (no writer yet).

    A worker that opens an image which is a FIFO blocks there, mid-job: the
    fault tests wait for that, then kill it (Linux: reads ``/proc``).
    """
    found = []
    for pid in pids:
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                    if f.read() == "wait_for_partner":
                        found.append(pid)
                        break
        except OSError:
            continue
    return found
