"""Side-by-side harness: runs a legacy queue pipeline and its tf.data twin, reports differences.

:func:`compare` builds the legacy pipeline in a fresh graph and runs it in a
Session (initializers, a Coordinator, runner threads, operation timeouts; stop
and join afterwards), reads the twin ``tf.data.Dataset``, and returns a
:class:`ComparisonReport`: per-component structure, dtype and shape
signatures, batch and example counts, per-epoch multisets, ordered equality,
the first differing example, shuffle statistics and throughput. Where
records differ, ``report.explanation`` names the one classic migration slip
(a flip, a transpose, the channel order, a scale or offset, a rounding cast,
labels off by one, a shifted order, a final partial batch) that explains
every differing record; see NOTE [ Explaining a difference ] in
``_compare/slips.py``.

NOTE [ Comparing examples, epochs and order ]

* Both sides are normalized (see ``_normalize``): dict keys sorted by
  ``str``, list == tuple, a one-element list == its element, and batches are
  split into examples along the first dimension. The legacy side is batched
  when the nearest dequeue above its outputs takes many elements
  (``batch*``, ``read_up_to``); the twin is batched when its components have
  the legacy batch rank.
* Order: ``ordered=None`` compares in order when both sides are
  deterministic, else as multisets. The legacy side is nondeterministic when
  a runner has more than one enqueue op (threads), a RandomShuffleQueue
  exists (``shuffle_batch*``) or a shuffle op exists (a producer with
  ``shuffle=True``, whose order no twin can reproduce). The twin is
  nondeterministic when its dataset graph has a shuffle or a
  ``deterministic=False`` op.
* Epochs: the epoch count is the legacy plan's ``num_epochs`` when its
  producers record one, else the `epochs` argument; the epoch size is the
  legacy example count over the epoch count (no per-epoch check if it does not
  divide). Per-epoch multisets are required to match unless the legacy side
  itself mixes epochs (threads or a RandomShuffleQueue).
* Bounds: the legacy side ends on OutOfRangeError, `max_batches`,
  `max_bytes` (the memory its batches hold, with 1 KiB per example for
  what the comparison keeps of it; 256 MiB by default) or a
  `timeout` stall; a legacy pipeline whose producers repeat forever needs
  `max_batches`. Stopped at `max_bytes`, the comparison covers the batches
  read so far, and the report says so. The twin is read for at most the legacy example count plus
  one epoch (or one batch), so an infinite twin ends as "twin has more".
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, Callable, Mapping, Sequence

import tensorflow as tf

from queue_pipeline._compare import harness as _harness
from queue_pipeline._compare import inspect as _inspect
from queue_pipeline._compare import normalize as _normalize
from queue_pipeline._compare import samples as _samples
from queue_pipeline._core import progress as _progress
from queue_pipeline._compare.analysis import analyze
from queue_pipeline._compare.harness import PipelineError, PipelineStalledError
from queue_pipeline._compare.samples import ComparisonSamples, SideSamples
from queue_pipeline._compare.report import (
    ComparisonReport,
    ComponentReport,
    Difference,
    EpochReport,
    Explanation,
    PipelineMismatchError,
    ShuffleStats,
    SideReport,
)
from queue_pipeline.plan import epochs_of

__all__ = [
    "ComparisonReport",
    "ComparisonSamples",
    "ComponentReport",
    "Difference",
    "EpochReport",
    "Explanation",
    "PipelineError",
    "PipelineMismatchError",
    "PipelineStalledError",
    "ShuffleStats",
    "SideReport",
    "SideSamples",
    "compare",
    "rebuilt_twin",
]

_API = "compare"
_SAFETY_MAX_BATCHES = 100_000  # when the plan cannot tell whether the legacy side ends


@dataclasses.dataclass
class _Side:
    """One side's normalized output (internal)."""

    paths: list[str]
    specs: list
    batched: bool
    examples: list = dataclasses.field(default_factory=list)
    batch_of_example: list = dataclasses.field(default_factory=list)
    batches: int = 0
    max_batch: int = 1
    exhausted: bool = False
    seconds: float = 0.0
    startup_seconds: float = 0.0
    nondeterminism: list | None = None
    epochs: int = 1
    epoch_size: int | None = None
    notes: list = dataclasses.field(default_factory=list)
    keys: list | None = None  # the examples' keys, once the analysis computed them
    timeline: _samples.Timeline | None = None

    def add(self, leaves: list) -> None:
        if self.batched:
            try:
                rows = _normalize.split_examples(leaves)
            except ValueError:
                rows = [leaves]
            self.max_batch = max(self.max_batch, len(rows))
        else:
            rows = [leaves]
        self.batch_of_example += [self.batches] * len(rows)
        self.examples += rows
        self.batches += 1


