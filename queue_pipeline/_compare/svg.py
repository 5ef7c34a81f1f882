"""Charts for the comparison page, as plain SVG strings: histograms, bars, scatters, lines.

Plain SVG (issue #45, item 5) rather than a plotting library or a script:
the page stays a few hundred kilobytes, opens anywhere without a server or a
network, adds no dependency, and each chart is readable markup a test can
inspect. Every chart is one ``<svg class="graphic">`` element with a
``<title>``; every text in it is escaped. Series are drawn in fixed colours,
legacy blue and twin orange (:data:`COLORS`), with a legend.
"""

from __future__ import annotations

import html
import math
from typing import Mapping, Sequence

import numpy as np

__all__ = ["COLORS", "bars", "histogram", "lines", "scatter"]

COLORS = {"legacy": "#1f77b4", "twin": "#ff7f0e"}
_OTHER_COLORS = ("#2ca02c", "#9467bd", "#8c564b")
_W, _H = 440, 220  # the default chart size, in CSS pixels
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 12, 40, 34  # margins: title and legend lines on top
_BINS = 40


def _color(name: str, k: int) -> str:
    return COLORS.get(name, _OTHER_COLORS[k % len(_OTHER_COLORS)])


def _num(x: float) -> str:
    """A number for a tick label: short, no trailing zeros."""
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-3:
        return f"{x:.2g}"
    return f"{x:.4g}"


def _ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]


class _Frame:
    """A plot area: maps data coordinates to pixels and draws axes, labels, legend."""

    def __init__(self, xlim, ylim, *, width=_W, height=_H, xticks=True):
        self.xticks = xticks
        self.x0, self.x1 = xlim if xlim[1] > xlim[0] else (xlim[0] - 0.5, xlim[0] + 0.5)
        self.y0, self.y1 = ylim if ylim[1] > ylim[0] else (ylim[0] - 0.5, ylim[0] + 0.5)
        self.width, self.height = width, height
        self.pw, self.ph = width - _LEFT - _RIGHT, height - _TOP - _BOTTOM

    def x(self, v: float) -> float:
        return _LEFT + (v - self.x0) / (self.x1 - self.x0) * self.pw

    def y(self, v: float) -> float:
        return _TOP + self.ph - (v - self.y0) / (self.y1 - self.y0) * self.ph

    def svg(self, body: list[str], *, title: str, xlabel: str, ylabel: str, legend) -> str:
        esc = html.escape
        parts = [
            f'<svg class="graphic" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" role="img">',
            f"<title>{esc(title)}</title>",
            f'<text x="{_LEFT}" y="15" class="t">{esc(title)}</text>',
        ]
        bottom, right = _TOP + self.ph, _LEFT + self.pw
        for t in _ticks(self.x0, self.x1) if self.xticks else ():
            px = self.x(t)
            parts.append(f'<line x1="{px:.1f}" y1="{bottom}" x2="{px:.1f}" y2="{bottom + 4}"/>')
            parts.append(f'<text x="{px:.1f}" y="{bottom + 15}" class="m">{_num(t)}</text>')
        for t in _ticks(self.y0, self.y1):
            py = self.y(t)
            parts.append(
                f'<line x1="{_LEFT - 4}" y1="{py:.1f}" x2="{right}" y2="{py:.1f}" class="g"/>'
            )
            parts.append(f'<text x="{_LEFT - 6}" y="{py + 4:.1f}" class="e">{_num(t)}</text>')
        parts.append(f'<path d="M{_LEFT},{_TOP}V{bottom}H{right}" class="a"/>')
        parts += body
        parts.append(
            f'<text x="{_LEFT + self.pw / 2:.0f}" y="{self.height - 4}" class="m">'
            f"{esc(xlabel)}</text>"
        )
        parts.append(
            f'<text transform="translate(12,{_TOP + self.ph / 2:.0f}) rotate(-90)" '
            f'class="m">{esc(ylabel)}</text>'
        )
        lx = _LEFT
        for name, color in legend:
            parts.append(f'<rect x="{lx}" y="21" width="10" height="10" fill="{color}"/>')
            parts.append(f'<text x="{lx + 14}" y="30">{esc(name)}</text>')
            lx += 24 + 7 * len(name)
        parts.append("</svg>")
        return "".join(parts)


def histogram(
    series: Mapping[str, np.ndarray], *, title: str, xlabel: str = "value", width: int = _W
) -> str:
    """Overlaid histograms of each series over shared bins, as fractions of each series.

    Integer-valued series with few distinct values get one bin per integer;
    otherwise ``_BINS`` equal bins over the finite values of all series.
    Each series is a translucent step outline, so overlapping ones stay visible.
    """
    finite = {k: np.asarray(v, np.float64) for k, v in series.items()}
    finite = {k: v[np.isfinite(v)] for k, v in finite.items()}
    every = np.concatenate([v for v in finite.values()] + [np.zeros([0])])
    if every.size == 0:
        return _empty(title, "no finite values", width)
    lo, hi = float(every.min()), float(every.max())
    integer = bool(np.all(every == np.rint(every))) and hi - lo < _BINS
    edges = (
        np.arange(lo - 0.5, hi + 1.0)
        if integer
        else np.linspace(lo, hi if hi > lo else lo + 1, _BINS + 1)
    )
    counts = {k: np.histogram(v, edges)[0] / max(v.size, 1) for k, v in finite.items()}
    top = max(float(c.max()) for c in counts.values()) or 1.0
    frame = _Frame((float(edges[0]), float(edges[-1])), (0.0, top * 1.05), width=width)
    body = []
    for k, (name, c) in enumerate(counts.items()):
        color = _color(name, k)
        d = [f"M{frame.x(edges[0]):.1f},{frame.y(0):.1f}"]
        for i, v in enumerate(c):
            d.append(f"V{frame.y(v):.1f}H{frame.x(edges[i + 1]):.1f}")
        d.append(f"V{frame.y(0):.1f}Z")
        body.append(
            f'<path d="{"".join(d)}" fill="{color}" fill-opacity="0.25" stroke="{color}" '
            'stroke-width="1.5"/>'
        )
    legend = [(f"{n} ({finite[n].size})", _color(n, k)) for k, n in enumerate(counts)]
    return frame.svg(body, title=title, xlabel=xlabel, ylabel="fraction", legend=legend)


