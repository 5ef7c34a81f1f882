"""A pipeline built inline, beside its session code: wrapped in a function, migrated, put back.

NOTE [ Migrating an inline pipeline ]
Two shapes build the pipeline in the same code that runs it. The "Reading
data" guide's CSV example builds it at module level and reads it in a
``with tf.Session()`` block below::

    filename_queue = tf.train.string_input_producer(["file0.csv", "file1.csv"])
    reader = tf.TextLineReader()
    key, value = reader.read(filename_queue)
    col1, col2, col3, col4, col5 = tf.decode_csv(value, record_defaults=...)
    features = tf.stack([col1, col2, col3, col4])

    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        ...

and ``fully_connected_preloaded_var.py`` builds it inside ``run_training()``,
in ``with tf.Graph().as_default():`` before the model and the training
loop. Neither may be run to trace it: importing the script, or calling the
function, would run its session code. So the *region* is found in the
source: in the script's statements (or the function's), descending into the
``with`` block that holds both the first statement building a queue (a
producer, a reader, a batching call, a queue) and session code (a Session, a
Coordinator, ``start_queue_runners``), it runs from that first statement up
to the first one that is session code or a block other than ``with``; when
it batches, it ends with the last statement that batches (what follows is
the model), and statements at its end that assign nothing (a ``print``) are
left out of it.

:func:`wrap` writes a copy of the file in which a new function,
``_inline_pipeline`` (with the enclosing function's parameters, if any),
holds the statements that come before the region in its blocks (those with no
session code) and the region, and returns the region's names that the code
after it reads, in the order it first reads them (those that are no tensors
are dropped after a first run). The copy is imported with everything after
the region left out, so only what precedes it runs, and with the flag
parsing of the file's ``if __name__ == "__main__":`` block (a global
``FLAGS`` that the pipeline reads) at its defaults, without the block's
``app.run`` / ``main()``. That function is
migrated and proven as any other. ``unwrap`` (in
:mod:`queue_pipeline._migrate.unwrap`) puts the tf.data version's body in
the region's place, at its indentation, ending in ``dataset = ...``
and ``features, col5 =
tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()``, and removes
the Coordinator lines of the session code around it as in a caller (NOTE
[ Rewriting the callers of a migrated function ]). Line numbers in the
report are the file's own.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m
from libcst.metadata import PositionProvider

from queue_pipeline._migrate.base import API, BATCHING, PRODUCERS, READER_CLASSES
from queue_pipeline._migrate.helper_module_advice import helper_elsewhere
from queue_pipeline._migrate.script_reads import (
    needed_before,
    read_before_assigned,
    tensor_statements,
)
from queue_pipeline._migrate.syntax import assigned_names, callee, names_in, string_lines
from queue_pipeline._migrate.trace import MigrateError

__all__ = ["LOADER", "WRAPPER", "Wrapped", "has_session_code", "wrap"]

WRAPPER = "_inline_pipeline"
LOADER = "_load_variables"  # the wrapper's loader: the session's variable loads

_BUILDERS = frozenset(
    PRODUCERS
    + BATCHING
    + READER_CLASSES
    + ("slice_input_producer", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue")
    # the producer's file list, a variable of the pipeline's graph
    + ("match_filenames_once",)
)
_BATCHING = frozenset(BATCHING)
# The calls that start a pipeline: its source.
_STARTS = frozenset(PRODUCERS + ("slice_input_producer", "match_filenames_once"))
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
    """A copy of the file with its inline pipeline as the function ``_inline_pipeline``.

    Attributes:
      source: the copy's text (the file up to the region's scope, then the
        function).
      names: what the function returns (the region's names read after it).
      lines: for each line of the copy, the file's line (0: none).
      region: the file's lines of the region, first and last (1-based; the
        first includes the comments and blank lines above it).
      indent: the region's indentation.
      unit: the file's indentation unit.
      scope: the enclosing function's name, or None at module level.
      lead: the blank lines and comments above the region's first statement.
      prologue_lines: how many of the file's first lines the copy starts with.
      before: the statements copied into the function from before the region
        (they stay where they are in the file).
      kept: the region's statements that stay in the file as written, each with
        the file's line it goes before: a reader the code after the region
        reads again (another pipeline's read), placed before that read.
    """

    source: str
    names: list[str]
    lines: list[int]
    region: tuple[int, int]
    indent: str
    unit: str
    scope: str | None
    lead: str = ""
    prologue_lines: int = 0
    before: list = dataclasses.field(default_factory=list)
    kept: list = dataclasses.field(default_factory=list)

    def script_line(self, line: int) -> int:
        """The file's line for `line` of the copy (itself where the copy has no such line)."""
        if 1 <= line <= len(self.lines) and self.lines[line - 1]:
            return self.lines[line - 1]
        return line


def _calls(node: cst.CSTNode) -> set[str]:
    return {callee(c) for c in m.findall(node, m.Call()) if isinstance(c, cst.Call)}


def has_session_code(node: cst.CSTNode) -> bool:
    """Whether `node` creates a Session or a Coordinator, or starts queue runners."""
    return bool(_calls(node) & _SESSION_CODE)


def _ends_region(stmt: cst.CSTNode) -> bool:
    """Whether `stmt` ends a pipeline region: session code, a definition, a main guard
    (an ``if`` or ``for`` on the way to the batching call, srez's ``if crop_size !=
    image_size: image = tf.image.resize_area(...)``, does not)."""
    if has_session_code(stmt) or _main_guard(stmt):
        return True
    return not isinstance(stmt, (cst.SimpleStatementLine, cst.With, cst.If, cst.For))


def _find(
    stmts: list, builders: frozenset = _BUILDERS, batchers: frozenset = _BATCHING
) -> tuple[list, int, int, list] | None:
    """(the statements holding the region, its start, its end, the blocks on the way) or None.

    `builders` and `batchers`: the calls that build a stage and batch (the
    file's functions that do count too, see :func:`_pipeline_functions`).
    """
    start = next(
        (
            i
            for i, s in enumerate(stmts)
            if _calls(s) & builders and not isinstance(s, (cst.FunctionDef, cst.ClassDef))
        ),
        None,
    )
    if start is None:
        return None
    first = stmts[start]
    if (isinstance(first, cst.With) and has_session_code(first)) or _main_guard(first):
        assert isinstance(first.body, cst.IndentedBlock)
        inner = _find(list(first.body.body), builders, batchers)
        if inner is None:
            return None
        block, s, e, path = inner
        return block, s, e, [(stmts, start), *path]
    end = next((i for i in range(start, len(stmts)) if _ends_region(stmts[i])), len(stmts))
    batching = [i for i in range(start, end) if _calls(stmts[i]) & batchers]
    if batching:
        second = _second_pipeline(stmts, start, batching[0], end, builders)
        if second is not None:  # NOTE [ Several pipelines in one function ]
            batching = [i for i in batching if i < second]
        end = batching[-1] + 1  # what follows the last batching call is the model
    while end - 1 > start and not assigned_names(stmts[end - 1]):
        end -= 1  # a statement that only uses the tensors (a print) comes after
    return stmts, start, end, []


def has_pipeline(source: str, path: str, function: str | None) -> bool:
    """Whether the source of the file `path` still builds a queue pipeline before its
    session code, in `function` (or at module level)."""
    module = cst.parse_module(source)
    scope: list = list(module.body)
    if function is not None:
        fn = next(
            (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == function),
            None,
        )
        if fn is None or not isinstance(fn.body, cst.IndentedBlock):
            return False
        scope = list(fn.body.body)
    found = _find(scope, *_pipeline_functions(module))
    return found is not None and found[1] < found[2]


def _second_pipeline(
    stmts: list, start: int, first_batch: int, end: int, builders: frozenset
) -> int | None:
    """The index of the statement after `first_batch` that starts another pipeline, or None.

    NOTE [ Several pipelines in one function ]
    A training function often builds its training input, the model on it, then
    a validation input and the model again (ENet's ``run()``: two
    ``slice_input_producer`` + ``batch`` pipelines with the model between). A
    Dataset is one pipeline: the region ends with the first pipeline's last
    batching call, before the statement that builds a stage reading nothing
    the batches made (directly or through the statements after them). The
    migration then runs again on its own result, where the first pipeline is
    tf.data already, so the next region is the next pipeline; each is proven
    on its own (:func:`queue_pipeline._migrate.inline.migrate_inline`).
    """
    made = {n for stmt in stmts[start : first_batch + 1] for n in assigned_names(stmt)}
    for i in range(first_batch + 1, end):
        stmt = stmts[i]
        if _reads(stmt) & made:
            made |= set(assigned_names(stmt))
        elif _calls(stmt) & (builders | _STARTS):
            return i
    return None


def _reads(stmt: cst.CSTNode) -> set[str]:
    """The names `stmt` reads (an assignment's value; else every name in it)."""
    line = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and stmt.body else None
    if isinstance(line, (cst.Assign, cst.AnnAssign)) and line.value is not None:
        return names_in(line.value)
    return names_in(stmt)


def _main_guard(stmt: cst.CSTNode) -> bool:
    """Whether `stmt` is ``if __name__ == "__main__":`` (without an else)."""
    return (
        isinstance(stmt, cst.If)
        and stmt.orelse is None
        and "__name__"
        in {n.value for n in m.findall(stmt.test, m.Name()) if isinstance(n, cst.Name)}
    )


def _pipeline_functions(module: cst.Module) -> tuple[frozenset, frozenset]:
    """The calls that build a stage and that batch, with the file's functions that do.

    A script's module level may build its pipeline through a function of the
    file (``images, labels = read_and_decode(queue, 4)``, ``x, y =
    input_pipeline(files)``): a call of such a function builds (or batches),
    as the function does, directly or through another one.
    """
    bodies = {s.name.value: _calls(s) for s in module.body if isinstance(s, cst.FunctionDef)}
    builders, batchers = set(_BUILDERS), set(_BATCHING)
    changed = True
    while changed:
        changed = False
        for name, calls in bodies.items():
            for found in (builders, batchers):
                if name not in found and calls & found:
                    found.add(name)
                    changed = True
    return frozenset(builders), frozenset(batchers)


def _flag_setup(module: cst.Module, function: str | None) -> list:
    """The ``if __name__ == "__main__":`` block's flag parsing, without what runs the program.

    TF 1.x programs set a global ``FLAGS`` there (``FLAGS, unparsed =
    parser.parse_known_args()``) before ``tf.app.run(main=main)``; their
    pipeline reads it (``num_epochs=FLAGS.num_epochs``). The copy keeps the
    block's statements but those that run the program (``app.run``, ``main()``,
    the migrated function, session code), so the flags have their defaults
    (the copy is imported with ``sys.argv`` holding the file alone).
    """
    block = next(
        (
            s
            for s in reversed(module.body)
            if isinstance(s, cst.If)
            and "__name__" in cst.Module([]).code_for_node(s.test)
            and "__main__" in cst.Module([]).code_for_node(s.test)
        ),
        None,
    )
    if block is None or not isinstance(block.body, cst.IndentedBlock):
        return []
    runs = {"run", "main"} | ({function} if function else set())
    return [st for st in block.body.body if not (_calls(st) & runs) and not has_session_code(st)]


def _variable_loads(after: list, region_names: set[str]) -> tuple[str, list] | None:
    """The session's ``sess.run(v.initializer, feed_dict=...)`` lines for the region's variables.

    The preloaded-variable program feeds its arrays to its variables after
    the initializers; the wrapper returns these lines as a loader
    (``_load_variables(sess)``), so the proof runs them in each side's session.
    """
    receiver = None
    loads = []
    for st in after:
        if not isinstance(st, cst.SimpleStatementLine) or len(st.body) != 1:
            continue
        expr = st.body[0]
        call = expr.value if isinstance(expr, cst.Expr) else None
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "run"
            and isinstance(call.func.value, cst.Name)
        ):
            continue
        initialized = [
            a.value.value
            for a in m.findall(call, m.Attribute(attr=m.Name("initializer")))
            if isinstance(a, cst.Attribute) and isinstance(a.value, cst.Name)
        ]
        if initialized and set(initialized) <= region_names:
            if receiver not in (None, call.func.value.value):
                break
            receiver = call.func.value.value
            loads.append(st)
    return (receiver, loads) if receiver is not None else None


