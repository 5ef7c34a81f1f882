"""A migration's rewrite and its proof, and the result it ends in (the file written or not)."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import types

from queue_pipeline._migrate.removed_imports import without_removed_imports
from queue_pipeline._migrate import codegen, generated_names, internal_errors, twin_failures
from queue_pipeline._migrate import verify as _verify
import tensorflow as tf

from queue_pipeline._compare.harness import PipelineError
from queue_pipeline._migrate.loading import own_argv
from queue_pipeline._migrate.static_check import check_names
from queue_pipeline._migrate.trace import MigrateError


__all__ = ["MigrationResult", "finish", "merged", "rewrite_and_prove"]

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
            verdict = _verify.verify(
                traced,
                migrated,
                rewrite.function,
                args,
                kwargs,
                epochs=epochs,
                max_batches=max_batches,
                graph_call=graph_call,
            )
            return _verify.with_batch_mates(verdict, generated_names.maps_per_batch(rewrite.added))
    except (PipelineError, ValueError, TypeError, tf.errors.OpError) as e:
        if rewrite.batched:  # the batched decoder failed: retried per record
            return _verify.Verdict("DIFFER", f"the batched decode failed: {e}")
        hint = ""
        if "`legacy` callable" in str(e) and tf.executing_eagerly():
            hint = (
                " (the legacy side is the program's code on TensorFlow's own tf.compat.v1, "
                "which fails like this under TF 2.x defaults: if the program runs in TF1 "
                "mode, migrate with --tf1)"
            )
        if "`twin` callable" in str(e):  # the code migrate wrote fails where the legacy ran
            text = re.split(r"\n\s*Fix: call it on its own", str(e))[0].rstrip()
            raise MigrateError(
                f"{_API}: the migrated code was written nowhere: the tf.data code migrate "
                f"wrote fails where the legacy code runs: {text}\nThis is a bug in migrate: "
                "please report it with the file and the --call arguments."
            ) from e
        if not hint:  # NOTE [ The user's line of a failing twin op ]
            hint = twin_failures.user_line_of_failure(
                str(e),
                lambda: _build_twin(migrated, rewrite.function, args, kwargs, graph_call),
                migrated.__dict__.get("__qp_code_path__", ""),
                rewrite.source,
                traced.path,
            )
        raise MigrateError(
            f"{_API}: the migrated code was written nowhere: verifying it failed: {e}{hint}"
        ) from e


def _build_twin(migrated, function: str, args, kwargs, graph_call):
    """The migrated function's result, its arguments made anew if `graph_call` says so."""
    if graph_call is not None:
        args, kwargs = graph_call.arguments()
    return getattr(migrated, function)(*args, **kwargs)


def rewrite_and_prove(
    traced, original, verify, batch_decode, args, kwargs, epochs, max_batches, argv=(),
    graph_call=None,
):  # fmt: skip
    """The rewrite of `traced` (batch-then-decode when allowed), its verdict and notes."""
    batched = verify if batch_decode is None else batch_decode
    with internal_errors.rewriting(traced.path, traced.function):
        rewrite = codegen.rewrite(traced, original, batch_decode=batched)
    check_names(
        rewrite.source, _new_functions(rewrite), traced.path, original, frozenset(traced.calls)
    )
    verdict = None
    notes: list[str] = []
    if verify:
        verdict = _prove(traced, rewrite, args, kwargs, epochs, max_batches, argv, graph_call)
        if rewrite.batched and verdict.status != "MATCH":
            notes.append(
                f"batch-then-decode ({', '.join(rewrite.batched)}) did not verify "
                f"({verdict.status}); the per-record decode is written instead"
            )
            with internal_errors.rewriting(traced.path, traced.function):
                rewrite = codegen.rewrite(traced, original, batch_decode=False)
            check_names(
                rewrite.source, _new_functions(rewrite), traced.path, original,
                frozenset(traced.calls),
            )  # fmt: skip
            verdict = _prove(traced, rewrite, args, kwargs, epochs, max_batches, argv, graph_call)
    elif rewrite.batched:
        notes.append("batch-then-decode was not verified (verify=False)")
    if rewrite.batched:
        notes.append(f"decodes whole batches (batch-then-decode): {', '.join(rewrite.batched)}")
    return rewrite, verdict, notes


def _new_functions(rewrite: codegen.Rewrite) -> list[str]:
    """The names of the functions a rewrite added (what the static check reads)."""
    return re.findall(r"^def (\w+)\(", rewrite.added, re.M)


def finish(
    path, original, source, target, in_place, rewrite, steps, dropped, differences, verdict,
    module, *, script=False, not_run=(),
) -> MigrationResult:  # fmt: skip
    """The diff, the file written (unless DIFFER) and the result."""
    # NOTE [ A removed import the written code does not need ]
    source, kept_out = without_removed_imports(source, rewrite.added, list(not_run))
    differences = list(differences) + kept_out
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


def merged(passes: list[MigrationResult]) -> tuple:
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
