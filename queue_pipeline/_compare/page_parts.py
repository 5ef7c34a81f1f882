"""The comparison page's per-component sections: value distributions, images, examples.

Each function takes a ``ComparisonSamples`` (``_compare/samples.py``) and
returns HTML fragments for ``_compare/page.py``; each draws at most
``MAX_ITEMS`` components and says how many it left out.
"""

from __future__ import annotations

import html
from typing import Any, NamedTuple

import numpy as np

from queue_pipeline._compare import normalize as _normalize
from queue_pipeline._compare import png as _png
from queue_pipeline._compare import svg as _svg

__all__ = ["MAX_IMAGES", "MAX_ITEMS", "MAX_ROWS", "examples", "images", "values"]

MAX_ITEMS = 12  # components drawn per section
MAX_IMAGES = 16  # examples per side in an image grid
MAX_ROWS = 12  # first examples in the examples table
_CELL_CHARS = 160
_PAGE_WIDTH = 1150  # pixels an image strip may take
_esc = html.escape
_SIDES = ("legacy", "twin")


def _label(path: str) -> str:
    return path or "(tensor)"


def _left_out(count: int, what: str) -> list[str]:
    if count <= 0:
        return []
    return [f'<p class="note">{count} more {what} not drawn (at most {MAX_ITEMS}).</p>']


def values(samples: Any) -> list[str]:
    """Per numeric component, both sides' value distributions overlaid."""
    out = ['<h2 id="values">Value distributions</h2>']
    paths = [p for p in samples.paths if any(p in samples.side(s).values for s in _SIDES)]
    if not paths:
        out.append('<p class="note">No numeric components.</p>')
        return out
    charts = []
    for path in paths[:MAX_ITEMS]:
        series = {s: samples.side(s).values[path] for s in _SIDES if path in samples.side(s).values}
        charts.append(
            _svg.histogram(series, title=f"{_label(path)}: values (sampled)", xlabel="value")
            + _stats_table(series)
        )
    out.append('<div class="row">' + "".join(f"<div>{c}</div>" for c in charts) + "</div>")
    return out + _left_out(len(paths) - MAX_ITEMS, "numeric component(s)")


