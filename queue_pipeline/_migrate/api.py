"""``queue-pipeline migrate``: a legacy input function rewritten as plain tf.data source code.

:func:`migrate` runs the function once (see :mod:`queue_pipeline._migrate.trace`),
writes a ``<name>_dataset`` version of it and of the helpers it calls, in
plain TensorFlow (``tf.data.Dataset.from_tensor_slices``, ``TFRecordDataset``
/ ``TextLineDataset`` / ``FixedLengthRecordDataset``, ``flat_map`` /
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

import dataclasses
import difflib
import os

from queue_pipeline._migrate import codegen
from queue_pipeline._migrate import trace as _trace
from queue_pipeline._migrate import verify as _verify
from queue_pipeline._compare.harness import PipelineError
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

    @property
    def exit_status(self) -> int:
        """0 when verified MATCH (or not verified), 1 on DIFFER; as ``compare``."""
        return 1 if self.verdict is not None and self.verdict.status == "DIFFER" else 0

    def report(self) -> str:
        """The migration report as text."""
        lines = [f"queue-pipeline migrate: {self.function}"]
        lines.append("Legacy calls:")
        for step in self.steps:
            lines.append(f"  line {step.line}: {step.legacy}")
            lines.append(f"      -> {step.replacement}")
            for arg, fate in step.fates:
                lines.append(f"      {arg}: {fate}")
        if self.dropped:
            lines.append("Not migrated:")
            lines += [f"  {d}" for d in self.dropped]
        if self.differences:
            lines.append("Differences on purpose:")
            lines += [f"  {d}" for d in self.differences]
        if self.verdict is not None:
            lines.append(f"Verify: {self.verdict.status} ({self.verdict.reason})")
            if self.verdict.status == "DIFFER" and self.verdict.report is not None:
                lines.append(str(self.verdict.report))
        if self.written:
            lines.append(f"Wrote {self.written}")
        return "\n".join(lines) + "\n"


def migrate(
    path: str,
    function: str,
    *,
    call: str | None = None,
    out: str | None = None,
    in_place: bool = False,
    verify: bool = True,
    epochs: int = 1,
    max_batches: int | None = None,
) -> MigrationResult:
    """Rewrites ``function`` of the file at `path` as tf.data code, and proves it.

    Args:
      path: a Python file.
      function: the module-level function that builds the legacy pipeline and
        returns its batch (or per-record) tensors.
      call: its arguments, as written in a call (``"'train.tfrecords', 32"``);
        evaluated in the module's namespace.
      out: write the migrated module there (refused if it exists).
      in_place: rewrite `path` itself, keeping the original as ``path.orig``
        (refused if that exists).
      verify: run :func:`queue_pipeline.compare` between the original and the
        migrated function.
      epochs: epochs to compare when the legacy plan records none.
      max_batches: stop the comparison after this many legacy batches (needed
        when the input repeats forever).

    Returns:
      A :class:`MigrationResult`.

    Raises:
      MigrateError: the file does not parse or import, the function does not
        exist, fails with these arguments or builds no queue pipeline, a
        statement cannot be migrated, or a file would be overwritten.
    """
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
    module, _ = _trace.load_module(path)
    args, kwargs = _trace.parse_call(module, call)
    traced = _trace.trace(path, function, args, kwargs)
    with open(traced.path, encoding="utf-8") as f:
        original = f.read()
    rewrite = codegen.rewrite(traced, original)
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True),
            rewrite.source.splitlines(keepends=True),
            path,
            target or f"{path} (migrated)",
        )
    )
    verdict = None
    if verify:
        migrated = _verify.load_migrated(traced, rewrite.source, target)
        try:
            verdict = _verify.verify(
                traced,
                migrated,
                rewrite.function,
                args,
                kwargs,
                epochs=epochs,
                max_batches=max_batches,
            )
        except (PipelineError, ValueError, TypeError) as e:
            raise MigrateError(
                f"{_API}: the migrated code was written nowhere: verifying it failed: {e}"
            ) from e
    written = None
    if target is not None and (verdict is None or verdict.status != "DIFFER"):
        if in_place:
            os.replace(path, path + ".orig")
        with open(target, "x" if not in_place else "w", encoding="utf-8") as f:
            f.write(rewrite.source)
        written = target
    return MigrationResult(
        source=rewrite.source,
        diff=diff,
        added=rewrite.added,
        function=rewrite.function,
        steps=rewrite.steps,
        dropped=rewrite.dropped,
        differences=rewrite.differences,
        verdict=verdict,
        written=written,
    )
