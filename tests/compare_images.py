"""A small image pipeline and its twins, one per classic slip, for the drawn comparisons.

``legacy_images`` is ``slice_input_producer -> batch`` over 12 RGB images
16x16 (floats in 0..1) with labels; ``twin_match`` is its true twin, and
``twin_flipped``, ``twin_bgr`` and ``twin_scaled`` each make one slip
(left-right flip, channels reversed, divided by 255). The images are drawn to
be read by eye: a red gradient from left to right, a blue square in the top
left corner growing with the index, a green diagonal; so a flip moves the
square to the right and a channel swap turns the gradient blue.
The test modules of the page in a browser and of TensorBoard share them,
and the CLI loads them as ``compare_images:legacy_images``.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import queue_pipeline as qp

N, BATCH, SIDE = 12, 4, 16


def _image(i: int) -> np.ndarray:
    image = np.zeros([SIDE, SIDE, 3], np.float32)
    image[..., 0] = np.linspace(0.1, 1.0, SIDE)[None, :]  # red, growing to the right
    square = 3 + i % 6
    image[:square, :square, 2] = 1.0  # blue, top left
    image[np.arange(SIDE), np.arange(SIDE), 1] = 0.8  # green diagonal
    return image


IMAGES = np.stack([_image(i) for i in range(N)])
LABELS = np.arange(N, dtype=np.int64) % 5


def legacy_images():
    image, label = qp.slice_input_producer(
        [tf.constant(IMAGES), tf.constant(LABELS)], num_epochs=1, shuffle=False
    )
    return qp.batch([image, label], BATCH, allow_smaller_final_batch=True)


def _twin(fn=None):
    ds = tf.data.Dataset.from_tensor_slices((IMAGES, LABELS))
    if fn is not None:
        ds = ds.map(lambda x, y: (fn(x), y))
    return ds.batch(BATCH)


def twin_match():
    return _twin()


def twin_flipped():
    return _twin(tf.image.flip_left_right)


def twin_bgr():
    return _twin(lambda x: x[..., ::-1])


def twin_scaled():
    return _twin(lambda x: x / 255.0)


# twin name -> (the slip the report names, words its explanation uses)
SLIPS = {
    "twin_match": (None, None),
    "twin_flipped": ("flip_left_right", "flipped left-right"),
    "twin_bgr": ("channel_order", "RGB vs BGR"),
    "twin_scaled": ("scale_offset", "twin = legacy / 255"),
}
