"""One image file -> a ``tf.train.Example`` in the TPU tools' ImageNet format.

The keys and conventions are those of the TPU repository's
``tools/datasets/jpeg_to_tf_record.py`` (so its ResNet and AmoebaNet input
functions read the shards unchanged): ``image/encoded`` (JPEG bytes),
``image/format`` (``JPEG``), ``image/colorspace`` (``RGB``),
``image/channels`` (3), ``image/height``, ``image/width``,
``image/class/label`` (1-based), ``image/class/synset`` (the class name),
``image/filename`` (the file's base name).

NOTE [ What a conversion re-encodes ]
A copy never degrades the data: an RGB or a grayscale JPEG is stored byte
for byte (``decode_jpeg(channels=3)``, the readers' decode, makes three
channels of a grayscale stream itself, as the TPU tool relies on: its
records say ``RGB``, 3 channels, whatever the stream). Re-encoded as an RGB
JPEG (quality 95), and counted by reason in ``manifest.json``
(``records.reencoded``): any other image format (PNG, GIF, BMP: ``PNG
image``), and a JPEG of any other colour model (``CMYK JPEG``): TensorFlow
2.21's decoder does read a CMYK stream, but a CMYK or YCCK stream is four
channels whose conversion to RGB differs between decoders (Adobe's inverted
CMYK), and the record says ``RGB``. Decoding uses
Pillow (a dependency of apache-beam) in the worker: no TensorFlow session per
image (NOTE [ Checking a JPEG at an eighth of its size ]). A file Pillow
cannot fully decode is a :class:`RecordError`, never a crash of the job.
"""

from __future__ import annotations

import io
import os
import re
from typing import Any, BinaryIO

from queue_pipeline._convert.features import serialize_features

__all__ = ["IMAGE_FEATURES", "IMAGE_EXTENSIONS", "RecordError", "image_example", "read_file"]

IMAGE_EXTENSIONS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
JPEG_QUALITY = 95

IMAGE_FEATURES: dict[str, dict[str, Any]] = {
    "image/encoded": {"dtype": "string", "shape": []},
    "image/format": {"dtype": "string", "shape": []},
    "image/colorspace": {"dtype": "string", "shape": []},
    "image/channels": {"dtype": "int64", "shape": []},
    "image/height": {"dtype": "int64", "shape": []},
    "image/width": {"dtype": "int64", "shape": []},
    "image/class/label": {"dtype": "int64", "shape": []},
    "image/class/synset": {"dtype": "string", "shape": []},
    "image/filename": {"dtype": "string", "shape": []},
}


class RecordError(Exception):
    """One source record cannot be converted: `file` and `reason` go to errors.jsonl."""

    def __init__(self, file: str, reason: str):
        super().__init__(f"{file}: {reason}")
        self.file = file
        self.reason = reason


def open_binary(path: str) -> BinaryIO:
    """`path` opened to read bytes: a local file, or through Beam's ``FileSystems`` (gs://, ...)."""
    if "://" in path:
        from apache_beam.io.filesystem import CompressionTypes  # noqa: PLC0415 - remote only
        from apache_beam.io.filesystems import FileSystems  # noqa: PLC0415

        return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    return open(path, "rb")


def read_file(path: str) -> bytes:
    """The bytes of `path` (local, or any filesystem Beam's ``FileSystems`` knows, as gs://).

    Raises:
      RecordError: the file cannot be read.
    """
    try:
        with open_binary(path) as f:
            data: bytes = f.read()
            return data
    except Exception as e:  # noqa: BLE001 - any read failure is this record's error
        raise RecordError(path, f"unreadable file: {type(e).__name__}: {e}") from e


# NOTE [ Checking a JPEG at an eighth of its size ]
# An RGB JPEG is stored as it is, so it is decoded only to find a corrupt or
# truncated file before training does. libjpeg can decode at 1/2, 1/4 or 1/8
# scale (Pillow's ``draft``): it still reads and entropy-decodes the whole
# stream, so it fails on exactly the files a full decode fails on (a
# truncated file, a broken header or marker), but it skips most of the
# inverse DCT and the colour conversion: about 40% less time per image. Any
# other image is re-encoded, which needs its full pixels.


def _decoded(path: str, data: bytes) -> tuple[Any, int, int]:
    """The opened image (fully decoded unless it is an RGB JPEG), its width and height."""
    from PIL import Image  # noqa: PLC0415 - only in workers

    if not data:
        raise RecordError(path, "corrupt image: the file is empty")
    try:
        image = Image.open(io.BytesIO(data))
        width, height = image.size
        if _reencoded_as(image) is None:  # stored as it is: checked at an eighth
            image.draft(image.mode, (max(1, width // 8), max(1, height // 8)))
        image.load()  # a truncated or corrupt file fails here, not at open
    except Exception as e:  # noqa: BLE001 - Pillow raises several types
        # Pillow names the in-memory buffer by its address: not the user's file, nor stable
        message = re.sub(r" <_io\.BytesIO object at 0x[0-9a-f]+>", "", str(e))
        raise RecordError(path, f"corrupt image: {type(e).__name__}: {message}") from e
    return image, width, height


# the JPEG colour models stored byte for byte (NOTE [ What a conversion re-encodes ])
STORED_JPEG_MODES = ("RGB", "L")


def _reencoded_as(image: Any) -> str | None:
    """Why `image` (opened by Pillow) is re-encoded, or None when it is stored as it is."""
    if image.format == "JPEG":
        return None if image.mode in STORED_JPEG_MODES else f"{image.mode} JPEG"
    return f"{image.format or 'unknown'} image"


def image_example(
    path: str, label: int, synset: str, reencoded: dict[str, int] | None = None
) -> bytes:
    """The serialized Example of the image at `path` with 1-based `label` and class name `synset`.

    An RGB or grayscale JPEG is stored byte for byte; anything else is
    re-encoded (NOTE [ What a conversion re-encodes ]).

    Args:
      path, label, synset: the image file, its class number (from 1) and name.
      reencoded: counts by reason (``"PNG image"``, ``"CMYK JPEG"``), added
        to when this image is re-encoded.

    Raises:
      RecordError: the file cannot be read or is not a decodable image.
    """
    data = read_file(path)
    image, width, height = _decoded(path, data)
    reason = _reencoded_as(image)
    if reason is not None:
        if reencoded is not None:
            reencoded[reason] = reencoded.get(reason, 0) + 1
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="JPEG", quality=JPEG_QUALITY)
        data = buffer.getvalue()
    return serialize_features(
        {
            "image/encoded": data,
            "image/format": "JPEG",
            "image/colorspace": "RGB",
            "image/channels": 3,
            "image/height": height,
            "image/width": width,
            "image/class/label": label,
            "image/class/synset": synset,
            "image/filename": os.path.basename(path),
        }
    )
