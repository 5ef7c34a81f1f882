"""Pipelines a function returns inside an object: each its own Dataset chain, in place.

NOTE [ Several pipelines in one returned object ]
An input function may build several pipelines, one after another or
interleaved statement by statement (the peer-CNN reader: two
``slice_input_producer``, its reading helper twice, two ``tf.train.batch``),
and return their batches as attributes of an object it makes (a local ``class
DataSet``, a ``SimpleNamespace``; nested, beside plain attributes such as
``num_classes``), or in a namedtuple or dict holding one; or in a plain tuple
(``return train_images, train_labels, test_images, test_labels``) after
splitting data it drew at random (a file list shuffled with ``random``): one
tf.data version per pipeline (NOTE [ Several pipelines a function returns ])
would each draw anew and split otherwise, so such pipelines are built in one
run here too (:func:`~queue_pipeline._migrate.interleaved_stages.draws_at_random`).
A Dataset holds one pipeline, so:

* **Which batches go together** is read from the graph the call built
  (:func:`~queue_pipeline._migrate.object_returns_places.pipeline_groups`):
  the places of the returned structure computed from the same dequeue ops.
  Each batch must be held by a local name at the return (``images, labels =
  tf.train.batch(...)``), or the list of its pipeline's batches around it
  (``batch = tf.train.batch(...)`` stored whole); the statements reading
  those names after they were made may only store them (``train.images =
  images``, ``DataSet(images)``, ``return data``) or summarize them
  (``tf.summary.image``: left out and reported): anything else is refused with
  its line, and so is a batch no name holds (``object_returns_shape``).
* **Each pipeline is migrated and proven on its own** (NOTE [ Several
  pipelines a function returns ]): the function cut down to it (the other
  pipelines' stages, not the plain values they start from, and every store as
  comment lines, the return returning its batch names), one pass after
  another, each on the file the last one wrote.
* **The tf.data version is the function itself**: ``<function>_dataset`` keeps
  every statement that builds the object and its plain values; each
  pipeline's stages give way to the Dataset chain its pass wrote (its names
  prefixed by the pipeline's, ``train_records``, when there are several), and
  its batch names are bound to that Dataset, so each store puts it where its
  batches were: the caller gets the same structure, the Dataset (its elements
  the batches in that order) at every place that held one of its batches.
  Built once, the object is made by one run of the function (a list shuffled
  with Python's ``random`` is split once for all the pipelines).
* **The proof is in place**: NOTE [ Pipelines returned in objects ]
  (:mod:`~queue_pipeline._migrate.object_returns_places`); the passes' own
  proofs pick batch-then-decode where it verifies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Callable

import libcst as cst

from queue_pipeline._migrate import codegen
from queue_pipeline._migrate import function_pipelines as _fp
from queue_pipeline._migrate import generated_names
from queue_pipeline._migrate import object_returns_assembly as _assembly
from queue_pipeline._migrate import object_returns_places as _places
from queue_pipeline._migrate import script as _script
from queue_pipeline._migrate import trace as _trace
from queue_pipeline._migrate.line_maps import at_lines, at_lines_of, unchanged_lines
from queue_pipeline._migrate.object_returns_shape import Shape, ret_text
from queue_pipeline._migrate.proven import MigrationResult, _prove, finish, merged
from queue_pipeline._migrate.static_check import check_names
from queue_pipeline._migrate.trace import MigrateError
from queue_pipeline._migrate.verify import with_batch_mates

__all__ = ["applies", "migrate_returned_object"]

_API = "queue-pipeline migrate"
_CODE = cst.Module([]).code_for_node


def applies(traced, function: str) -> bool:
    """Whether `function` returns its batches the way NOTE [ Several pipelines in one
    returned object ] migrates: in attributes of an object (else refused by it), or
    several pipelines' in a tuple, list or dict (nested, or through a name) it stores
    them in by name (those it does not are left to the other rules: lists a loop fills;
    ``return a, b`` is NOTE [ Several pipelines a function returns ], checked first)."""
    outputs = traced.outputs
    if _places.holds_objects(outputs):
        return True
    if not isinstance(outputs, (tuple, list, dict)) or len(_places.pipeline_groups(outputs)) < 2:
        return False
    real, original = _trace.read_source(traced.path)
    try:
        Shape(original, function, traced, real)
    except MigrateError:
        return False
    return True


def migrate_returned_object(
    path, function, traced, given, proof, options, argv, target, in_place, plain: Callable,
    *, callers: bool = False,
) -> MigrationResult:  # fmt: skip
    """NOTE [ Several pipelines in one returned object ]: each pipeline of `function`
    migrated on its own, then put together in ``<function>_dataset``, proven in place.

    `given` is (call, args, kwargs) as given, `proof` (args, kwargs, graph call) as
    traced; `plain` migrates one cut function (``api._plain``)."""
    call, args, kwargs = given
    traced_args, traced_kwargs, graph_call = proof
    verify, epochs, max_batches, batch_decode = options
    real, original = _trace.read_source(path)
    shape = Shape(original, function, traced, real)
    if callers:
        raise MigrateError(
            f"{_API}: {function} returns its batches in `{ret_text(shape)}`, and --callers "
            "rewrites callers reading batches. Fix: migrate without --callers, then read "
            "each Dataset of the returned structure through an iterator of its own in the "
            "callers."
        )
    version = f"{function}_dataset"
    if version in vars(traced.module):
        raise MigrateError(
            f"{_API}: the tf.data version of {function} would be named {version}, which "
            f"{real} defines already. Fix: rename it."
        )
    several = len(shape.groups) > 1
    prefixes = _fp.prefixes([g for g in shape.groups]) if several else [""]
    user_function = _fp.function_node(original, function)
    copy = _script.copy_path_for(real, kind="pipeline")
    source = original
    passes: list[MigrationResult] = []
    chains: list[tuple[list, list, str]] = []
    try:
        for k in range(len(shape.groups)):
            cut = shape.cut_for(source, k)
            with open(copy, "w", encoding="utf-8") as f:
                f.write(cut)
            lines = unchanged_lines(original, cut)
            try:
                result = plain(copy, function, (call, args, kwargs), options, argv, None,
                               False, False, split=False)  # fmt: skip
            except MigrateError as e:
                raise MigrateError(at_lines(str(e).replace(copy, real), real, lines)) from e
            new_fn = _fp.function_node(result.source, result.function)
            chains.append(_assembly.chain(_fp.function_node(cut, function), new_fn))
            if isinstance(cst.parse_expression(chains[-1][2]), cst.Tuple):
                raise shape.fail(
                    shape.body[-1],
                    "the tf.data version of a pipeline it returns there returns a loader "
                    "beside its Dataset (NOTE [ Preloaded arrays in a migrated TF1-mode "
                    "program ]), which no place of the object holds",
                    fix="return the batches (`return images, labels`) from a function of "
                    "their own, and migrate that",
                )
            passes.append(at_lines_of(_replaced_paths(result, copy, real), real, lines))
            source = _fp.without_cuts(
                _assembly.without(_fp.with_function(result.source, user_function), result.function)
            )
    finally:
        with contextlib.suppress(OSError):
            os.remove(copy)
    renames: dict[int, dict[str, str]] = {}
    versions = [_fp.function_node(p.source, p.function) for p in passes]
    node = _assembly.assembled(shape, user_function, chains, prefixes, version, versions, renames)
    source = _fp.without_cuts(_assembly.inserted_after(source, function, node))
    passes = [_assembly.renamed_steps(p, renames.get(k, {})) for k, p in enumerate(passes)]
    added = _assembly.added(original, source)
    check_names(source, [version], real)
    rewrite = codegen.Rewrite(source, added, version, [], [], [])
    verdict, steps, dropped, differences = merged(passes)
    if verify:
        verdict = _prove(
            traced, rewrite, traced_args, traced_kwargs, epochs, max_batches, argv, graph_call
        )
        # NOTE [ Examples that depend on their batch mates ]: the chains' names are prefixed
        per_batch = any(generated_names.maps_per_batch(p.added) for p in passes)
        verdict = with_batch_mates(verdict, per_batch)
    dropped = list(dropped) + [
        f"{real}:{shape.positions[shape.body[i]].start.line}: "
        f"`{_CODE(shape.body[i].with_changes(leading_lines=())).strip()}`: a summary of "
        f"a batch it returns in `{ret_text(shape)}`, where the tf.data version puts the "
        "Dataset (add it to the training step)"
        for i in shape.summaries
    ]
    differences = list(differences) + [
        f"{real}:{shape.positions[shape.body[-1]].start.line}: each pipeline's Dataset "
        "(its elements the batches, in order) is at every place of the returned "
        f"`{ret_text(shape)}` that held one of its batches "
        f"(NOTE [ Several pipelines in one returned object ])"
    ]
    return finish(
        path, original, source, target, in_place, rewrite, steps, dropped, differences,
        verdict, traced.module, not_run=traced.module.__dict__.get("__qp_skipped__", []),
    )  # fmt: skip


def _replaced_paths(result: MigrationResult, copy: str, real: str) -> MigrationResult:
    return dataclasses.replace(
        result,
        source=_fp.without_cuts(result.source),
        dropped=[d.replace(copy, real) for d in result.dropped],
        differences=[d.replace(copy, real) for d in result.differences],
    )
