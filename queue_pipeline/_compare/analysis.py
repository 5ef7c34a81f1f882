"""The analysis behind :func:`queue_pipeline.compare.compare`: two sides in, a report out.

See NOTE [ Comparing examples, epochs and order ] in ``compare.py``.
"""

from __future__ import annotations

import collections

import numpy as np

from queue_pipeline._compare import normalize as _normalize
from queue_pipeline._compare import slips as _slips
from queue_pipeline._compare.report import (
    ComparisonReport,
    ComponentReport,
    Difference,
    EpochReport,
    ShuffleStats,
    SideReport,
)

_SHOWN = 3
_MAX_STAT_EPOCHS = 20


def analyze(left, right, *, ordered, epochs, epoch_size, reference) -> ComparisonReport:
    """Compares two normalized sides (``compare._Side``) into a ComparisonReport."""
    mismatches: list[str] = []
    notes: list[str] = list(left.notes) + list(right.notes)
    components, structure_equal = _signatures(left, right, mismatches)
    if structure_equal:
        _padded_alike(left, right, notes)
    lkeys = [_normalize.example_key(e) for e in left.examples]
    rkeys = [_normalize.example_key(e) for e in right.examples]
    left.keys, right.keys = lkeys, rkeys  # reused by compare's samples
    mode, reason = _mode(left, right, ordered, notes)

    counts_equal = len(lkeys) == len(rkeys)
    if not counts_equal:
        order_diff = _first_order_difference(left, right, lkeys, rkeys)[1]
        index = order_diff.index if structure_equal and order_diff else min(len(lkeys), len(rkeys))
        mismatches.append(_count_message(left, right, epoch_size, index))
    batch_counts_equal = None
    if left.batched == right.batched:
        batch_counts_equal = left.batches == right.batches
        if not batch_counts_equal and counts_equal:
            mismatches.append(
                f"batch count differs:\n  legacy: {left.batches} batch(es)\n"
                f"  twin:   {right.batches} element(s)\n  hint: same examples, batched "
                "differently: check batch_size, and allow_smaller_final_batch vs "
                "drop_remainder."
            )

    ordered_equal = multiset_equal = first = tail_reach = None
    epoch_reports: list[EpochReport] = []
    required = not any(n.mixes_epochs for n in left.nondeterminism or [])
    if structure_equal:
        ordered_equal, first_order = _first_order_difference(left, right, lkeys, rkeys)
        lcount, rcount = collections.Counter(lkeys), collections.Counter(rkeys)
        multiset_equal = lcount == rcount
        if mode == "ordered":
            first = first_order
            if not ordered_equal and first_order.kind == "value":
                mismatches.append(_order_message(first_order, multiset_equal))
        else:
            if not multiset_equal:
                unmatched = _unmatched(lkeys, rkeys), _unmatched(rkeys, lkeys)
                first = _first_multiset_difference(left, right, *unmatched)
                tail_reach = (
                    len(lkeys) - unmatched[0][0] if unmatched[0] else 0,
                    len(rkeys) - unmatched[1][0] if unmatched[1] else 0,
                )
            if not ordered_equal and multiset_equal and first_order is not None:
                notes.append(
                    f"order differs from example {first_order.index} on (not required: {reason})."
                )
        if not multiset_equal:
            mismatches.append(_multiset_message(left, right, lkeys, rkeys, lcount, rcount, first))
        if epoch_size:
            epoch_reports = _epochs(lkeys, rkeys, epochs, epoch_size)
            bad = [e for e in epoch_reports if not e.multiset_equal and e.legacy_examples]
            if bad and required and multiset_equal:
                mismatches.append(
                    f"epoch {bad[0].index + 1} multiset differs (epoch size {epoch_size}): "
                    f"{bad[0].only_in_legacy} example(s) only in legacy, "
                    f"{bad[0].only_in_twin} only in twin\n  hint: the legacy side keeps "
                    "epochs apart; a twin that shuffles across epochs (.repeat() before "
                    ".shuffle()) mixes them: shuffle before repeat, or reshuffle per epoch."
                )
            elif bad and not required:
                notes.append(
                    "per-epoch multisets differ but are not required: the legacy "
                    "side mixes epochs (threads or a RandomShuffleQueue)."
                )
    elif not counts_equal:
        first = None

    lside = _side_report(left, lkeys, epoch_size, reference)
    rside = _side_report(right, rkeys, epoch_size, reference)
    gap = None
    lrho = lside.shuffle.rank_correlation if lside.shuffle else None
    rrho = rside.shuffle.rank_correlation if rside.shuffle else None
    if lrho is not None and rrho is not None:
        gap = abs(lrho - rrho)
        if gap > 0.5:
            notes.append(
                f"the sides mix very differently: rank correlation "
                f"{lrho:.2f} (legacy) vs "
                f"{rrho:.2f} (twin); a twin "
                "shuffle buffer of another size, or a missing shuffle?"
            )
    if first is None and not counts_equal and structure_equal:
        first = _first_order_difference(left, right, lkeys, rkeys)[1]
    values_ok = ordered_equal if mode == "ordered" else multiset_equal
    epochs_ok = not required or all(e.multiset_equal for e in epoch_reports)
    matched = bool(
        structure_equal
        and all(c.ok for c in components)
        and counts_equal
        and batch_counts_equal is not False
        and values_ok
        and epochs_ok
    )
    explanation = None
    slips_checked = bool(structure_equal and not (values_ok and counts_equal))
    if slips_checked:
        explanation = _slips.explain(left, right, lkeys, rkeys, ordered=mode == "ordered")
        if explanation is not None:
            mismatches = [_explained_hint(m, explanation.text) for m in mismatches]
    return ComparisonReport(
        matched=matched,
        mode=mode,
        mode_reason=reason,
        structure_equal=structure_equal,
        components=components,
        legacy=lside,
        twin=rside,
        counts_equal=counts_equal,
        batch_counts_equal=batch_counts_equal,
        ordered_equal=ordered_equal,
        multiset_equal=multiset_equal,
        epoch_size=epoch_size,
        epochs_required=required,
        epochs=epoch_reports,
        first_difference=first,
        mixing_gap=gap,
        mismatches=mismatches,
        notes=notes,
        explanation=explanation,
        slips_checked=slips_checked,
        tail_reach=tail_reach,
    )


