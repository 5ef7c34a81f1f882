"""Proof for a migration: the original function against its tf.data version, through compare."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import types
from typing import Any

from queue_pipeline import plan
import tensorflow as tf

from queue_pipeline._compare.harness import add_session_setup, exact_arithmetic
from queue_pipeline._migrate.proof_conditions import (
    PINNED_FRACTION,
    SECOND_FRACTION,
    bounded_repeats,
    captured_in_build,
    pinned_random_draws,
    random_op_types,
    tested_draws,
)
from queue_pipeline._migrate.constant_queues import bounded_constant_runners
from queue_pipeline._migrate.constructor_pipelines import _dequeues
from queue_pipeline._migrate import object_returns_places as _places
from queue_pipeline._migrate.dropped_tails import accepted_tail
from queue_pipeline._migrate.held_random import HeldRandomState, unreproducible_constant
from queue_pipeline._migrate.loading import load_beside
from queue_pipeline._migrate.plain_values import shown, split_plain
from queue_pipeline._migrate.trace import MigrateError, Trace, graph_of, loader_count

__all__ = ["Verdict", "load_migrated", "verify"]

_API = "queue-pipeline migrate"
# A bounded run ends by itself; compare still wants a limit for a plan that says forever.
_BOUNDED_MAX_BATCHES = 1_000_000


@dataclasses.dataclass
class Verdict:
    """The result of the proof.

    Attributes:
      status: ``"MATCH"``, ``"DIFFER"`` or ``"UNVERIFIED"``.
      reason: why it was not verified (UNVERIFIED), else the compare mode.
      report: compare's :class:`~queue_pipeline.compare.ComparisonReport`, or None.
    """

    status: str
    reason: str
    report: object | None = None


def load_migrated(original: types.ModuleType, source: str, path: str | None) -> types.ModuleType:
    """`source` as a module beside `original`, reusing its load (nothing of its top level reruns).

    See NOTE [ What migrate runs of the user's file ] in
    :mod:`queue_pipeline._migrate.loading`.

    Args:
      original: the legacy module.
      source: the migrated module's source.
      path: the file it was written to; None: no file (its source is
        registered with linecache for AutoGraph and tracebacks).
    """
    try:
        return load_beside(original, source, path)
    except MigrateError as e:  # a rewriter bug: the definitions do not run
        raise MigrateError(f"{_API}: the migrated module does not run: {e}") from e


def verify(
    trace: Trace,
    migrated: types.ModuleType,
    function: str,
    args: tuple,
    kwargs: dict,
    *,
    epochs: int = 1,
    max_batches: int | None = None,
    timeout: float = 60.0,
    graph_call=None,
) -> Verdict:
    """Compares ``original(*args)`` with ``migrated.function(*args)`` through compare.

    The order must be equal where the legacy side is deterministic; else the
    multisets.

    A legacy input that repeats forever is read for `epochs` epochs on both
    sides (`max_batches` may end it sooner), and random draws are pinned:
    NOTE [ Proving a random, endless input pipeline ] (a second run pins them
    to the other side of one half where a draw is tested). The verdict's
    reason names each condition the proof held. `graph_call` (a
    :class:`~queue_pipeline._migrate.trace.GraphCall`) makes the arguments
    anew in each side's graph instead of `args`, `kwargs`.
    """
    given = (trace, migrated, function, args, kwargs, epochs, max_batches, timeout, graph_call)
    verdict = _verify(*given, PINNED_FRACTION)
    pinned = f"pinned to {PINNED_FRACTION} of their range on both sides"
    if verdict.status != "MATCH" or pinned not in verdict.reason:
        return verdict
    if not tested_draws(graph_of(_places.leaf_tensors(trace.outputs))):
        return verdict
    second = _verify(*given, SECOND_FRACTION)
    both = f"{pinned}, then to {SECOND_FRACTION} (a test on a draw taken both ways)"
    if second.status != "MATCH":
        note = f" (at {PINNED_FRACTION} of their range the two sides matched)"
        return dataclasses.replace(second, reason=second.reason + note)
    return dataclasses.replace(verdict, reason=verdict.reason.replace(pinned, both))


def _verify(
    trace, migrated, function, args, kwargs, epochs, max_batches, timeout, graph_call, fraction
) -> Verdict:
    """One proof, the draws pinned to `fraction` of their range: see :func:`verify`."""
    from queue_pipeline.compare import compare  # noqa: PLC0415

    fetches = _places.leaf_tensors(trace.outputs)  # NOTE [ Pipelines returned in objects ]
    kind, _ = plan.epochs_of(fetches)
    if kind == "unknown":  # behind the program's own queue: every producer of its graph
        kind, _ = plan.epochs_of(*_producers(graph_of(trace.outputs)))
    # endless repeats end after `epochs` epochs on both sides, with `max_batches` or not:
    # a part of a shuffled endless stream proves nothing (NOTE [ A proof cut short ])
    arrays = bool(trace.array_queues)  # NOTE [ A queue filled from arrays in memory ]
    bound = kind == "infinite" or arrays
    pinned, unpinned = random_op_types(graph_of(fetches))
    conditions = []
    if bound:
        conditions.append(f"repeats bounded to {epochs} epoch(s) on both sides")
    if arrays:
        conditions.append(
            f"the queue filled from arrays in memory read for {epochs} pass(es) over them: "
            f"its enqueue run {epochs} time(s) in all by the legacy runner's threads, "
            f"repeat() {epochs} time(s) in the migrated code"
        )
    if pinned:
        conditions.append(
            f"random draws ({', '.join(sorted(pinned))}) pinned to {fraction} of "
            "their range on both sides"
        )
    if unpinned:
        conditions.append(f"left random: {', '.join(sorted(unpinned))}")
    loaders = _loader_names(trace.outputs)
    if loaders:
        conditions.append(f"{', '.join(loaders)} run in each side's session before it is read")
    original = getattr(trace.module, trace.function)
    new = getattr(migrated, function)
    # NOTE [ Exact arithmetic for a migration's proof ] and
    # NOTE [ Proving a random, endless input pipeline ]
    with contextlib.ExitStack() as stack:
        stack.enter_context(exact_arithmetic())
        if bound:
            stack.enter_context(bounded_repeats(epochs))
        made = stack.enter_context(pinned_random_draws(fraction)) if pinned else []
        if loaders:
            # A loader runs in a session: the twin is read in one as well, even
            # under TF 2.x defaults (such a function builds placeholders anyway).
            stack.enter_context(tf.Graph().as_default())
        plain: dict[str, list] = {}

        # NOTE [ Random data made while the pipeline is built ]
        held = HeldRandomState()
        stack.callback(held.restore)

        def side(name, build):
            call = (args, kwargs)
            if graph_call is not None:
                call = _graph_call_arguments(graph_call)
            with held.build():
                pipeline, plain[name] = split_plain(build(*call))
            return _with_loaders_run(pipeline)

        def legacy(a, k):
            outputs = _build_legacy(original, a, k, installed=bound)
            if arrays:
                bounded_constant_runners(graph_of(_places.leaf_tensors(outputs)), epochs)
            return outputs

        def twin(a, k):
            return new(*a, **k)

        # NOTE [ A draw captured by the map ]
        captured = (
            captured_in_build(lambda: side("probe", twin), made) if pinned or unpinned else ""
        )
        if captured:
            return Verdict("DIFFER", captured + "".join(f"; {c}" for c in conditions))

        run = functools.partial(
            compare,
            epochs=epochs,
            max_batches=_BOUNDED_MAX_BATCHES if bound and max_batches is None else max_batches,
            timeout=timeout,
        )
        # NOTE [ Pipelines returned in objects ]
        shape: object | None = _places.places(trace.outputs, lambda: side("probe", twin))
        if shape is None:  # NOTE [ Pipelines returned in lists ]
            shape = _returned_datasets(trace.outputs, lambda: side("probe", twin))
        if isinstance(shape, _places.Places):
            reports = [
                run(
                    functools.partial(lambda i: shape.legacy(side("legacy", legacy), i), i),
                    functools.partial(lambda i: shape.twin(side("twin", twin), i), i),
                )
                for i in range(shape.count)
            ]
            # a difference no dropped tail explains comes first
            report = next(
                (r for r in reports if not r.matched and accepted_tail(trace, r) is None),
                next((r for r in reports if not r.matched), reports[-1]),
            )
            conditions.append(
                f"each of the {shape.count} Datasets it returns compared on its own with the "
                f"legacy batches at its places ({shape.described(reports)})"
            )
        elif shape is None:
            report = run(lambda: side("legacy", legacy), lambda: side("twin", twin))
        else:
            count = len(tf.nest.flatten(shape))
            reports = [
                run(
                    functools.partial(_nth_legacy, shape, lambda: side("legacy", legacy), i),
                    functools.partial(_nth_twin, lambda: side("twin", twin), i),
                )
                for i in range(count)
            ]
            report = next((r for r in reports if not r.matched), reports[-1])
            conditions.append(
                f"each of the {count} Datasets it returns compared on its own with the legacy "
                "pipeline in its place"
            )
        if held.condition():
            conditions.append(held.condition())
        unreproducible = ""
        if not report.matched:  # NOTE [ Random data made while the pipeline is built ]
            unreproducible = unreproducible_constant(
                lambda: side("again", lambda a, k: _build_legacy(original, a, k, installed=bound)),
                trace.path,
            )
    memory = [n for n in report.notes if "max_bytes=" in n]
    if memory:  # NOTE [ Proving a random, endless input pipeline ]: memory is bounded too
        conditions.append("read up to the memory bound: " + memory[0].split(";")[0])
    if plain.get("legacy"):
        conditions.append(f"the values beside the batches ({shown(plain['legacy'])}) compared too")
    suffix = "".join(f"; {c}" for c in conditions)
    if plain.get("legacy") != plain.get("twin"):
        return Verdict(
            "DIFFER",
            f"the values returned beside the batches differ: {shown(plain.get('legacy'))} "
            f"(legacy) against {shown(plain.get('twin'))} (migrated)" + suffix,
            report,
        )
    unproven = unreproducible or _cut_short(report, bound) or _legacy_empty(report)
    if unproven:
        return Verdict("UNVERIFIED", unproven + suffix, report)
    if report.matched:
        return Verdict("MATCH", report.mode + suffix, report)
    tail = accepted_tail(trace, report)  # NOTE [ The tail each side drops ]
    if tail is not None:
        return Verdict("MATCH", tail.described(report.mode) + suffix, report)
    return Verdict("DIFFER", report.mode + suffix, report)


def _legacy_empty(report) -> str:
    """Why nothing is proven when the legacy pipeline delivered no example and the twin
    did (NOTE [ Readers in lockstep on one queue ] is one way); "" otherwise."""
    legacy, twin = getattr(report, "legacy", None), getattr(report, "twin", None)
    if report.matched or legacy is None or twin is None:
        return ""
    if legacy.examples or not twin.examples:
        return ""
    return (
        "the legacy pipeline delivered nothing with these arguments (TF 1.x ended before its "
        f"first batch; the tf.data version gave {twin.examples} example(s)), so there is "
        "nothing to compare: this is the legacy code's behaviour, not a difference of the "
        "tf.data version (fewer records or files in its epochs than one batch or its readers "
        "need); migrate with arguments under which the legacy code delivers batches (more "
        "epochs, num_epochs=None, or a smaller batch)"
    )


def with_batch_mates(verdict: Verdict, per_batch: bool) -> Verdict:
    """`verdict`, UNVERIFIED where examples compared one by one cannot be.

    NOTE [ Examples that depend on their batch mates ]
    Code on the padded batches after the batching call (a speech provider's
    ``tf.reverse(mfcc, axis=[1])`` on ``batch(dynamic_pad=True)``: the padding
    moves to the front) makes each example depend on the lengths of the
    others in its batch. Where the legacy order is random, the two sides'
    batches hold other records together, so their examples differ though each
    side is right: a DIFFER there proves nothing. Such a verdict is
    UNVERIFIED, with the fix (the shuffle off: the proof is then in order).
    """
    report: Any = verdict.report
    if verdict.status != "DIFFER" or not per_batch or report is None:
        return verdict
    padded = any("padded per batch" in n for n in report.notes)
    if report.mode != "multiset" or not padded:
        return verdict
    return dataclasses.replace(
        verdict,
        status="UNVERIFIED",
        reason="each example depends on its batch mates (code on the padded batches after "
        "the batching call) and the legacy batches hold random records, so no example can "
        "be compared one by one; prove it with the shuffle off (--call), in order; "
        + verdict.reason,
    )


def _cut_short(report, endless: bool = False) -> str:
    """Why `report` proves nothing, or "".

    NOTE [ A proof cut short ]
    Two runs compared can agree without proving anything. With no batch on
    either side (twenty records and ``batch_size=64`` without
    ``allow_smaller_final_batch``) every check holds vacuously. And where the
    legacy order is random (a RandomShuffleQueue, shuffled file names), the
    first N batches of one side hold other records than the first N of the
    other: a run stopped by ``--batches`` or by the memory bound compares two
    samples, and a difference there is no evidence either way. Both verdicts
    are UNVERIFIED, saying what to change. (An endless input is read for
    ``--epochs`` epochs on both sides, so ``--batches`` is not needed to end it.)
    """
    if report.legacy.batches == 0 and report.twin.batches == 0:
        return (
            "no batch on either side: the records make no whole batch (a final partial "
            "batch is dropped unless allow_smaller_final_batch=True); give more records or a "
            "smaller batch size (--call)"
            + (", or read more epochs of the endless input (--epochs N)," if endless else "")
            + " to prove it"
        )
    if report.matched or report.legacy.exhausted or report.mode != "multiset":
        return ""
    memory = any("max_bytes=" in n for n in report.notes)
    fix = (
        "prove it on fewer records (a part of the files, in --call): the memory bound ends the read"
        if memory
        else "read whole epochs (without --batches, or with --batches above an epoch's "
        "batches) to prove it"
    )
    return (
        f"the legacy side was stopped after {report.legacy.batches} batch(es) and its order is "
        "random: the first batches of two shuffled runs hold different records, so they prove "
        f"nothing; {fix}"
    )


def _graph_call_arguments(graph_call) -> tuple[tuple, dict]:
    """`--call`'s arguments made again for one side of the proof.

    In a graph they are made in it. The twin may be built eagerly: there the
    arguments are made eagerly too (a tensor an object holds, such as a
    tf-slim decoder's feature default, is then one the twin's map can
    capture), unless that raises (a legacy reader, which the twin no longer
    reads, cannot be made eagerly): then in a graph of their own.
    """
    if not tf.executing_eagerly():
        return graph_call.arguments()
    try:
        return graph_call.arguments()
    except MigrateError:
        with tf.Graph().as_default():
            return graph_call.arguments()


# NOTE [ Pipelines returned in lists ]
# A function may return its pipelines in a structure it fills at run time
# (``train_ds.append(read(f))`` in a loop, then ``return train_ds, test_ds``):
# the tf.data version returns Datasets in the same structure. The proof then
# compares each Dataset with the legacy batches at the same place in the
# structure, one compare each (both sides built anew every time). Only
# outputs read from more than one queue are looked at twice (the twin is then
# built once more, in a graph of its own, to learn its structure), so the
# one-pipeline proof costs nothing more.


def _returned_datasets(outputs, build_twin) -> object | None:
    """The twin's returned structure when it holds several Datasets where the legacy
    function returned several pipelines' batches in a nested structure; else None."""
    leaves = [v for v in tf.nest.flatten(outputs) if hasattr(v, "op")]
    if not isinstance(outputs, (tuple, list)) or len(leaves) < 2:
        return None
    if len({frozenset(_dequeues(v)) for v in leaves}) < 2:
        return None
    with tf.Graph().as_default():
        returned = build_twin()
    flat = tf.nest.flatten(returned)
    if len(flat) < 2 or not all(isinstance(d, tf.data.Dataset) for d in flat):
        return None
    return returned


def _nth_legacy(shape, build, i: int):
    return _at_datasets(shape, build())[i]


def _nth_twin(build, i: int):
    return tf.nest.flatten(build())[i]


def _at_datasets(shape, outputs) -> list:
    """The parts of `outputs` where the structure `shape` holds its Datasets, in order."""
    if isinstance(shape, tf.data.Dataset):
        return [outputs]
    if isinstance(shape, dict):
        return [part for key in shape for part in _at_datasets(shape[key], outputs[key])]
    if isinstance(shape, (tuple, list)) and len(shape) == len(outputs):
        return [part for a, b in zip(shape, outputs) for part in _at_datasets(a, b)]
    raise MigrateError(
        f"{_API}: the migrated function returns its Datasets as {type(shape).__name__} "
        f"of {len(shape)}, where the legacy function returned {type(outputs).__name__}: "
        "this is a bug in migrate; please report it with the function"
    )


def _producers(graph: tf.Graph) -> list:
    """The outputs of every producer the plan recorded in `graph` (an own queue's input).

    NOTE [ Proving a random, endless input pipeline ]: a producer that
    repeats forever behind the program's own queue (Inception's examples
    queue) bounds the proof as one in front of a batching call does.
    """
    return [
        node.outputs
        for node in plan.plan_nodes(graph)
        if node.kind in plan.PRODUCER_KINDS | {"slice_input_producer"}
    ]


def _build_legacy(original, args, kwargs, *, installed: bool):
    """The legacy side; `installed`: on queue_pipeline's queue API (where a bound applies)."""
    if not installed:
        return original(*args, **kwargs)
    from queue_pipeline._scripts.install import install  # noqa: PLC0415 - no cycle at import

    with install():
        return original(*args, **kwargs)


def _loader_names(outputs) -> list[str]:
    count = loader_count(outputs)
    if not count:
        return []
    names = [getattr(f, "__name__", "") for f in outputs[len(outputs) - count :]]
    return [n if n.isidentifier() else "the returned loader" for n in names]


def _with_loaders_run(outputs):
    """`outputs` without its loaders, each registered to run in the harness's session.

    The legacy side keeps its batch tensors; the migrated side, which returns
    ``(dataset, load)``, its Dataset.
    """
    count = loader_count(outputs)
    if not count:
        return outputs
    graph = tf.compat.v1.get_default_graph()
    for load in outputs[len(outputs) - count :]:
        add_session_setup(graph, load)
    rest = tuple(outputs[: len(outputs) - count])
    return rest[0] if len(rest) == 1 and isinstance(rest[0], tf.data.Dataset) else rest
