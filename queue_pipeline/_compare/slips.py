"""The classic migration slips, tested on the records where a comparison's two sides differ.

NOTE [ Explaining a difference ]
Where the legacy and twin records differ, :func:`explain` tests, before any
value is printed, the slips a migration typically makes, and names the ONE
that explains EVERY differing record (of a sample of at most
``SAMPLE`` records), or none:

* record-level slips, on example keys: the order shifted by k
  (:func:`order_shifted`) and a final partial batch dropped or kept
  (:func:`final_batch`);
* per-record slips, on one numeric component while all other components are
  equal: one function per slip in ``ELEMENTWISE`` (flips, transposes, channel
  order, labels off by one, a rounding cast, a scale or offset), after
  float rounding in the last bits (:func:`float_rounding`, tested first: a
  slip that changes nothing in these values is never named).

Records are paired by position when the comparison is ordered and the counts
are equal; otherwise each twin record is paired with an unused legacy record
that the slip maps onto it (buckets by the other components, then by the sum
of the mapped values). Only an exact explanation is stated: integer results
are compared exactly, float results with ``np.allclose`` at a tolerance of a
few units in the last place of the less precise float dtype.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Callable, Hashable, Optional, Sequence

import numpy as np

from queue_pipeline._compare import normalize as _normalize
from queue_pipeline._compare.report import Explanation
from queue_pipeline._compare.slip_match import (
    POOL,
    SAMPLE,
    is_image,
    matches,
    numeric,
)

__all__ = ["ELEMENTWISE", "SAMPLE", "explain", "final_batch", "order_shifted"]


# --------------------------------------------------------------------------------------
# Per-record slips: each checks one component's values and returns a description.


def float_rounding(legacy, twin, *, paired=True, tags=(None, None)) -> str | None:
    """Checks that each twin value is its legacy value but for float rounding in the last bits.

    Float values of one dtype on both sides, at least one of them not exactly
    equal to its pair. The classic cause is the same arithmetic in another
    order: a Session's constant folding turns ``x / 255.0`` into
    ``x * (1 / 255.0)``, where a tf.data map function keeps the division. It
    is tested before every other slip, so that a slip that leaves these values
    unchanged (the channels of a grey image reversed, a symmetric image
    flipped) is never named for them. Arguments and result as for
    :func:`flip_left_right`.
    """
    if not legacy or not twin:
        return None
    first, other = np.asarray(legacy[0]), np.asarray(twin[0])
    if first.dtype.kind != "f" or first.dtype != other.dtype:
        return None
    exact = {np.asarray(x).tobytes() for x in legacy}
    if all(np.asarray(t).tobytes() in exact for t in twin):
        return None  # equal values: no slip
    if not matches(legacy, twin, lambda x: x, paired=paired, tags=tags):
        return None
    return (
        f"values but for {first.dtype.name} rounding in the last bits (the same arithmetic "
        "in another order, e.g. x / 255 folded into x * (1 / 255) by a Session's constant "
        "folding)"
    )


def flip_left_right(legacy, twin, *, paired=True, tags=(None, None)) -> str | None:
    """Checks that each twin image is its legacy image flipped left-right (``x[:, ::-1]``).

    Applies to image-like values only (HxW, or HxWxC with C in 1, 3 or 4).

    Args:
      legacy: one component's legacy values (numpy arrays).
      twin: the same component's twin values.
      paired: True pairs by position; False pairs each twin value with a
        legacy value the slip maps onto it.
      tags: per value, the other components of its record (pairs must agree).

    Returns:
      A description ("flipped left-right"), or None if the slip does not
      explain every value.
    """
    ok = matches(
        legacy, twin, lambda x: x[:, ::-1] if is_image(x) else None, paired=paired, tags=tags
    )
    return "flipped left-right" if ok else None


def flip_up_down(legacy, twin, *, paired=True, tags=(None, None)) -> str | None:
    """Checks that each twin image is its legacy image flipped up-down (``x[::-1]``).

    Arguments and result as for :func:`flip_left_right`.
    """
    ok = matches(legacy, twin, lambda x: x[::-1] if is_image(x) else None, paired=paired, tags=tags)
    return "flipped up-down" if ok else None


def transposed(legacy, twin, *, paired=True, tags=(None, None)) -> str | None:
    """Checks that each twin image is its legacy image in the other layout: HWC vs CHW.

    Tries HWC -> CHW (``x.transpose(2, 0, 1)``, legacy channels last), then
    CHW -> HWC (``x.transpose(1, 2, 0)``); channels number 1, 3 or 4.
    Arguments and result as for :func:`flip_left_right`.
    """

    def to_chw(x):
        return x.transpose(2, 0, 1) if is_image(x) and x.ndim == 3 else None

    def to_hwc(x):
        return x.transpose(1, 2, 0) if x.ndim == 3 and x.shape[0] in (1, 3, 4) else None

    if matches(legacy, twin, to_chw, paired=paired, tags=tags):
        return "transposed from HWC to CHW (channels first)"
    if matches(legacy, twin, to_hwc, paired=paired, tags=tags):
        return "transposed from CHW to HWC (channels last)"
    return None


def channels_reversed(legacy, twin, *, paired=True, tags=(None, None)) -> str | None:
    """Checks that each twin image has its legacy image's channels in reverse order.

    RGB vs BGR for 3 channels (``x[..., ::-1]``); for 4 channels RGBA vs BGRA
    (the alpha channel stays last), then RGBA vs ABGR. Arguments and result
    as for :func:`flip_left_right`.
    """
    orders = {3: [[2, 1, 0]], 4: [[2, 1, 0, 3], [3, 2, 1, 0]]}
    names = {(2, 1, 0): "RGB vs BGR", (2, 1, 0, 3): "RGBA vs BGRA", (3, 2, 1, 0): "RGBA vs ABGR"}
    channels = int(legacy[0].shape[-1]) if legacy and legacy[0].ndim == 3 else 0
    for order in orders.get(channels, []):

        def swap(x, order=order):
            return x[..., order] if is_image(x) and x.ndim == 3 else None

        if matches(legacy, twin, swap, paired=paired, tags=tags):
            return f"with the channel order reversed ({names[tuple(order)]})"
    return None


def off_by_one(legacy, twin, *, paired=True, tags=(None, None)) -> str | None:
    """Checks that every twin value is its legacy value plus one, or every one minus one.

    Integer values on both sides only (labels); exact. Arguments and result
    as for :func:`flip_left_right`.
    """
    if not legacy or not twin or legacy[0].dtype.kind not in "iu" or twin[0].dtype.kind not in "iu":
        return None
    for step in (1, -1):
        if matches(legacy, twin, functools.partial(_affine, a=1, b=step), paired=paired, tags=tags):
            return f"{'plus' if step > 0 else 'minus'} one (labels off by one)"
    return None


def rounding_cast(legacy, twin, *, paired=True, tags=(None, None)) -> str | None:
    """Checks that the twin's integer values are the legacy's float values cast.

    Tries truncation toward zero (``tf.cast``), rounding half to even
    (``tf.round``) and flooring; exact. Where every legacy value is a whole
    number, says the cast rounded nothing. Arguments and result as for
    :func:`flip_left_right`.
    """
    if not legacy or not twin or legacy[0].dtype.kind != "f" or twin[0].dtype.kind not in "iu":
        return None
    dtype = twin[0].dtype.name
    if all(np.array_equal(x, np.trunc(x)) for x in legacy):
        if matches(legacy, twin, lambda x: x, paired=paired, tags=tags):
            return f"cast to {dtype} (whole numbers: nothing rounded)"
        return None
    for how, fn in (
        ("truncated toward zero", np.trunc),
        ("rounded", np.round),
        ("floored", np.floor),
    ):
        if matches(legacy, twin, fn, paired=paired, tags=tags):
            return f"cast to {dtype}, {how}"
    return None


def _affine(x: np.ndarray, a: float, b: float) -> np.ndarray:
    if isinstance(a, int) and isinstance(b, int) and x.dtype.kind in "iu":
        return x.astype(np.int64) * a + b
    return a * x.astype(np.float64) + b


def _snap(a: float, b: float) -> tuple[float, float]:
    """A fitted (a, b) rounded to the constants slips use (1/255, 1/127.5, -1, ...)."""
    if a != 0:
        inv = 1.0 / a
        half = round(2 * inv) / 2
        if half and abs(inv - half) < 1e-4 * abs(inv):
            a = 1.0 / half
    return a, round(b, 6) + 0.0


def _affine_text(a: float, b: float) -> str:
    inv = 1.0 / a
    if abs(inv - round(inv)) < 1e-6 * abs(inv) and abs(round(inv)) > 1:
        scale = f"legacy / {round(inv):g}"
    elif abs(2 * inv - round(2 * inv)) < 1e-6 * abs(inv) and abs(inv) > 1:
        scale = f"legacy / {inv:g}"
    elif abs(a - 1.0) < 1e-9:
        scale = "legacy"
    else:
        scale = f"{a:.6g} * legacy"
    if abs(b) < 1e-9:
        return f"scaled: twin = {scale}"
    return f"scaled: twin = {scale} {'+' if b > 0 else '-'} {abs(b):.6g}"


def scale_offset(legacy, twin, *, paired=True, tags=(None, None)) -> str | None:
    """Checks that twin = a * legacy + b, with one (a, b) for all values.

    ``(a, b)`` is fitted by least squares over the paired values, or from
    both sides' extremes when unpaired (``a > 0`` first, then ``a < 0``),
    then checked on every value (x vs x/255, x*2-1, ...). The identity, a
    constant twin, and fewer than 3 distinct legacy values (which any line
    fits) do not count. Arguments and result as for
    :func:`flip_left_right`.
    """
    if not legacy or not twin or not all(numeric(v) for v in (legacy[0], twin[0])):
        return None
    candidates = []
    if paired:
        if len(legacy) != len(twin) or any(x.shape != t.shape for x, t in zip(legacy, twin)):
            return None
        x = np.concatenate([v.ravel() for v in legacy]).astype(np.float64)
        y = np.concatenate([v.ravel() for v in twin]).astype(np.float64)
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        if np.unique(x[:65536]).size < 3:
            return None  # two points fit any line
        a, b = np.polyfit(x, y, 1)
        candidates.append((float(a), float(b)))
    else:
        lmin = min(float(np.nanmin(v)) for v in legacy if v.size)
        lmax = max(float(np.nanmax(v)) for v in legacy if v.size)
        tmin = min(float(np.nanmin(v)) for v in twin if v.size)
        tmax = max(float(np.nanmax(v)) for v in twin if v.size)
        if lmax == lmin or np.unique(np.concatenate([v.ravel() for v in legacy])).size < 3:
            return None
        a = (tmax - tmin) / (lmax - lmin)
        candidates += [(a, tmin - a * lmin), (-a, tmax + a * lmin)]
    candidates = [_snap(a, b) for a, b in candidates] + candidates
    for a, b in candidates:
        if a == 0 or (abs(a - 1) < 1e-9 and abs(b) < 1e-9):
            continue
        if twin[0].dtype.kind != "f":
            if a != round(a) or b != round(b):
                continue
            a, b = float(round(a)), float(round(b))
        if matches(legacy, twin, functools.partial(_affine, a=a, b=b), paired=paired, tags=tags):
            return _affine_text(a, b)
    return None


ElementwiseSlip = Callable[..., Optional[str]]

# Tried in this order on each numeric component; the first that explains wins.
ELEMENTWISE: dict[str, ElementwiseSlip] = {  # in the order they are tested
    "float_rounding": float_rounding,
    "flip_left_right": flip_left_right,
    "flip_up_down": flip_up_down,
    "transpose": transposed,
    "channel_order": channels_reversed,
    "off_by_one": off_by_one,
    "rounding_cast": rounding_cast,
    "scale_offset": scale_offset,
}


# --------------------------------------------------------------------------------------
# Record-level slips: on example keys (hashable, equal for equal examples).


def order_shifted(legacy: Sequence[Hashable], twin: Sequence[Hashable]) -> int | None:
    """Checks that the twin's order is the legacy's shifted: ``twin[i] == legacy[i + k]``.

    For every i where both sides have a record, with one ``k != 0``. The
    candidates are where ``twin[0]`` occurs in legacy (k > 0: the twin skips
    k records) and where ``legacy[0]`` occurs in the twin (k < 0: the twin
    has k extra records first). The first records differ, at least two
    records overlap, and more than half of the shorter side.

    Args:
      legacy: the legacy side's example keys, in order.
      twin: the twin side's example keys, in order.

    Returns:
      The shift k, or None.
    """
    if not legacy or not twin or legacy[0] == twin[0]:
        return None
    limit = SAMPLE
    ks = [i for i, key in enumerate(legacy[: limit + 1]) if key == twin[0] and i]
    ks += [-i for i, key in enumerate(twin[: limit + 1]) if key == legacy[0] and i]
    shortest = min(len(legacy), len(twin))
    for k in ks:
        lo, hi = max(0, -k), min(len(twin), len(legacy) - k)
        if hi - lo < 2 or 2 * (hi - lo) <= shortest:
            continue
        if all(twin[i] == legacy[i + k] for i in range(lo, hi)):
            return k
    return None


def final_batch(
    legacy: Sequence[Hashable],
    twin: Sequence[Hashable],
    batch_size: int | None,
    *,
    ordered: bool,
) -> int | None:
    """Checks that one side has a final partial batch the other drops, all else equal.

    The counts differ by ``d`` with ``0 < d < batch_size``, the shorter
    side holds whole batches only, its records are the longer side's first
    ones (``ordered``), or a sub-multiset of them whose surplus is found
    nowhere on the shorter side (a duplicated record is no partial batch).

    Args:
      legacy: the legacy side's example keys, in order.
      twin: the twin side's example keys, in order.
      batch_size: the legacy (else twin) batch size; None if unbatched.
      ordered: whether order counts.

    Returns:
      ``len(twin) - len(legacy)`` (> 0: the twin keeps the batch), or None.
    """
    d = len(twin) - len(legacy)
    if not batch_size or d == 0 or abs(d) >= batch_size:
        return None
    short, long = (legacy, twin) if d > 0 else (twin, legacy)
    if len(short) % batch_size:
        return None
    if ordered:
        ok = list(short) == list(long[: len(short)])
    else:
        shorter = collections.Counter(short)
        surplus = collections.Counter(long) - shorter
        ok = sum(surplus.values()) == abs(d) and not any(key in shorter for key in surplus)
    return d if ok else None


# --------------------------------------------------------------------------------------
# The orchestration, on a comparison's two sides (``compare._Side``).


@dataclasses.dataclass
class _Records:
    legacy: list  # records (lists of leaves)
    twin: list
    paired: bool
    differing: int  # all differing records (twin side), of which these are a sample


def _differing(left, right, lkeys, rkeys, ordered: bool) -> _Records | None:
    if ordered:
        idx = [i for i, (a, b) in enumerate(zip(lkeys, rkeys)) if a != b]
        sample = idx[:SAMPLE]
        return _Records(
            [left.examples[i] for i in sample], [right.examples[i] for i in sample], True, len(idx)
        )
    remaining = collections.Counter(rkeys)
    only_l = []
    for i, key in enumerate(lkeys):
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            only_l.append(i)
    remaining = collections.Counter(lkeys)
    only_r = []
    for i, key in enumerate(rkeys):
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            only_r.append(i)
    if len(only_l) != len(only_r):
        return None
    return _Records(
        [left.examples[i] for i in only_l[:POOL]],
        [right.examples[i] for i in only_r[:SAMPLE]],
        False,
        len(only_r),
    )


def _component_word(path: str, values: list) -> tuple[str, bool]:
    if values and all(is_image(v) for v in values[:4]):
        return f"images ({f'component {path}' if path else 'the tensor'})", True
    return (f"component {path}", False) if path else ("values", True)


def _explain_records(paths: list[str], records: _Records) -> Explanation | None:
    width = len(paths)
    if not records.legacy or any(len(r) != width for r in records.legacy + records.twin):
        return None
    for j, path in enumerate(paths):
        lvals = [r[j] for r in records.legacy]
        tvals = [r[j] for r in records.twin]
        if not all(numeric(v) for v in lvals + tvals):
            continue
        tags = tuple(
            [tuple(_normalize.leaf_key(leaf) for k, leaf in enumerate(r) if k != j) for r in side]
            for side in (records.legacy, records.twin)
        )
        for slip, detect in ELEMENTWISE.items():
            detail = detect(lvals, tvals, paired=records.paired, tags=tags)
            if detail is None:
                continue
            what, plural = _component_word(path, lvals)
            n = len(records.twin)
            count = (
                f"{n} of {n} differing records"
                if n == records.differing
                else f"{n} of {n} sampled ({records.differing} differing records)"
            )
            verb = "are" if plural else "is"
            text = f"the twin's {what} {verb} the legacy's {detail}: {count}"
            return Explanation(slip, path, n, records.differing, text)
    return None


def explain(left, right, lkeys, rkeys, *, ordered: bool) -> Explanation | None:
    """The one known slip that explains every differing record, or None.

    See NOTE [ Explaining a difference ].

    Args:
      left: the legacy side (``compare._Side``: paths, examples, batching).
      right: the twin side.
      lkeys: the legacy side's example keys.
      rkeys: the twin side's example keys.
      ordered: whether the comparison is in order (pairs by position).

    Returns:
      An :class:`~queue_pipeline._compare.report.Explanation`, or None.
    """
    n, m = len(lkeys), len(rkeys)
    batch_size = left.max_batch if left.batched else right.max_batch if right.batched else None
    d = final_batch(lkeys, rkeys, batch_size, ordered=ordered)
    if d is not None:
        if d > 0:
            text = (
                f"the twin keeps a final partial batch of {d} record(s) that the legacy side "
                "drops (allow_smaller_final_batch=False vs drop_remainder=False): "
                f"the other {n} records are equal"
            )
        else:
            text = (
                f"the twin drops the final partial batch of {-d} record(s) that the legacy side "
                f"keeps (drop_remainder=True vs allow_smaller_final_batch=True): the other {m} "
                "records are equal"
            )
        return Explanation("final_batch", None, abs(d), abs(d), text)
    if ordered:
        k = order_shifted(lkeys, rkeys)
        if k is not None:
            overlap = min(m, n - k) - max(0, -k)
            differing = sum(a != b for a, b in zip(lkeys, rkeys)) + abs(n - m)
            text = (
                f"the twin's order is the legacy's shifted by {k} (twin[i] == legacy[i{k:+d}]): "
                f"{overlap} of {overlap} overlapping records"
                + (
                    f"; the twin skips the legacy's first {k} (an extra read or .skip({k})?)"
                    if k > 0
                    else f"; the twin has {-k} record(s) first that the legacy side lacks"
                )
            )
            return Explanation("order_shift", None, overlap, differing, text)
    if n != m or (ordered and collections.Counter(lkeys) == collections.Counter(rkeys)):
        return None  # a reordering: no per-record slip (a shift is tested above)
    records = _differing(left, right, lkeys, rkeys, ordered)
    if records is None:
        return None
    return _explain_records(list(left.paths), records)
