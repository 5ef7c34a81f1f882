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

from queue_pipeline._migrate.base import API
from queue_pipeline._migrate.helper_module_advice import helper_elsewhere
from queue_pipeline._migrate.known_names import WRAPPER
from queue_pipeline._migrate.program_files import imported, inline_objects
from queue_pipeline._migrate.script_globals import hand_globals, set_aside
from queue_pipeline._migrate.script_reads import (
    needed_before,
    read_before_assigned,
    started_runners,
    tensor_statements,
)
from queue_pipeline._migrate.script_regions import (
    calls,
    find_region,
    has_pipeline,
    has_session_code,
    is_definition,
    pipeline_functions,
    session_head,
    split_definitions,
)
from queue_pipeline._migrate.syntax import assigned_names, names_in, string_lines
from queue_pipeline._migrate.trace import MigrateError

__all__ = ["LOADER", "WRAPPER", "Wrapped", "has_pipeline", "has_session_code", "wrap"]

LOADER = "_load_variables"  # the wrapper's loader: the session's variable loads


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
      definitions: how many definitions among the region's lines went above
        the wrapper (NOTE [ Definitions among a script's pipeline ]).
      pulled: the file's lines (first, last) of the statements heading the
        session block that finish the pipeline (NOTE [ A pipeline finished in
        the session block ]): they leave the block.
      restore: (code in the copy, code as written) of each function of the
        file the copy hands the region's names (NOTE [ A script's functions
        reading the pipeline's globals ]).
      made: the names the region binds that the code after it does not bind
        again: the session code's uses of those the rewrite no longer makes
        go (NOTE [ Lines that use the removed queue objects ]).
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
    definitions: int = 0
    made: frozenset = frozenset()
    pulled: list = dataclasses.field(default_factory=list)
    restore: list = dataclasses.field(default_factory=list)

    def script_line(self, line: int) -> int:
        """The file's line for `line` of the copy (itself where the copy has no such line)."""
        if 1 <= line <= len(self.lines) and self.lines[line - 1]:
            return self.lines[line - 1]
        return line


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
    return [st for st in block.body.body if not (calls(st) & runs) and not has_session_code(st)]


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


def _render(
    stmts: list, unit: str, positions, depth: int = 1, unspaced: Sequence = ()
) -> tuple[str, list[int]]:
    """`stmts` as code indented `depth` units, and the file's line of each line; those of
    `unspaced` without the blank lines above them."""
    text: list[str] = []
    lines: list[int] = []
    module = cst.Module([], default_indent=unit)
    for st in stmts:
        node = st
        if any(st is u for u in unspaced):
            node = st.with_changes(leading_lines=[x for x in st.leading_lines if x.comment])
        code = module.code_for_node(node)
        first = positions[st].start.line - len(node.leading_lines)
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
    builders, batchers = pipeline_functions(module)
    # NOTE [ A method of an object built inline ]: ``Records(files).read_records()`` builds
    directory = os.path.dirname(os.path.realpath(path))
    inline = {
        spelled.rsplit(".", 1)[1] for spelled in inline_objects(module, imported(module, directory))
    }
    builders |= inline
    found = find_region(scope_stmts, builders, batchers, script=fn is None)
    if found is not None and found[1] >= found[2]:
        found = None  # nothing before the session code builds a stage
    region: list = []
    aside: list = []
    if found is not None:  # NOTE [ Definitions among a script's pipeline ]
        region, definitions = split_definitions(found[0][found[1] : found[2]])
        if fn is None:  # NOTE [ A stage only the script's other functions read ]
            region, aside = set_aside(module, region, found[0][found[2] :], builders)
    if not region:
        # NOTE [ A script's pipeline built in another module ]
        elsewhere = helper_elsewhere(module, positions, scope_stmts, path, where)
        if elsewhere:
            raise MigrateError(elsewhere)
        raise MigrateError(
            f"{API}: {where} builds no queue pipeline (no producer, reader or batching call "
            "before its session code). Fix: name the function that builds it "
            "(FILE.py:FUNCTION)."
        )
    assert found is not None
    block, start, end, path_blocks = found
    last = positions[region[-1]].end.line
    after: list = [*block[end:]]
    head = session_head(block, start, end, builders, batchers) if fn is None else []
    pulled = []
    if head:  # NOTE [ A pipeline finished in the session block ]
        k = next(
            i
            for i, s in enumerate(block)
            if isinstance(s, cst.With) and any(h is head[0] for h in s.body.body)
        )
        after = [*block[end:k], *block[k].body.body[len(head) :], *block[k + 1 :]]
        region += head
        pulled = [
            (positions[h].start.line - len(h.leading_lines), positions[h].end.line) for h in head
        ]
    for stmts, index in reversed(path_blocks):
        after += stmts[index + 1 :]
    if fn is None:
        after = [s for s in after if not is_definition(s)]
    if fn is None:  # NOTE [ A script's functions reading the pipeline's globals ]
        handed = hand_globals(module, region)
        if handed is not None:
            again = wrap(handed[0], path, function, names, readers)
            return dataclasses.replace(again, restore=handed[1])
    assigned = {n for s in region for n in assigned_names(s)}
    loads = _variable_loads(after, assigned)
    if names is None:
        rest = [s for s in after if loads is None or not any(s is x for x in loads[1])]
        names = [n for n in read_before_assigned(rest) if n in assigned]
        if fn is None:  # a script's batches are its module's names (another module imports them)
            made = [n for s in region if calls(s) & batchers for n in assigned_names(s)]
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
    prologue_lines = len(lines)
    if definitions:  # defined above the wrapper, as the written script defines them
        code, definition_lines = _render(definitions, unit, positions, depth=0)
        prologue += code
        lines += definition_lines
    # The statements before the region in its blocks, but the module's own (the
    # copy starts with them), and but session code.
    levels = [*path_blocks, (block, start)]
    if fn is None:
        levels = levels[1:]
    before = [
        s
        for stmts, index in levels
        for s in stmts[:index]
        if not has_session_code(s) and not calls(s) & {"run", "eval"}  # they need a session
    ]
    if fn is None:  # module-level tensors the region reads: made again in the traced graph
        before = tensor_statements(prologue_stmts, module) + before
    before = needed_before(before, region)
    # the blank lines below a definition that went above the wrapper go with it
    below = [block[i + 1] for i in range(start, end - 1) if is_definition(block[i])]
    body, body_lines = _render(before + region, unit, positions, unspaced=below)
    for runner, stmt in started_runners(after, region):  # NOTE [ A runner the session code starts ]
        body += f"    __import__('tensorflow').compat.v1.train.add_queue_runner({runner})\n"
        body_lines.append(positions[stmt].start.line)
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
            and not calls(st) & builders  # a queue is no plain value: its uses go
        )
        if bound and (bound <= set(readers) or plain):
            use = next((s for s in after if names_in(s) & bound), None)
            if use is not None:
                kept.append((st, positions[use].start.line))
    # as written: in place above the region, after the tf.data code within it
    kept += [(st, last + 1) for st in aside[::-1] if positions[st].start.line > first_line]
    return Wrapped(
        text, names, lines, (first, last), indent, unit, function, lead,
        prologue_lines, before, kept, len(definitions),
        frozenset(region_bound - {n for s in after for n in assigned_names(s)}), pulled,
    )  # fmt: skip


def map_lines(text: str, wrapped: Wrapped, copy_path: str, script_path: str) -> str:
    """`text` with each ``<copy>:<line>`` as ``<file>:<its line>``, and the copy as the file
    (the copy is removed after the run)."""
    pattern = re.escape(copy_path) + r"(?::(\d+))?"
    return re.sub(
        pattern,
        lambda mt: (
            script_path + (f":{wrapped.script_line(int(mt.group(1)))}" if mt.group(1) else "")
        ),
        text,
    )


def copy_path_for(path: str, kind: str = "migrate") -> str:
    """Where a copy of the file goes: beside it (its imports and ``__file__`` work).

    `kind` tells the copies apart (``migrate``: the wrapped copy of an inline
    pipeline; ``method``: NOTE [ Migrating a method ]).
    """
    directory, base = os.path.split(os.path.realpath(path))
    stem = re.sub(r"\W", "_", os.path.splitext(base)[0])
    return os.path.join(directory, f"_{stem}__qp_{kind}_{os.getpid()}.py")
