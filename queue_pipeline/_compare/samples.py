"""What a comparison keeps of each side to draw it: bounded samples for the page and TensorBoard.

:func:`queue_pipeline.compare.compare` fills a :class:`ComparisonSamples`
while it runs (``report.samples``): per side the first examples, a sample of
each numeric component's values, the lengths of strings and of
variable-length components, each example's position in the source order, and
a timeline of examples delivered against time. Every part has a fixed bound
(the constants below), whatever the run's size, so a report stays small.
Readers (``_compare/page.py``, ``_compare/tensorboard.py``) use only the
fields and methods documented here.

NOTE [ Position in the source ]
The order scatter plots, for each delivered example, its position in the
*source order* of its epoch. A record is identified by its values (the exact
comparison key of ``normalize.example_key``, a hash of every component's
values), and its source position is the index of that record in a reference
epoch: the `reference` dataset's order when ``compare`` was given one; else
the legacy side's own first epoch when the legacy side is deterministic (no
shuffle, one thread: its order is the source's); else the legacy side's
first epoch sorted by value (the stand-in ``ShuffleStats`` uses too). The
k-th delivery of a record within an epoch takes the k-th position of equal
records in the reference, so duplicates spread instead of piling up. A record
absent from the reference (its values differ, e.g. a flipped image) has no
source position and is left out of the scatter; ``SideSamples.unplaced``
counts them.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any, Mapping, Sequence

import numpy as np

from queue_pipeline._compare import normalize as _normalize
from queue_pipeline._compare.image_shapes import (
    check_image_shape,
    component_path,
    parse_image_shape,
)
from queue_pipeline._compare.slip_match import is_image

__all__ = [
    "FIRST_BYTES",
    "FIRST_EXAMPLES",
    "MAX_ORDER_POINTS",
    "MAX_TIMELINE_POINTS",
    "MAX_VALUES",
    "ComparisonSamples",
    "SideSamples",
    "Timeline",
    "check_image_shape",
    "collect",
    "component_path",
    "parse_image_shape",
]

FIRST_EXAMPLES = 64  # first examples kept per side
FIRST_BYTES = 16 * 2**20  # ... unless they hold more than this many bytes (one at least)
MAX_VALUES = 4096  # values kept per numeric component and side (also lengths)
MAX_ORDER_POINTS = 2048  # (delivered, source) positions kept per side
MAX_TIMELINE_POINTS = 512  # (seconds, examples) points kept per side
_SEED = 0  # the value samples' seed: a report repeats itself


class Timeline:
    """Records when a side delivered its batches, bounded (internal to ``compare``).

    The clock starts when the object is made (before the side is built);
    :meth:`mark` is called after each fetched batch with the number of
    batches so far. Past ``MAX_TIMELINE_POINTS`` marks, every other point is
    dropped and the stride doubles, so the kept points stay evenly spread.
    """

    def __init__(self) -> None:
        self._t0 = time.perf_counter()
        self._stride = 1
        self.points: list[tuple[float, int]] = []

    def mark(self, batches: int) -> None:
        """Records that `batches` batches have been delivered by now."""
        if batches % self._stride:
            return
        self.points.append((time.perf_counter() - self._t0, batches))
        if len(self.points) >= MAX_TIMELINE_POINTS:
            self.points = self.points[::2]
            self._stride *= 2


@dataclasses.dataclass
class SideSamples:
    """What one side (legacy or twin) delivered, kept bounded.

    Attributes:
      examples: the number of examples the side delivered in all.
      first: per component path (``ComparisonSamples.paths``), the values of
        the first examples delivered (at most ``FIRST_EXAMPLES``, fewer when
        they would hold over ``FIRST_BYTES``; the same count for every path):
        numpy arrays, one per example, without the batch dimension (copies,
        not views of a batch), or ``normalize.Sparse`` values.
      differs: one flag per first example: it differs from the other side.
        In an ordered comparison, from the other side's example at the same
        position; in a multiset comparison, it has no equal example left on
        the other side (equal examples are used up one for one).
      values: per numeric component path (integers, floats, bools; a sparse
        component's values), a uniform sample without replacement of at most
        ``MAX_VALUES`` of its element values over all delivered examples,
        as float64, in delivery order (seeded: a report repeats itself).
      string_lengths: per string component path, the byte lengths of a
        uniform sample of at most ``MAX_VALUES`` of its strings, int64.
      sizes: per variable-length component path (sparse, or dense with
        shapes that vary between examples), the number of values of each of
        at most ``MAX_VALUES`` examples (evenly spaced over the run), int64.
      order: int64 ``[n, 2]``, ``n <= MAX_ORDER_POINTS``: for examples evenly
        spaced over the run, ``(position delivered, position in the source
        order of its epoch)``; see NOTE [ Position in the source ] in this
        module. Examples with no source position are left out.
      unplaced: how many of the examples looked at for ``order`` had no
        source position (their values are absent from the reference).
      timeline: float64 ``[n, 2]``, ``n <= MAX_TIMELINE_POINTS``:
        ``(seconds since the side started, examples delivered by then)``;
        the clock starts before the side is built, so the first point
        includes start-up (building, initializers, runner threads).
    """

    examples: int = 0
    first: dict[str, list] = dataclasses.field(default_factory=dict)
    differs: list[bool] = dataclasses.field(default_factory=list)
    values: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    string_lengths: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    sizes: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    order: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros([0, 2], np.int64))
    unplaced: int = 0
    timeline: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros([0, 2]))

    def first_array(self, path: str) -> np.ndarray | None:
        """The first examples of component `path` stacked, ``[n, ...]``; None if they
        are sparse, absent, or of different shapes."""
        leaves = self.first.get(path)
        if not leaves or not all(isinstance(x, np.ndarray) for x in leaves):
            return None
        if len({x.shape for x in leaves}) != 1:
            return None
        return np.stack(leaves)


@dataclasses.dataclass
class ComparisonSamples:
    """Both sides' samples, attached to a report as ``ComparisonReport.samples``.

    Attributes:
      paths: the component paths, in canonical order (``[0]``, ``['image']``,
        ``''`` for a bare tensor): the legacy side's, then any only the twin
        has.
      legacy: the legacy side's samples.
      twin: the twin side's samples.
      paired: True when the comparison is ordered, so that ``legacy.first[p][i]``
        and ``twin.first[p][i]`` are the same record and a difference image
        of the two means something.
      image_shapes: the per-example shapes the user declared for components
        to draw as images (flat vectors), by path, e.g. ``{"[0]": (28, 28)}``.
      order_reference: in words, the order ``SideSamples.order``'s source
        positions refer to (NOTE [ Position in the source ]).
      epoch_size: the examples in one epoch (the source positions' range),
        or None when the epochs could not be cut.
    """

    paths: list[str]
    legacy: SideSamples
    twin: SideSamples
    paired: bool = False
    image_shapes: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    order_reference: str = ""
    epoch_size: int | None = None

    def side(self, name: str) -> SideSamples:
        """``legacy`` or ``twin`` by name."""
        if name not in ("legacy", "twin"):
            raise ValueError(f"samples: `name` must be 'legacy' or 'twin'; got {name!r}.")
        return self.legacy if name == "legacy" else self.twin

    def image_shape(self, path: str, side: str = "legacy") -> tuple[int, ...] | None:
        """The shape to draw component `path` of `side` as an image, or None.

        A declared shape (``image_shapes``) when the examples hold exactly
        that many values; else the examples' own shape when it is image-like
        (HxW, or HxWxC with C in 1, 3 or 4; H, W >= 2); else, for the twin,
        the legacy side's image shape when its examples hold as many values
        (a transposed image is drawn as the twin stores it).
        """
        leaves = self.side(side).first.get(path) or []
        first = leaves[0] if leaves else None
        if not isinstance(first, np.ndarray) or first.dtype.kind not in "iufb":
            return None
        declared = self.image_shapes.get(path)
        if declared is not None:
            return declared if int(np.prod(declared)) == first.size else None
        if is_image(first):
            return tuple(first.shape)
        if side == "twin":
            other = self.image_shape(path, "legacy")
            if other is not None and int(np.prod(other)) == first.size:
                return other
        return None


# ------------------------------------------------------------------ collecting


def collect(
    left: Any,
    right: Any,
    *,
    ordered: bool,
    epoch_size: int | None,
    reference: list | None = None,
    image_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ComparisonSamples:
    """Draws both sides' bounded samples after a comparison.

    Args:
      left, right: the legacy and twin sides (``compare._Side``): their
        ``paths``, ``examples``, ``keys`` (example keys, as the analysis
        computed them), ``nondeterminism``, ``batch_of_example`` and
        ``timeline`` (a :class:`Timeline`, or None).
      ordered: whether the comparison was ordered (pairs first examples).
      epoch_size: the legacy epoch size, or None.
      reference: the `reference` dataset's example keys, or None.
      image_shapes: declared image shapes by path (see
        :attr:`ComparisonSamples.image_shapes`).
    """
    paths = list(left.paths) + [p for p in right.paths if p not in left.paths]
    lkeys = _keys_of(left)
    rkeys = _keys_of(right)
    ref, words = _reference(left, lkeys, epoch_size, reference)
    size = len(ref) if ref is not None else None
    sides = []
    for side, keys, other in ((left, lkeys, rkeys), (right, rkeys, lkeys)):
        s = SideSamples(examples=len(side.examples))
        _first(s, side, paths)
        n = len(s.differs)
        if ordered:
            s.differs = [i >= len(other) or keys[i] != other[i] for i in range(n)]
        else:
            left_over = collections.Counter(other)
            flags = []
            for key in keys:
                flags.append(left_over[key] <= 0)
                left_over[key] -= 1
            s.differs = flags[:n]
        _values(s, side, paths)
        if ref is not None and size:
            s.order, s.unplaced = _order(keys, ref, size)
        s.timeline = _timeline(side)
        sides.append(s)
    shapes = {component_path(p): check_image_shape(v) for p, v in (image_shapes or {}).items()}
    return ComparisonSamples(
        paths=paths,
        legacy=sides[0],
        twin=sides[1],
        paired=ordered,
        image_shapes=shapes,
        order_reference=words,
        epoch_size=size,
    )


def _keys_of(side: Any) -> list:
    keys = getattr(side, "keys", None)
    if keys is None or len(keys) != len(side.examples):
        keys = [_normalize.example_key(e) for e in side.examples]
    return keys


def _first(s: SideSamples, side: Any, paths: list[str]) -> None:
    held, kept = 0, list[list]()
    for example in side.examples[:FIRST_EXAMPLES]:
        size = sum(_normalize_nbytes(leaf) for leaf in example)
        if kept and held + size > FIRST_BYTES:
            break
        held += size
        kept.append(example)
    for path in paths:
        if path not in side.paths:
            continue
        i = side.paths.index(path)
        s.first[path] = [
            np.array(e[i], copy=True) if isinstance(e[i], np.ndarray) else e[i] for e in kept
        ]
    s.differs = [False] * len(kept)


def _normalize_nbytes(leaf: Any) -> int:
    if isinstance(leaf, _normalize.Sparse):
        return int(leaf.values.nbytes + leaf.indices.nbytes)
    return int(getattr(leaf, "nbytes", 8))


def _values(s: SideSamples, side: Any, paths: list[str]) -> None:
    rng = np.random.default_rng(_SEED)
    examples = side.examples
    for path in paths:
        if path not in side.paths or not examples:
            continue
        i = side.paths.index(path)
        leaves = [e[i] for e in examples]
        flat = [x.values if isinstance(x, _normalize.Sparse) else x for x in leaves]
        kind = flat[0].dtype.kind if isinstance(flat[0], np.ndarray) else ""
        if kind and kind in "iufb":
            s.values[path] = _sample(flat, rng, lambda v: v.astype(np.float64))
        elif kind and kind in "OSU":
            s.string_lengths[path] = _sample(
                flat, rng, lambda v: np.array([len(_bytes(x)) for x in v], np.int64)
            )
        sparse = isinstance(leaves[0], _normalize.Sparse)
        if sparse or len({x.shape for x in leaves[: 4 * MAX_VALUES]}) > 1:
            picks = np.unique(np.linspace(0, len(flat) - 1, min(len(flat), MAX_VALUES)).astype(int))
            s.sizes[path] = np.array([flat[k].size for k in picks], np.int64)


def _bytes(x: Any) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode()


def _sample(flat: list, rng: np.random.Generator, convert) -> np.ndarray:
    """A uniform sample without replacement of at most MAX_VALUES elements, in order."""
    sizes = np.array([x.size for x in flat], np.int64)
    ends = np.cumsum(sizes)
    total = int(ends[-1]) if len(ends) else 0
    if total == 0:
        return np.zeros([0], np.float64)
    if total <= MAX_VALUES:
        return convert(np.concatenate([np.ravel(x) for x in flat]))
    picks = np.sort(rng.choice(total, MAX_VALUES, replace=False))
    owner = np.searchsorted(ends, picks, side="right")
    starts = ends - sizes
    chosen = np.array(
        [np.ravel(flat[e])[p - starts[e]] for e, p in zip(owner, picks)],
        dtype=flat[0].dtype,
    )
    return convert(chosen)


def _reference(left: Any, lkeys: list, epoch_size: int | None, reference: list | None):
    """The reference epoch's keys and its description (NOTE [ Position in the source ])."""
    if reference is not None:
        return list(reference), "the order of the `reference` dataset"
    epoch = lkeys[: epoch_size or len(lkeys)]
    if not epoch:
        return None, ""
    if not left.nondeterminism:
        return epoch, "the legacy side's own first epoch (it is deterministic)"
    try:
        sort_keys = [_normalize.sort_key(e) for e in left.examples[: len(epoch)]]
        order = sorted(range(len(epoch)), key=sort_keys.__getitem__)
    except TypeError:
        return None, ""
    return (
        [epoch[k] for k in order],
        "the legacy side's first epoch sorted by value (a stand-in for the source "
        "order: the legacy side shuffles)",
    )


def _order(keys: list, ref: list, size: int) -> tuple[np.ndarray, int]:
    where: dict = collections.defaultdict(list)
    for pos, key in enumerate(ref):
        where[key].append(pos)
    picks = set(
        np.linspace(0, len(keys) - 1, min(len(keys), MAX_ORDER_POINTS)).astype(int).tolist()
    )
    seen: collections.Counter = collections.Counter()
    points, unplaced = [], 0
    for i, key in enumerate(keys):
        if i % size == 0:
            seen.clear()  # a new epoch: every record can come again
        k = seen[key]
        seen[key] += 1
        if i not in picks:
            continue
        found = where.get(key)
        if found:
            points.append((i, found[k % len(found)]))
        else:
            unplaced += 1
    return np.array(points, np.int64).reshape([-1, 2]), unplaced


def _timeline(side: Any) -> np.ndarray:
    timeline = getattr(side, "timeline", None)
    if timeline is None or not timeline.points:
        return np.zeros([0, 2])
    batch_of = np.asarray(side.batch_of_example, np.int64)
    rows = [(0.0, 0.0)]
    for seconds, batches in timeline.points:
        rows.append((seconds, float(np.searchsorted(batch_of, batches, side="left"))))
    return np.array(rows, np.float64)