def bars(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    ylabel: str = "examples",
    marked: Sequence[bool] = (),
    width: int = _W,
) -> str:
    """Grouped bars, one group per category; a marked category gets a red label and band."""
    n = len(categories)
    if n == 0:
        return _empty(title, "nothing to draw", width)
    top = max((float(v) for s in series.values() for v in s), default=0.0) or 1.0
    frame = _Frame((0.0, float(n)), (0.0, top * 1.1), width=width, xticks=False)
    body = []
    group = 0.8 / max(len(series), 1)
    for i, mark in enumerate(marked):
        if mark:
            body.append(
                f'<rect x="{frame.x(i):.1f}" y="{_TOP}" width="{frame.x(i + 1) - frame.x(i):.1f}" '
                f'height="{frame.ph}" fill="#d62728" fill-opacity="0.12"/>'
            )
    for k, (name, values) in enumerate(series.items()):
        color = _color(name, k)
        for i, v in enumerate(values):
            x = frame.x(i + 0.1 + k * group)
            w = frame.x(i + 0.1 + (k + 1) * group) - x
            body.append(
                f'<rect x="{x:.1f}" y="{frame.y(float(v)):.1f}" width="{max(w, 0.5):.1f}" '
                f'height="{frame.y(0) - frame.y(float(v)):.1f}" fill="{color}"/>'
            )
    if n <= 12:
        for i, label in enumerate(categories):
            cls = "m x" if i < len(marked) and marked[i] else "m"
            body.append(
                f'<text x="{frame.x(i + 0.5):.1f}" y="{_TOP + frame.ph + 15}" class="{cls}">'
                f"{html.escape(label)}</text>"
            )
    legend = [(name, _color(name, k)) for k, name in enumerate(series)]
    return frame.svg(body, title=title, xlabel="", ylabel=ylabel, legend=legend)


def scatter(
    points: np.ndarray,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    xmax: float,
    ymax: float,
    color: str,
    width: int = _W,
) -> str:
    """Points ``[n, 2]`` (x, y) as small dots on [0, xmax] x [0, ymax], with the diagonal
    of an unchanged order (y = x, repeating every `ymax`) drawn faintly."""
    frame = _Frame((0.0, max(float(xmax), 1.0)), (0.0, max(float(ymax), 1.0)), width=width)
    body = []
    period = max(float(ymax), 1.0)
    start = 0.0
    while start < frame.x1:
        end = min(start + period, frame.x1)
        body.append(
            f'<line x1="{frame.x(start):.1f}" y1="{frame.y(0):.1f}" x2="{frame.x(end):.1f}" '
            f'y2="{frame.y(end - start):.1f}" class="d"/>'
        )
        start += period
    dots = "".join(f"M{frame.x(x):.1f},{frame.y(y):.1f}h0" for x, y in np.asarray(points))
    if dots:
        body.append(
            f'<path d="{dots}" stroke="{color}" stroke-width="{5 if len(points) < 200 else 3}" '
            'stroke-linecap="round" '
            'fill="none"/>'
        )
    return frame.svg(body, title=title, xlabel=xlabel, ylabel=ylabel, legend=[])


def lines(
    series: Mapping[str, np.ndarray],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    width: int = _W,
    ylim: tuple[float, float] | None = None,
) -> str:
    """Each series ``[n, 2]`` (x, y) as a polyline, over shared axes."""
    arrays = {k: np.asarray(v, np.float64).reshape([-1, 2]) for k, v in series.items()}
    arrays = {k: v[np.all(np.isfinite(v), axis=1)] for k, v in arrays.items()}
    every = np.concatenate([v for v in arrays.values()] + [np.zeros([0, 2])])
    if every.size == 0:
        return _empty(title, "no points", width)
    if ylim is None:
        ylim = (min(0.0, float(every[:, 1].min())), float(every[:, 1].max()) * 1.05)
    frame = _Frame((float(every[:, 0].min()), float(every[:, 0].max())), ylim, width=width)
    body = []
    for k, (name, v) in enumerate(arrays.items()):
        if not len(v):
            continue
        pts = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in v)
        body.append(
            f'<polyline points="{pts}" fill="none" stroke="{_color(name, k)}" stroke-width="1.8"/>'
        )
    legend = [(name, _color(name, k)) for k, name in enumerate(arrays)]
    return frame.svg(body, title=title, xlabel=xlabel, ylabel=ylabel, legend=legend)


def _empty(title: str, why: str, width: int = _W) -> str:
    esc = html.escape
    return (
        f'<svg class="graphic" width="{width}" height="40" viewBox="0 0 {width} 40" role="img">'
        f'<title>{esc(title)}</title><text x="4" y="15" class="t">{esc(title)}</text>'
        f'<text x="4" y="33">{esc(why)}</text></svg>'
    )
