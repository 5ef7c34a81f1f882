"""Vectorize rules for image adjustment kernels: ``AdjustContrastv2``.

NOTE [ Contrast with a factor per record ]
``tf.image.random_contrast`` (and ``adjust_contrast`` with a factor computed
from the record) calls ``AdjustContrastv2(images, factor)`` with a scalar
factor per image, and the kernel takes one scalar for the whole batch. Its
CPU kernel computes, per image and channel, the mean ``m`` (a sum over the
image in a fixed order, the same for one image or a batch of them), then
``m + factor * (x - m)`` per element, each operation rounded on its own (no
fused multiply-add). The batch form with a factor per record is::

    m = AdjustContrastv2(images, 0.0)            # exactly each image's mean
    (images - m) * factor[:, None, None, None] + m

``m + 0 * (x - m)`` is ``m`` for every finite element (and NaN where the
per-record kernel gives NaN anyway: an infinite or NaN image), and ``*``
and ``+`` commute exactly, so each element is the same three IEEE
operations as the kernel's. Measured (TF 2.21, x86-64 with oneDNN on, eager,
in a ``tf.function`` and in ``Dataset.map``): 64 images of 56x56x3 float32
(pixel values with and without fractions) and 64 factors in [0.2, 1.8], 6
draws: the means bitwise equal in all, 0 of 3.6 million elements differing;
emulating a fused multiply-add in numpy differed in 21-24% of them, so
the kernel does not fuse. The rule is exact (``exact=True`` keeps it); the
tests check it bitwise against the per-record kernel. A factor the same for
every record (unbatched) copies the kernel onto the batch as it is.
``AdjustHue`` and ``AdjustSaturation`` convert each pixel to HSV and back in
the kernel; no composition of other ops rounds as they do, so they are refused.
"""

from __future__ import annotations

import tensorflow as tf

from queue_pipeline._engine.vectorize.base import Builder, _In, _Refused


def _adjust_contrast(b: Builder, node, ins: list[_In]) -> None:
    images, factor = ins
    if not images.batched:
        raise _Refused("the image does not depend on the record but its factor does")
    if images.dtype != tf.float32 or images.rank is None or images.rank < 3:
        raise _Refused("it adjusts something other than float32 images of known rank")
    if not factor.batched:
        b.copy(node, rule="the kernel on the batch (a mean per image)")
        return
    if factor.rank != 0:
        raise _Refused("its per-record factor is not a scalar")
    rank = images.rank

    def build(x, f):
        mean = tf.raw_ops.AdjustContrastv2(images=x, contrast_factor=tf.constant(0.0))
        scale = tf.reshape(f, tf.concat([tf.shape(f), tf.ones([rank], tf.int32)], 0))
        return [(x - mean) * scale + mean]

    b.emit(
        node,
        build,
        [images, factor],
        rule="means from the kernel, (x - mean) * factor + mean",
    )
