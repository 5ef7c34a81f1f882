"""Pipelines built inline, beside their session code: NOTE [ Migrating an inline pipeline ] in
:mod:`queue_pipeline._migrate.script`, one after another (NOTE [ Several pipelines in one
function ])."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import os
import sys

from queue_pipeline._migrate import codegen
from queue_pipeline._migrate import graph_checks
from queue_pipeline._migrate import foreign as _foreign
from queue_pipeline._migrate import generated_names
from queue_pipeline._migrate import preloaded as _preloaded
from queue_pipeline._migrate import script as _script
from queue_pipeline._migrate import trace as _trace
from queue_pipeline._migrate import unwrap as _unwrap
from queue_pipeline._migrate import verify as _verify
import tensorflow as tf

from queue_pipeline._migrate.loading import MigrateError, NoPipelineError, reads_arguments

from queue_pipeline._migrate.line_maps import at_lines, at_lines_of, foreign_step, unchanged_lines
from queue_pipeline._migrate.proven import MigrationResult, finish, merged, rewrite_and_prove
from queue_pipeline._migrate.script_reads import quoted_read
from queue_pipeline._migrate.static_check import check_rewritten_scope

__all__ = ["migrate_inline"]

_API = "queue-pipeline migrate"


def migrate_inline(
    path, function, call, args, kwargs, target, in_place, verify, epochs, max_batches,
    batch_decode, argv,
) -> MigrationResult:  # fmt: skip
    """A pipeline built beside its session code: NOTE [ Migrating an inline pipeline ].

    `function` is the function that holds both, or None for the module level.
    Several pipelines there are migrated one after another, each proven on its
    own (NOTE [ Several pipelines in one function ]).
    """
    if function is None and (call or args or kwargs):
        raise MigrateError(
            f"{_API}: a script's module-level pipeline takes no arguments; `--call` is for "
            "FILE.py:FUNCTION."
        )
    real, original = _trace.read_source(path)
    given = (call, args, kwargs, verify, epochs, max_batches, batch_decode, argv)
    source = original
    passes: list[MigrationResult] = []
    while True:
        lines = unchanged_lines(original, source)
        try:
            result = _inline_pass(path, real, source, function, *given, user_source=original)
        except MigrateError as e:
            if not passes:
                raise
            raise MigrateError(at_lines(str(e), real, lines)) from e
        passes.append(at_lines_of(result, real, lines))
        source = result.source
        if len(passes) == _MAX_PIPELINES or not _script.has_pipeline(source, real, function):
            break
    first, last = passes[0], passes[-1]
    verdict, _, dropped, differences = merged(passes)
    rewrite = codegen.Rewrite(source, "".join(p.added for p in passes), first.function, [], [], [])
    return finish(
        path, original, source, target, in_place, rewrite,
        [
            s
            for p in passes
            for s in p.steps
            # an earlier pass's session code kept its Coordinator for the later pipelines
            if p is last or s.line or not s.legacy.startswith("the session code")
        ],
        dropped, differences, verdict, last.original, script=True,
    )  # fmt: skip


# Pipelines migrated one after another in one function, at most.
_MAX_PIPELINES = 8


def _inline_pass(
    path, real, original, function, call, args, kwargs, verify, epochs, max_batches,
    batch_decode, argv, *, user_source=None,
) -> MigrationResult:  # fmt: skip
    """One pipeline of the source `original` of the file `path`, migrated (nothing written).

    `user_source`: the file as the user wrote it, when `original` holds an
    earlier pass's written code (NOTE [ Names the written code binds ]).
    """
    copy = _script.copy_path_for(real)
    wrapped = _script.wrap(original, real, function)
    foreign = None  # NOTE [ Following a function of another module ], in the copy
    # The copy and its migrated version parse the file's flags when loaded
    # (script._flag_setup): from the program's own argv, as for `python FILE.py ARGV`.
    try:
        foreign = _foreign.lift(wrapped.source, copy)
        text = foreign.source if foreign is not None else wrapped.source
        traced, args, kwargs = _trace_copy(copy, text, call, args, kwargs, argv)
        outputs = traced.outputs if isinstance(traced.outputs, tuple) else (traced.outputs,)
        tensors = [
            n for n, v in zip(wrapped.names, outputs) if isinstance(v, (tf.Tensor, tf.SparseTensor))
        ]
        if tensors and tensors != wrapped.names:  # e.g. the reader's `key`, a queue
            readers = [n for n, v in zip(wrapped.names, outputs) if traced.kind_of(v) == "reader"]
            wrapped = _script.wrap(original, real, function, tensors, readers)
            foreign = _foreign.lift(wrapped.source, copy)
            text = foreign.source if foreign is not None else wrapped.source
            traced, args, kwargs = _trace_copy(copy, text, call, args, kwargs, argv)
        with generated_names.script_scope(original, wrapped.scope, user_source):
            rewrite, verdict, notes = rewrite_and_prove(
                traced, text, verify, batch_decode, args, kwargs, epochs, max_batches, argv
            )
        rewritten = rewrite.source
        if foreign is not None:
            rewritten = foreign.finish(foreign.write_back(rewritten, rewrite.function))
            steps_of = [foreign_step(foreign, step) for step in rewrite.steps]
            # the copy's own lines are the wrapped copy's: mapped to the file's below
            fix = functools.partial(foreign.map_lines, copy_path=copy)
            rewrite = dataclasses.replace(
                rewrite,
                steps=steps_of,
                dropped=[fix(d) for d in rewrite.dropped],
                differences=[fix(d) for d in rewrite.differences],
            )
            notes = [fix(n) for n in notes]
        source, removed = _unwrap.unwrap(
            wrapped, original, rewritten, rewrite.function,
            initializable=_reads_variables(traced),
        )  # fmt: skip
        check_rewritten_scope(original, source, wrapped.scope, real)
    except NoPipelineError as e:
        first, last = wrapped.region
        first += wrapped.lead.count("\n")  # the first statement, not the lines above it
        where = f"{function}()" if function else "the script"
        raise MigrateError(
            f"{_API}: {real}:{first}: the session code of {where} runs tensors that no "
            f"producer, reader or batching call made (lines {first}-{last}, from the first "
            "queue or input call to the last statement before the session): a queue the "
            "program fills itself with ops that read no files and hold no arrays (a "
            "variable, another state) is not an input pipeline migrate rewrites. Fix: "
            "migrate the code that reads the input files, or write "
            "the queue's ops as a tf.data.Dataset by hand: `enqueue_many([a, b])` splits "
            "the first axis, Dataset.from_tensor_slices((a, b)).repeat(); `enqueue([a, b])` "
            "adds one element, Dataset.from_tensors((a, b)).repeat(); then .map(...) for the "
            "ops on the dequeued values."
        ) from e
    except MigrateError as e:
        message = foreign.map_lines(str(e), copy) if foreign is not None else str(e)
        message = _script.map_lines(message, wrapped, copy, real)
        named = f"{function}()" if function else "the script"
        message = message.replace(f"{_script.WRAPPER}() ", f"{named} ")  # the user's words
        # NOTE [ A refusal at the line that reads the pipeline's names ]
        message = quoted_read(message, wrapped.names, original, real, wrapped.region[1])
        raise MigrateError(message) from e
    finally:
        with contextlib.suppress(OSError):
            os.remove(copy)
    steps = [
        dataclasses.replace(step, line=wrapped.script_line(step.line)) if step.line else step
        for step in rewrite.steps
        if not step.legacy.startswith(f"return {', '.join(wrapped.names)}")
    ]
    differences = [
        d.replace(_preloaded.returns_loader("load"), _preloaded.INLINE_LOADER).replace(
            f"{_script.WRAPPER}'s ", "the pipeline's "
        )
        for d in rewrite.differences
        if _script.LOADER not in d
    ]
    if _script.LOADER in rewrite.source:
        differences.append(
            "the pipeline reads variables: it is read through "
            "tf.compat.v1.data.make_initializable_iterator, initialized where "
            "start_queue_runners was (after the variables are loaded)"
        )
        if verdict is not None:
            verdict = dataclasses.replace(
                verdict,
                reason=verdict.reason.replace(
                    f"{_script.LOADER} run", "the session's variable loads run"
                ),
            )
    if verdict is not None and function is None:
        verdict = _for_a_script(verdict, original)
    where = f"{function}()" if function else "the script"
    if removed:
        steps.append(codegen.Step(0, f"the session code of {where}", "; ".join(removed)))
    fix = functools.partial(_script.map_lines, wrapped=wrapped, copy_path=copy, script_path=real)
    name = f"{function}() (inline)" if function else "(module level)"
    return finish(
        path, original, source, None, False,
        dataclasses.replace(rewrite, function=name), steps,
        [fix(d) for d in rewrite.dropped], [fix(d) for d in differences + notes],
        verdict, traced.module, script=True,
    )  # fmt: skip


def _for_a_script(verdict: _verify.Verdict, source: str) -> _verify.Verdict:
    """`verdict` with its advice of ``--call`` said for a script, which takes no arguments.

    A script's values are its literals, or its flags where it reads its
    command line (then ``--argv`` sets them).
    """
    flags = (
        ", or give the flag that sets it with --argv" if reads_arguments(ast.parse(source)) else ""
    )
    how = f"a script takes no --call: change the value in a copy of the script{flags}"
    reason = verdict.reason.replace("(--call)", f"({how})")
    reason = reason.replace("in --call", f"in a copy of the script{flags}")
    return dataclasses.replace(verdict, reason=reason)


def _reads_variables(traced: _trace.Trace) -> bool:
    """Whether the traced pipeline builds variables of its own (no one-shot iterator reads them).

    The epoch counters of producers are local variables: they are not counted;
    nor are variables only the code before the pipeline built (the model of a
    first pipeline, NOTE [ Several pipelines in one function ]).
    """
    graph = _trace.graph_of(traced.outputs)
    counters = {v.op.name for v in graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)}
    ops = [
        getattr(t, "op", t)
        for t in tf.nest.flatten(traced.outputs, expand_composites=True)
        if isinstance(t, (tf.Tensor, tf.Operation))
    ]
    return bool(graph_checks.variables_read(ops) - counters)


def _trace_copy(copy: str, text: str, call, args, kwargs, argv) -> tuple[_trace.Trace, tuple, dict]:
    """Writes the wrapped copy of a file (`text`) and traces its pipeline function with the
    arguments."""
    with open(copy, "w", encoding="utf-8") as f:
        f.write(text)
    name = os.path.splitext(os.path.basename(copy))[0]
    for key in [k for k in sys.modules if k == name or k.endswith("." + name)]:
        del sys.modules[key]  # a first copy, traced before its names were narrowed
    module, _ = _trace.load_module(copy, _script.WRAPPER, argv, call)
    if call is not None or (args is None and kwargs is None):
        args, kwargs = _trace.parse_call(module, call)
    args, kwargs = tuple(args or ()), dict(kwargs or {})
    traced = _trace.trace(copy, _script.WRAPPER, args, kwargs, module=module, argv=argv)
    return traced, args, kwargs
