"""Pairing records for the slip detectors (NOTE [ Explaining a difference ] in slips.py).

Which values are images, the float tolerance of a comparison, and
:func:`matches`: whether a transform maps every legacy record onto its twin
record, paired by position or, unpaired, each twin record onto an unused
legacy record (bucketed by the other components, then by the sum of values).
"""

from __future__ import annotations

import bisect
import collections
from typing import Callable, Hashable, Optional, Sequence

import numpy as np

__all__ = [
    "POOL",
    "Tags",
    "Transform",
    "ULPS",
    "close_fn",
    "is_image",
    "matches",
    "numeric",
    "signature",
]

ULPS = 32  # float tolerance, in units of the dtype's machine epsilon
SAMPLE = 256  # differing records looked at
POOL = 16 * SAMPLE  # unpaired legacy records a sampled twin record may be paired with

Transform = Callable[[np.ndarray], Optional[np.ndarray]]
Tags = Optional[Sequence[Hashable]]


def is_image(x: np.ndarray) -> bool:
    """HxW, or HxWxC with C in 1, 3 or 4 (H, W >= 2)."""
    if x.ndim == 2:
        return min(x.shape) >= 2
    return x.ndim == 3 and min(x.shape[:2]) >= 2 and x.shape[2] in (1, 3, 4)


def numeric(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "iuf"


def close_fn(legacy: np.ndarray, twin: np.ndarray) -> Callable[[np.ndarray, np.ndarray], bool]:
    """Exact for an integer twin; np.allclose at a few ULPs of the coarser float otherwise."""
    if twin.dtype.kind != "f":
        return lambda y, t: y.shape == t.shape and bool(np.array_equal(y, t))
    eps = max(float(np.finfo(d).eps) for d in (legacy.dtype, twin.dtype) if d.kind == "f")
    tol = ULPS * eps

    def close(y: np.ndarray, t: np.ndarray) -> bool:
        return y.shape == t.shape and bool(
            np.allclose(y.astype(np.float64), t, rtol=tol, atol=tol, equal_nan=True)
        )

    return close


def signature(x: np.ndarray) -> float:
    return float(np.nansum(x, dtype=np.float64))


def matches(
    legacy: Sequence[np.ndarray],
    twin: Sequence[np.ndarray],
    transform: Transform,
    *,
    paired: bool,
    tags: tuple[Tags, Tags] = (None, None),
) -> bool:
    """Whether `transform` maps the legacy values onto the twin values, one to one.

    Args:
      legacy: one component's legacy values.
      twin: the same component's twin values.
      transform: the slip, applied to one legacy value; None where it does
        not apply (e.g. not an image).
      paired: True: ``legacy[i]`` maps onto ``twin[i]``; False: each twin
        value is paired with an unused legacy value it equals once mapped.
      tags: per value, the rest of its record (other components); a legacy
        and a twin value pair only with equal tags.
    """
    if not legacy or not twin:
        return False
    close = close_fn(legacy[0], twin[0])
    ltags = tags[0] if tags[0] is not None else [None] * len(legacy)
    ttags = tags[1] if tags[1] is not None else [None] * len(twin)
    if paired:
        if len(legacy) != len(twin):
            return False
        for x, t, a, b in zip(legacy, twin, ltags, ttags):
            y = transform(x) if a == b else None
            if y is None or not close(y, t):
                return False
        return True
    buckets: dict = collections.defaultdict(list)
    for x, tag in zip(legacy[:POOL], ltags):
        y = transform(x)
        if y is None:
            return False
        buckets[tag].append((signature(y), len(buckets[tag]), y))
    for bucket in buckets.values():
        bucket.sort(key=lambda item: item[:2])
    sigs = {tag: [item[0] for item in bucket] for tag, bucket in buckets.items()}
    used: set = set()
    for t, tag in zip(twin, ttags):
        bucket = buckets.get(tag, [])
        s = signature(t)
        slack = 1e-3 * (1.0 + abs(s))  # a window only: `close` decides
        lo = bisect.bisect_left(sigs.get(tag, []), s - slack)
        hi = bisect.bisect_right(sigs.get(tag, []), s + slack)
        k = next(
            (k for k in range(lo, hi) if (tag, k) not in used and close(bucket[k][2], t)), None
        )
        if k is None:
            return False
        used.add((tag, k))
    return True
