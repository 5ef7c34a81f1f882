"""``queue-pipeline migrate``: a legacy input function rewritten as plain tf.data source code.

:func:`migrate` runs the function once (see :mod:`queue_pipeline._migrate.trace`),
writes a ``<name>_dataset`` version of it and of the helpers it calls, in
plain TensorFlow (``tf.data.Dataset.from_tensor_slices``, ``TFRecordDataset``
/ ``TextLineDataset`` / ``FixedLengthRecordDataset`` over the file names,
``interleave``, ``map`` of the user's own decode lines, ``shuffle``,
``batch`` / ``padded_batch``, ``prefetch(AUTOTUNE)``; see NOTE [ How a
legacy function is rewritten ] in :mod:`queue_pipeline._migrate.codegen`),
then proves it: :func:`queue_pipeline.compare` runs the original against the
migrated version (exact order where the legacy side is deterministic,
multisets otherwise) and the report says MATCH or DIFFER.

Nothing is lost: the original file is only rewritten with ``in_place=True``,
which keeps it as ``FILE.py.orig`` (refused if that exists); an existing
``out`` file is never overwritten; a failed verification writes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from typing import Sequence

from queue_pipeline._migrate import classes as _classes
from queue_pipeline._migrate import codegen
from queue_pipeline._migrate import foreign as _foreign
from queue_pipeline._migrate import function_pipelines as _fp
from queue_pipeline._migrate import module_stages as _module_stages
from queue_pipeline._migrate import object_returns as _objret
from queue_pipeline._migrate import nested_helpers as _nested
from queue_pipeline._migrate import plain_values as _plain_values
from queue_pipeline._migrate.callers import rewrite_callers
from queue_pipeline._migrate import script as _script
from queue_pipeline._migrate import arguments as _arguments
from queue_pipeline._migrate import trace as _trace

from queue_pipeline._migrate.loading import own_argv, split_argv
from queue_pipeline._migrate.trace import MigrateError
from queue_pipeline._migrate.class_targets import migrate_constructor, migrate_method
from queue_pipeline._migrate.inline import migrate_inline
from queue_pipeline._migrate.interleaved_stages import draws_at_random, stage_names
from queue_pipeline._migrate.input_fn_factories import migrate_factory
from queue_pipeline._migrate.returned_builders import ReturnedBuilder
from queue_pipeline._migrate.line_maps import (
    at_lines,
    at_lines_of,
    foreign_lines,
    foreign_step,
    unchanged_lines,
)
from queue_pipeline._migrate.proven import MigrationResult, finish, merged, rewrite_and_prove

__all__ = ["MigrateError", "MigrationResult", "migrate"]

_API = "queue-pipeline migrate"


def migrate(
    path: str,
    function: str,
    *,
    call: str | None = None,
    args: tuple | None = None,
    kwargs: dict | None = None,
    out: str | None = None,
    in_place: bool = False,
    verify: bool = True,
    epochs: int = 1,
    max_batches: int | None = None,
    batch_decode: bool | None = None,
    callers: bool = False,
    tf1: bool = False,
    argv: str | Sequence[str] | None = None,
) -> MigrationResult:
    """Rewrites ``function`` of the file at `path` as tf.data code, and proves it.

    Args:
      path: a Python file.
      function: the module-level function that builds the legacy pipeline and
        returns its batch (or per-record) tensors; empty: the pipeline the
        script builds at module level. A function that runs its own session
        (a training function with the pipeline inline) and the module level
        are never run to trace them: NOTE [ Migrating an inline pipeline ]
        in script.py; their session code is changed as a caller's is.
      call: its arguments, as written in a call (``"'train.tfrecords', 32"``);
        evaluated in the module's namespace.
      args, kwargs: its arguments as values (instead of `call`).
      out: write the migrated module there (refused if it exists).
      in_place: rewrite `path` itself, keeping the original as ``path.orig``
        (refused if that exists).
      verify: run :func:`queue_pipeline.compare` between the original and the
        migrated function.
      epochs: epochs to compare when the legacy plan records none.
      max_batches: stop the comparison after this many legacy batches (needed
        when the input repeats forever).
      batch_decode: write batch-then-decode code where the rules of NOTE
        [ Batch-then-decode in migrated code ] allow it. None (default): only
        when verifying, falling back to per-record decoding when the batched
        version does not verify MATCH; True without `verify` writes it
        unproven.
      callers: also rewrite the functions of the file that call `function`
        (session loops): the call reads the tf.data version through a one-shot
        iterator, and the Coordinator / start_queue_runners lines go when no
        other queue remains (NOTE [ Rewriting the callers of a migrated
        function ]).  In TF1 mode a function over large preloaded arrays
        returns ``(dataset, load)``; its callers then run ``load(sess)`` and an
        initializable iterator's initializer where their runners started
        (NOTE [ Preloaded arrays in a migrated TF1-mode program ]).
      tf1: the file is written for TensorFlow 1.x itself (``import tensorflow
        as tf`` meaning ``tf.compat.v1``): everything runs as under
        ``queue-pipeline run --tf1``, which disables v2 behaviour for the rest
        of the process.
      argv: the program's own command-line arguments (a list, or a string
        split as a shell would), seen as ``sys.argv[1:]`` while the file is
        loaded, traced and proven; default none, so flags keep their
        defaults. Migrate's own command line never reaches the file.

    Returns:
      A :class:`MigrationResult`.

    Raises:
      MigrateError: the file does not parse or import, the function does not
        exist, fails with these arguments or builds no queue pipeline, a
        statement cannot be migrated, or a file would be overwritten.
    """
    mode: contextlib.AbstractContextManager = contextlib.nullcontext()
    if tf1:
        from queue_pipeline._scripts import tf1 as _tf1_script  # noqa: PLC0415

        mode = _tf1_script.tf1_mode()
    # The program's command line, never migrate's, whatever of the file reads
    # sys.argv (tf.app.flags parse it on first use, while `--call` runs too).
    with mode, own_argv(os.path.realpath(path), split_argv(argv)):
        if out is not None and in_place:
            raise MigrateError(f"{_API}: give `out` or `in_place`, not both.")
        target = out if out is not None else (path if in_place else None)
        if out is not None and os.path.exists(out):
            raise MigrateError(
                f"{_API}: `--out` {out!r} exists; it is never overwritten. Fix: remove it or "
                "pick another name."
            )
        if in_place and os.path.exists(path + ".orig"):
            raise MigrateError(
                f"{_API}: {path}.orig exists (a previous --in-place keeps the original there). "
                "Fix: move it away first."
            )
        if call is not None and (args is not None or kwargs is not None):
            raise MigrateError(f"{_API}: give `call` or `args` / `kwargs`, not both.")
        program_argv = split_argv(argv)
        method = bool(function) and "." in function  # NOTE [ Migrating a method ]
        if method or (function and _classes.defines_class(path, function)):
            # NOTE [ Migrating a constructor ] for a class
            if args is not None or kwargs is not None:
                what = "a method: give its class's" if method else "a class: give its"
                raise MigrateError(
                    f"{_API}: {function} is {what} constructor's arguments with `call` "
                    "(--call), not `args` / `kwargs`."
                )
            options = (verify, epochs, max_batches, batch_decode)
            if method:
                return migrate_method(
                    path, function, call, *options, program_argv, target=target,
                    in_place=in_place,
                )  # fmt: skip
            return migrate_constructor(
                path, function, call, target, in_place, *options, program_argv
            )
        if not function or _holds_session_code(path, function):
            return migrate_inline(
                path, function or None, call, args, kwargs, target, in_place, verify, epochs,
                max_batches, batch_decode, program_argv,
            )  # fmt: skip
        given, options = (call, args, kwargs), (verify, epochs, max_batches, batch_decode)
        real, original = _trace.read_source(path)
        try:  # NOTE [ A nested function that makes a stage ]
            inlined = _nested.inline(original, function)
        except _nested.Refusal as e:
            raise MigrateError(_taken(e, path, function, given, program_argv, real)) from e
        if inlined is not None:
            return _inlined(
                path, function, inlined, given, options, program_argv, target, in_place, callers
            )  # fmt: skip
        try:
            return _plain(path, function, given, options, program_argv, target, in_place, callers)
        except ReturnedBuilder as e:  # NOTE [ Migrating an input_fn factory ]
            return migrate_factory(
                e, path, function, given, options, program_argv, target, in_place, callers,
                plain=_plain,
            )  # fmt: skip


def _plain(
    path, function, given, options, program_argv, target, in_place, callers, split=True
) -> MigrationResult:  # fmt: skip
    """A module-level function that returns its batches: traced, rewritten and proven;
    several pipelines each on its own (NOTE [ Several pipelines a function returns ])."""
    call, args, kwargs = given
    verify, epochs, max_batches, batch_decode = options
    real, original = _trace.read_source(path)
    # NOTE [ Following a function of another module ]: traced from a copy
    foreign = _foreign.lift(original, real)
    traced_path = _script.copy_path_for(real, kind="foreign") if foreign else path
    given = (call, args, kwargs)
    try:
        module, traced, args, kwargs, graph_call = _trace_plain(
            traced_path, foreign, function, program_argv, *given
        )
        groups = _fp.pipelines(traced.outputs) if split else []
        cut = _fp.returned(original, function) if len(groups) > 1 else None
        if cut is not None and len(cut.elements) == len(traced.outputs):
            if callers:
                raise MigrateError(
                    f"{_API}: {function} returns the batches of {len(groups)} pipelines, "
                    "and --callers rewrites the callers of one. Fix: migrate without "
                    f"--callers, then read each Dataset {function}_dataset returns "
                    "through an iterator of its own in the callers."
                )
            # pipelines split from data drawn at random come from one run of the function:
            # NOTE [ Several pipelines in one returned object ] builds them in place
            if foreign is not None or not draws_at_random(
                traced.module, function, args, kwargs, program_argv, graph_call
            ):
                return _several(
                    path, function, groups, given, options, program_argv, target, in_place,
                    traced.module, stage_names(traced, function),
                )  # fmt: skip
        if split and foreign is None and _objret.applies(traced, function):
            # NOTE [ Several pipelines in one returned object ]
            return _objret.migrate_returned_object(
                path, function, traced, given, (args, kwargs, graph_call), options,
                program_argv, target, in_place, _plain, callers=callers,
            )  # fmt: skip
        objects = _foreign.objects_called(traced, original) if foreign is None else {}
        if objects:  # methods of the program's objects handed a queue: traced again
            foreign = _foreign.lift(original, real, objects)
        if foreign is not None and traced_path == path:
            traced_path = _script.copy_path_for(real, kind="foreign")
            module, traced, args, kwargs, graph_call = _trace_plain(
                traced_path, foreign, function, program_argv, *given
            )
        rewrite, verdict, notes = rewrite_and_prove(
            traced, foreign.source if foreign else original, verify, batch_decode, args,
            kwargs, epochs, max_batches, program_argv, graph_call,
        )  # fmt: skip
    except MigrateError as e:
        if foreign is None or isinstance(e, ReturnedBuilder):
            raise
        raise MigrateError(foreign_lines(foreign, str(e), traced_path, real)) from e
    finally:
        if foreign is not None:
            with contextlib.suppress(OSError):
                os.remove(traced_path)
    source, steps = rewrite.source, list(rewrite.steps)
    if foreign is not None:
        source = foreign.finish(foreign.write_back(source, rewrite.function))
        steps = [foreign_step(foreign, step) for step in steps]
        fix = functools.partial(foreign_lines, foreign, copy=traced_path, path=real)
        rewrite = dataclasses.replace(
            rewrite,
            added=foreign.finish(rewrite.added),
            dropped=[fix(d) for d in rewrite.dropped],
            differences=[fix(d) for d in rewrite.differences],
        )
        notes = [fix(n) for n in notes]
    if callers and _plain_values.plain_among(
        traced.outputs
    ):  # NOTE [ Plain values among the batches ]
        raise MigrateError(
            f"{_API}: {function} returns plain values among its batches, and --callers "
            f"rewrites callers of a function returning them last. Fix: migrate without "
            f"--callers, then unpack {rewrite.function}'s (dataset, plain values...) in the "
            "callers."
        )
    if callers:
        skip = set(rewrite.names) | {function}
        loaders = _trace.loader_count(traced.outputs)
        source, changed = rewrite_callers(
            source, function, rewrite.function, skip, loaders, len(rewrite.loaders),
            _plain_values.plain_beside(traced.outputs), _plain_values.nones_dropped(traced.outputs),
        )  # fmt: skip
        steps += [codegen.Step(0, f"caller {caller}", what) for caller, what in changed]
    return finish(
        path, original, source, target, in_place, rewrite, steps, rewrite.dropped,
        rewrite.differences + notes, verdict, traced.module,
        not_run=module.__dict__.get("__qp_skipped__", []),
    )  # fmt: skip


def _taken(refusal: _nested.Refusal, path, function, given, argv, real) -> str:
    """The refusal of a nested stage helper at the definition the run took (traced)."""
    message = refusal.choices[0][2]
    if len(refusal.choices) > 1:
        try:
            traced = _trace_plain(path, None, function, argv, *given)[1]
        except MigrateError:
            traced = None
        ran = set(traced.calls) if traced is not None else set()
        message = next((text for c, n, text in refusal.choices if (c, n) in ran), message)
    return message.replace("<path>", real)


def _inlined(
    path, function, inlined, given, options, argv, target, in_place, callers
) -> MigrationResult:  # fmt: skip
    """NOTE [ A nested function that makes a stage ]: `function` migrated from a copy of
    the file with its nested stage helpers inlined, reported in the file's lines and
    written back as the user wrote it."""
    real, original = _trace.read_source(path)
    copy = _script.copy_path_for(real, kind="pipeline")
    lines = inlined.line_map()
    with open(copy, "w", encoding="utf-8") as f:
        f.write(inlined.source)
    try:
        result = _plain(copy, function, given, options, argv, None, False, callers)
    except MigrateError as e:
        raise MigrateError(at_lines(str(e).replace(copy, real), real, lines)) from e
    finally:
        with contextlib.suppress(OSError):
            os.remove(copy)
    result = at_lines_of(
        dataclasses.replace(
            result,
            dropped=[d.replace(copy, real) for d in result.dropped],
            differences=[d.replace(copy, real) for d in result.differences],
        ),
        real,
        lines,
    )
    source = _fp.with_function(result.source, _fp.function_node(original, function))
    rewrite = codegen.Rewrite(source, result.added, result.function, [], [], [])
    return finish(
        path, original, source, target, in_place, rewrite, result.steps, result.dropped,
        result.differences, result.verdict, result.original, not_run=result.not_run,
    )  # fmt: skip


def _several(
    path, function, groups, given, options, argv, target, in_place, module, stages=None
) -> MigrationResult:  # fmt: skip
    """NOTE [ Several pipelines a function returns ]: each pipeline of `function` migrated
    and proven on its own, then ``<function>_dataset`` returning their Datasets; `stages`:
    the names holding pipeline stages (the other pipelines' plain values stay in a cut)."""
    real, original = _trace.read_source(path)
    split = _fp.returned(original, function)
    assert split is not None  # checked by the caller
    names = [[split.elements[i] for i in group] for group in groups]
    prefixes = _fp.prefixes(names)
    versions = [f"{function}_{prefix}_dataset" for prefix in prefixes]
    taken = [v for v in versions + [f"{function}_dataset"] if v in vars(module)]
    if taken:
        raise MigrateError(
            f"{_API}: {function} returns {len(groups)} pipelines, and their tf.data versions "
            f"would be named {', '.join(taken)}, which {real} defines already. Fix: rename it."
        )
    user_function = _fp.function_node(original, function)
    copy = _script.copy_path_for(real, kind="pipeline")
    source = original
    passes: list[MigrationResult] = []
    try:
        # the last first: each is written right after the function, so they end up in order
        for group, version in reversed(list(zip(groups, versions))):
            current = _fp.returned(source, function)
            assert current is not None
            cut = _fp.only(source, function, current, group, stages)
            with open(copy, "w", encoding="utf-8") as f:
                f.write(cut)
            lines = unchanged_lines(original, cut)
            try:
                result = _plain(copy, function, given, options, argv, None, False, False,
                                split=False)  # fmt: skip
            except MigrateError as e:
                raise MigrateError(at_lines(str(e).replace(copy, real), real, lines)) from e
            result = dataclasses.replace(
                result,
                source=_fp.without_cuts(result.source),
                added=_fp.without_cuts(result.added).replace(result.function, version),
                dropped=[d.replace(copy, real) for d in result.dropped],
                differences=[d.replace(copy, real) for d in result.differences],
            )
            passes.insert(0, at_lines_of(result, real, lines))
            source = _fp.renamed(
                _fp.with_function(result.source, user_function), result.function, version
            )
    finally:
        with contextlib.suppress(OSError):
            os.remove(copy)
    source = _fp.with_wrapper(source, function, versions, prefixes)
    verdict, steps, dropped, differences = merged(passes)
    added = "".join(p.added for p in passes) + _fp.function_text(source, f"{function}_dataset")
    rewrite = codegen.Rewrite(source, added, f"{function}_dataset", [], [], [])
    return finish(
        path, original, source, target, in_place, rewrite, steps, dropped, differences,
        verdict, module,
    )  # fmt: skip


def _trace_plain(path, foreign, function, argv, call, args, kwargs) -> tuple:
    """(module, trace, args, kwargs, graph call) of `function` of the file `path`, or of
    a copy there with the followed functions when `foreign` is given."""
    if foreign is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(foreign.source)
    # NOTE [ A queue made at module level ]: made again in each graph the function runs in
    stages = _module_stages.find(_trace.read_source(path)[1], function, os.path.realpath(path))
    with _module_stages.deferred(stages):
        module, _ = _trace.load_module(path, function, argv, call)
    _module_stages.wrap(module, function, stages, os.path.realpath(path))
    graph_call = None
    if call is not None or (args is None and kwargs is None):
        args, kwargs, graph_call = _arguments.call_arguments(module, call)
    args, kwargs = tuple(args or ()), dict(kwargs or {})
    if graph_call is None:  # NOTE [ A default made at import ]
        kwargs.update(_arguments.import_constants(getattr(module, function, None), args, kwargs))
    traced = _trace.trace(
        path, function, args, kwargs, module=module, argv=argv, graph_call=graph_call
    )
    _module_stages.held(module)
    return module, traced, args, kwargs, graph_call


def _holds_session_code(path: str, function: str) -> bool:
    """Whether `function` of the file runs a Session or queue runners itself (never call it)."""
    import libcst as cst  # noqa: PLC0415 - the migration's own dependency

    return any(
        isinstance(s, cst.FunctionDef) and s.name.value == function and _script.has_session_code(s)
        for s in _classes.top_level(path)
    )
