"""The split and shard of a record: a stable hash of its identity, so reruns give the same shards.

NOTE [ Stable assignment ]
Each record has an identity (a relative image path, ``file:line`` of a CSV
row, the index of a legacy pipeline's element). Its SHA-256 picks the split
(bytes 0-7, as a fraction in [0, 1) against the cumulative split fractions)
and the shard inside the split (bytes 8-15, modulo the split's shard count).
Inside a shard records are written in the order of that hash, then the
identity, except a table's rows, which keep their input order (file, row;
NOTE [ Table rows read in the workers ] in tables.py). Nothing depends on
the runner, the number of workers, the order of the source listing or the
time, so a rerun on the same input writes byte-identical shards.
"""

from __future__ import annotations

import hashlib
from typing import Callable, NamedTuple

__all__ = ["Assignment", "assign", "parse_shards", "parse_split", "placer", "shard_name"]

_API = "queue_pipeline.convert"


def parse_split(spec: str | dict[str, float] | None) -> dict[str, float]:
    """``"train=0.9,validation=0.1"`` (or a dict) -> ``{"train": 0.9, "validation": 0.1}``.

    None is ``{"train": 1.0}``. The fractions must be positive and sum to 1
    (within 1e-6).

    Raises:
      ValueError: a bad spelling, name or fraction.
    """
    if spec is None:
        return {"train": 1.0}
    if isinstance(spec, str):
        pairs: dict[str, float] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, sep, value = part.partition("=")
            try:
                fraction = float(value) if sep else float("nan")
            except ValueError:
                fraction = float("nan")
            if not sep or not name.strip() or fraction != fraction:
                raise ValueError(
                    f"{_API}: `split` must look like 'train=0.9,validation=0.1'; got {spec!r}."
                )
            pairs[name.strip()] = fraction
        spec = pairs
    split = dict(spec)
    bad = [n for n, f in split.items() if not f > 0 or not _is_name(n)]
    if not split or bad or abs(sum(split.values()) - 1.0) > 1e-6:
        raise ValueError(
            f"{_API}: `split` needs names of letters, digits, '_' or '.' with positive "
            f"fractions that sum to 1; got {spec!r}. Fix: e.g. 'train=0.9,validation=0.1'."
        )
    return split


def _is_name(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "_." for c in name)


def parse_shards(
    spec: int | str | dict[str, int] | None, split: dict[str, float]
) -> dict[str, int]:
    """The shard count of each split: one number for all (``8``) or ``train=8,validation=2``.

    None gives one shard per split.

    Raises:
      ValueError: a count below 1, or a split name not in `split`.
    """
    if spec is None:
        spec = 1
    if isinstance(spec, str) and "=" not in spec:
        try:
            spec = int(spec)
        except ValueError:
            raise ValueError(
                f"{_API}: `shards` must be a number or 'train=8,...'; got {spec!r}."
            ) from None
    if isinstance(spec, int):
        counts = {name: spec for name in split}
    elif isinstance(spec, str):
        counts = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, _, value = part.partition("=")
            try:
                counts[name.strip()] = int(value)
            except ValueError:
                raise ValueError(
                    f"{_API}: `shards` must look like 'train=8,validation=2'; got {spec!r}."
                ) from None
    else:
        counts = dict(spec)
    unknown = sorted(set(counts) - set(split))
    missing = sorted(set(split) - set(counts))
    if unknown or missing or any(not isinstance(n, int) or n < 1 for n in counts.values()):
        raise ValueError(
            f"{_API}: `shards` needs a count >= 1 for each split {sorted(split)}; got {spec!r}."
        )
    return counts


def shard_name(split: str, index: int, count: int) -> str:
    """The file name of shard `index` of `count` in `split`: ``train-00003-of-00008``."""
    return f"{split}-{index:05d}-of-{count:05d}"


class Assignment(NamedTuple):
    """Where a record goes: its split, its shard index and its in-shard sort key."""

    split: str
    shard: int
    order: str


def assign(identity: str, split: dict[str, float], shards: dict[str, int]) -> Assignment:
    """The split and shard of the record named `identity`. See NOTE [ Stable assignment ]."""
    digest = hashlib.sha256(identity.encode("utf-8")).digest()
    chosen, shard = placer(split, shards)(digest)
    return Assignment(chosen, shard, digest.hex())


def placer(split: dict[str, float], shards: dict[str, int]) -> Callable[[bytes], tuple[str, int]]:
    """The ``(split, shard)`` of an identity's SHA-256 digest, as :func:`assign` places it."""
    names = list(split)
    bounds: list[tuple[float, str]] = []
    cumulative = 0.0
    for name in names:
        cumulative += split[name]
        bounds.append((cumulative, name))
    last = names[-1]
    from_bytes = int.from_bytes

    def place(digest: bytes) -> tuple[str, int]:
        fraction = from_bytes(digest[:8], "big") / 2.0**64
        chosen = last
        for bound, name in bounds:
            if fraction < bound:
                chosen = name
                break
        return chosen, from_bytes(digest[8:16], "big") % shards[chosen]

    return place
