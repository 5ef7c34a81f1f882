"""A comparison as TensorBoard summaries: one run per side, ``legacy`` and ``twin``.

:func:`write_summaries` draws the same comparison as the report's page
(``ComparisonReport.to_html``) for TensorBoard, from ``report.samples``
(``_compare/samples.py``), under ``LOGDIR/legacy`` and ``LOGDIR/twin``, so
that TensorBoard shows the two sides as two runs on the same charts:

* ``images/<component>``: the first examples of each image-like component
  in a row (small ones enlarged), the ones that differ from the other side framed in red; both
  runs share one value range per component (the page's), so a scale slip
  shows;
* ``values/<component>``: a histogram of each numeric component's values
  (a bounded sample, with the same buckets in both runs); ``string
  lengths/<component>`` and ``sizes/<component>`` for strings and
  variable-length components;
* ``throughput/examples delivered`` (step: milliseconds since the side
  started, before it was built; the events' wall times follow the same
  clock, for TensorBoard's "Relative" axis), ``throughput/examples per
  second`` (the rate over each interval, step: examples delivered) and
  ``throughput/mean examples per second`` (a level line from step 0 to
  the examples delivered);
* ``verdict``: the verdict, the slip that explains the difference, and the
  report's table, as text (the same in both runs).

NOTE [ Writing summaries in either TF mode ]
The summaries are built as ``Summary`` protocol buffers in Python (images
encoded by ``_compare/png.py``, histograms bucketed with numpy) and written
with ``tf.compat.v1.summary.FileWriter`` inside a graph of their own: no op
runs and no Session starts, so it works the same under TF 2.x defaults
(eager; the FileWriter refuses an eager context, hence the private graph)
and in TF1 mode (``disable_v2_behavior()``), and the user's default graph
gains no op. The forms are TensorBoard's own (``image``, ``histo``,
``simple_value``, a string tensor with the ``text`` plugin's metadata), as
``tf.compat.v1.summary`` writes them.
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import tensorflow as tf

from queue_pipeline._compare import png as _png

if TYPE_CHECKING:
    from queue_pipeline._compare.samples import ComparisonSamples

__all__ = ["HISTOGRAM_BUCKETS", "MAX_IMAGES", "RUNS", "TILE_SIDE", "tag_of", "write_summaries"]

RUNS = ("legacy", "twin")
MAX_IMAGES = 16  # first examples drawn per image component and run
TILE_SIDE = 64  # smaller images are drawn enlarged (whole pixels) to about this side
HISTOGRAM_BUCKETS = 30
_API = "compare (TensorBoard)"
_EVENTS = "events.out.tfevents."


def write_summaries(report: Any, logdir: str | os.PathLike[str]) -> dict[str, str]:
    """Writes `report` as TensorBoard summaries, one run per side; returns the run folders.

    See the module docstring for the summaries. Works in both TF modes and
    leaves the default graph as it was (NOTE [ Writing summaries in either
    TF mode ]). A report without ``samples`` (not made by
    :func:`queue_pipeline.compare.compare`) gets only the verdict and the
    mean throughput.

    Args:
      report: a :class:`~queue_pipeline.compare.ComparisonReport`.
      logdir: the folder to point TensorBoard at (``tensorboard --logdir``);
        created if absent. Its runs are its subfolders ``legacy`` and ``twin``.

    Returns:
      ``{"legacy": folder, "twin": folder}``.

    Raises:
      ValueError: a run folder holds event files already (a comparison's
        summaries would mix with them in TensorBoard): choose a new `logdir`.
    """
    folders = {run: os.path.join(os.fspath(logdir), run) for run in RUNS}
    for run, folder in folders.items():
        if os.path.isdir(folder) and any(n.startswith(_EVENTS) for n in os.listdir(folder)):
            raise ValueError(
                f"{_API}: `logdir` {os.fspath(logdir)!r} already holds summaries in its "
                f"{run!r} run ({folder}); TensorBoard would mix the two comparisons. "
                "Choose a new folder, or remove that one."
            )
    start = time.time()
    verdict = _verdict_text(report)
    ranges = _image_ranges(report.samples) if report.samples is not None else {}
    with tf.Graph().as_default():  # NOTE [ Writing summaries in either TF mode ]
        for run, folder in folders.items():
            writer = tf.compat.v1.summary.FileWriter(folder)
            try:
                # By step, so that no tag's step goes back (TensorBoard would
                # take that for a restarted job and drop the later points).
                events = sorted(_events(report, run, verdict, ranges, start), key=_step)
                for event in events:
                    writer.add_event(event)
            finally:
                writer.close()
    return folders


def _events(report, run: str, verdict: str, ranges: dict, start: float) -> Iterator[Any]:
    """The run's events: its images, histograms and throughput, then the verdict."""
    samples = report.samples
    if samples is not None:
        values: list = []
        for path in samples.paths:
            values += _images(samples, run, path, ranges.get(path))
            values += _histograms(samples, run, path)
        if values:
            yield _event(start, 0, values)
        yield from _throughput(samples.side(run).timeline, start)
    side = getattr(report, run)
    rate = side.examples_per_second
    if rate is not None:  # a level line over the run (one point would not show)
        for step in sorted({0, side.examples}):
            yield _event(start, step, [_scalar("throughput/mean examples per second", rate)])
    yield _event(start, 0, [_text("verdict", verdict)])


