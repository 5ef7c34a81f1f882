"""Where a script's inline pipeline is: its region among the statements (NOTE [ Migrating an
inline pipeline ] in :mod:`queue_pipeline._migrate.script`).

NOTE [ Definitions among a script's pipeline ]
A script's pipeline is what its module level builds before the session code,
whatever the order of its statements: ``filename_queue = producer(...)``, then
``def read_rows(filename_queue): ...``, then ``rows = read_rows(filename_queue)``
is one pipeline, as it is with the ``def`` above the producer. At module level a
``def`` (or ``class``) among the pipeline's statements does not end its region:
the definitions are no part of it (:func:`split_definitions`); the copy defines
them above its wrapper, and the written script keeps them above the tf.data code
that takes the region's place (a function is looked up when called, so the
definitions run before the statements that call them, as before).

NOTE [ A pipeline finished in the session block ]
A script may make its producer at module level and read it in the first lines
of its ``with tf.Session() as sess:`` block (``image, label =
read_and_decode()``, before ``sess.run(init)``): those lines build the rest of
the same pipeline. When the region batches nothing, the head of that block
(its statements up to the first that is session code, or reads the block's
``as`` name or what the statements between the region and the block assign),
up to its last statement building a stage, is the region's end
(:func:`session_head`): a ``with tf.Session()`` changes no graph, so the
tf.data code takes the region's place above the block, and those lines leave
the block.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.base import BATCHING, PRODUCERS, READER_CLASSES
from queue_pipeline._migrate.script_globals import set_aside
from queue_pipeline._migrate.syntax import assigned_names, callee, names_in, registers_runner

__all__ = [
    "calls",
    "find_region",
    "has_pipeline",
    "has_session_code",
    "is_definition",
    "pipeline_functions",
    "registers_runner_in",
    "session_head",
    "split_definitions",
]

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


def calls(node: cst.CSTNode) -> set[str]:
    return {callee(c) for c in m.findall(node, m.Call()) if isinstance(c, cst.Call)}


def registers_runner_in(stmt: cst.CSTNode) -> bool:
    """Whether `stmt` makes or registers a QueueRunner (``tf.train.add_queue_runner(qr)``
    after the dequeue is the pipeline's, though it assigns nothing)."""
    return any(registers_runner(c) for c in m.findall(stmt, m.Call()) if isinstance(c, cst.Call))


def has_session_code(node: cst.CSTNode) -> bool:
    """Whether `node` creates a Session or a Coordinator, or starts queue runners."""
    return bool(calls(node) & _SESSION_CODE)


def is_definition(stmt: cst.CSTNode) -> bool:
    """Whether `stmt` is a ``def`` or a ``class``."""
    return isinstance(stmt, (cst.FunctionDef, cst.ClassDef))


def _ends_region(stmt: cst.CSTNode, script: bool) -> bool:
    """Whether `stmt` ends a pipeline region: session code, a definition (but in a
    `script`: NOTE [ Definitions among a script's pipeline ]), a main guard (an ``if``
    or ``for`` on the way to the batching call, srez's ``if crop_size != image_size:
    image = tf.image.resize_area(...)``, does not)."""
    if has_session_code(stmt) or _main_guard(stmt):
        return True
    if script and is_definition(stmt):
        return False
    return not isinstance(stmt, (cst.SimpleStatementLine, cst.With, cst.If, cst.For))


def split_definitions(stmts: list) -> tuple[list, list]:
    """(the statements of a region but its definitions, the definitions)."""
    return [s for s in stmts if not is_definition(s)], [s for s in stmts if is_definition(s)]


def find_region(
    stmts: list,
    builders: frozenset = _BUILDERS,
    batchers: frozenset = _BATCHING,
    *,
    script: bool = False,
) -> tuple[list, int, int, list] | None:
    """(the statements holding the region, its start, its end, the blocks on the way) or None.

    `builders` and `batchers`: the calls that build a stage and batch (the
    file's functions that do count too, see :func:`pipeline_functions`).
    `script`: `stmts` are a module's (its definitions may sit among the region's
    statements: NOTE [ Definitions among a script's pipeline ]).
    """
    start = next(
        (i for i, s in enumerate(stmts) if calls(s) & builders and not is_definition(s)),
        None,
    )
    if start is None:
        return None
    first = stmts[start]
    if (isinstance(first, cst.With) and has_session_code(first)) or _main_guard(first):
        assert isinstance(first.body, cst.IndentedBlock)
        inner = find_region(list(first.body.body), builders, batchers, script=script)
        if inner is None:
            return None
        block, s, e, path = inner
        return block, s, e, [(stmts, start), *path]
    end = next((i for i in range(start, len(stmts)) if _ends_region(stmts[i], script)), len(stmts))
    batching = [
        i for i in range(start, end) if calls(stmts[i]) & batchers and not is_definition(stmts[i])
    ]
    if batching:
        second = _second_pipeline(stmts, start, batching[0], end, builders)
        if second is not None:  # NOTE [ Several pipelines in one function ]
            batching = [i for i in batching if i < second]
        end = batching[-1] + 1  # what follows the last batching call is the model
    # a statement that only uses the tensors (a print) comes after; so do definitions
    while end - 1 > start and (
        is_definition(stmts[end - 1])
        or not (assigned_names(stmts[end - 1]) or registers_runner_in(stmts[end - 1]))
    ):
        end -= 1
    return stmts, start, end, []


def session_head(
    stmts: list, start: int, end: int, builders: frozenset, batchers: frozenset
) -> list:
    """The statements heading the session block after the region `stmts[start:end]` that
    finish its pipeline: NOTE [ A pipeline finished in the session block ]."""
    if any(calls(s) & batchers for s in stmts[start:end] if not is_definition(s)):
        return []
    k = next((i for i in range(end, len(stmts)) if _ends_region(stmts[i], True)), len(stmts))
    block = stmts[k] if k < len(stmts) else None
    if not (
        isinstance(block, cst.With)
        and has_session_code(block.items[0])
        and isinstance(block.body, cst.IndentedBlock)
    ):
        return []
    unseen = {n for i in block.items if i.asname is not None for n in names_in(i.asname)}
    unseen |= {n for s in stmts[end:k] for n in assigned_names(s)}
    head: list = []
    for stmt in block.body.body:
        if (
            not isinstance(stmt, cst.SimpleStatementLine)
            or has_session_code(stmt)
            or names_in(stmt) & unseen
        ):
            break
        head.append(stmt)
    while head and not calls(head[-1]) & builders:
        head.pop()
    return head


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
    builders, batchers = pipeline_functions(module)
    found = find_region(scope, builders, batchers, script=function is None)
    if found is None or found[1] >= found[2]:
        return False
    if function is not None:
        return True
    region = split_definitions(found[0][found[1] : found[2]])[0]
    # NOTE [ A stage only the script's other functions read ]: no pipeline of its own
    return bool(set_aside(module, region, found[0][found[2] :], builders)[0])


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
        if is_definition(stmt):
            continue
        if _reads(stmt) & made:
            made |= set(assigned_names(stmt))
        elif calls(stmt) & (builders | _STARTS):
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


def pipeline_functions(module: cst.Module) -> tuple[frozenset, frozenset]:
    """The calls that build a stage and that batch, with the file's functions that do.

    A script's module level may build its pipeline through a function of the
    file (``images, labels = read_and_decode(queue, 4)``, ``x, y =
    input_pipeline(files)``): a call of such a function builds (or batches),
    as the function does, directly or through another one.
    """
    bodies = {s.name.value: calls(s) for s in module.body if isinstance(s, cst.FunctionDef)}
    builders, batchers = set(_BUILDERS), set(_BATCHING)
    changed = True
    while changed:
        changed = False
        for name, made in bodies.items():
            for found in (builders, batchers):
                if name not in found and made & found:
                    found.add(name)
                    changed = True
    return frozenset(builders), frozenset(batchers)
