"""The nested function an input-function factory returns, lifted out of it and written back.

NOTE [ Lifting an input_fn out of its factory ]
``def get_input_fn(filenames, batch_size, num_epochs): def _input_fn():
...; return _input_fn``: the nested function reads the factory's locals
(its free variables, ``filenames``, ``batch_size``, ``num_epochs``) as
closures. Migrate rewrites module-level functions, so a copy of the file
gets one more function after a marker line, ``_input_fn(filenames,
batch_size, num_epochs)``: the nested function's body, dedented, its free
variables (then its own parameters, which all have defaults) as parameters.
It is called with the values the returned function holds: its closure's
cells and its defaults (:func:`inner_arguments`), evaluated from
``get_input_fn(ARGS)`` in each graph that runs it, so a tensor the factory
made is made again there. Every line of the file keeps its number; the
lifted body's lines map to the nested function's by one offset.

Written back, the tf.data version's body replaces the nested function's body
in a copy of the factory named ``get_input_fn_dataset``, right after the
factory: its names are the factory's locals again, closures as before, and
the nested function keeps its name and signature. Refused, naming the line:
a nested function the factory does not define in its own text (a function
of the module, a lambda), one that declares ``nonlocal`` (a rebinding
cannot reach the factory from a module-level function), ``async`` or a
generator, a body on its ``def`` line, and a free variable the factory never
bound.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re

from queue_pipeline._migrate.loading import MigrateError

__all__ = ["LiftedInputFn", "inner_arguments", "lift", "write_back"]

_API = "queue-pipeline migrate"
MARKER = "# queue_pipeline migrate: the input_fn, lifted out of its factory"


def inner_arguments(returned) -> list:
    """The values `returned` (the nested function) reads as the lifted function's parameters:
    its closure's cells, then each parameter's default (``()`` / ``{}`` for ``*args`` /
    ``**kwargs``)."""
    values = [cell.cell_contents for cell in returned.__closure__ or ()]
    for p in inspect.signature(returned).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            values.append(())
        elif p.kind is p.VAR_KEYWORD:
            values.append({})
        else:
            values.append(p.default)
    return values


@dataclasses.dataclass(frozen=True)
class LiftedInputFn:
    """A factory's nested function lifted to a module-level function of a copy of its file.

    Attributes:
      source: the copy's text.
      function: the lifted function's name.
      parameters: its parameters: the free variables, then the nested function's own.
      factory, inner: the factory's and the nested function's names.
      occurrence: which of the factory's nested functions of that name it is (0: the first).
      inner_line: the nested function's ``def`` line in the file.
      body_first: the first line of its body in the file.
      lifted_first: the first line of the lifted body in the copy.
    """

    source: str
    function: str
    parameters: tuple[str, ...]
    factory: str
    inner: str
    occurrence: int
    inner_line: int
    body_first: int
    lifted_first: int

    def file_line(self, line: int) -> int:
        """The file's line for line `line` of the copy."""
        if line >= self.lifted_first:
            return self.body_first + (line - self.lifted_first)
        if line == self.lifted_first - 1:
            return self.inner_line
        return line

    def map_lines(self, text: str, copy: str, path: str) -> str:
        """`text` with each ``<copy>:<line>`` as ``<file>:<its line>``; the copy named the file."""
        pattern = re.escape(copy) + r":(\d+)"
        text = re.sub(pattern, lambda mt: f"{path}:{self.file_line(int(mt.group(1)))}", text)
        return text.replace(copy, path)


def _factory_node(tree: ast.Module, factory: str) -> ast.FunctionDef | None:
    return next(
        (s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == factory), None
    )