# The mismatches whose generic hint an explanation replaces (NOTE [ Explaining a difference ]).
_EXPLAINED = ("multisets differ", "values differ in order", "example count differs")


def _explained_hint(message: str, text: str) -> str:
    if not message.startswith(_EXPLAINED):
        return message
    lines = message.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("  hint: "):
            lines[i] = f"  hint: {text}."
            break
    return "\n".join(lines)


def _padded_alike(left, right, notes: list[str]) -> None:
    """Pads, in place, each dense component whose examples vary in shape within a side
    to the longest of both sides, with zeros.

    NOTE [ Dynamic padding under a shuffle ]
    ``batch(..., dynamic_pad=True)`` and ``padded_batch`` pad each batch to its
    own longest example, so an example's padded shape depends on its batch
    mates; with a shuffle on either side the same example meets other mates
    and arrives with more or fewer trailing zeros. Both sides' examples of
    such a component (batched, of one rank, in shapes that vary within a
    side) are compared padded with zeros to one shape, and a note says so.
    A twin padding with another value, or cutting, still differs.
    """
    if not (left.batched and right.batched):
        return
    for i, path in enumerate(left.paths):
        shapes = {
            side_name: {
                e[i].shape
                for e in side.examples
                if isinstance(e[i], np.ndarray) and e[i].dtype != object
            }
            for side_name, side in (("legacy", left), ("twin", right))
        }
        every = shapes["legacy"] | shapes["twin"]
        if max(len(shapes["legacy"]), len(shapes["twin"])) < 2 or len({len(s) for s in every}) != 1:
            continue
        target = tuple(max(dims) for dims in zip(*every))
        for side in (left, right):
            for k, example in enumerate(side.examples):
                leaf = example[i]
                if isinstance(leaf, np.ndarray) and leaf.dtype != object and leaf.shape != target:
                    example = list(example)
                    example[i] = np.pad(leaf, [(0, t - d) for d, t in zip(leaf.shape, target)])
                    side.examples[k] = example
        notes.append(
            f"component {path or '(the tensor)'} is padded per batch (dynamic padding): its "
            f"examples are compared padded with zeros to {list(target)}."
        )


