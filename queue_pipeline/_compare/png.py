"""PNG images for the comparison page, written with numpy and zlib: no imaging library.

The page shows images as ``data:image/png;base64,...`` URIs, so it needs no
file beside it and no server. :func:`encode` writes 8-bit grey, RGB or RGBA
PNGs (filter type 0 on every row: the images are small grids of small
tiles); :func:`tile` turns one example into a display tile (downscaled,
scaled to 0..255 over a given value range, grey or RGB); :func:`strip`
lays tiles out in a row, framing the marked ones.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Sequence

import numpy as np

__all__ = [
    "MARK",
    "TILE_MAX_SIDE",
    "data_uri",
    "downscale",
    "encode",
    "pixels",
    "shrink",
    "strip",
    "tile",
]

TILE_MAX_SIDE = 64  # larger images are block-averaged down to this many pixels a side
MARK = (214, 39, 40)  # the frame of a differing example
_PAD = 3  # pixels between tiles (the frame's width)
_BACKGROUND = 255


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def encode(pixels: np.ndarray) -> bytes:
    """Encodes uint8 pixels, HxW (grey), HxWx3 (RGB) or HxWx4 (RGBA), as a PNG file.

    Raises:
      ValueError: another dtype or shape.
    """
    if pixels.dtype != np.uint8 or pixels.ndim not in (2, 3):
        raise ValueError(
            f"png: pixels must be uint8 HxW or HxWxC; got {pixels.dtype}{pixels.shape}"
        )
    if pixels.ndim == 3 and pixels.shape[2] not in (3, 4):
        raise ValueError(f"png: channels must be 3 or 4; got {pixels.shape[2]}")
    height, width = pixels.shape[:2]
    color = 0 if pixels.ndim == 2 else 2 if pixels.shape[2] == 3 else 6  # grey, RGB, RGBA
    rows = np.ascontiguousarray(pixels).reshape(height, -1)
    raw = np.concatenate([np.zeros([height, 1], np.uint8), rows], axis=1).tobytes()
    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 6))
        + _chunk(b"IEND", b"")
    )


def data_uri(pixels: np.ndarray) -> str:
    """The pixels as a ``data:image/png;base64,`` URI (see :func:`encode`)."""
    return "data:image/png;base64," + base64.b64encode(encode(pixels)).decode("ascii")


def downscale(image: np.ndarray, max_side: int = TILE_MAX_SIDE) -> np.ndarray:
    """Block-averages an HxW or HxWxC image so that neither side exceeds `max_side`
    (float64 when it shrinks; returned as is when it is small enough)."""
    factor = -(-max(image.shape[:2]) // max_side)
    if factor <= 1:
        return image
    height, width = (image.shape[0] // factor) * factor, (image.shape[1] // factor) * factor
    if height == 0 or width == 0:  # a long thin image: keep every factor-th pixel
        return image[::factor, ::factor]
    cut = image[:height, :width]
    rows, cols, rest = height // factor, width // factor, cut.shape[2:]
    # Rows of blocks first (contiguous), then columns: several times faster than a
    # mean over both block axes at once.
    summed = cut.reshape((rows, factor, width) + rest).sum(axis=1, dtype=np.float64)
    return summed.reshape((rows, cols, factor) + rest).sum(axis=2) / float(factor * factor)


def shrink(image: np.ndarray) -> np.ndarray:
    """An HxW or HxWxC image (C in 1, 3, 4) as float64 HxW grey or HxWx3 RGB, at most
    ``TILE_MAX_SIDE`` a side (the alpha of 4 channels is dropped)."""
    x = image
    if x.ndim == 3:
        x = x[..., 0] if x.shape[2] == 1 else x[..., :3]
    return np.asarray(downscale(x), np.float64)


def tile(image: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """One example as uint8 grey (HxW) or RGB (HxWx3) pixels, shrunk (:func:`shrink`).

    Args:
      image: HxW, or HxWxC with C in 1, 3 or 4 (the alpha of 4 is dropped).
      lo, hi: the value range shown black to white (values outside are
        clipped; NaN is black).
    """
    return pixels(shrink(image), lo, hi)


def pixels(image: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """A shrunk image (:func:`shrink`) as uint8 pixels, `lo` black to `hi` white."""
    x = image
    span = hi - lo if hi > lo else 1.0
    scaled = np.nan_to_num((x - lo) / span * 255.0, nan=0.0, posinf=255.0, neginf=0.0)
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def strip(tiles: Sequence[np.ndarray | None], marked: Sequence[bool]) -> np.ndarray:
    """Tiles side by side in equal cells, as one RGB image; marked tiles get a red frame.

    A None tile leaves its cell empty (white). Each cell is as large as the
    largest tile, with a `_PAD`-pixel frame: red when marked, white otherwise.
    """
    shown = [t for t in tiles if t is not None]
    cell_h = max((t.shape[0] for t in shown), default=1)
    cell_w = max((t.shape[1] for t in shown), default=1)
    step = cell_w + 2 * _PAD
    out = np.full([cell_h + 2 * _PAD, step * len(tiles), 3], _BACKGROUND, np.uint8)
    for k, (t, mark) in enumerate(zip(tiles, marked)):
        x0 = k * step
        if mark:
            out[:, x0 : x0 + step] = MARK
            out[_PAD : _PAD + cell_h, x0 + _PAD : x0 + _PAD + cell_w] = _BACKGROUND
        if t is None:
            continue
        rgb = np.repeat(t[..., None], 3, axis=2) if t.ndim == 2 else t
        out[_PAD : _PAD + t.shape[0], x0 + _PAD : x0 + _PAD + t.shape[1]] = rgb
    return out
