"""A script whose pipeline is built at module level: wrapped in a function, migrated, unwrapped.

NOTE [ Migrating a module-level pipeline ]
The "Reading data" guide's CSV example builds its pipeline at module level
and reads it in a ``with tf.Session()`` block below::

    filename_queue = tf.train.string_input_producer(["file0.csv", "file1.csv"])
    reader = tf.TextLineReader()
    key, value = reader.read(filename_queue)
    col1, col2, col3, col4, col5 = tf.decode_csv(value, record_defaults=...)
    features = tf.stack([col1, col2, col3, col4])

    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(coord=coord)
        for i in range(1200):
            example, label = sess.run([features, col5])
        coord.request_stop()
        coord.join(threads)

Importing such a script would run its session code, so it is never imported.
The *region* is the run of top-level statements from the first one that
builds a queue (a producer, a reader, a batching call, a queue) up to the
first one that is session code (it creates a Session, a Coordinator or
starts the runners) or a block other than ``with`` (a function, a class, a
loop, an ``if``, a ``try``), less the statements at its end that assign
nothing (a ``print(features)``: they use the pipeline). :func:`wrap` writes
a copy of the script made of everything before the region and the region as
the body of a function,
``def _module_pipeline(): ... return features, col5``, returning the
region's names that the rest of the script reads (in the order it first
reads them; those that are no tensors are dropped after a first run). The
rest of the script is left out, so only the statements before the region
run, as when the script's module is imported. That function is migrated
and proven as any other. :func:`unwrap` writes the script back: the same
statements before the region (with the versions of the helpers they
define), the region replaced by the body of ``_module_pipeline_dataset``
at module level, ending in ``dataset = ...`` and ``features, col5 =
tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()``, and the
rest with its Coordinator lines removed as in a caller (NOTE [ Rewriting
the callers of a migrated function ]). Line numbers in the report are the
script's own.
"""

from __future__ import annotations

import dataclasses
import os
import re

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.base import API, BATCHING, PRODUCERS, READER_CLASSES
from queue_pipeline._migrate.callers import drop_queue_runners
from queue_pipeline._migrate.syntax import assigned_names, callee
from queue_pipeline._migrate.trace import MigrateError

__all__ = ["WRAPPER", "Wrapped", "unwrap", "wrap"]

WRAPPER = "_module_pipeline"