def _mode(left, right, ordered, notes) -> tuple[str, str]:
    lnd, rnd = left.nondeterminism or [], right.nondeterminism
    if right.nondeterminism is None:
        notes.append(
            "the twin's determinism is unknown (its dataset graph could not be "
            "inspected); it is assumed deterministic."
        )
        rnd = []
    if ordered is True:
        if lnd or rnd:
            notes.append(
                "ordered=True although a side is nondeterministic ("
                + "; ".join(n.reason for n in lnd + rnd)
                + "): order may vary "
                "from run to run."
            )
        return "ordered", "ordered=True"
    if ordered is False:
        return "multiset", "ordered=False"
    if lnd:
        return "multiset", "legacy side is nondeterministic: " + lnd[0].reason
    if rnd:
        return "multiset", "twin side is nondeterministic: " + rnd[0].reason
    return "ordered", "both sides are deterministic"


def _signatures(left, right, mismatches) -> tuple[list[ComponentReport], bool]:
    lspec = dict(zip(left.paths, left.specs))
    rspec = dict(zip(right.paths, right.specs))
    lex = left.examples[0] if left.examples else None
    rex = right.examples[0] if right.examples else None
    paths = list(left.paths) + [p for p in right.paths if p not in lspec]
    components = []
    for path in paths:
        a, b = lspec.get(path), rspec.get(path)
        dtype_equal = bool(a and b and a.dtype == b.dtype and a.sparse == b.sparse)
        shape_ok = bool(a and b and a.shape.is_compatible_with(b.shape))
        components.append(
            ComponentReport(
                path,
                a.describe() if a else None,
                b.describe() if b else None,
                _example_shape(left, lex, path),
                _example_shape(right, rex, path),
                dtype_equal,
                shape_ok,
            )
        )
        if a and b and not dtype_equal:
            mismatches.append(
                f"dtype of component {path or '(tensor)'} differs:\n"
                f"  legacy: {a.describe()}\n  twin:   {b.describe()}\n"
                f"  hint: cast in the twin, e.g. .map(... tf.cast(x, tf.{a.dtype}) ...)"
                + (" or convert between dense and sparse" if a.sparse != b.sparse else "")
            )
        if a and b and not shape_ok:
            mismatches.append(_shape_message(path, a, b, left, right))
    structure_equal = list(left.paths) == list(right.paths)
    if not structure_equal:
        mismatches.append(
            f"structure differs:\n  legacy: {_normalize.structure_str(left.paths, left.specs)}\n"
            f"  twin:   {_normalize.structure_str(right.paths, right.specs)}\n"
            "  hint: the twin must yield the same components: a legacy list or tuple is "
            "a tuple in tf.data, a dict stays a dict (keys compared as str)."
        )
    return components, structure_equal


def _example_shape(side, example, path):
    if example is None or path not in side.paths:
        return None
    return list(_normalize.example_shape(example[side.paths.index(path)]))


def _shape_message(path, a, b, left, right) -> str:
    hint = "reshape or pad in the twin so that each example has the legacy shape."
    if left.batched and not right.batched:
        hint = (
            f"the legacy side yields batches of {left.max_batch} but the twin yields "
            f"single examples: add .batch({left.max_batch})."
        )
    elif right.batched and not left.batched:
        hint = (
            "the twin yields batches but the legacy side yields single examples: remove .batch()."
        )
    return (
        f"shape of component {path or '(tensor)'} differs:\n"
        f"  legacy: {_normalize.shape_str(a.shape)}\n"
        f"  twin:   {_normalize.shape_str(b.shape)}\n  hint: {hint}"
    )