def _step(event: Any) -> int:
    return int(event.step)


def _event(wall_time: float, step: int, values: list) -> Any:
    return tf.compat.v1.Event(
        wall_time=wall_time, step=int(step), summary=tf.compat.v1.Summary(value=values)
    )


def tag_of(path: str) -> str:
    """A component path as a tag: ``[0]`` -> ``0``, ``[a][1]`` -> ``a/1``, ``''`` -> ``tensor``.

    >>> tag_of("[image][0]")
    'image/0'
    """
    parts = re.findall(r"\[([^\]]*)\]", path)
    return "/".join(p.strip("'\"") for p in parts) if parts else (path or "tensor")


# ------------------------------------------------------------------------ images


def _image_ranges(samples: ComparisonSamples) -> dict[str, tuple[float, float]]:
    """Per image component, the value range shown black to white, shared by both runs.

    As on the page (``_compare/page_parts.py``): from the smaller of 0 and the
    least value to the greatest, over both sides' first examples."""
    ranges = {}
    for path in samples.paths:
        arrays = [_image_array(samples, run, path) for run in RUNS]
        finite = [a[np.isfinite(a)] for a in arrays if a is not None]
        finite = [a for a in finite if a.size]
        if finite:
            lo = min(0.0, *(float(a.min()) for a in finite))
            ranges[path] = (lo, max(float(a.max()) for a in finite))
    return ranges


def _image_array(samples: ComparisonSamples, run: str, path: str) -> np.ndarray | None:
    """The run's first examples of `path` as ``[n, H, W(, C)]``, or None if not images."""
    shape = samples.image_shape(path, run)
    first = samples.side(run).first_array(path)
    if shape is None or first is None or not len(first):
        return None
    return first[:MAX_IMAGES].reshape((-1, *shape))


def _images(samples, run: str, path: str, value_range) -> list:
    images = _image_array(samples, run, path)
    if images is None or value_range is None:
        return []
    differs = samples.side(run).differs
    tiles = [_enlarged(_png.tile(image, *value_range)) for image in images]
    pixels = _png.strip(tiles, [bool(d) for d in differs[: len(tiles)]])
    encoded = tf.compat.v1.Summary.Image(
        height=pixels.shape[0],
        width=pixels.shape[1],
        colorspace=3,
        encoded_image_string=_png.encode(pixels),
    )
    return [tf.compat.v1.Summary.Value(tag=f"images/{tag_of(path)}", image=encoded)]


