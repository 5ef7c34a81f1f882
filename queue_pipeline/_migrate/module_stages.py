"""A producer or reader that the module makes at its top level and the function reads.

NOTE [ A queue made at module level ]
Training modules of the TF 1.x era often make their filename queue (or
reader) once, at module level, and read it in a function::

    filename_queue = tf.train.string_input_producer(FILES, num_epochs=None)
    def inputs(batch_size):
        reader = tf.TFRecordReader()
        _, serialized = reader.read(filename_queue)
        ...
        return tf.train.shuffle_batch(...)

``queue-pipeline migrate file.py:inputs`` ran that statement when it loaded
the file: under TF 2.x defaults it raised (queues need graph mode), in TF1
mode it made the queue in the default graph, which the trace's graph then
could not read ("must be from the same graph"). Now each top-level
assignment that makes a producer or a reader (:func:`find`: a call of one of
their APIs, however spelled) and binds a name the function reads is left out
of the load (``loading.DEFERRED``) and made again, in the file's own
order and with its own lines, right before each call of the function, in the
graph that call builds in (the trace, each side of the proof; :func:`wrap`),
as the module would have made it had it been imported there. The written
``<function>_dataset`` starts with those statements' tf.data versions (the
producer's chain over its arguments as the module spells them, a reader's
class read by the Dataset of records): :func:`body`. The module's own code
stays as it is: the statement at the top keeps its place (``<function>``
still reads it) and the report says so. Refused with the fix: such a
statement reading a name the function binds too (the arguments would read
the function's value instead of the module's).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import types
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate import loading
from queue_pipeline._migrate.base import PRODUCERS, READER_CLASSES, Function
from queue_pipeline._migrate.trace import MigrateError

__all__ = ["body", "deferred", "find", "held", "wrap"]

_STAGES = frozenset(PRODUCERS + READER_CLASSES + ("slice_input_producer",))
_KEY = "__qp_module_stages__"  # in the loaded module: {"lines": ..., "values": ...}


def find(source: str, function: str, path: str) -> list[ast.Assign]:
    """The top-level statements of `source` that make a producer or reader bound to a name
    `function` reads (in file order); [] when `function` is not a top-level function.

    Raises:
      MigrateError: such a statement reads a name `function` binds too.
    """
    tree = ast.parse(source)
    target = next(
        (s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == function), None
    )
    if target is None:
        return []
    local = _bound_in(target)
    reads = {
        n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    } - local
    found = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign) or not _makes_stage(stmt.value):
            continue
        bound = {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if not bound & reads:
            continue
        clash = sorted({n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)} & local)
        if clash:
            raise MigrateError(
                f"queue-pipeline migrate: {path}:{stmt.lineno}: `{ast.unparse(stmt)}` makes at "
                f"module level the stage {function}() reads, from `{clash[0]}`, a name "
                f"{function} binds too: its tf.data version, built inside {function}, would "
                f"read {function}'s own `{clash[0]}`. Fix: rename {function}'s `{clash[0]}`, "
                "then migrate"
            )
        found.append(stmt)
    return found


@contextlib.contextmanager
def deferred(stmts: list[ast.Assign]) -> Iterator[None]:
    """While the file is loaded: `stmts` are not run (:func:`wrap` runs them later)."""
    token = loading.DEFERRED.set(frozenset(s.lineno for s in stmts))
    try:
        yield
    finally:
        loading.DEFERRED.reset(token)


def wrap(module: types.ModuleType, function: str, stmts: list[ast.Assign], path: str) -> None:
    """Makes the loaded `module`'s `function` run `stmts` (in the module's namespace, with
    the file's name and lines) before each call: NOTE [ A queue made at module level ]."""
    if not stmts:
        return
    names = sorted({n.id for s in stmts for t in s.targets for n in _names(t)})
    maker = ast.FunctionDef(
        name=function,
        args=ast.arguments([], [], None, [], [], None, []),
        body=[ast.Global(names=names), *stmts],
        decorator_list=[],
        returns=None,
        lineno=stmts[0].lineno,
        col_offset=0,
    )
    ast.copy_location(maker.body[0], stmts[0])
    code = compile(ast.Module(body=[maker], type_ignores=[]), path, "exec")
    made: dict = {}
    exec(code, module.__dict__, made)  # noqa: S102 - the user's own statements
    make, original = made[function], module.__dict__[function]

    @functools.wraps(original)
    def with_module_stages(*args, **kwargs):
        make()
        return original(*args, **kwargs)

    module.__dict__[function] = with_module_stages
    module.__dict__[_KEY] = {"lines": [s.lineno for s in stmts], "names": names, "values": {}}


def held(module: types.ModuleType) -> None:
    """Keeps what the statements made in the trace's run (the rewrite reads their kinds
    after the proof has made them again)."""
    stages = module.__dict__.get(_KEY)
    if stages is not None and not stages["values"]:
        stages["values"] = {n: module.__dict__.get(n) for n in stages["names"]}


def body(rw, fn: Function) -> list[cst.CSTNode]:
    """`fn`'s statements for its tf.data version: the target's own, after the module-level
    statements that make what it reads (NOTE [ A queue made at module level ])."""
    stmts: list[cst.CSTNode] = list(fn.node.body.body)
    stages = rw.trace.module.__dict__.get(_KEY) if fn.name == rw.trace.function else None
    if not stages:
        return stmts
    top = [s for s in rw.module.body if rw.positions[s].start.line in stages["lines"]]
    values = stages["values"]
    fn.kinds.update({n: rw.trace.kind_of(v) for n, v in values.items()})
    fn._made = {**fn._first_made(), **{n: 0 for n in values}}  # made before the body
    for stmt in top:
        line = rw.positions[stmt].start.line
        rw.differences.append(
            f"{rw.where(line)}: `{rw.code(stmt).strip().splitlines()[0]}` stays at module "
            f"level: {fn.name} still reads it; {fn.name}_dataset makes its records from the "
            f"same arguments (remove the statement with {fn.name} once nothing calls it)"
        )
    docstring = bool(stmts) and m.matches(
        stmts[0],
        m.SimpleStatementLine(body=[m.Expr(value=m.SimpleString() | m.ConcatenatedString())]),
    )
    return stmts[:1] + top + stmts[1:] if docstring else top + stmts


def _makes_stage(value: ast.expr) -> bool:
    """Whether `value` calls a producer or a reader constructor (any spelling before it)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _STAGES:
                return True
    return False


def _bound_in(fn: ast.FunctionDef) -> set[str]:
    """The names `fn` binds itself (its parameters, the targets it assigns)."""
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]
    bound = {p.arg for p in params}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
    return bound


def _names(target: ast.expr) -> list[ast.Name]:
    return [n for n in ast.walk(target) if isinstance(n, ast.Name)]
