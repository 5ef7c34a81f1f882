"""The report of :func:`queue_pipeline.compare.compare`: its fields, text table and JSON."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

__all__ = [
    "ComparisonReport",
    "ComponentReport",
    "Difference",
    "EpochReport",
    "Explanation",
    "PipelineMismatchError",
    "ShuffleStats",
    "SideReport",
]


class PipelineMismatchError(AssertionError):
    """Raised by :meth:`ComparisonReport.assert_match` when the sides differ."""


@dataclasses.dataclass
class ComponentReport:
    """One component's static signature on each side (None where it is absent)."""

    path: str
    legacy: str | None
    twin: str | None
    legacy_example_shape: list | None
    twin_example_shape: list | None
    dtype_equal: bool
    shape_compatible: bool

    @property
    def ok(self) -> bool:
        return self.dtype_equal and self.shape_compatible


@dataclasses.dataclass
class ShuffleStats:
    """How much a side mixes its examples, per epoch, averaged over epochs.

    Attributes:
      rank_correlation: Spearman correlation between output position and
        position in the reference order: 1.0 unshuffled, about 0 well mixed.
      mean_displacement: mean ``|output position - reference position|`` over
        the epoch size: 0 unshuffled, about 1/3 for a uniform shuffle.
      reference: ``"sorted order"`` (examples sorted by value, a stand-in for
        the source order) or ``"reference"`` (the order given by `reference`).
    """

    rank_correlation: float | None
    mean_displacement: float | None
    reference: str


@dataclasses.dataclass
class SideReport:
    """What one side delivered and how fast."""

    structure: str
    batched: bool
    batches: int
    examples: int
    exhausted: bool
    seconds: float
    startup_seconds: float
    deterministic: bool | None
    nondeterminism: list[str]
    shuffle: ShuffleStats | None = None

    @property
    def examples_per_second(self) -> float | None:
        return self.examples / self.seconds if self.seconds > 0 else None


@dataclasses.dataclass
class EpochReport:
    """Per-epoch multiset equality (epochs are cut by the legacy epoch size)."""

    index: int
    legacy_examples: int
    twin_examples: int
    multiset_equal: bool
    only_in_legacy: int
    only_in_twin: int


@dataclasses.dataclass
class Difference:
    """The first differing example: its index (in examples) and both values."""

    index: int
    kind: str
    legacy: str
    twin: str
    legacy_batch: int | None = None


@dataclasses.dataclass
class Explanation:
    """The one known migration slip that explains every differing record.

    See NOTE [ Explaining a difference ] in ``_compare/slips.py``.

    Attributes:
      slip: its name: ``flip_left_right``, ``flip_up_down``, ``transpose``,
        ``channel_order``, ``off_by_one``, ``rounding_cast``, ``scale_offset``,
        ``order_shift`` or ``final_batch``.
      feature: the component it changes (a path such as ``[0]``), or None for
        the record-level slips (``order_shift``, ``final_batch``).
      records: the differing records it was checked on (all, or a sample).
      differing: the differing records in all.
      text: the explanation in words.
    """

    slip: str
    feature: str | None
    records: int
    differing: int
    text: str