def _enlarged(tile: np.ndarray) -> np.ndarray:
    """A small tile repeated pixel by pixel up to about ``TILE_SIDE`` a side, so
    that TensorBoard's card shows a 16x16 image as more than a speck."""
    factor = max(1, TILE_SIDE // max(tile.shape[:2]))
    return tile.repeat(factor, axis=0).repeat(factor, axis=1)


# -------------------------------------------------------------------- histograms


def _histograms(samples, run: str, path: str) -> list:
    """Histograms of the run's values, string lengths and sizes of `path`, with
    bucket edges shared by both runs."""
    out = []
    for title, field in (
        ("values", "values"),
        ("string lengths", "string_lengths"),
        ("sizes", "sizes"),
    ):
        both = [getattr(samples.side(r), field).get(path) for r in RUNS]
        mine = getattr(samples.side(run), field).get(path)
        if mine is None:
            continue
        edges = _edges([np.asarray(x, np.float64) for x in both if x is not None])
        histogram = _histogram(np.asarray(mine, np.float64), edges)
        if histogram is not None:
            out.append(tf.compat.v1.Summary.Value(tag=f"{title}/{tag_of(path)}", histo=histogram))
    return out


def _edges(arrays: list[np.ndarray]) -> np.ndarray | None:
    finite = [a[np.isfinite(a)] for a in arrays]
    finite = [a for a in finite if a.size]
    if not finite:
        return None
    lo = min(float(a.min()) for a in finite)
    hi = max(float(a.max()) for a in finite)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, HISTOGRAM_BUCKETS + 1)


def _histogram(values: np.ndarray, edges: np.ndarray | None) -> Any:
    """A HistogramProto of the finite `values` over `edges` (None if there are none)."""
    values = values[np.isfinite(values)]
    if edges is None or not values.size:
        return None
    counts, _ = np.histogram(values, bins=edges)
    return tf.compat.v1.HistogramProto(
        min=float(values.min()),
        max=float(values.max()),
        num=float(values.size),
        sum=float(values.sum()),
        sum_squares=float(np.square(values).sum()),
        bucket_limit=[float(e) for e in edges[1:]],
        bucket=[float(c) for c in counts],
    )


# -------------------------------------------------------------------- throughput


def _throughput(timeline: np.ndarray, start: float) -> Iterator[Any]:
    """Examples delivered against time, and the rate over each interval."""
    previous = None
    for seconds, examples in np.asarray(timeline, np.float64).reshape([-1, 2]):
        wall = start + float(seconds)
        yield _event(
            wall, round(seconds * 1000), [_scalar("throughput/examples delivered", examples)]
        )
        if previous is not None and seconds > previous[0] and examples > previous[1]:
            rate = (examples - previous[1]) / (seconds - previous[0])
            yield _event(wall, int(examples), [_scalar("throughput/examples per second", rate)])
        previous = (float(seconds), float(examples))


def _scalar(tag: str, value: float) -> Any:
    return tf.compat.v1.Summary.Value(tag=tag, simple_value=float(value))


# ----------------------------------------------------------------------- verdict


def _verdict_text(report: Any) -> str:
    """The verdict in Markdown (TensorBoard's text dashboard): headline, the slip
    that explains it, then the report's table as a code block."""
    head = "**MATCH**" if report.matched else f"**DIFFER** ({len(report.mismatches)} mismatch(es))"
    lines = [head, ""]
    if report.explained is not None:
        lines += [f"Explained: {report.explained}", ""]
    table = report.render()
    lines += ["    " + line for line in table.splitlines()]
    return "\n".join(lines)


def _text(tag: str, text: str) -> Any:
    metadata = tf.compat.v1.SummaryMetadata(
        plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="text")
    )
    return tf.compat.v1.Summary.Value(
        tag=tag, metadata=metadata, tensor=tf.compat.v1.make_tensor_proto(text, dtype=tf.string)
    )
