"""Tables of benchmark results: one run (run.py's report), or TF modes side by side.

A result is what ``run.py --json FILE`` writes: one run, in one TF mode, one
file. Its ``tf_mode`` is ``"tf2"`` (TF 2.x defaults: tf.data variants
iterated eagerly) or ``"tf1"`` (``run.py --tf1``: after
``tf.compat.v1.disable_v2_behavior()``, tf.data variants read through
``make_one_shot_iterator(ds).get_next()`` in a Session); files written before
the field existed were all measured under TF 2.x defaults and read as
``"tf2"``. (``mode`` is the data size, ``"quick"`` or ``"full"``, as before.)

Usage::

    python benchmarks/report.py RESULT.json           # run.py's own table, again
    python benchmarks/report.py TF2.json TF1.json     # the runs side by side

Side by side, each run shows per variant its median examples/s and two ratios
taken inside that run: against TF's own queue API at 1 thread (``x tfq1``) and
against hand-written tf.data of the same decode style (``x hand``: ``tfdata``
for per-record variants, ``tfdata_batch_decode`` for the ``*_batch_decode``
variants and for ``qp_dataset_engine``, whose reference the README states;
W4 has no decoder, so ``tfdata``). With exactly one run per mode, a last column
gives TF1's median over TF 2.x's: a ratio across two runs, so it carries both
runs' noise. Each workload ends with the engine's line per run:
``qp_dataset_engine`` over its hand-written reference and over ``raw_read``
(the raw-read floor: records only, no decoding), inside that run.

Needs no TensorFlow: it only reads JSON.
"""

from __future__ import annotations

import argparse
import json
import sys

BASELINE = "tf_queue_1"
ENGINE = "qp_dataset_engine"
FLOOR = "raw_read"
MODE_NAMES = {"tf2": "TF 2.x defaults", "tf1": "TF1 mode (disable_v2_behavior)"}
SHORT_MODE_NAMES = {"tf2": "TF 2.x", "tf1": "TF1"}
DATASET_LOOPS = {
    "tf2": "tf.data iterated eagerly",
    "tf1": "tf.data through a one-shot iterator in a Session",
}


def load(path: str) -> dict:
    """One run's result from `path` (run.py --json), with its ``tf_mode`` filled in."""
    with open(path) as f:
        result = json.load(f)
    result.setdefault("tf_mode", "tf2")  # every file before --tf1 existed
    return result


def tf_mode(result: dict) -> str:
    return result.get("tf_mode", "tf2")


def handwritten_reference(variant: str, table: dict) -> str | None:
    """The hand-written tf.data variant that `variant` is compared with in `table`."""
    batch_style = variant.endswith("batch_decode") or variant == "qp_dataset_engine"
    if batch_style and "tfdata_batch_decode" in table:
        return "tfdata_batch_decode"
    return "tfdata" if "tfdata" in table else None


def ratio(row: dict | None, reference: dict | None) -> float | None:
    if not row or not reference or not reference.get("median"):
        return None
    return row["median"] / reference["median"]


def engine_ratios(table: dict) -> str | None:
    """The engine's line of a workload: its median over hand-written tf.data and over the floor.

    ``-> qp_dataset_engine / tfdata_batch_decode = 1.04x, / raw_read = 0.45x``
    (W4: over ``tfdata``); None when the run has no engine or no floor row.
    """
    row = table.get(ENGINE)
    if row is None or FLOOR not in table:  # runs from before the floor render as committed
        return None
    parts = []
    for reference in (handwritten_reference(ENGINE, table), FLOOR):
        value = ratio(row, table.get(reference)) if reference else None
        if value is not None:
            parts.append(f"{reference} = {value:.2f}x")
    if not parts:
        return None
    return f"  -> {ENGINE} / " + ", / ".join(parts)


def engine_steady(table: dict) -> str | None:
    """The engine's steady line of a workload: the same ratios after each epoch's first step.

    ``-> steady after the first step: qp_dataset_engine / tfdata_batch_decode
    = 1.08x, / raw_read = 0.61x; first step 41 ms (tfdata_batch_decode 18 ms)``:
    medians of ``(examples - first batch) / (seconds - first step)``, where the
    first step is the clock's start to the first batch (set-up, iterator
    start, first batch). None for runs that did not time the first step.
    """
    row = table.get(ENGINE)
    reference = handwritten_reference(ENGINE, table)
    if not row or not row.get("steady_median") or reference is None:
        return None
    parts = []
    for name in (reference, FLOOR):
        other = table.get(name) or {}
        if other.get("steady_median"):
            parts.append(f"{name} = {row['steady_median'] / other['steady_median']:.2f}x")
    first = f"; first step {row['first_step_ms']:.0f} ms"
    if (table.get(reference) or {}).get("first_step_ms"):
        first += f" ({reference} {table[reference]['first_step_ms']:.0f} ms)"
    return f"  -> steady after the first step: {ENGINE} / " + ", / ".join(parts) + first


def engine_in_session(table: dict) -> str | None:
    """The engine against hand-written tf.data read through a Session, as the legacy program reads.

    ``-> on the legacy program's API (Session.run): qp_dataset_engine /
    session_tfdata_batch_decode = 1.02x, steady 1.05x; first step 41 ms
    (session_tfdata_batch_decode 35 ms)``; None when the run has no such
    variant (run.py's ``session_*``, not in its default run).
    """
    row = table.get(ENGINE)
    reference = handwritten_reference(ENGINE, table)
    other = table.get(f"session_{reference}") if reference else None
    if not row or not other:
        return None
    line = (
        f"  -> on the legacy program's API (Session.run): {ENGINE} / session_{reference} = "
        f"{ratio(row, other):.2f}x"
    )
    if row.get("steady_median") and other.get("steady_median"):
        line += f", steady {row['steady_median'] / other['steady_median']:.2f}x"
        line += (
            f"; first step {row['first_step_ms']:.0f} ms (session_{reference} "
            f"{other['first_step_ms']:.0f} ms)"
        )
    return line


