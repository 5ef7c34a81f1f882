"""The report of :func:`queue_pipeline.compare.compare`: its fields, text table and JSON."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence

if TYPE_CHECKING:
    from queue_pipeline._compare.samples import ComparisonSamples

__all__ = [
    "ComparisonReport",
    "ComponentReport",
    "Difference",
    "EpochReport",
    "Explanation",
    "PipelineMismatchError",
    "ShuffleStats",
    "SideReport",
    "TableRow",
]


class PipelineMismatchError(AssertionError):
    """Raised by :meth:`ComparisonReport.assert_match` when the sides differ.

    Attributes:
      report: the :class:`ComparisonReport` (None when raised otherwise);
        the pytest plugin writes its page for a failing test.
    """

    def __init__(self, *args: Any, report: ComparisonReport | None = None) -> None:
        super().__init__(*args)
        self.report = report


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
      slip: its name: ``float_rounding``, ``flip_left_right``, ``flip_up_down``, ``transpose``,
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
    JSON, :meth:`to_html` a page that draws both sides from ``samples``.
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
    tail_reach: tuple[int, int] | None = None
    """Where multisets differ: how far from its side's end (1: the last example)
    the earliest example without a partner on the other side lies, for legacy
    and twin (0: none); None otherwise. Where only threads reorder the legacy
    side, the records a deterministic twin drops as its final partial batch
    lie near the legacy side's end; a record the twin loses elsewhere does not."""
    samples: ComparisonSamples | None = dataclasses.field(default=None, repr=False, compare=False)
    """What compare kept of each side to draw it (first examples, value samples,
    order, timeline); None for a report made otherwise. Not in :meth:`to_dict`."""

    def __bool__(self) -> bool:
        return self.matched

    def __str__(self) -> str:
        return self.render()

    def assert_match(self) -> None:
        """Raises PipelineMismatchError (an AssertionError) with the table unless matched."""
        if not self.matched:
            raise PipelineMismatchError("\n" + self.render(), report=self)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (throughput included; ``samples`` left out)."""
        data = dataclasses.asdict(dataclasses.replace(self, samples=None))
        del data["samples"]
        for side in ("legacy", "twin"):
            data[side]["examples_per_second"] = getattr(self, side).examples_per_second
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    def to_html(
        self,
        path: str | os.PathLike[str],
        *,
        image_shapes: Mapping[str, Sequence[int]] | None = None,
    ) -> str:
        """Writes the report as one self-contained HTML page; returns its path.

        The page needs no server and nothing from elsewhere (its graphics are
        inline SVG and ``data:`` PNG images): the verdict, the first difference
        and the slip explanation in words, the structure table, both sides'
        value distributions, per-epoch counts, the first images (legacy above
        twin, differing ones marked, with a difference image), the order
        (position delivered against position in the source), throughput over
        the run, and strings' and variable-length components' lengths and
        first values. Its size is bounded whatever the run's size.

        Args:
          path: the file to write (its folder is created).
          image_shapes: components to draw as images with their per-example
            shape, as for :func:`queue_pipeline.compare.compare` (added to the
            ones given there).
        """
        from queue_pipeline._compare import page as _page

        return _page.write(self, path, image_shapes=image_shapes)

    def to_tensorboard(self, logdir: str | os.PathLike[str]) -> dict[str, str]:
        """Writes the report as TensorBoard summaries, one run per side.

        ``LOGDIR/legacy`` and ``LOGDIR/twin`` each get a strip of the first
        image-like examples (differing ones framed red), a histogram per numeric
        component (the same buckets on both sides), throughput scalars and the
        verdict as text; then ``tensorboard --logdir LOGDIR``. The summaries are
        written without ops or a Session, so the user's default graph and TF mode
        are untouched. A logdir that already holds a comparison is refused.

        Returns:
          The path of each run's folder, by run name (``legacy``, ``twin``).
        """
        from queue_pipeline._compare import tensorboard as _tensorboard

        return _tensorboard.write_summaries(self, logdir)

    @property
    def explained(self) -> str | None:
        """The difference in words for every rendering (text, page, TensorBoard):
        the slip that explains it, ``"none of the known slips explains it"`` when
        records differed and none does, else None."""
        if self.explanation is not None:
            return self.explanation.text
        return "none of the known slips explains it" if self.slips_checked else None

    @property
    def verdict(self) -> str:
        """``MATCH``, or ``DIFFER (<n> mismatch(es))``: the report's first line."""
        return "MATCH" if self.matched else f"DIFFER ({len(self.mismatches)} mismatch(es))"

    def table(self) -> list[TableRow]:
        """The rows of the text table (and of the page's), legacy and twin side by side."""
        return _table(self)

    def render(self) -> str:
        """The report as a text table: a verdict line, the mode and its reason,
        rows of legacy / twin / verdict columns, then mismatches and notes."""
        return _render(self)


class TableRow(NamedTuple):
    """One row of the report's table: a label, both sides' cells and a verdict.

    ``differs`` marks a row that shows a difference (its verdict says
    ``DIFFERS``, or it is the first difference).
    """

    label: str
    legacy: str = ""
    twin: str = ""
    verdict: str = ""
    differs: bool | None = None

    @property
    def marked(self) -> bool:
        return bool(self.differs) or (self.differs is None and "DIFFERS" in self.verdict)