# The memory a comparison's legacy batches may hold by default (NOTE above).
DEFAULT_MAX_BYTES = 256 * 2**20


def compare(
    legacy: Callable[[], Any],
    twin: Callable[[], tf.data.Dataset] | None = None,
    *,
    epochs: int = 1,
    max_batches: int | None = None,
    ordered: bool | None = None,
    timeout: float = 30.0,
    reference: Callable[[], tf.data.Dataset] | None = None,
    progress: bool | None = False,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
    image_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ComparisonReport:
    """Runs a legacy pipeline and its tf.data twin and reports how their outputs differ.

    See NOTE [ Comparing examples, epochs and order ] in this module for the
    rules on batching, order, epochs and bounds.

    Args:
      legacy: called with no arguments inside a fresh graph; builds a queue
        pipeline and returns its output tensors (a tensor or SparseTensor, or
        a list, tuple or dict of them).
      twin: called with no arguments (eagerly when eager execution is on);
        returns a ``tf.data.Dataset`` whose elements are tuples, dicts or
        bare tensors. None (the default) compares the legacy pipeline with
        its own rebuild, :func:`rebuilt_twin` ``(legacy)``.
      epochs: the number of epochs the legacy side delivers, used to cut
        per-epoch multisets when the legacy plan records no ``num_epochs``.
      max_batches: stop the legacy side after this many fetches (required if
        its producers repeat forever).
      ordered: True requires equal order; False compares multisets; None
        (default) compares in order only if both sides are deterministic.
      timeout: seconds any one legacy fetch or twin element may take before
        the pipeline counts as stalled.
      reference: optional callable returning a Dataset of one epoch's
        examples in unshuffled order, for the shuffle statistics (default:
        the examples sorted by value).
      progress: draw a progress bar on stderr: True, False, or None for
        "only when stderr is a terminal".
      max_bytes: stop the legacy side once its batches hold this many bytes,
        counting 1 KiB per example for what the comparison keeps of it (the
        twin is then read for as many examples), so a comparison never
        exhausts the machine's memory; None: no bound.
      image_shapes: components to draw as images in the report's page and
        TensorBoard, by component (``"0"``, ``"image"`` or a path such as
        ``"[0]"``), with the per-example shape, HxW or HxWxC (C in 1, 3 or
        4), e.g. ``{"0": (28, 28)}`` for flat 784-value vectors. Examples that
        are HxW or HxWxC already are drawn without it.

    Returns:
      A :class:`ComparisonReport`; ``report.matched`` is the verdict, and
      ``report.samples`` holds what its page (:meth:`ComparisonReport.to_html`)
      draws.

    Raises:
      TypeError, ValueError: bad arguments.
      PipelineError: a callable raised, returned the wrong kind of object,
        or a pipeline failed while running.
      PipelineStalledError: a side delivered nothing within `timeout`.

    Example::

        report = compare(build_legacy, build_twin, epochs=2)
        print(report)            # text table; report.to_json() for JSON
        report.assert_match()    # in a test
    """
    rebuilt = twin is None and callable(legacy)
    if rebuilt:
        twin = rebuilt_twin(legacy, timeout=timeout)
    _validate(legacy, twin, epochs, max_batches, ordered, timeout, reference)
    if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < 1):
        raise ValueError(f"{_API}: `max_bytes` must be None or a positive int; got {max_bytes!r}.")
    shapes = _image_shapes(image_shapes)
    left = _run_legacy(legacy, epochs, max_batches, timeout, progress, max_bytes)
    total = len(left.examples)
    if left.exhausted:
        limit = total + max(left.epoch_size or 0, left.max_batch, 1)
    else:
        limit = total
    right = _read_dataset(
        twin, None, limit=limit, timeout=timeout, arg="twin", progress=progress, legacy=left
    )
    if not left.exhausted:
        _truncate(right, total)
    ref = None
    if reference is not None:
        ref_side = _Side(left.paths, left.specs, batched=False)
        _read_dataset(
            reference,
            ref_side,
            limit=(left.epoch_size or total) + 1,
            timeout=timeout,
            arg="reference",
            progress=False,
        )
        ref = [_normalize.example_key(e) for e in ref_side.examples]
    report = analyze(
        left, right, ordered=ordered, epochs=left.epochs, epoch_size=left.epoch_size, reference=ref
    )
    if rebuilt:
        report.notes.append(
            "twin: queue_pipeline.to_dataset() of the legacy pipeline (rebuilt from its plan)."
        )
    report.samples = _samples.collect(
        left,
        right,
        ordered=report.mode == "ordered" and report.structure_equal,
        epoch_size=left.epoch_size,
        reference=ref,
        image_shapes=shapes,
    )
    _tell_pytest_plugin(report)
    return report


