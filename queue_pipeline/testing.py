"""CI helpers for input pipelines: bounded runs, golden snapshots, and a pytest plugin.

* :func:`run_pipeline` runs a legacy pipeline for N batches with the whole
  session dance and never hangs: a stall raises :class:`PipelineStalledError`
  naming the starved queue.
* :func:`assert_snapshot` / :func:`snapshot_pipeline` keep the first batches
  of a seeded pipeline in a small JSON golden file and fail with a readable
  diff when they change. Update with ``QUEUE_PIPELINE_UPDATE_SNAPSHOTS=1`` or
  ``pytest --update-snapshots``.
* The pytest plugin that uses them lives in :mod:`queue_pipeline.pytest_plugin`
  (fixtures ``qp_graph``, ``qp_session``, ``qp_coord``, ``qp_snapshot``).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import pathlib
import sys
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from queue_pipeline._compare import harness as _harness
from queue_pipeline._compare import inspect as _inspect
from queue_pipeline._compare import normalize as _normalize
from queue_pipeline._compare.harness import PipelineError, PipelineStalledError

__all__ = [
    "PipelineError",
    "PipelineStalledError",
    "SNAPSHOT_FORMAT",
    "SnapshotMismatchError",
    "UPDATE_SNAPSHOTS_ENV",
    "assert_snapshot",
    "run_pipeline",
    "snapshot_pipeline",
    "update_snapshots_requested",
]

UPDATE_SNAPSHOTS_ENV = "QUEUE_PIPELINE_UPDATE_SNAPSHOTS"
SNAPSHOT_FORMAT = "queue_pipeline.snapshot/1"
_DIFF_LINES = 40


class SnapshotMismatchError(AssertionError):
    """A pipeline's batches differ from its golden snapshot (or it is missing in CI).

    Attributes:
      snapshot_page: for a difference, ``snapshot_page(path)`` writes the
        comparison page of the golden batches (legacy column) against the
        pipeline's (twin column) and returns its path; None otherwise. The
        pytest plugin calls it for ``--queue-pipeline-html-dir``.
    """

    snapshot_page: Callable[[Any], str] | None = None


def _graph_of(api: str, fetches) -> tf.Graph:
    for leaf in _normalize.flatten(fetches)[1]:
        graph = getattr(leaf, "graph", None)
        if isinstance(graph, tf.Graph):
            return graph
    raise TypeError(
        f"{api}: `fetches` must be graph tensors (a tensor or SparseTensor, or "
        f"a list, tuple or dict of them) built under `tf.Graph().as_default()`; "
        f"got {fetches!r:.120}."
    )


def run_pipeline(
    fetches,
    num_batches: int,
    *,
    timeout: float = 30.0,
    start_queue_runners: bool = True,
    initialize: bool = True,
) -> list:
    """Runs a legacy pipeline for up to `num_batches` fetches and returns them as numpy.

    Opens a Session on the fetches' graph with an operation timeout, runs the
    global and local variable initializers, starts every runner in the
    ``"queue_runners"`` collection under a Coordinator, fetches, then stops and
    joins the threads and closes the session.

    Args:
      fetches: the pipeline's output tensors (anything ``sess.run`` takes).
      num_batches: the number of fetches; fewer are returned if the pipeline
        ends first (OutOfRangeError).
      timeout: seconds one fetch may block before the pipeline counts as stalled.
      start_queue_runners: start the runners (False only to test the stall report).
      initialize: run the variable initializers (needed for ``num_epochs``).

    Returns:
      The fetched values, one per batch, as ``sess.run`` returns them.

    Raises:
      PipelineStalledError: a fetch blocked for `timeout` seconds; the message
        names the starved queue, its size, and whether its runner threads are
        alive, dead or never started.
      PipelineError: a fetch or a runner thread failed.

    Side effects:
      Adds initializer and queue-probe ops to the fetches' graph.

    Example::

        with tf.Graph().as_default():
            batch = queue_pipeline.batch([x], 4)
            batches = run_pipeline(batch, 3, timeout=10)
    """
    if not isinstance(num_batches, int) or isinstance(num_batches, bool) or num_batches < 1:
        raise ValueError(
            f"run_pipeline: `num_batches` must be a positive int; got {num_batches!r}."
        )
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(
            f"run_pipeline: `timeout` must be a positive number of seconds; got {timeout!r}."
        )
    graph = _graph_of("run_pipeline", fetches)
    return _harness.run_graph(
        fetches,
        graph=graph,
        max_batches=num_batches,
        timeout=timeout,
        api="run_pipeline",
        start_runners=start_queue_runners,
        initialize=initialize,
    ).batches


def update_snapshots_requested() -> bool:
    """Whether snapshots should be rewritten (env var or ``--update-snapshots``)."""
    flag = os.environ.get(UPDATE_SNAPSHOTS_ENV, "").strip().lower()
    plugin = sys.modules.get("queue_pipeline.pytest_plugin")
    return flag in ("1", "true", "yes", "on") or bool(plugin and plugin.update_requested)


def _snapshot_data(batches) -> dict:
    out = []
    for batch in batches:
        paths, leaves = _normalize.flatten(batch)
        out.append(
            {
                path or "(tensor)": _normalize.to_jsonable(_normalize.to_leaf(leaf))
                for path, leaf in zip(paths, leaves)
            }
        )
    return {"format": SNAPSHOT_FORMAT, "num_batches": len(out), "batches": out}


def _render(data: dict) -> str:
    """One line per (batch, component), so diffs stay readable."""
    lines = [
        "{",
        f'  "format": {json.dumps(data.get("format"))},',
        f'  "num_batches": {json.dumps(data.get("num_batches"))},',
        '  "batches": [',
    ]
    batches = data.get("batches", [])
    for b, batch in enumerate(batches):
        lines.append("    {")
        items = list(batch.items())
        for c, (path, value) in enumerate(items):
            comma = "," if c < len(items) - 1 else ""
            lines.append(f"      {json.dumps(path)}: {json.dumps(value)}{comma}")
        lines.append("    }" + ("," if b < len(batches) - 1 else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def _first_difference(old: dict, new: dict) -> str:
    ob, nb = old.get("batches", []), new.get("batches", [])
    for b, (x, y) in enumerate(zip(ob, nb)):
        for path in list(x) + [p for p in y if p not in x]:
            if path not in x or path not in y:
                return f"batch {b}: component {path} is {'new' if path not in x else 'gone'}"
            for field in ("dtype", "shape", "sparse", "indices", "dense_shape", "encoding"):
                if x[path].get(field) != y[path].get(field):
                    return (
                        f"batch {b}, component {path}: {field} golden "
                        f"{x[path].get(field)!r}, now {y[path].get(field)!r}"
                    )
            if x[path].get("values") != y[path].get("values"):
                gv = np.array(x[path]["values"], dtype=object).ravel()
                nv = np.array(y[path]["values"], dtype=object).ravel()
                i = next(
                    (i for i in range(min(len(gv), len(nv))) if gv[i] != nv[i]),
                    min(len(gv), len(nv)),
                )
                g = gv[i] if i < len(gv) else "(none)"
                n = nv[i] if i < len(nv) else "(none)"
                return (
                    f"batch {b}, component {path}: values differ at flat index {i}: "
                    f"golden {g!r}, now {n!r}"
                )
    return f"golden has {len(ob)} batch(es), now {len(nb)}"


def assert_snapshot(batches, path, *, update: bool | None = None) -> None:
    """Checks batches against a golden JSON file; writes it if missing or updating.

    A missing file is created (commit it), except when the ``CI`` environment
    variable is set: then a missing file fails, so a CI job never passes
    without a golden file.

    Args:
      batches: a list of fetched batches (e.g. from :func:`run_pipeline`).
      path: the golden file (``.json``).
      update: rewrite the file instead of comparing; default
        :func:`update_snapshots_requested`.

    Raises:
      SnapshotMismatchError: the batches differ (the message shows the first
        difference and a line diff), or the file is missing in CI.
    """
    path = pathlib.Path(path)
    new = json.loads(json.dumps(_snapshot_data(batches)))
    update = update_snapshots_requested() if update is None else update
    if not path.exists() and not update and os.environ.get("CI"):
        raise SnapshotMismatchError(
            f"snapshot {path} is missing and CI is set, so it is not created.\nFix: run "
            f"the test locally (or with {UPDATE_SNAPSHOTS_ENV}=1) and commit the file."
        )
    if update or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(new))
        return
    try:
        old = json.loads(path.read_text())
    except ValueError as e:
        raise SnapshotMismatchError(
            f"snapshot {path} is not valid JSON ({e}).\nFix: "
            f"regenerate it with {UPDATE_SNAPSHOTS_ENV}=1."
        ) from None
    if old == new:
        return
    diff = list(
        difflib.unified_diff(
            _render(old).splitlines(), _render(new).splitlines(), "golden", "now", n=1, lineterm=""
        )
    )
    if len(diff) > _DIFF_LINES:
        diff = diff[:_DIFF_LINES] + [f"... ({len(diff) - _DIFF_LINES} more diff lines)"]
    error = SnapshotMismatchError(
        f"snapshot {path} differs from the pipeline's output.\n"
        f"First difference: {_first_difference(old, new)}\n"
        + "\n".join(diff)
        + f"\nFix: if the change is intended, re-run with {UPDATE_SNAPSHOTS_ENV}=1 (or "
        "pytest --update-snapshots) and commit the file."
    )
    error.snapshot_page = functools.partial(_snapshot_page, old, new, str(path))
    raise error


def _from_jsonable(value: dict):
    """A snapshot's component value back as a leaf (inverse of ``normalize.to_jsonable``)."""
    if value.get("dtype") == "string":
        raw = np.array(value["values"], dtype=object)
        decode = bytes.fromhex if value.get("encoding") == "hex" else str.encode
        leaf = np.array([decode(x) for x in raw.ravel()], dtype=object).reshape(raw.shape)
    else:
        leaf = np.array(value["values"], dtype=value["dtype"])
    if value.get("sparse"):
        indices = np.array(value["indices"], np.int64).reshape([-1, len(value["dense_shape"])])
        return _normalize.Sparse(indices, leaf, np.array(value["dense_shape"], np.int64))
    return leaf.reshape(value["shape"])