_LABEL, _COL = 22, 30
_MAX_EPOCH_ROWS = 10


def _cell(text: Any) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= _COL - 2 else text[: _COL - 5] + "..."


def _row(label: str, legacy: Any = "", twin: Any = "", verdict: str = "") -> str:
    return (f"{label:<{_LABEL}}{_cell(legacy):<{_COL}}{_cell(twin):<{_COL}}{verdict}").rstrip()


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _ok(flag: bool | None, yes: str = "ok", no: str = "DIFFERS") -> str:
    return "n/a" if flag is None else yes if flag else no


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _side_count(side: SideReport, what: str) -> str:
    n = side.batches if what == "batches" else side.examples
    return f"{n}" + ("" if side.exhausted else " (stopped)")


def _render(r: ComparisonReport) -> str:
    lines = [
        f"queue_pipeline compare: {r.verdict}",
        f"mode: {r.mode} ({r.mode_reason})",
    ]
    if r.explained is not None:
        lines.append(f"explained: {r.explained}")
    lines += ["", _row("", "legacy", "twin")]
    lines += [_row(*row[:4]) for row in _table(r)]
    for title, items in (("Mismatches", r.mismatches), ("Notes", r.notes)):
        if items:
            lines += ["", f"{title}:"]
            for item in items:
                body = item.splitlines()
                lines.append(f"- {body[0]}")
                lines += [f"  {line}" for line in body[1:]]
    return "\n".join(lines) + "\n"


def _table(r: ComparisonReport) -> list[TableRow]:
    rows = [
        TableRow("structure", r.legacy.structure, r.twin.structure, _ok(r.structure_equal)),
    ]
    for c in r.components:
        problems = [] if c.dtype_equal else ["dtype DIFFERS"]
        problems += [] if c.shape_compatible else ["shape DIFFERS"]
        rows.append(
            TableRow(
                f"  {c.path or '(tensor)'}",
                c.legacy or "absent",
                c.twin or "absent",
                ", ".join(problems) or "ok",
            )
        )
        if c.legacy_example_shape != c.twin_example_shape:
            rows.append(
                TableRow(
                    "    example shape",
                    _text(c.legacy_example_shape),
                    _text(c.twin_example_shape),
                    "DIFFERS",
                )
            )
    rows.append(
        TableRow(
            "batches" if r.legacy.batched else "elements",
            _side_count(r.legacy, "batches"),
            _side_count(r.twin, "batches"),
            _ok(r.batch_counts_equal),
        )
    )
    rows.append(
        TableRow(
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
        rows.append(TableRow(label, str(e.legacy_examples), str(e.twin_examples), verdict))
    if len(r.epochs) > _MAX_EPOCH_ROWS:
        rest = r.epochs[_MAX_EPOCH_ROWS:]
        bad = sum(not e.multiset_equal for e in rest)
        rows.append(
            TableRow(
                f"... {len(rest)} more epochs",
                "",
                "",
                f"{bad} differ" if bad else "multiset equal",
                bool(bad and r.epochs_required),
            )
        )
    order = _ok(r.ordered_equal, "equal", "differs")
    if r.mode == "ordered":
        order = order.upper() if r.ordered_equal is False else order
    else:
        order += " (not required)" if r.ordered_equal is not None else ""
    rows.append(TableRow("order", "", "", order))
    rows.append(TableRow("multiset", "", "", _ok(r.multiset_equal, "equal", "DIFFERS")))
    rows.append(TableRow("deterministic", _det(r.legacy), _det(r.twin)))
    ls, ts = r.legacy.shuffle, r.twin.shuffle
    shuffled = ls or ts
    if shuffled is not None:
        gap = f"gap {_fmt(r.mixing_gap, '.2f')}" if r.mixing_gap is not None else ""
        rows.append(
            TableRow(
                "rank corr. vs " + shuffled.reference.split()[0],
                _fmt(ls.rank_correlation if ls else None, ".2f"),
                _fmt(ts.rank_correlation if ts else None, ".2f"),
                gap,
            )
        )
        rows.append(
            TableRow(
                "mean displacement",
                _fmt(ls.mean_displacement if ls else None, ".2f"),
                _fmt(ts.mean_displacement if ts else None, ".2f"),
            )
        )
    rows.append(TableRow("throughput", _speed(r.legacy), _speed(r.twin)))
    if r.first_difference is not None:
        d = r.first_difference
        rows.append(TableRow("first difference", f"#{d.index}: {d.legacy}", d.twin, d.kind, True))
    return rows


def _det(side: SideReport) -> str:
    if side.deterministic is None:
        return "unknown"
    if side.deterministic:
        return "yes"
    return "no: " + side.nondeterminism[0] if side.nondeterminism else "no"


def _speed(side: SideReport) -> str:
    rate = side.examples_per_second
    return "-" if rate is None else f"{rate:,.0f} ex/s ({side.seconds:.2f} s)"