def _stats_table(series: dict) -> str:
    rows = ["<table><tr><th></th><th>min</th><th>mean</th><th>max</th><th>n</th></tr>"]
    for name, v in series.items():
        v = v[np.isfinite(v)]
        if v.size:
            cells = [f"{v.min():.4g}", f"{v.mean():.4g}", f"{v.max():.4g}", str(v.size)]
        else:
            cells = ["-", "-", "-", "0"]
        rows.append(f"<tr><td>{name}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "".join(rows) + "</table>"


# ------------------------------------------------------------------ images


def _image_paths(samples: Any) -> list[str]:
    return [
        p
        for p in samples.paths
        if samples.image_shape(p, "legacy") is not None
        or samples.image_shape(p, "twin") is not None
    ]


def images(samples: Any) -> list[str]:
    """Per image-like component, a grid: legacy row, twin row, difference row."""
    paths = _image_paths(samples)
    unfit = [
        f"{_label(p)}: {'x'.join(map(str, shape))} does not fit its examples"
        for p, shape in samples.image_shapes.items()
        if p not in paths
    ]
    if not paths and not unfit:
        return []
    out = ['<h2 id="images">Images</h2>']
    if unfit:
        out.append(f'<p class="note">Not drawn: {_esc("; ".join(unfit))}.</p>')
    for path in paths[:MAX_ITEMS]:
        out += _image_grid(samples, path)
    return out + _left_out(len(paths) - MAX_ITEMS, "image component(s)")


class _Shown(NamedTuple):
    """One example to draw: shrunk for display, and the range of its own values."""

    small: np.ndarray  # png.shrink: float64, at most TILE_MAX_SIDE a side
    lo: float | None  # None: no finite value
    hi: float | None
    side: int  # its larger side before shrinking


def _as_images(samples: Any, path: str, side: str) -> list[_Shown | None]:
    shape = samples.image_shape(path, side)
    leaves = samples.side(side).first.get(path, [])[:MAX_IMAGES]
    if shape is None:
        return [None] * len(leaves)
    out: list[_Shown | None] = []
    for leaf in leaves:
        if not (isinstance(leaf, np.ndarray) and leaf.size == int(np.prod(shape))):
            out.append(None)
            continue
        x = leaf.reshape(shape)
        if x.dtype.kind == "f":
            finite = np.isfinite(x)
            lo, hi = (
                (float(x[finite].min()), float(x[finite].max())) if finite.any() else (None,) * 2
            )
        else:
            lo, hi = float(x.min()), float(x.max())
        out.append(_Shown(_png.shrink(x), lo, hi, max(shape[:2])))
    return out


def _image_grid(samples: Any, path: str) -> list[str]:
    sides = {s: _as_images(samples, path, s) for s in _SIDES}
    shown = [x for s in _SIDES for x in sides[s] if x is not None]
    lo = min([0.0] + [x.lo for x in shown if x.lo is not None])
    hi = max([x.hi for x in shown if x.hi is not None], default=1.0)
    out = [f"<h3>{_esc(_label(path))}</h3>"]
    cell = max((max(x.small.shape[:2]) for x in shown), default=1)
    columns = max(len(sides["legacy"]), len(sides["twin"]), 1)
    scale = max(1, min(96 // cell, 8, _PAGE_WIDTH // (columns * (cell + 6))))
    differing = []
    for s in _SIDES:
        marks = samples.side(s).differs[: len(sides[s])]
        tiles = [None if x is None else _png.pixels(x.small, lo, hi) for x in sides[s]]
        out.append(f'<div class="note">{s}</div>' + _strip_img(tiles, marks, scale, f"{path} {s}"))
        differing.append([i for i, m in enumerate(marks) if m])
    diff = _difference_row(samples, sides)
    if diff is not None:
        tiles, top = diff
        marks = [False] * len(tiles)
        shrunk = any(x.side > _png.TILE_MAX_SIDE for x in shown)
        out.append(
            f'<div class="note">|legacy - twin|{" of block means" if shrunk else ""} '
            f"(white: {top:.4g}, the largest shown)</div>"
            + _strip_img(tiles, marks, scale, f"{path} difference")
        )
    ranges = "; ".join(_range_words(s, sides[s]) for s in _SIDES)
    marked = ", ".join(f"#{i}" for i in sorted(set(differing[0]) | set(differing[1]))) or "none"
    out.append(
        f'<p class="note">Examples #0 to #{max(len(sides["legacy"]), len(sides["twin"])) - 1}, '
        f"left to right; framed red: differing ({_esc(marked)}). Drawn black to white over "
        f"[{lo:.4g}, {hi:.4g}], the range of both sides; {_esc(ranges)}.</p>"
    )
    return out


def _range_words(side: str, shown: list) -> str:
    ranges = [(x.lo, x.hi) for x in shown if x is not None and x.lo is not None]
    if not any(x is not None for x in shown):
        return f"{side}: not image-like"
    if not ranges:
        return f"{side}: no finite values"
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    return f"{side} values in [{lo:.4g}, {hi:.4g}]"


def _difference_row(samples: Any, sides: dict) -> tuple[list, float] | None:
    """The |legacy - twin| tiles of position-paired examples (an ordered comparison),
    from the shrunk images (block means when they were larger than a tile)."""
    if not samples.paired:
        return None
    diffs: list[np.ndarray | None] = []
    for a, b in zip(sides["legacy"], sides["twin"]):
        if a is None or b is None or a.small.shape != b.small.shape:
            diffs.append(None)
            continue
        d = np.abs(a.small - b.small)
        diffs.append(d.mean(axis=2) if d.ndim == 3 else d)
    shown = [d for d in diffs if d is not None and d.size]
    if not shown:
        return None
    top = max(float(np.nan_to_num(np.nanmax(d)) if np.isfinite(d).any() else 0.0) for d in shown)
    return [None if d is None else _png.pixels(d, 0.0, top or 1.0) for d in diffs], top


def _strip_img(tiles: list, marks: list, scale: int, alt: str) -> str:
    if not tiles:
        return '<p class="note">no examples</p>'
    pixels = _png.strip(tiles, marks)
    width = pixels.shape[1] * scale
    return (
        f'<img class="graphic strip" alt="{_esc(alt)}" width="{width}" '
        f'height="{pixels.shape[0] * scale}" src="{_png.data_uri(pixels)}">'
    )


# ------------------------------------------------------------------ examples and lengths


def examples(samples: Any) -> list[str]:
    """The first examples side by side (images left out), then length distributions of
    strings and of variable-length components."""
    out = ['<h2 id="examples">First examples</h2>']
    images_drawn = set(_image_paths(samples)[:MAX_ITEMS])
    paths = [p for p in samples.paths if p not in images_drawn]
    out += _examples_table(samples, paths)
    lengths = []
    for path in samples.paths:
        for what, field in (
            ("string length (bytes)", "string_lengths"),
            ("values per example", "sizes"),
        ):
            series = {
                s: getattr(samples.side(s), field)[path]
                for s in _SIDES
                if path in getattr(samples.side(s), field)
            }
            if series:
                lengths.append(_svg.histogram(series, title=f"{_label(path)}: {what}", xlabel=what))
    if lengths:
        out.append("<h3>Lengths</h3>")
        out.append('<div class="row">' + "".join(lengths[:MAX_ITEMS]) + "</div>")
        out += _left_out(len(lengths) - MAX_ITEMS, "length distribution(s)")
    return out


def _examples_table(samples: Any, paths: list[str]) -> list[str]:
    if not paths:
        return ['<p class="note">Every component is drawn as an image above.</p>']
    rows = max(len(samples.side(s).differs) for s in _SIDES)
    shown = min(rows, MAX_ROWS)
    out = [
        f'<p class="note">Components {_esc(", ".join(_label(p) for p in paths))}; rows '
        "marked red differ ("
        + (
            "from the other side's example at the same position"
            if samples.paired
            else "no equal example on the other side"
        )
        + ").</p>",
        "<table><tr><th>#</th><th>legacy</th><th>twin</th></tr>",
    ]
    for i in range(shown):
        cells, marked = [], False
        for s in _SIDES:
            side = samples.side(s)
            marked = marked or (i < len(side.differs) and side.differs[i])
            leaves = [
                side.first[p][i] if p in side.first and i < len(side.first[p]) else None
                for p in paths
            ]
            cells.append(_format(paths, leaves))
        cls = ' class="differs"' if marked else ""
        out.append(
            f"<tr{cls}><td>{i}</td>" + "".join(f"<td>{_esc(c)}</td>" for c in cells) + "</tr>"
        )
    out.append("</table>")
    if rows > shown:
        out.append(f'<p class="note">{rows - shown} more kept example(s) not shown.</p>')
    return out


def _format(paths: list[str], leaves: list) -> str:
    if all(leaf is None for leaf in leaves):
        return "(none)"
    parts = []
    for path, leaf in zip(paths, leaves):
        text = "-" if leaf is None else _normalize.format_leaf(leaf, limit=_CELL_CHARS)
        parts.append(text if len(paths) == 1 else f"{_label(path)}: {text}")
    return ", ".join(parts)
