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
import difflib
import functools
import os
import re
import sys
import types
from typing import Sequence

from queue_pipeline._migrate import classes as _classes
from queue_pipeline._migrate import constructor_pipelines as _pipelines
from queue_pipeline._migrate import codegen
from queue_pipeline._migrate import graph_checks
from queue_pipeline._migrate import foreign as _foreign
from queue_pipeline._migrate import methods as _methods
from queue_pipeline._migrate.callers import rewrite_callers
from queue_pipeline._migrate import preloaded as _preloaded
from queue_pipeline._migrate import script as _script
from queue_pipeline._migrate import trace as _trace
from queue_pipeline._migrate import verify as _verify
import tensorflow as tf

from queue_pipeline._compare.harness import PipelineError
from queue_pipeline._migrate.loading import own_argv, split_argv
from queue_pipeline._migrate.static_check import check_names
from queue_pipeline._migrate.trace import MigrateError

__all__ = ["MigrateError", "MigrationResult", "migrate"]

_API = "queue-pipeline migrate"


@dataclasses.dataclass
class MigrationResult:
    """What :func:`migrate` did.

    Attributes:
      source: the migrated module's source (the original functions kept, each
        migrated function followed by its tf.data version).
      diff: a unified diff from the original to `source`.
      added: just the added functions, in source order (what to review).
      function: the name of the tf.data version of the target function.
      steps: each legacy call, what replaced it and its arguments' fates.
      dropped: statements left out of the tf.data code, with file:line and why.
      differences: where the tf.data code differs from the legacy pipeline on
        purpose.
      verdict: ``MATCH``, ``DIFFER`` or ``UNVERIFIED`` (with its reason).
      written: the path written, or None.
      original: the legacy module (for :meth:`load`); for a script, the copy
        that holds its module-level pipeline as a function.
      script: the file's module-level pipeline was migrated (no FUNCTION).
      not_run: the file's top-level statements that were not run, with
        file:line (NOTE [ What migrate runs of the user's file ]).
    """

    source: str
    diff: str
    added: str
    function: str
    steps: list[codegen.Step]
    dropped: list[str]
    differences: list[str]
    verdict: _verify.Verdict | None
    written: str | None
    original: types.ModuleType | None = dataclasses.field(default=None, repr=False)
    script: bool = False
    not_run: list[str] = dataclasses.field(default_factory=list)

    def load(self) -> types.ModuleType:
        """The migrated module, imported beside the original (``result.load().f_dataset(...)``)."""
        if self.script:
            raise MigrateError(
                f"{_API}: a migrated script is not imported (its session code would run); "
                "run it (python NEW.py)."
            )
        if self.original is None:
            raise MigrateError(f"{_API}: this result has no original module to load beside.")
        return _verify.load_migrated(self.original, self.source, self.written)

    @property
    def exit_status(self) -> int:
        """0 when verified MATCH (or not verified), 1 on DIFFER; as ``compare``."""
        return 1 if self.verdict is not None and self.verdict.status == "DIFFER" else 0

    def report(self) -> str:
        """The migration report as text."""
        lines = [f"queue-pipeline migrate: {self.function}"]
        lines.append("Legacy calls:")
        for step in self.steps:
            where = f"line {step.line}" if step.line else "session code"
            where = f"{step.file}:{step.line}" if step.file else where
            lines.append(f"  {where}: {step.legacy}")
            lines.append(f"      -> {step.replacement}")
            for arg, fate in step.fates:
                lines.append(f"      {arg}: {fate}")
        if self.dropped:
            lines.append("Not migrated:")
            lines += [f"  {d}" for d in self.dropped]
        if self.differences:
            lines.append("Differences on purpose:")
            lines += [f"  {d}" for d in self.differences]
        if self.not_run:
            lines.append("Not run of the file (the function does not need it):")
            lines += [f"  {d}" for d in self.not_run]
        if self.verdict is not None:
            lines.append(f"Verify: {self.verdict.status} ({self.verdict.reason})")
            if self.verdict.status == "DIFFER" and self.verdict.report is not None:
                lines.append(str(self.verdict.report))
        if self.written:
            lines.append(f"Wrote {self.written}")
        return "\n".join(lines) + "\n"