def _image_shapes(image_shapes) -> dict[str, tuple[int, ...]]:
    if image_shapes is None:
        return {}
    if not isinstance(image_shapes, Mapping):
        raise TypeError(
            f"{_API}: `image_shapes` must be None or a mapping from component to "
            f"shape, e.g. {{'0': (28, 28)}}; got {image_shapes!r}."
        )
    out = {}
    for name, shape in image_shapes.items():
        try:
            out[_samples.component_path(str(name))] = _samples.check_image_shape(shape)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{_API}: `image_shapes`[{name!r}]: {e}") from None
    return out


def _tell_pytest_plugin(report: ComparisonReport) -> None:
    """Hands `report` to queue_pipeline's pytest plugin when it writes pages
    (``--queue-pipeline-html-dir``), for a failing test's page."""
    plugin = sys.modules.get("queue_pipeline.pytest_plugin")
    record = getattr(plugin, "record_report", None)
    if record is not None:
        record(report)


def rebuilt_twin(
    legacy: Callable[[], Any], *, timeout: float = 30.0
) -> Callable[[], tf.data.Dataset]:
    """A twin callable that rebuilds `legacy` with :func:`queue_pipeline.to_dataset`.

    Each call builds the legacy pipeline in a fresh graph, initializes its
    global and local variables in a Session (with an operation timeout of
    `timeout` seconds), so that variables the pipeline reads can be read
    once, and returns ``to_dataset(outputs, session=...)``, built in the
    caller's context (eager by default). Variables that the legacy program
    loads by a step of its own (a feed) are not loaded here.

    Args:
      legacy: as for :func:`compare`.
      timeout: the Session's operation timeout, in seconds.

    Returns:
      A callable with no arguments that returns a ``tf.data.Dataset``.

    Example::

        compare(build_legacy, rebuilt_twin(build_legacy)).assert_match()
    """
    from queue_pipeline.rebuild import to_dataset

    def twin() -> tf.data.Dataset:
        graph = tf.Graph()
        with graph.as_default():
            outputs = legacy()
            variables = tf.compat.v1.global_variables() + tf.compat.v1.local_variables()
            init = tf.compat.v1.variables_initializer(variables) if variables else None
        # Not `with Session(...)`: that would make the legacy graph the default
        # one, and the Dataset must be built in the caller's context.
        sess = tf.compat.v1.Session(graph=graph, config=_harness.session_config(timeout))
        try:
            if init is not None:
                sess.run(init)
            return to_dataset(outputs, session=sess)
        finally:
            sess.close()

    twin.__qualname__ = f"rebuilt_twin({getattr(legacy, '__qualname__', legacy)!s})"
    return twin


def _validate(legacy, twin, epochs, max_batches, ordered, timeout, reference) -> None:
    for arg, fn in (("legacy", legacy), ("twin", twin)):
        if not callable(fn):
            raise TypeError(
                f"{_API}: `{arg}` must be a callable that builds the pipeline; "
                f"got {type(fn).__name__}: {fn!r}. Fix: pass the function "
                "itself, not its result."
            )
    if reference is not None and not callable(reference):
        raise TypeError(
            f"{_API}: `reference` must be None or a callable returning a "
            f"Dataset; got {reference!r}."
        )
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"{_API}: `epochs` must be a positive int; got {epochs!r}.")
    if max_batches is not None and (not isinstance(max_batches, int) or max_batches < 1):
        raise ValueError(
            f"{_API}: `max_batches` must be None or a positive int; got {max_batches!r}."
        )
    if ordered not in (None, True, False):
        raise ValueError(f"{_API}: `ordered` must be None, True or False; got {ordered!r}.")
    if not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(
            f"{_API}: `timeout` must be a positive number of seconds; got {timeout!r}."
        )