def _render(stmts: list, unit: str, positions, depth: int = 1) -> tuple[str, list[int]]:
    """`stmts` as code indented `depth` units, and the file's line of each line."""
    text: list[str] = []
    lines: list[int] = []
    module = cst.Module([], default_indent=unit)
    for st in stmts:
        code = module.code_for_node(st)
        first = positions[st].start.line - len(st.leading_lines)
        in_string = string_lines(code)
        for k, line in enumerate(code.splitlines(keepends=True)):
            keep = (k + 1) in in_string or not line.strip()
            text.append(line if keep else "    " * depth + line)
            lines.append(first + k)
    return "".join(text), lines


def wrap(
    source: str,
    path: str,
    function: str | None,
    names: list[str] | None = None,
    readers: Sequence[str] = (),
) -> Wrapped:
    """The copy of the file at `path` (text `source`) whose ``_inline_pipeline`` trace can call.

    Args:
      function: the function that holds the pipeline and its session code, or
        None for the module level.
      names: what the function returns; None: every name the region assigns
        and the code after it reads.
      readers: names of readers the region makes that the code after it reads
        (``reader.read(test_queue)``): their statements stay in the file.

    Raises:
      MigrateError: no queue is built there, or the code after the pipeline
        reads none of its names.
    """
    wrapper = cst.MetadataWrapper(cst.parse_module(source))
    module = wrapper.module
    positions = wrapper.resolve(PositionProvider)
    unit = module.default_indent
    where = f"{path} at module level"
    scope_stmts: list[cst.BaseStatement] = list(module.body)
    params = ""
    fn = None
    if function is not None:
        fn = next(
            (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == function),
            None,
        )
        if fn is None or not isinstance(fn.body, cst.IndentedBlock):
            raise MigrateError(f"{API}: {path} defines no module-level function {function!r}.")
        where = f"{path}:{positions[fn].start.line}: {function}()"
        scope_stmts = list(fn.body.body)
        params = cst.Module([]).code_for_node(fn.params)
    builders, batchers = _pipeline_functions(module)
    found = _find(scope_stmts, builders, batchers)
    if found is not None and found[1] >= found[2]:
        found = None  # nothing before the session code builds a stage
    if found is None:
        # NOTE [ A script's pipeline built in another module ]
        elsewhere = helper_elsewhere(module, positions, scope_stmts, path, where)
        if elsewhere:
            raise MigrateError(elsewhere)
        raise MigrateError(
            f"{API}: {where} builds no queue pipeline (no producer, reader or batching call "
            "before its session code). Fix: name the function that builds it "
            "(FILE.py:FUNCTION)."
        )
    block, start, end, path_blocks = found
    region = block[start:end]
    after: list = [*block[end:]]
    for stmts, index in reversed(path_blocks):
        after += stmts[index + 1 :]
    if fn is None:
        after = [s for s in after if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
    assigned = {n for s in region for n in assigned_names(s)}
    loads = _variable_loads(after, assigned)
    if names is None:
        rest = [s for s in after if loads is None or not any(s is x for x in loads[1])]
        names = [n for n in read_before_assigned(rest) if n in assigned]
        if fn is None:  # a script's batches are its module's names (another module imports them)
            made = [n for s in region if _calls(s) & batchers for n in assigned_names(s)]
            names += [n for n in dict.fromkeys(made) if n not in names]
    first_line = positions[region[0]].start.line
    if not names:
        raise MigrateError(
            f"{API}: {path}:{first_line}: the code after the pipeline reads none of the "
            "tensors it builds. Fix: name the function that builds it (FILE.py:FUNCTION)."
        )
    # Before the region: the file up to its scope, then each block's earlier statements.
    if fn is not None:
        top_index = next(i for i, s in enumerate(module.body) if s is fn)
    else:
        top_index = path_blocks[0][1] if path_blocks else start
    prologue_stmts = list(module.body[:top_index])
    prologue = "".join(cst.Module([]).code_for_node(line) for line in module.header)
    prologue += "".join(
        cst.Module([], default_indent=unit).code_for_node(s) for s in prologue_stmts
    )
    lines = list(range(1, prologue.count("\n") + 1))
    # The statements before the region in its blocks, but the module's own (the
    # copy starts with them), and but session code.
    levels = [*path_blocks, (block, start)]
    if fn is None:
        levels = levels[1:]
    before = [
        s
        for stmts, index in levels
        for s in stmts[:index]
        if not has_session_code(s) and not _calls(s) & {"run", "eval"}  # they need a session
    ]
    if fn is None:  # module-level tensors the region reads: made again in the traced graph
        before = tensor_statements(prologue_stmts, module) + before
    before = needed_before(before, region)
    body, body_lines = _render(before + region, unit, positions)
    returned = ", ".join(names)
    loader = ""
    loader_lines: list[int] = []
    if loads:
        receiver, stmts = loads
        code, loader_lines = _render(stmts, unit, positions, depth=2)
        loader = f"    def {LOADER}({receiver}):\n{code}"
        loader_lines = [0, *loader_lines]
        returned += f", {LOADER}"
    text = f"{prologue}def {WRAPPER}({params}):\n{body}{loader}    return {returned}\n"
    lines += [0, *body_lines, *loader_lines, 0]
    flags = _flag_setup(module, function)
    if flags:  # after the wrapper: run when the copy is imported, as `__main__` would
        code, flag_lines = _render(flags, unit, positions, depth=0)
        text += code
        lines += flag_lines
    lead = "".join(cst.Module([]).code_for_node(line) for line in region[0].leading_lines)
    first = first_line - len(region[0].leading_lines)
    last = positions[region[-1]].end.line
    indent = unit * (len(path_blocks) + (1 if fn is not None else 0))
    kept = []
    region_bound = {n for s in region for n in assigned_names(s)}
    read_after = {n for s in after for n in names_in(s)}
    for st in region:
        bound = set(assigned_names(st))
        # A reader the code after reads again; or a plain value of the region
        # the code after reads that the pipeline's values do not make (`steps =
        # 2` between the producer and the batch): the rewrite replaces the
        # region's lines, so these stay in the file, before their first use.
        plain = (
            bound & read_after
            and not bound & set(names)
            and not (names_in(st) - bound) & region_bound
        )
        if bound and (bound <= set(readers) or plain):
            use = next((s for s in after if names_in(s) & bound), None)
            if use is not None:
                kept.append((st, positions[use].start.line))
    return Wrapped(
        text, names, lines, (first, last), indent, unit, function, lead,
        prologue.count("\n"), before, kept,
    )  # fmt: skip


def map_lines(text: str, wrapped: Wrapped, copy_path: str, script_path: str) -> str:
    """`text` with each ``<copy>:<line>`` as ``<file>:<its line>``."""
    pattern = re.escape(copy_path) + r":(\d+)"
    return re.sub(
        pattern, lambda mt: f"{script_path}:{wrapped.script_line(int(mt.group(1)))}", text
    )


def copy_path_for(path: str, kind: str = "migrate") -> str:
    """Where a copy of the file goes: beside it (its imports and ``__file__`` work).

    `kind` tells the copies apart (``migrate``: the wrapped copy of an inline
    pipeline; ``method``: NOTE [ Migrating a method ]).
    """
    directory, base = os.path.split(os.path.realpath(path))
    stem = re.sub(r"\W", "_", os.path.splitext(base)[0])
    return os.path.join(directory, f"_{stem}__qp_{kind}_{os.getpid()}.py")