def _prove(
    traced, rewrite, args, kwargs, epochs, max_batches, argv=(), graph_call=None
) -> _verify.Verdict:
    """The verification of one rewrite; a failure to run it is a MigrateError.

    The migrated module is loaded from a temporary file: the target is
    written only after the proof.
    """
    migrated = _verify.load_migrated(traced.module, rewrite.source, None)
    try:
        with own_argv(traced.module.__file__ or traced.path, argv):
            return _verify.verify(
                traced,
                migrated,
                rewrite.function,
                args,
                kwargs,
                epochs=epochs,
                max_batches=max_batches,
                graph_call=graph_call,
            )
    except (PipelineError, ValueError, TypeError, tf.errors.OpError) as e:
        if rewrite.batched:  # the batched decoder failed: retried per record
            return _verify.Verdict("DIFFER", f"the batched decode failed: {e}")
        raise MigrateError(
            f"{_API}: the migrated code was written nowhere: verifying it failed: {e}"
        ) from e


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
                return _migrate_method(
                    path, function, call, *options, program_argv, target=target,
                    in_place=in_place,
                )  # fmt: skip
            return _migrate_constructor(
                path, function, call, target, in_place, *options, program_argv
            )
        if not function or _holds_session_code(path, function):
            return _migrate_inline(
                path, function or None, call, args, kwargs, target, in_place, verify, epochs,
                max_batches, batch_decode, program_argv,
            )  # fmt: skip
        real, original = _trace.read_source(path)
        # NOTE [ Following a function of another module ]: traced from a copy
        foreign = _foreign.lift(original, real)
        traced_path = _script.copy_path_for(real, kind="foreign") if foreign else path
        given = (call, args, kwargs)
        try:
            module, traced, args, kwargs, graph_call = _trace_plain(
                traced_path, foreign, function, program_argv, *given
            )
            objects = _foreign.objects_called(traced, original) if foreign is None else {}
            if objects:  # methods of the program's objects handed a queue: traced again
                foreign = _foreign.lift(original, real, objects)
            if foreign is not None and traced_path == path:
                traced_path = _script.copy_path_for(real, kind="foreign")
                module, traced, args, kwargs, graph_call = _trace_plain(
                    traced_path, foreign, function, program_argv, *given
                )
            rewrite, verdict, notes = _rewrite_and_prove(
                traced, foreign.source if foreign else original, verify, batch_decode, args,
                kwargs, epochs, max_batches, program_argv, graph_call,
            )  # fmt: skip
        except MigrateError as e:
            if foreign is None:
                raise
            raise MigrateError(_foreign_lines(foreign, str(e), traced_path, real)) from e
        finally:
            if foreign is not None:
                with contextlib.suppress(OSError):
                    os.remove(traced_path)
        source, steps = rewrite.source, list(rewrite.steps)
        if foreign is not None:
            source = foreign.finish(foreign.write_back(source, rewrite.function))
            steps = [_foreign_step(foreign, step) for step in steps]
            fix = functools.partial(_foreign_lines, foreign, copy=traced_path, path=real)
            rewrite = dataclasses.replace(
                rewrite,
                added=foreign.finish(rewrite.added),
                dropped=[fix(d) for d in rewrite.dropped],
                differences=[fix(d) for d in rewrite.differences],
            )
            notes = [fix(n) for n in notes]
        if callers:
            skip = set(rewrite.names) | {function}
            loaders = _trace.loader_count(traced.outputs)
            source, changed = rewrite_callers(
                source, function, rewrite.function, skip, loaders, len(rewrite.loaders),
                _verify.plain_beside(traced.outputs),
            )  # fmt: skip
            steps += [codegen.Step(0, f"caller {caller}", what) for caller, what in changed]
        return _finish(
            path, original, source, target, in_place, rewrite, steps, rewrite.dropped,
            rewrite.differences + notes, verdict, traced.module,
            not_run=module.__dict__.get("__qp_skipped__", []),
        )  # fmt: skip