def _nested(factory: ast.FunctionDef, name: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        n
        for n in ast.walk(factory)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
        and n is not factory
    ]  # fmt: skip


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def _own_nodes(node: ast.AST):
    """The nodes of `node`'s own scope (not those of functions or classes it defines)."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            yield from _own_nodes(child)


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for s in tree.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(s.name)
        for n in ast.walk(s) if not isinstance(s, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                names.add(n.id)
            elif isinstance(n, ast.alias):
                names.add((n.asname or n.name).split(".")[0])
    return names


def lift(source: str, path: str, factory: str, returned, head: str) -> LiftedInputFn:
    """The copy of `source` with the nested function `returned` (which `factory` returned)
    as a module-level function: NOTE [ Lifting an input_fn out of its factory ].

    Args:
      head: the refusal's opening (what was called and what it returned).

    Raises:
      MigrateError: a shape that cannot be lifted (the NOTE's list), naming its line.
    """
    code = returned.__code__
    name = code.co_name
    tree = ast.parse(source)
    node = _factory_node(tree, factory)
    found = _nested(node, name) if node is not None else []
    if len(found) > 1:
        found = [n for n in found if code.co_firstlineno in (n.lineno, _start(n))] or found[:1]
    if not found or not name.isidentifier():
        raise MigrateError(
            f"{head}; `{name}` is not a function {factory} defines in {path}, so it cannot be "
            f"rewritten in its place. Fix: migrate the function that builds the pipeline "
            "(FILE.py:FUNCTION --call ...)."
        )
    inner = found[0]
    where = f"{path}:{inner.lineno}"
    own = list(_own_nodes(inner))
    shape = (
        "is an async function"
        if isinstance(inner, ast.AsyncFunctionDef)
        else "is a generator"
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own)
        else "declares `nonlocal`"
        if any(isinstance(n, ast.Nonlocal) for n in own)
        else "has its body on its `def` line"
        if inner.body[0].lineno == inner.lineno
        else ""
    )
    if shape:
        raise MigrateError(
            f"{_API}: {where}: `{name}`, which {factory} returns and which builds the queue "
            f"pipeline, {shape}: it cannot be rewritten as a function returning a "
            "tf.data.Dataset. Fix: make it a plain function that returns the pipeline's "
            "tensors (features, labels) and rebinds none of the factory's names."
        )
    empty = [v for v, c in zip(code.co_freevars, returned.__closure__ or ()) if _empty(c)]
    if empty:
        raise MigrateError(
            f"{_API}: {where}: `{name}` reads {', '.join(empty)} of {factory}, which is not "
            "bound when the factory returns. Fix: bind it before `return`."
        )
    taken = _top_level_names(tree)
    function = name
    if {name, f"{name}_dataset"} & taken or not name.lstrip("_"):
        function = f"{factory}_{name.lstrip('_')}"
    if {function, f"{function}_dataset", f"{factory}_dataset"} & taken:
        raise MigrateError(
            f"{_API}: {path} defines {function}, {function}_dataset or {factory}_dataset "
            f"already, the names migrate gives {name}'s lifted copy and its tf.data versions. "
            "Fix: rename it."
        )
    parameters = tuple(code.co_freevars) + tuple(inspect.signature(returned).parameters)
    lines = source.splitlines(keepends=True)
    first = min(_start(s) for s in inner.body[:1])
    body = lines[first - 1 : inner.end_lineno]
    indent = re.match(r"[ \t]*", lines[first - 1]).group(0)  # type: ignore[union-attr]
    dedented = ["    " + ln[len(indent) :] if ln.startswith(indent) else ln for ln in body]
    dedented = [ln if ln.strip() else "\n" for ln in dedented]
    prefix = "".join(lines)
    prefix += "" if prefix.endswith("\n") else "\n"
    prefix += f"\n\n{MARKER}\ndef {function}({', '.join(parameters)}):\n"
    return LiftedInputFn(
        source=prefix + "".join(dedented),
        function=function,
        parameters=parameters,
        factory=factory,
        inner=name,
        occurrence=_nested(node, name).index(inner),  # type: ignore[arg-type]
        inner_line=inner.lineno,
        body_first=first,
        lifted_first=prefix.count("\n") + 1,
    )


def _empty(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - reading it is the test
    except ValueError:
        return True
    return False


def write_back(lifted: LiftedInputFn, rewritten: str, new_function: str) -> tuple[str, str]:
    """(the file's text with ``<factory>_dataset`` after the factory, the text added).

    `rewritten` is the copy after the rewrite: the file's part (helpers'
    versions inserted), then the marker, the lifted function and its tf.data
    version `new_function`. The version's body becomes the nested function's
    body in a copy of the factory; other functions written after the marker
    follow it.
    """
    head, marker, tail = rewritten.partition(MARKER + "\n")
    if not marker:
        raise MigrateError(f"{_API}: the rewrite of {lifted.inner} lost its lifted function.")
    head = head.rstrip("\n") + "\n"
    tail_lines = tail.splitlines(keepends=True)
    tail_tree = ast.parse(tail)
    versions = [s for s in tail_tree.body if isinstance(s, ast.FunctionDef)]
    new = next((s for s in versions if s.name == new_function), None)
    if new is None or tuple(a.arg for a in new.args.args) != lifted.parameters:
        raise MigrateError(
            f"{_API}: the tf.data version of {lifted.factory}'s {lifted.inner} takes other "
            "parameters than the nested function reads: this is a bug in migrate; please "
            "report it with the file and the --call arguments."
        )
    first = _start(new.body[0])
    body = tail_lines[first - 1 : new.end_lineno]
    others = [
        "".join(tail_lines[_start(s) - 1 : s.end_lineno])
        for s in versions
        if s.name not in (new_function, lifted.function)
    ]
    head_lines = head.splitlines(keepends=True)
    factory = _factory_node(ast.parse(head), lifted.factory)
    assert factory is not None  # the file's part of the copy is the file's
    inner = _nested(factory, lifted.inner)[lifted.occurrence]
    inner_first = _start(inner.body[0])
    indent = re.match(r"[ \t]*", head_lines[inner_first - 1]).group(0)  # type: ignore[union-attr]
    unit = re.match(r"[ \t]*", body[0]).group(0)  # type: ignore[union-attr]
    reindented = [indent + ln[len(unit) :] if ln.startswith(unit) else ln for ln in body]
    reindented = [ln if ln.strip() else "\n" for ln in reindented]
    start, end = _start(factory), factory.end_lineno or factory.lineno
    text = (
        head_lines[start - 1 : inner_first - 1]
        + reindented
        + head_lines[(inner.end_lineno or inner_first) : end]
    )
    at = factory.lineno - start
    renamed = f"def {lifted.factory}_dataset"
    text[at] = re.sub(rf"\bdef\s+{lifted.factory}\b", renamed, text[at], count=1)
    added = "".join(text).rstrip("\n") + "\n"
    added += "".join("\n\n" + o.rstrip("\n") + "\n" for o in others)
    source = "".join(head_lines[:end]) + "\n\n" + added + "".join(head_lines[end:])
    return source, added