def _count_message(left, right, epoch_size, index) -> str:
    n, m = len(left.examples), len(right.examples)
    if m > n:
        more = "at least " if not right.exhausted else ""
        if not right.exhausted and epoch_size and m - n >= epoch_size:
            hint = (
                "the twin delivers at least one more epoch, or never ends: check "
                ".repeat(num_epochs) against the legacy num_epochs."
            )
        elif not right.exhausted:
            hint = "twin has more: it may never end (.repeat() without a count?)."
        else:
            hint = (
                "twin has more: a duplicated record, an extra epoch, or a final "
                "batch the legacy side drops (allow_smaller_final_batch=False vs "
                "drop_remainder=False)?"
            )
        twin = f"{more}{m} examples in {right.batches} element(s)"
    else:
        hint = (
            "twin has fewer: a dropped record or epoch, or drop_remainder=True where "
            "the legacy side keeps the final batch?"
        )
        twin = f"{m} examples in {right.batches} element(s)"
    return (
        f"example count differs ({'twin has more' if m > n else 'twin has fewer'}):\n"
        f"  legacy: {n} examples in {left.batches} batch(es)\n  twin:   {twin}\n"
        f"  first differing index: {index}\n  hint: {hint}"
    )


def _first_order_difference(left, right, lkeys, rkeys):
    n = min(len(lkeys), len(rkeys))
    for i in range(n):
        if lkeys[i] != rkeys[i]:
            return False, _difference(left, right, i, "value")
    if len(lkeys) == len(rkeys):
        return True, None
    kind = "twin has more" if len(rkeys) > n else "twin has fewer"
    return False, _difference(left, right, n, kind)


def _difference(left, right, i, kind) -> Difference:
    lv = left.examples[i] if i < len(left.examples) else None
    rv = right.examples[i] if i < len(right.examples) else None
    batch = left.batch_of_example[i] if i < len(left.batch_of_example) else None
    return Difference(
        i,
        kind,
        _normalize.format_example(left.paths, lv),
        _normalize.format_example(right.paths, rv),
        batch,
    )


def _order_message(d: Difference, multiset_equal: bool) -> str:
    if multiset_equal:
        hint = (
            "order differs but multisets match: expected for shuffle=True or "
            "several threads; compare with ordered=False (--unordered)."
        )
    else:
        hint = "the multisets differ too: records are missing, extra or changed."
    where = f" (legacy batch {d.legacy_batch})" if d.legacy_batch is not None else ""
    return (
        f"values differ in order at example {d.index}{where}:\n  legacy: {d.legacy}\n"
        f"  twin:   {d.twin}\n  first differing index: {d.index}\n  hint: {hint}"
    )


def _unmatched(keys, other) -> list[int]:
    """The positions in `keys` of the examples `other` has no partner for (earliest first)."""
    remaining = collections.Counter(other)
    out = []
    for i, key in enumerate(keys):
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            out.append(i)
    return out


def _first_multiset_difference(left, right, only_left, only_right) -> Difference | None:
    """The first legacy example the twin has no partner for, else the twin's first."""
    if only_left:
        i = only_left[0]
        shown = _normalize.format_example(left.paths, left.examples[i])
        return Difference(
            i, "only in legacy", shown, "(no equal example in the twin)", left.batch_of_example[i]
        )
    if only_right:
        i = only_right[0]
        shown = _normalize.format_example(right.paths, right.examples[i])
        return Difference(i, "only in twin", "(no equal example in legacy)", shown)
    return None