def _migrate_inline(
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
        lines = _unchanged_lines(original, source)
        try:
            result = _inline_pass(path, real, source, function, *given)
        except MigrateError as e:
            if not passes:
                raise
            raise MigrateError(_at_lines(str(e), real, lines)) from e
        passes.append(_at_lines_of(result, real, lines))
        source = result.source
        if len(passes) == _MAX_PIPELINES or not _script.has_pipeline(source, real, function):
            break
    first, last = passes[0], passes[-1]
    verdict, _, dropped, differences = _merged(passes)
    rewrite = codegen.Rewrite(source, "".join(p.added for p in passes), first.function, [], [], [])
    return _finish(
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


def _unchanged_lines(original: str, current: str) -> dict[int, int]:
    """Line numbers of `current` (1-based) that are unchanged lines of `original`, mapped."""
    matcher = difflib.SequenceMatcher(
        a=original.splitlines(), b=current.splitlines(), autojunk=False
    )
    found = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            found[block.b + k + 1] = block.a + k + 1
    return found


def _at_lines(text: str, real: str, lines: dict[int, int]) -> str:
    """`text` with ``REAL:LINE`` of the file a pass read as the original file's lines."""
    if all(k == v for k, v in lines.items()):
        return text
    return re.sub(
        re.escape(real) + r":(\d+)",
        lambda mt: f"{real}:{lines.get(int(mt.group(1)), mt.group(1))}",
        text,
    )


def _at_lines_of(result: MigrationResult, real: str, lines: dict[int, int]) -> MigrationResult:
    """`result` of a pass, its steps and notes in the original file's lines."""
    return dataclasses.replace(
        result,
        steps=[
            dataclasses.replace(s, line=lines.get(s.line, s.line)) if s.line else s
            for s in result.steps
        ],
        dropped=[_at_lines(d, real, lines) for d in result.dropped],
        differences=[_at_lines(d, real, lines) for d in result.differences],
    )


def _inline_pass(
    path, real, original, function, call, args, kwargs, verify, epochs, max_batches,
    batch_decode, argv,
) -> MigrationResult:  # fmt: skip
    """One pipeline of the source `original` of the file `path`, migrated (nothing written)."""
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
            wrapped = _script.wrap(original, real, function, tensors)
            foreign = _foreign.lift(wrapped.source, copy)
            text = foreign.source if foreign is not None else wrapped.source
            traced, args, kwargs = _trace_copy(copy, text, call, args, kwargs, argv)
        rewrite, verdict, notes = _rewrite_and_prove(
            traced, text, verify, batch_decode, args, kwargs, epochs, max_batches, argv
        )
        rewritten = rewrite.source
        if foreign is not None:
            rewritten = foreign.finish(foreign.write_back(rewritten, rewrite.function))
            steps_of = [_foreign_step(foreign, step) for step in rewrite.steps]
            # the copy's own lines are the wrapped copy's: mapped to the file's below
            fix = functools.partial(foreign.map_lines, copy_path=copy)
            rewrite = dataclasses.replace(
                rewrite,
                steps=steps_of,
                dropped=[fix(d) for d in rewrite.dropped],
                differences=[fix(d) for d in rewrite.differences],
            )
            notes = [fix(n) for n in notes]
        source, removed = _script.unwrap(
            wrapped, original, rewritten, rewrite.function,
            initializable=_reads_variables(traced),
        )  # fmt: skip
    except MigrateError as e:
        message = foreign.map_lines(str(e), copy) if foreign is not None else str(e)
        raise MigrateError(_script.map_lines(message, wrapped, copy, real)) from e
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
    where = f"{function}()" if function else "the script"
    if removed:
        steps.append(codegen.Step(0, f"the session code of {where}", "; ".join(removed)))
    fix = functools.partial(_script.map_lines, wrapped=wrapped, copy_path=copy, script_path=real)
    name = f"{function}() (inline)" if function else "(module level)"
    return _finish(
        path, original, source, None, False,
        dataclasses.replace(rewrite, function=name), steps,
        [fix(d) for d in rewrite.dropped], [fix(d) for d in differences + notes],
        verdict, traced.module, script=True,
    )  # fmt: skip


def _migrate_constructor(
    path, qualified, call, target, in_place, verify, epochs, max_batches, batch_decode, argv
) -> MigrationResult:
    """``Class``: NOTE [ Migrating a constructor ] in methods.py; each of several
    pipelines on its own (NOTE [ Several pipelines in a constructor ])."""
    groups = _classes.constructor_batches(path, qualified, call, argv)
    given = (call, verify, epochs, max_batches, batch_decode, argv)
    if len(groups) < 2:
        return _migrate_method(path, qualified, *given, target=target, in_place=in_place,
                               batches=groups[0] if groups else [])  # fmt: skip
    real, original = _trace.read_source(path)
    source = original
    passes: list[MigrationResult] = []
    # the last first: each is written right after __init__, so they end up in order
    for group, name in reversed(list(zip(groups, _pipelines.method_names(groups)))):
        others = [a for g in groups if g is not group for a in g]
        lines = _unchanged_lines(original, source)
        try:
            result = _migrate_method(
                path, qualified, *given, source=source, batches=group, others=others,
                new_method=name,
            )  # fmt: skip
        except MigrateError as e:
            raise MigrateError(_at_lines(str(e), real, lines)) from e
        passes.insert(0, _at_lines_of(result, real, lines))
        source = result.source
    verdict, steps, dropped, differences = _merged(passes)
    function = " and ".join(p.function for p in passes)
    rewrite = codegen.Rewrite(source, "".join(p.added for p in passes), function, [], [], [])
    return _finish(
        path, original, source, target, in_place, rewrite, steps, dropped, differences,
        verdict, passes[-1].original,
    )  # fmt: skip


def _merged(passes: list[MigrationResult]) -> tuple:
    """(verdict, steps, dropped, differences) of migrations one after another in one file:
    the first verdict that is no MATCH, else MATCH with each one's reason."""
    verdicts = [p.verdict for p in passes if p.verdict is not None]
    verdict = next((v for v in verdicts if v.status != "MATCH"), verdicts[-1] if verdicts else None)
    if len(verdicts) > 1 and verdict is not None and verdict.status == "MATCH":
        reason = "; ".join(f"pipeline {i + 1}: {v.reason}" for i, v in enumerate(verdicts))
        verdict = dataclasses.replace(verdict, reason=reason)
    steps = [s for p in passes for s in p.steps]
    dropped = [d for p in passes for d in p.dropped]
    return verdict, steps, dropped, [d for p in passes for d in p.differences]


def _migrate_method(
    path, qualified, call, verify, epochs, max_batches, batch_decode, argv, *, target=None,
    in_place=False, source=None, batches=None, others=None, new_method="",
) -> MigrationResult:  # fmt: skip
    """``Class.method``: NOTE [ Migrating a method ] in methods.py; ``Class`` (the
    constructor) with `batches`, its batch attributes, and `others`, those of its other
    pipelines, in the file's text `source` (default: the file's)."""
    real, original = _trace.read_source(path)
    original = original if source is None else source
    constructor = "." not in qualified
    made = None
    if constructor:
        lifted = _methods.lift_keeping(original, real, qualified, batches or [], others, new_method)
    else:
        lifted = _methods.lift(original, real, qualified)
        try:
            probe = _classes.probe_method(path, lifted, call, argv)
        except MigrateError as e:
            raise MigrateError(_with_call_form(str(e), lifted.cls)) from e
        made = probe.made
        if made is not None:  # NOTE [ A method reading what its constructor built ]
            lifted = _methods.lift_with_constructor(original, real, qualified, probe.held)
        elif probe.kept:  # NOTE [ Migrating a constructor ], for a method
            lifted = _methods.lift_keeping(original, real, qualified, probe.kept)
    combined = made is not None
    lifted = _methods.with_reading_methods(lifted, original, real)
    foreign = _foreign.lift(lifted.source, real)  # NOTE [ Following a function of another module ]
    if foreign is not None:
        locals_ = tuple(f.local for f in foreign.followed)
        lifted = dataclasses.replace(
            lifted, source=foreign.source, helpers=lifted.helpers + locals_
        )
    copy = _script.copy_path_for(real, kind="method")
    with open(copy, "w", encoding="utf-8") as f:
        f.write(lifted.source)
    try:
        module, _ = _trace.load_module(copy, lifted.function, argv, call)
        cls = lifted.cls
        if made is not None:
            pass
        elif constructor:
            made = f"{cls}.__new__({cls}), {call or ''}"
        elif _classes.names_the_instance(module, cls, call):  # `--call 'Reader(a, b), 4'`
            made = call or ""
        else:
            made = f"{cls}({call or ''})"
        args, kwargs, graph_call = _trace.call_arguments(module, made)
        traced = _trace.trace(
            copy, lifted.function, args, kwargs, module=module, argv=argv, graph_call=graph_call
        )
        rewrite, verdict, notes = _rewrite_and_prove(
            traced, lifted.source, verify, batch_decode, args, kwargs, epochs, max_batches,
            argv, graph_call,
        )  # fmt: skip
        rewritten = foreign.write_back(rewrite.source) if foreign else rewrite.source
        source = _methods.write_back(lifted, rewritten, rewrite.function)
        source = foreign.finish(source) if foreign else source
    except MigrateError as e:
        text = foreign.map_lines(str(e), copy) if foreign else str(e)
        text = lifted.map_lines(text, copy, real)
        if not constructor and not combined:
            text = _with_call_form(text, lifted.cls)
        raise MigrateError(text) from e
    finally:
        with contextlib.suppress(OSError):
            os.remove(copy)
    steps = [
        dataclasses.replace(step, line=lifted.file_line(step.line)) if step.line else step
        for step in rewrite.steps
    ]
    if foreign is not None:
        steps = [
            _foreign_step(foreign, old if foreign.place(old.line) else new)
            for old, new in zip(rewrite.steps, steps)
        ]
    fix = functools.partial(_method_lines, lifted, foreign, copy_path=copy, path=real)
    name = f"{lifted.cls}.{lifted.new_method or lifted.method + '_dataset'}"
    notes = list(notes)
    if combined:
        notes.append(
            f"{real}:{lifted.method_first}: {name}(self, <the constructor's parameters>, *, "
            f"<{lifted.method}'s>) runs the constructor's statements and {lifted.method}'s: "
            f"the constructor built the records {lifted.method} batched"
        )
    if lifted.model is not None:  # NOTE [ The model after the input, in a method ]
        notes.append(
            f"{real}:{lifted.model[0]}-{lifted.model[1]}: the rest of {lifted.method} (the "
            f"model built on the batches) stays in {lifted.method}; {name} ends where the "
            "batches are made"
        )
    if constructor:
        notes.append(
            f"{real}:{lifted.method_first}: {name}(self, ...) does the constructor's work with "
            "its batch attributes as the Dataset's elements (a dict by attribute name); "
            f"__init__ is kept as it was: call {name.rpartition('.')[2]} from it in place of "
            "the pipeline to switch"
        )
    added = foreign.finish(rewrite.added) if foreign else rewrite.added
    return _finish(
        path, original, source, target, in_place,
        dataclasses.replace(rewrite, function=name, added=added),
        steps, [fix(d) for d in rewrite.dropped], [fix(d) for d in rewrite.differences + notes],
        verdict, traced.module,
        not_run=module.__dict__.get("__qp_skipped__", []),
    )  # fmt: skip


def _with_call_form(text: str, cls: str) -> str:
    """`text`, with the form of a method's `--call` where its arguments did not fit."""
    if not re.search(r"positional argument|unexpected keyword argument", text):
        return text
    return text + (
        f" A method's own arguments follow its instance: --call "
        f"'{cls}(CONSTRUCTOR ARGS), METHOD ARGS' (--call 'ARGS' alone is the constructor's)."
    )


def _trace_plain(path, foreign, function, argv, call, args, kwargs) -> tuple:
    """(module, trace, args, kwargs, graph call) of `function` of the file `path`, or of
    a copy there with the followed functions when `foreign` is given."""
    if foreign is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(foreign.source)
    module, _ = _trace.load_module(path, function, argv, call)
    graph_call = None
    if call is not None or (args is None and kwargs is None):
        args, kwargs, graph_call = _trace.call_arguments(module, call)
    args, kwargs = tuple(args or ()), dict(kwargs or {})
    if graph_call is None:  # NOTE [ A default made at import ]
        kwargs.update(_trace.import_constants(getattr(module, function, None), args, kwargs))
    traced = _trace.trace(
        path, function, args, kwargs, module=module, argv=argv, graph_call=graph_call
    )
    return module, traced, args, kwargs, graph_call


def _foreign_lines(foreign: _foreign.Foreign, text: str, copy: str, path: str) -> str:
    """`text` of a copy with followed functions, in the program's own files and names."""
    return foreign.map_lines(text, copy).replace(copy, path)


def _method_lines(lifted, foreign, text: str, copy_path: str, path: str) -> str:
    """`text` of a method's copy in the program's own files and lines."""
    text = foreign.map_lines(text, copy_path) if foreign is not None else text
    return lifted.map_lines(text, copy_path, path)


def _foreign_step(foreign: _foreign.Foreign, step: codegen.Step) -> codegen.Step:
    """`step` with its line in a followed function's own file."""
    where = foreign.place(step.line) if step.line else None
    legacy, replacement = foreign.renamed(step.legacy), foreign.renamed(step.replacement)
    step = dataclasses.replace(step, legacy=legacy, replacement=replacement)
    if where is None:
        return step
    return dataclasses.replace(step, file=where[0], line=where[1])


def _holds_session_code(path: str, function: str) -> bool:
    """Whether `function` of the file runs a Session or queue runners itself (never call it)."""
    import libcst as cst  # noqa: PLC0415 - the migration's own dependency

    return any(
        isinstance(s, cst.FunctionDef) and s.name.value == function and _script.has_session_code(s)
        for s in _classes.top_level(path)
    )


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


def _rewrite_and_prove(
    traced, original, verify, batch_decode, args, kwargs, epochs, max_batches, argv=(),
    graph_call=None,
):  # fmt: skip
    """The rewrite of `traced` (batch-then-decode when allowed), its verdict and notes."""
    batched = verify if batch_decode is None else batch_decode
    rewrite = codegen.rewrite(traced, original, batch_decode=batched)
    check_names(rewrite.source, _new_functions(rewrite), traced.path)
    verdict = None
    notes: list[str] = []
    if verify:
        verdict = _prove(traced, rewrite, args, kwargs, epochs, max_batches, argv, graph_call)
        if rewrite.batched and verdict.status != "MATCH":
            notes.append(
                f"batch-then-decode ({', '.join(rewrite.batched)}) did not verify "
                f"({verdict.status}); the per-record decode is written instead"
            )
            rewrite = codegen.rewrite(traced, original, batch_decode=False)
            check_names(rewrite.source, _new_functions(rewrite), traced.path)
            verdict = _prove(traced, rewrite, args, kwargs, epochs, max_batches, argv, graph_call)
    elif rewrite.batched:
        notes.append("batch-then-decode was not verified (verify=False)")
    if rewrite.batched:
        notes.append(f"decodes whole batches (batch-then-decode): {', '.join(rewrite.batched)}")
    return rewrite, verdict, notes


def _new_functions(rewrite: codegen.Rewrite) -> list[str]:
    """The names of the functions a rewrite added (what the static check reads)."""
    return re.findall(r"^def (\w+)\(", rewrite.added, re.M)


def _finish(
    path, original, source, target, in_place, rewrite, steps, dropped, differences, verdict,
    module, *, script=False, not_run=(),
) -> MigrationResult:  # fmt: skip
    """The diff, the file written (unless DIFFER) and the result."""
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True),
            source.splitlines(keepends=True),
            path,
            target or f"{path} (migrated)",
        )
    )
    written = None
    if target is not None and (verdict is None or verdict.status != "DIFFER"):
        if in_place:
            os.replace(path, path + ".orig")
        with open(target, "x" if not in_place else "w", encoding="utf-8") as f:
            f.write(source)
        written = target
    return MigrationResult(
        source=source,
        diff=diff,
        added=rewrite.added,
        function=rewrite.function,
        steps=steps,
        dropped=dropped,
        differences=differences,
        verdict=verdict,
        written=written,
        original=module,
        script=script,
        not_run=list(not_run),
    )