def _engine_lines(table: dict, suffix: str = "") -> list[str]:
    """The engine's lines of a workload (ratios, steady ratios, in a Session), with `suffix`."""
    lines = (engine_ratios(table), engine_steady(table), engine_in_session(table))
    return [line + suffix for line in lines if line]


def format_table(result: dict) -> str:
    """run.py's report of one run (its stdout; the committed ``results/*.txt``)."""
    mode = "" if tf_mode(result) == "tf2" else f" in {MODE_NAMES[tf_mode(result)]}"
    lines = [
        f"# {result['machine']}, Python {result['python']}, TF {result['tensorflow']}"
        f"{mode}, {result['date']}, {result['mode']} mode, batch {result['batch_size']}, "
        f"{result['repeats']} repeats (examples/s: median [min-max]; ratio vs "
        f"{BASELINE})"
    ]
    for workload, table in result["workloads"].items():
        width = max([22] + [len(v) for v in table])  # long diagnostics variant names
        lines.append(f"\n{workload}  ({next(iter(table.values()))['examples']:,} examples)")
        lines.append(
            f"  {'variant':{width}s} {'median/s':>11s} {'min':>10s} {'max':>10s} "
            f"{'ratio':>7s} {'peak MB':>8s}"
        )
        for variant, row in table.items():
            ratio_ = f"{row['ratio_vs_tf_queue_1']:.2f}" if row["ratio_vs_tf_queue_1"] else "-"
            peak = f"{row['peak_rss_mb']:.0f}" if row["peak_rss_mb"] else "-"
            lines.append(
                f"  {variant:{width}s} {row['median']:11,.0f} {row['min']:10,.0f} "
                f"{row['max']:10,.0f} {ratio_:>7s} {peak:>8s}"
            )
        lines.extend(_engine_lines(table))
    for section, table in result.get("scaling", {}).items():
        lines.append(f"\nscaling by {section}")
        for name, row in table.items():
            lines.append(f"  {name:28s} {row['median']:11,.0f}/s")
    return "\n".join(lines)


def _cell(value, spec, width):
    return f"{value:{spec}}".rjust(width) if value is not None else "-".rjust(width)


def format_modes(results: list[dict]) -> str:
    """The runs in `results` side by side (typically one per TF mode)."""
    if not results:
        raise ValueError("no results to render")
    modes = [tf_mode(r) for r in results]
    cross = sorted(modes) == ["tf1", "tf2"]
    labels = [SHORT_MODE_NAMES.get(m, m) for m in modes]
    if len(set(labels)) < len(labels):  # two runs in one mode: tell them apart by date
        labels = [f"{label} {r['date']}" for label, r in zip(labels, results)]
    lines = [
        f"# {label} = {MODE_NAMES.get(tf_mode(r), tf_mode(r))}, "
        f"{DATASET_LOOPS.get(tf_mode(r), 'tf.data read ?')}: {r['machine']}, "
        f"Python {r['python']}, TF {r['tensorflow']}, {r['date']}, {r['mode']} mode, "
        f"batch {r['batch_size']}, {r['repeats']} repeats"
        for label, r in zip(labels, results)
    ]
    lines.append(
        "# examples/s: median; x tfq1: ratio vs tf_queue_1 and x hand: ratio vs "
        "hand-written tf.data of the same decode style, both in the same run"
    )
    if cross:
        lines.append("# tf1/tf2: the TF1 run's median over the TF 2.x run's (across runs)")
    if len({r["mode"] for r in results}) > 1:
        lines.append("# note: the runs differ in data size (quick and full); compare ratios only")
    group = 30
    workloads = list(dict.fromkeys(w for r in results for w in r["workloads"]))
    for workload in workloads:
        tables = [r["workloads"].get(workload, {}) for r in results]
        counts = list(dict.fromkeys(f"{next(iter(t.values()))['examples']:,}" for t in tables if t))
        lines.append(f"\n{workload}  ({' / '.join(counts)} examples)")
        variants = list(dict.fromkeys(v for t in tables for v in t))
        width = max([22] + [len(v) for v in variants])  # long variant names
        head = f"  {'':{width}s}" + "".join(
            f" {label:-^{group - 1}s}" for label in (f" {lb} " for lb in labels)
        )
        lines.append(head.rstrip())
        columns = f" {'median/s':>11s} {'x tfq1':>8s} {'x hand':>8s}"
        lines.append(
            f"  {'variant':{width}s}"
            + columns * len(results)
            + (f" {'tf1/tf2':>8s}" if cross else "")
        )
        for variant in variants:
            line = f"  {variant:{width}s}"
            for table in tables:
                row = table.get(variant)
                reference = handwritten_reference(variant, table)
                line += (
                    " "
                    + _cell(row["median"] if row else None, ",.0f", 11)
                    + " "
                    + _cell(ratio(row, table.get(BASELINE)), ".2f", 8)
                    + " "
                    + _cell(ratio(row, table.get(reference)), ".2f", 8)
                )
            if cross:
                by_mode = dict(zip(modes, tables))
                line += " " + _cell(
                    ratio(by_mode["tf1"].get(variant), by_mode["tf2"].get(variant)), ".2f", 8
                )
            lines.append(line)
        for label, table in zip(labels, tables):
            lines.extend(_engine_lines(table, f" ({label})"))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="run.py --json files")
    args = parser.parse_args(argv)
    results = [load(path) for path in args.results]
    print(format_table(results[0]) if len(results) == 1 else format_modes(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