@dataclasses.dataclass
class ComparisonReport:
    """The result of comparing a legacy pipeline with its tf.data twin.

    ``matched`` is the verdict: signatures (structure, dtypes, compatible
    shapes), example and batch counts, and the values (in order in
    ``"ordered"`` mode, as multisets in ``"multiset"`` mode; per epoch too when
    ``epochs_required``) all agree. ``mismatches`` holds one multi-line
    message per difference and ``notes`` what the reader should know (why
    this mode, what was truncated). ``explanation`` names the one known
    migration slip that explains every differing record (None when nothing
    differs or none does; ``slips_checked`` says whether records differed
    and were tested). ``str(report)`` is the text table, :meth:`to_json` the
    JSON.
    """

    matched: bool
    mode: str
    mode_reason: str
    structure_equal: bool
    components: list[ComponentReport]
    legacy: SideReport
    twin: SideReport
    counts_equal: bool
    batch_counts_equal: bool | None
    ordered_equal: bool | None
    multiset_equal: bool | None
    epoch_size: int | None
    epochs_required: bool
    epochs: list[EpochReport]
    first_difference: Difference | None
    mixing_gap: float | None
    mismatches: list[str]
    notes: list[str]
    explanation: Explanation | None = None
    slips_checked: bool = False

    def __bool__(self) -> bool:
        return self.matched

    def __str__(self) -> str:
        return self.render()

    def assert_match(self) -> None:
        """Raises PipelineMismatchError (an AssertionError) with the table unless matched."""
        if not self.matched:
            raise PipelineMismatchError("\n" + self.render())

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (throughput included)."""
        data = dataclasses.asdict(self)
        for side in ("legacy", "twin"):
            data[side]["examples_per_second"] = getattr(self, side).examples_per_second
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    def render(self) -> str:
        """The report as a text table: a verdict line, the mode and its reason,
        rows of legacy / twin / verdict columns, then mismatches and notes."""
        return _render(self)


_LABEL, _COL = 22, 30
_MAX_EPOCH_ROWS = 10


def _cell(text: Any) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= _COL - 2 else text[: _COL - 5] + "..."


def _row(label: str, legacy: Any = "", twin: Any = "", verdict: str = "") -> str:
    return (f"{label:<{_LABEL}}{_cell(legacy):<{_COL}}{_cell(twin):<{_COL}}{verdict}").rstrip()


def _ok(flag: bool | None, yes: str = "ok", no: str = "DIFFERS") -> str:
    return "n/a" if flag is None else yes if flag else no


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _side_count(side: SideReport, what: str) -> str:
    n = side.batches if what == "batches" else side.examples
    return f"{n}" + ("" if side.exhausted else " (stopped)")


def _render(r: ComparisonReport) -> str:
    verdict = "MATCH" if r.matched else f"DIFFER ({len(r.mismatches)} mismatch(es))"
    lines = [
        f"queue_pipeline compare: {verdict}",
        f"mode: {r.mode} ({r.mode_reason})",
    ]
    if r.explanation is not None:
        lines.append(f"explained: {r.explanation.text}")
    elif r.slips_checked:
        lines.append("explained: none of the known slips explains it")
    lines += [
        "",
        _row("", "legacy", "twin"),
        _row("structure", r.legacy.structure, r.twin.structure, _ok(r.structure_equal)),
    ]
    for c in r.components:
        problems = [] if c.dtype_equal else ["dtype DIFFERS"]
        problems += [] if c.shape_compatible else ["shape DIFFERS"]
        lines.append(
            _row(
                f"  {c.path or '(tensor)'}",
                c.legacy or "absent",
                c.twin or "absent",
                ", ".join(problems) or "ok",
            )
        )
        if c.legacy_example_shape != c.twin_example_shape:
            lines.append(
                _row("    example shape", c.legacy_example_shape, c.twin_example_shape, "DIFFERS")
            )
    lines.append(
        _row(
            "batches" if r.legacy.batched else "elements",
            _side_count(r.legacy, "batches"),
            _side_count(r.twin, "batches"),
            _ok(r.batch_counts_equal),
        )
    )
    lines.append(
        _row(
            "examples",
            _side_count(r.legacy, "examples"),
            _side_count(r.twin, "examples"),
            _ok(r.counts_equal),
        )
    )
    for e in r.epochs[:_MAX_EPOCH_ROWS]:
        label = f"epoch {e.index + 1}" if e.legacy_examples else "beyond last epoch"
        verdict = (
            "multiset equal"
            if e.multiset_equal
            else (
                f"-{e.only_in_legacy} +{e.only_in_twin}"
                + (" DIFFERS" if r.epochs_required else " (mixed across epochs)")
            )
        )
        lines.append(_row(label, e.legacy_examples, e.twin_examples, verdict))
    if len(r.epochs) > _MAX_EPOCH_ROWS:
        rest = r.epochs[_MAX_EPOCH_ROWS:]
        bad = sum(not e.multiset_equal for e in rest)
        lines.append(
            _row(
                f"... {len(rest)} more epochs", "", "", f"{bad} differ" if bad else "multiset equal"
            )
        )
    order = _ok(r.ordered_equal, "equal", "differs")
    if r.mode == "ordered":
        order = order.upper() if r.ordered_equal is False else order
    else:
        order += " (not required)" if r.ordered_equal is not None else ""
    lines.append(_row("order", "", "", order))
    lines.append(_row("multiset", "", "", _ok(r.multiset_equal, "equal", "DIFFERS")))
    lines.append(_row("deterministic", _det(r.legacy), _det(r.twin)))
    ls, ts = r.legacy.shuffle, r.twin.shuffle
    shuffled = ls or ts
    if shuffled is not None:
        gap = f"gap {_fmt(r.mixing_gap, '.2f')}" if r.mixing_gap is not None else ""
        lines.append(
            _row(
                "rank corr. vs " + shuffled.reference.split()[0],
                _fmt(ls.rank_correlation if ls else None, ".2f"),
                _fmt(ts.rank_correlation if ts else None, ".2f"),
                gap,
            )
        )
        lines.append(
            _row(
                "mean displacement",
                _fmt(ls.mean_displacement if ls else None, ".2f"),
                _fmt(ts.mean_displacement if ts else None, ".2f"),
            )
        )
    lines.append(_row("throughput", _speed(r.legacy), _speed(r.twin)))
    if r.first_difference is not None:
        d = r.first_difference
        lines.append(_row("first difference", f"#{d.index}: {d.legacy}", d.twin, d.kind))
    for title, items in (("Mismatches", r.mismatches), ("Notes", r.notes)):
        if items:
            lines += ["", f"{title}:"]
            for item in items:
                body = item.splitlines()
                lines.append(f"- {body[0]}")
                lines += [f"  {line}" for line in body[1:]]
    return "\n".join(lines) + "\n"


def _det(side: SideReport) -> str:
    if side.deterministic is None:
        return "unknown"
    if side.deterministic:
        return "yes"
    return "no: " + side.nondeterminism[0] if side.nondeterminism else "no"


def _speed(side: SideReport) -> str:
    rate = side.examples_per_second
    return "-" if rate is None else f"{rate:,.0f} ex/s ({side.seconds:.2f} s)"