def _multiset_message(left, right, lkeys, rkeys, lcount, rcount, first) -> str:
    only_l, only_r = lcount - rcount, rcount - lcount
    lines = [
        f"multisets differ: {sum(only_l.values())} example(s) only in legacy, "
        f"{sum(only_r.values())} only in twin:"
    ]
    for title, only, keys, side in (
        ("only in legacy", only_l, lkeys, left),
        ("only in twin", only_r, rkeys, right),
    ):
        shown = 0
        for key, extra in only.items():
            if shown == _SHOWN:
                lines.append(f"  {title}: ... ({len(only) - _SHOWN} more distinct)")
                break
            value = _normalize.format_example(side.paths, side.examples[keys.index(key)])
            lines.append(
                f"  {title}: {value} x{extra} (legacy x{lcount[key]}, twin x{rcount[key]})"
            )
            shown += 1
    if first is not None:
        lines.append(f"  first differing index: {first.index} ({first.kind})")
    dup = any(lcount[k] and rcount[k] for k in list(only_l) + list(only_r))
    hint = (
        "a record is duplicated or dropped on one side (it appears on both, a "
        "different number of times)."
        if dup
        else "records were dropped, added or changed (a decode, filter or map differs)."
    )
    lines.append(f"  hint: {hint}")
    return "\n".join(lines)


def _epochs(lkeys, rkeys, epochs, size) -> list[EpochReport]:
    out = []
    count = max(epochs, -(-len(rkeys) // size))
    for e in range(count):
        a = collections.Counter(lkeys[e * size : (e + 1) * size])
        b = collections.Counter(rkeys[e * size : (e + 1) * size])
        out.append(
            EpochReport(
                e,
                sum(a.values()),
                sum(b.values()),
                a == b,
                sum((a - b).values()),
                sum((b - a).values()),
            )
        )
    return out


def _side_report(side, keys, epoch_size, reference) -> SideReport:
    nd = side.nondeterminism
    structure = "tensor" if side.paths == [""] else ", ".join(side.paths)
    return SideReport(
        structure=structure,
        batched=side.batched,
        batches=side.batches,
        examples=len(side.examples),
        exhausted=side.exhausted,
        seconds=side.seconds,
        startup_seconds=side.startup_seconds,
        deterministic=None if nd is None else not nd,
        nondeterminism=[n.reason for n in nd or []],
        shuffle=_shuffle_stats(side, keys, epoch_size, reference),
    )


def _ranks(values) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(len(values))
    return ranks


def _shuffle_stats(side, keys, epoch_size, reference) -> ShuffleStats | None:
    n = len(keys)
    size = epoch_size or n
    if n < 3 or size < 3:
        return None
    rhos, displacements = [], []
    for start in range(0, min(n, size * _MAX_STAT_EPOCHS), size):
        chunk = range(start, min(start + size, n))
        if len(chunk) < 3:
            break
        if reference is not None:
            where = collections.defaultdict(list)
            for pos, key in enumerate(reference):
                where[key].append(pos)
            found = [where[keys[i]].pop(0) if where[keys[i]] else None for i in chunk]
            source = np.array([s for s in found if s is not None], dtype=np.float64)
        else:
            try:
                sort_keys = [_normalize.sort_key(side.examples[i]) for i in chunk]
                order = sorted(range(len(sort_keys)), key=sort_keys.__getitem__)
            except TypeError:
                return None
            source = np.empty(len(sort_keys), dtype=np.float64)
            source[order] = np.arange(len(sort_keys))
        if len(source) < 3:
            continue
        src_rank = _ranks(source)
        pos_rank = np.arange(len(source), dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = float(np.corrcoef(pos_rank, src_rank)[0, 1])
        if not np.isfinite(rho):
            continue
        rhos.append(rho)
        displacements.append(float(np.mean(np.abs(pos_rank - src_rank)) / len(source)))
    if not rhos:
        return None
    return ShuffleStats(
        round(float(np.mean(rhos)), 4),
        round(float(np.mean(displacements)), 4),
        "reference" if reference is not None else "sorted order",
    )