def _spec_of(path: str, leaf) -> _normalize.ComponentSpec:
    sparse = isinstance(leaf, _normalize.Sparse)
    values = leaf.values if sparse else leaf
    dtype = "string" if values.dtype == object else values.dtype.name
    return _normalize.ComponentSpec(
        path, dtype, tf.TensorShape(_normalize.example_shape(leaf)), sparse
    )


def _snapshot_page(old: dict, new: dict, golden: str, path) -> str:
    """Writes the page of a snapshot's golden batches against the pipeline's; returns its path."""
    from queue_pipeline._compare import page as _page
    from queue_pipeline._compare import samples as _samples
    from queue_pipeline._compare.analysis import analyze
    from queue_pipeline.compare import _Side

    sides = []
    for data in (old, new):
        batches = data.get("batches", [])
        names = list(batches[0]) if batches else []
        paths = ["" if n == "(tensor)" else n for n in names]
        side = _Side(paths, [], batched=True, nondeterminism=[], exhausted=True)
        for batch in batches:
            leaves = [_from_jsonable(batch[n]) for n in names if n in batch]
            side.specs = side.specs or [_spec_of(p, leaf) for p, leaf in zip(paths, leaves)]
            side.add(leaves)
        sides.append(side)
    report = analyze(*sides, ordered=True, epochs=1, epoch_size=None, reference=None)
    report.samples = _samples.collect(*sides, ordered=True, epoch_size=None)
    return _page.write(
        report,
        path,
        title="queue_pipeline snapshot",
        intro=f"The golden snapshot {golden} (legacy column) against the pipeline's "
        "batches now (twin column).",
    )


