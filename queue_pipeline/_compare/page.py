"""The comparison page: one self-contained HTML file drawn from a report and its samples.

:func:`render` lays out what :meth:`ComparisonReport.to_html` writes: the
verdict (``id="verdict"``), the first difference and the slip explanation in
words, the structure table with differing rows marked, then one section per
graphic kind (value distributions, per-epoch counts, images, order,
throughput, first examples and lengths; the demo adds training curves).
Graphics are inline SVG (``_compare/svg.py``) and ``data:`` PNG images
(``_compare/png.py``), each with ``class="graphic"``; the page has no script
and loads nothing from elsewhere. Every text from the user's data or code is
escaped. Sizes are bounded whatever the run's size: the samples are bounded
(``_compare/samples.py``) and each section draws at most ``MAX_ITEMS``
components.
"""

from __future__ import annotations

import dataclasses
import html
import os
import pathlib
from typing import Any, Mapping, Sequence

import numpy as np

from queue_pipeline._compare import page_parts as _parts
from queue_pipeline._compare import svg as _svg
from queue_pipeline._compare.image_shapes import check_image_shape, component_path

__all__ = ["MAX_ITEMS", "render", "write"]

MAX_ITEMS = _parts.MAX_ITEMS
_esc = html.escape

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;
color:#222;max-width:1180px}
h1{font-size:20px;margin:0 0 6px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:14px;margin:14px 0 4px}
#verdict{font-size:22px;font-weight:700;padding:6px 12px;display:inline-block;border-radius:4px}
#verdict.match{background:#e3f4e3;color:#1b6b1b}#verdict.differ{background:#fde2e1;color:#a31515}
.words{font-size:15px}.explained{font-weight:600}
table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 10px;text-align:left;
vertical-align:top;border-bottom:1px solid #eee;font-family:ui-monospace,Menlo,Consolas,monospace;
font-size:12.5px}tr.differs td{background:#fde2e1}th{background:#f4f4f4}
pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12.5px}
.row{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.strip{image-rendering:pixelated;display:block;margin:2px 0 8px}
.note{color:#555;font-size:13px}
svg.graphic{background:#fff;border:1px solid #eee}
svg text{font:11px system-ui,sans-serif;fill:#333}svg text.t{font-weight:600;font-size:12px}
svg text.m{text-anchor:middle}svg text.e{text-anchor:end}svg text.x{fill:#d62728;font-weight:700}
svg line,svg path.a{stroke:#999;fill:none}svg line.g{stroke:#eee}svg line.d{stroke:#bbb;
stroke-dasharray:4 3}
"""


def write(
    report: Any,
    path: str | os.PathLike[str],
    *,
    image_shapes: Mapping[str, Sequence[int]] | None = None,
    training: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    title: str = "queue_pipeline compare",
    intro: str = "",
) -> str:
    """Writes :func:`render`'s page to `path` (creating its folder); returns the path."""
    target = pathlib.Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = render(report, image_shapes=image_shapes, training=training, title=title, intro=intro)
    target.write_text(text, encoding="utf-8")
    return str(target)


def render(
    report: Any,
    *,
    image_shapes: Mapping[str, Sequence[int]] | None = None,
    training: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
    title: str = "queue_pipeline compare",
    intro: str = "",
) -> str:
    """The page of a ``ComparisonReport`` as an HTML string.

    Args:
      report: the report; its ``samples`` feed the graphics (without them
        the page has the words and the table only).
      image_shapes: extra components to draw as images, ``{"0": (28, 28)}``.
      training: per side (``legacy``, ``twin``), per metric (``loss``,
        ``accuracy``), the per-step values of a training run (the demo).
      title: the page's title and heading.
      intro: a paragraph of plain text under the heading (escaped).
    """
    samples = report.samples
    if samples is not None and image_shapes:
        declared = dict(samples.image_shapes)
        declared.update(
            {component_path(str(k)): check_image_shape(v) for k, v in image_shapes.items()}
        )
        samples = dataclasses.replace(samples, image_shapes=declared)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(title)}: {_esc(report.verdict)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
    ]
    if intro:
        parts.append(f'<p class="note">{_esc(intro)}</p>')
    parts += _summary(report)
    parts += _structure(report)
    if samples is None:
        parts.append(
            '<p class="note">No samples: this report was not made by compare(), so '
            "there is nothing to draw.</p>"
        )
    else:
        parts += _parts.values(samples)
        parts += _epochs(report)
        parts += _parts.images(samples)
        parts += _order(report, samples)
        parts += _throughput(report, samples)
        parts += _parts.examples(samples)
    if training:
        parts += _training(training)
    parts += _messages(report)
    parts.append("</body></html>\n")
    return "\n".join(parts)


# ------------------------------------------------------------------ words and table


def _summary(r: Any) -> list[str]:
    cls = "match" if r.matched else "differ"
    out = [
        f'<p id="verdict" class="{cls}">{_esc(r.verdict)}</p>',
        f'<p class="note">mode: {_esc(r.mode)} ({_esc(r.mode_reason)})</p>',
        f'<p class="words" id="first-difference">{_esc(_first_difference(r))}</p>',
    ]
    if r.explained is not None:
        out.append(f'<p class="words explained">Explained: {_esc(r.explained)}.</p>')
    return out


def _first_difference(r: Any) -> str:
    d = r.first_difference
    n, m = r.legacy.examples, r.twin.examples
    if d is None:
        if r.matched:
            how = "in the same order" if r.mode == "ordered" else "as multisets"
            return f"Both sides deliver the same {n} example(s), {how}."
        if r.mismatches:
            return "First difference: " + r.mismatches[0].splitlines()[0]
        return "The sides differ."
    batch = f" (legacy batch {d.legacy_batch})" if d.legacy_batch is not None else ""
    if d.kind == "value":
        return (
            f"First difference at example #{d.index}{batch}: the legacy side delivered "
            f"{d.legacy}, the twin {d.twin}."
        )
    if d.kind == "only in legacy":
        return (
            f"First difference: legacy example #{d.index}{batch}, {d.legacy}, has no equal "
            "example in the twin."
        )
    if d.kind == "only in twin":
        return f"First difference: twin example #{d.index}, {d.twin}, has no equal legacy example."
    return (
        f"First difference at example #{d.index}: the {d.kind} (legacy {n} example(s), "
        f"twin {m}); legacy: {d.legacy}, twin: {d.twin}."
    )


def _structure(r: Any) -> list[str]:
    out = [
        '<h2 id="structure">Structure, counts and order</h2>',
        "<table><tr><th></th><th>legacy</th><th>twin</th><th></th></tr>",
    ]
    for row in r.table():
        cls = ' class="differs"' if row.marked else ""
        cells = "".join(f"<td>{_esc(str(c))}</td>" for c in row[:4])
        out.append(f"<tr{cls}>{cells}</tr>")
    out.append("</table>")
    return out


def _messages(r: Any) -> list[str]:
    out = []
    for title, items in (("Mismatches", r.mismatches), ("Notes", r.notes)):
        if items:
            out.append(f"<h2>{title}</h2>")
            out += [f"<pre>{_esc(item)}</pre>" for item in items]
    return out


# ------------------------------------------------------------------ report-level charts

_MAX_EPOCHS = 40


def _epochs(r: Any) -> list[str]:
    out = ['<h2 id="epochs">Examples per epoch</h2>']
    epochs = r.epochs[:_MAX_EPOCHS]
    if not epochs:
        out.append(
            '<p class="note">No per-epoch cut (see the notes); in all: legacy '
            f"{r.legacy.examples}, twin {r.twin.examples} example(s).</p>"
        )
        return out
    marked = [not e.multiset_equal and r.epochs_required for e in epochs]
    out.append(
        _svg.bars(
            [str(e.index + 1) for e in epochs],
            {
                "legacy": [e.legacy_examples for e in epochs],
                "twin": [e.twin_examples for e in epochs],
            },
            title="examples per epoch (red: the epoch's multisets differ)",
            marked=marked,
        )
    )
    bad = [e for e in epochs if not e.multiset_equal]
    if bad:
        out.append(
            '<p class="note">'
            + _esc(
                "; ".join(
                    f"epoch {e.index + 1}: {e.only_in_legacy} only in legacy, "
                    f"{e.only_in_twin} only in twin"
                    for e in bad[:8]
                )
            )
            + "</p>"
        )
    if len(r.epochs) > _MAX_EPOCHS:
        out.append(f'<p class="note">{len(r.epochs) - _MAX_EPOCHS} more epoch(s) not drawn.</p>')
    return out


def _order(r: Any, samples: Any) -> list[str]:
    out = ['<h2 id="order">Order: position delivered vs position in the source</h2>']
    if not samples.order_reference:
        out.append('<p class="note">No source order could be found for these examples.</p>')
        return out
    out.append(
        f'<p class="note">Source position: the record\'s index (records identified by their '
        f"values) in {_esc(samples.order_reference)}. A diagonal is an unchanged order, a "
        "shifted diagonal a shifted order, a cloud a shuffle.</p>"
    )
    charts = []
    for name in ("legacy", "twin"):
        side = samples.side(name)
        stats = getattr(r, name).shuffle
        words = (
            f"rank corr. {stats.rank_correlation:.2f}"
            if stats and stats.rank_correlation is not None
            else ""
        )
        charts.append(
            _svg.scatter(
                side.order,
                title=f"{name}: source position by delivery ({words or 'no statistics'})",
                xlabel="position delivered",
                ylabel="position in source",
                xmax=max(side.examples - 1, 1),
                ymax=max((samples.epoch_size or 1) - 1, 1),
                color=_svg.COLORS[name],
                width=420,
            )
        )
    out.append('<div class="row">' + "".join(charts) + "</div>")
    lost = [
        f"{name}: {samples.side(name).unplaced} example(s) looked at have no equal record "
        "in the reference (not drawn)"
        for name in ("legacy", "twin")
        if samples.side(name).unplaced
    ]
    if lost:
        out.append(f'<p class="note">{_esc("; ".join(lost))}.</p>')
    return out


def _throughput(r: Any, samples: Any) -> list[str]:
    out = ['<h2 id="throughput">Throughput</h2>']
    series = {
        name: samples.side(name).timeline
        for name in ("legacy", "twin")
        if len(samples.side(name).timeline)
    }
    out.append(
        _svg.lines(
            series,
            title="examples delivered over the run (from each side's start, building included)",
            xlabel="seconds",
            ylabel="examples",
            width=640,
        )
    )
    words = []
    for name in ("legacy", "twin"):
        side = getattr(r, name)
        rate = side.examples_per_second
        words.append(
            f"{name}: {side.examples} example(s) in {side.seconds:.2f} s"
            + (f" ({rate:,.0f} ex/s)" if rate else "")
            + f", start-up {side.startup_seconds:.2f} s"
        )
    out.append(f'<p class="note">{_esc("; ".join(words))}.</p>')
    return out


def _training(training: Mapping[str, Mapping[str, Sequence[float]]]) -> list[str]:
    out = ['<h2 id="training">Training</h2>']
    charts = []
    for metric in ("loss", "accuracy"):
        series = {
            name: _smoothed(np.asarray(curves.get(metric, ()), np.float64))
            for name, curves in training.items()
        }
        ylim = (0.0, 1.0) if metric == "accuracy" else None
        charts.append(
            _svg.lines(
                series,
                title=f"training {metric} per step (moving average)",
                xlabel="step",
                ylabel=metric,
                width=440,
                ylim=ylim,
            )
        )
    out.append('<div class="row">' + "".join(charts) + "</div>")
    return out


_MAX_CURVE_POINTS = 400


def _smoothed(values: np.ndarray) -> np.ndarray:
    """Per-step values as ``[n, 2]`` (step, moving average), at most _MAX_CURVE_POINTS."""
    if values.size == 0:
        return np.zeros([0, 2])
    window = max(1, values.size // 50)
    kernel = np.ones(window) / window
    smooth = np.convolve(values, kernel, mode="valid")
    steps = np.arange(window, values.size + 1, dtype=np.float64)
    keep = np.unique(
        np.linspace(0, smooth.size - 1, min(smooth.size, _MAX_CURVE_POINTS)).astype(int)
    )
    return np.stack([steps[keep], smooth[keep]], axis=1)