def _run_legacy(legacy, epochs, max_batches, timeout, progress, max_bytes=None) -> _Side:
    timeline = _samples.Timeline()
    graph = tf.Graph()
    with graph.as_default():
        outputs = _harness.call_builder(_API, "legacy", legacy)
        try:
            paths, specs = _normalize.specs_of(outputs)
        except TypeError as e:
            raise PipelineError(
                f"{_API}: `legacy` must return the pipeline's output tensors (a tensor or "
                "SparseTensor, or a list, tuple or dict of them); got "
                f"{type(outputs).__name__}: {str(e).rstrip('.')}. Fix: return the tensors you "
                "would pass to sess.run."
            ) from None
        foreign = [
            p
            for p, leaf in zip(paths, _normalize.flatten(outputs)[1])
            if getattr(leaf, "graph", graph) is not graph
        ]
        if foreign:
            raise PipelineError(
                f"{_API}: `legacy` returned tensors from another graph "
                f"({foreign}); build them inside the callable."
            )
        side = _Side(paths, specs, batched=_inspect.is_batched(outputs))
        side.nondeterminism = _inspect.legacy_nondeterminism(graph)
        side.timeline = timeline
        state, plan_epochs = epochs_of(outputs)
    if state == "infinite" and max_batches is None:
        raise ValueError(
            f"{_API}: the legacy pipeline never ends (a producer has num_epochs=None), so "
            "`max_batches` is required; got max_batches=None. Fix: pass max_batches= "
            "(epochs x batches per epoch), or set num_epochs in the legacy pipeline."
        )
    side.epochs = epochs
    if plan_epochs is not None:
        if epochs not in (1, plan_epochs):
            side.notes.append(
                f"`epochs`={epochs} ignored: the legacy pipeline's num_epochs is {plan_epochs}."
            )
        side.epochs = plan_epochs
    bar = _progress.Progress("legacy batches", max_batches, enabled=progress)

    def on_batch(batches: int) -> None:
        bar.update(batches)
        timeline.mark(batches)

    with bar:
        result = _harness.run_graph(
            outputs,
            graph=graph,
            max_batches=max_batches or (None if state == "finite" else _SAFETY_MAX_BATCHES),
            timeout=timeout,
            api=f"{_API} (legacy side)",
            on_batch=on_batch,
            max_bytes=max_bytes,
        )
    for batch in result.batches:
        side.add(_normalize.leaves_of(batch))
    side.exhausted = result.exhausted
    side.seconds, side.startup_seconds = result.seconds, result.startup_seconds
    total = len(side.examples)
    side.epoch_size = total // side.epochs if total and total % side.epochs == 0 else None
    if total and side.epoch_size is None:
        side.notes.append(
            f"no per-epoch comparison: {total} legacy examples do not split "
            f"into {side.epochs} equal epochs (a dropped final batch?)."
        )
    if result.held_bytes:
        side.notes.append(
            f"the legacy side was stopped after {side.batches} batch(es) holding "
            f"{result.held_bytes / 2**20:.0f} MiB (max_bytes={max_bytes}); the twin is "
            "compared on as many examples, and 'twin has more' is not checked."
        )
    elif not side.exhausted:
        side.notes.append(
            f"the legacy side was stopped after {side.batches} batch(es) "
            "(max_batches); the twin is compared on as many examples, and "
            "'twin has more' is not checked."
        )
    return side


def _twin_batched(left: _Side, specs) -> bool:
    deltas = set()
    for a, b in zip(left.specs, specs):
        if a.shape.rank is not None and b.shape.rank is not None:
            deltas.add(b.shape.rank - a.shape.rank)
    if len(deltas) == 1:
        batched = int(left.batched) + deltas.pop()
        if batched in (0, 1):
            return bool(batched)
    return left.batched


def _read_dataset(fn, side, *, limit, timeout, arg, progress, legacy=None) -> _Side:
    timeline = _samples.Timeline()
    with tf.init_scope():
        eager = tf.executing_eagerly()
    graph = None if eager else tf.Graph()
    if graph is None:
        with tf.init_scope():
            dataset = _harness.call_builder(_API, arg, fn)
    else:
        with graph.as_default():
            dataset = _harness.call_builder(_API, arg, fn)
    if not isinstance(dataset, tf.data.Dataset):
        raise PipelineError(
            f"{_API}: `{arg}` must return a tf.data.Dataset; got "
            f"{type(dataset).__name__}: {dataset!r:.80}. Fix: return the "
            "dataset, not an iterator or its elements."
        )
    if side is None:
        try:
            paths, specs = _normalize.specs_of(dataset.element_spec)
        except TypeError as e:
            raise PipelineError(
                f"{_API}: the twin's elements must be tensors, SparseTensors "
                f"or tuples/dicts of them: {e}"
            ) from None
        side = _Side(paths, specs, batched=_twin_batched(legacy, specs))
        side.nondeterminism = _inspect.dataset_nondeterminism(dataset)
        side.timeline = timeline
    reader = _harness.TwinReader(dataset, timeout=timeout, api=f"{_API} ({arg} side)", graph=graph)
    bar = _progress.Progress(f"{arg} examples", limit, enabled=progress)
    t0 = time.perf_counter()
    try:
        with bar:
            while len(side.examples) < limit and side.batches <= limit + 1:
                leaves = reader.next()
                if leaves is None:
                    side.exhausted = True
                    break
                side.add(leaves)
                bar.update(len(side.examples))
                if side.timeline is not None:
                    side.timeline.mark(side.batches)
    finally:
        reader.close()
    side.seconds = time.perf_counter() - t0
    return side


def _truncate(side: _Side, total: int) -> None:
    """Keeps the first `total` examples (the legacy side was stopped early)."""
    if len(side.examples) > total:
        side.examples = side.examples[:total]
        side.batch_of_example = side.batch_of_example[:total]
        side.batches = (side.batch_of_example[-1] + 1) if total else 0
        side.exhausted = False