def snapshot_pipeline(
    fetches,
    path,
    num_batches: int,
    *,
    timeout: float = 30.0,
    update: bool | None = None,
    allow_nondeterministic: bool = False,
) -> list:
    """Runs a seeded pipeline for `num_batches` and checks them with :func:`assert_snapshot`.

    Args:
      fetches: the pipeline's output tensors.
      path: the golden file.
      num_batches: how many batches to keep.
      timeout: as in :func:`run_pipeline`.
      update: as in :func:`assert_snapshot`.
      allow_nondeterministic: snapshot even if the output varies between runs.

    Returns:
      The batches.

    Raises:
      ValueError: the pipeline's output varies between runs (several enqueue
        threads, a RandomShuffleQueue, an unseeded shuffle).
      SnapshotMismatchError, PipelineStalledError, PipelineError: as above.
    """
    graph = _graph_of("snapshot_pipeline", fetches)
    varying = [n.reason for n in _inspect.legacy_nondeterminism(graph) if n.varies_between_runs]
    if varying and not allow_nondeterministic:
        raise ValueError(
            "snapshot_pipeline: the pipeline's output varies between runs, so a snapshot "
            f"would be flaky: {'; '.join(varying)}.\nFix: use num_threads=1, batch instead "
            "of shuffle_batch, seed shuffles (tf.compat.v1.set_random_seed), or pass "
            "allow_nondeterministic=True."
        )
    batches = run_pipeline(fetches, num_batches, timeout=timeout)
    assert_snapshot(batches, path, update=update)
    return batches