_BUILDERS = frozenset(
    PRODUCERS
    + BATCHING
    + READER_CLASSES
    + ("slice_input_producer", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue")
)
_SESSION_CODE = frozenset(
    {
        "Session",
        "InteractiveSession",
        "MonitoredSession",
        "MonitoredTrainingSession",
        "SingularMonitoredSession",
        "Supervisor",
        "Coordinator",
        "start_queue_runners",
    }
)


@dataclasses.dataclass
class Wrapped:
    """A script's copy with its module-level pipeline as a function.

    Attributes:
      source: the copy: the statements before the region, then
        ``def _module_pipeline():`` with the region and its return.
      names: what the function returns (the region's names the rest reads).
      prologue: the script's text before the region.
      rest: the script's text after the region.
      first_line: the region's first line in the script (1-based).
      lead: the blank lines and comments above the region's first statement.
    """

    source: str
    names: list[str]
    prologue: str
    rest: str
    first_line: int
    lead: str = ""

    def script_line(self, line: int) -> int:
        """The script's line for `line` of the copy (the ``def`` line shifts the region by one)."""
        prologue_lines = self.prologue.count("\n")
        return line - 1 if line > prologue_lines + 1 else line


def _calls(node: cst.CSTNode) -> set[str]:
    return {callee(c) for c in m.findall(node, m.Call()) if isinstance(c, cst.Call)}


def _ends_region(stmt: cst.CSTNode) -> bool:
    if _calls(stmt) & _SESSION_CODE:
        return True
    return not isinstance(stmt, (cst.SimpleStatementLine, cst.With))


def wrap(source: str, path: str, names: list[str] | None = None) -> Wrapped:
    """The copy of the script at `path` (text `source`) that :mod:`trace` can call.

    Args:
      names: what the function returns; None: every name the region assigns
        and the rest of the script reads.

    Raises:
      MigrateError: the script builds no queue at module level, or the rest
        reads none of the region's names.
    """
    module = cst.parse_module(source)
    body = list(module.body)
    start = next((i for i, s in enumerate(body) if _calls(s) & _BUILDERS), None)
    if start is None:
        raise MigrateError(
            f"{API}: {path} builds no queue pipeline at module level (no producer, reader or "
            "batching call outside its functions). Fix: name the function that builds it "
            "(FILE.py:FUNCTION)."
        )
    end = next((i for i in range(start, len(body)) if _ends_region(body[i])), len(body))
    while end - 1 > start and not assigned_names(body[end - 1]):
        end -= 1  # a statement that only uses the tensors (a print) belongs to the rest
    code = module.code_for_node
    prologue = "".join(code(line) for line in module.header)
    prologue += "".join(code(s) for s in body[:start])
    region = "".join(code(s) for s in body[start:end])
    rest = "".join(code(s) for s in body[end:]) + "".join(code(line) for line in module.footer)
    if names is None:
        assigned = {n for s in body[start:end] for n in assigned_names(s)}
        read = [
            n.value for n in m.findall(cst.Module(body[end:]), m.Name()) if isinstance(n, cst.Name)
        ]
        names = list(dict.fromkeys(n for n in read if n in assigned))
    if not names:
        raise MigrateError(
            f"{API}: {path}:{_line_of(prologue)}: the script's code after its pipeline reads "
            "none of the tensors the pipeline builds. Fix: name the function that builds it "
            "(FILE.py:FUNCTION)."
        )
    indented = "".join(
        ("    " + line if line.strip() else line) for line in region.splitlines(keepends=True)
    )
    returned = ", ".join(names)
    wrapped = f"{prologue}def {WRAPPER}():\n{indented}    return {returned}\n"
    lead = "".join(code(line) for line in body[start].leading_lines)
    return Wrapped(wrapped, names, prologue, rest, _line_of(prologue), lead)


def _line_of(prologue: str) -> int:
    return prologue.count("\n") + 1


def unwrap(wrapped: Wrapped, migrated_source: str, new_function: str) -> tuple[str, list[str]]:
    """The script with its region replaced by `new_function`'s body, at module level.

    Args:
      wrapped: what :func:`wrap` returned.
      migrated_source: the copy with the migrated functions inserted (the
        rewriter's ``source``).
      new_function: the name of the region's tf.data version.

    Returns:
      The new script and what changed in the rest of it.
    """
    module = cst.parse_module(migrated_source)
    fn = next(
        s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == new_function
    )
    header = f"def {WRAPPER}():"
    prologue = migrated_source[: migrated_source.index(header)]
    assert isinstance(fn.body, cst.IndentedBlock)  # the rewriter writes blocks
    statements = list(fn.body.body)
    last = statements[-1]
    assert m.matches(last, m.SimpleStatementLine(body=[m.Return()]))
    returned = last.body[0].value  # type: ignore[attr-defined]
    used = {
        n.value
        for n in m.findall(cst.parse_module(wrapped.rest), m.Name())
        if isinstance(n, cst.Name)
    }
    var = next(n for n in ("dataset", "input_dataset", "migrated_dataset") if n not in used)
    code = cst.Module([]).code_for_node
    if isinstance(returned, cst.Tuple):  # (dataset, load): a preloaded variable's loader
        raise MigrateError(
            f"{API}: the module-level pipeline returns loaders beside its batches; "
            "move it into a function and migrate that (FILE.py:FUNCTION)."
        )
    body = "".join(code(st) for st in _at_module_level(statements[:-1]))
    if wrapped.lead and not body.startswith(wrapped.lead):
        body = wrapped.lead + body  # the blank line or comment above the region
    targets = ", ".join(wrapped.names)
    tail = (
        f"{var} = {code(returned)}\n"
        f"{targets} = tf.compat.v1.data.make_one_shot_iterator({var}).get_next()\n"
    )
    rest, removed = drop_queue_runners(wrapped.rest)
    blank = "" if rest.startswith("\n") else "\n"
    return prologue + body + tail + blank + rest, removed


def _at_module_level(statements: list) -> list:
    """`statements` spaced as module-level code: two blank lines around each ``def``."""
    two = [cst.EmptyLine(), cst.EmptyLine()]
    out = []
    after_def = False
    for st in statements:
        comments = [line for line in st.leading_lines if line.comment is not None]
        if isinstance(st, cst.FunctionDef) or after_def:
            st = st.with_changes(leading_lines=[*two, *comments])
        after_def = isinstance(st, cst.FunctionDef)
        out.append(st)
    return out


def map_lines(text: str, wrapped: Wrapped, copy_path: str, script_path: str) -> str:
    """`text` with each ``<copy>:<line>`` as ``<script>:<its line>``."""
    pattern = re.escape(copy_path) + r":(\d+)"
    return re.sub(
        pattern, lambda mt: f"{script_path}:{wrapped.script_line(int(mt.group(1)))}", text
    )


def copy_path_for(path: str) -> str:
    """Where the wrapped copy goes: beside the script (its imports and ``__file__`` work)."""
    directory, base = os.path.split(os.path.realpath(path))
    stem = re.sub(r"\W", "_", os.path.splitext(base)[0])
    return os.path.join(directory, f"_{stem}__qp_migrate_{os.getpid()}.py")
