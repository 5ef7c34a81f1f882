"""Which top-level statements of the user's file migrate runs: NOTE [ What migrate runs of the
user's file ] in :mod:`queue_pipeline._migrate.loading`.

Decided on the parsed file alone (nothing is run here): the names FUNCTION
reads as globals by Python's own scopes (:mod:`symtable`), grown through the
functions and statements they reach, select the statements that define or set
up those names; the rest is reported as not run.
"""

from __future__ import annotations

import ast
import symtable
from typing import Iterable

__all__ = ["DEFINITIONS", "first_line", "names_read", "select", "set_up_for_others"]

_FLAG_FUNCTIONS = frozenset(
    {
        "mark_flag_as_required",
        "mark_flags_as_required",
        "mark_flags_as_mutual_exclusive",
        "declare_key_flag",
        "adopt_module_key_flags",
        "register_validator",
    }
)


def first_line(stmt: ast.stmt) -> str:
    """`stmt`'s first line as Python 3.11+ writes it on every Python (3.10's
    ``ast.unparse`` puts tuple targets in parentheses: ``(a, b) = argv``)."""
    if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Tuple) for t in stmt.targets):
        targets = " = ".join(_bare_target(t) for t in stmt.targets)
        return f"{targets} = {ast.unparse(stmt.value)}".splitlines()[0]
    if isinstance(stmt, (ast.For, ast.AsyncFor)) and isinstance(stmt.target, ast.Tuple):
        word = "async for" if isinstance(stmt, ast.AsyncFor) else "for"
        return f"{word} {_bare_target(stmt.target)} in {ast.unparse(stmt.iter)}:"
    text = ast.unparse(stmt).strip().splitlines()
    return text[0] if text else ""


def _bare_target(target: ast.expr) -> str:
    if not isinstance(target, ast.Tuple):
        return ast.unparse(target)
    parts = [ast.unparse(e) for e in target.elts]
    return parts[0] + "," if len(parts) == 1 else ", ".join(parts)


def select(
    tree: ast.Module, function: str | None, also: Iterable[str] = ()
) -> tuple[list[ast.stmt], list, set[str]]:
    """The top-level statements to run for `function`, (first, last, what) of the rest,
    and the names the function needs.

    `also`: more names needed (read by the call's arguments).
    """
    definitions: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions[stmt.name] = stmt
    body_reads = _global_reads(tree)
    # No function named: only definitions and what they need (never the program).
    needed = {function} | set(body_reads.get(function, set())) if function else set()
    needed |= set(also)
    variables = _assigned(tree)
    # The names needed grow with what the kept statements read, to a fixed point.
    # Every definition is kept; what it evaluates when defined (defaults,
    # decorators, annotations, a class body) is needed at once, its body's
    # names once the function is. The names only other functions read
    # (``result.load()`` and the callers use them) are set up where that
    # calls nothing: constants such as ``OP_TIMEOUT_MS = 20_000``.
    defs = [s for s in tree.body if isinstance(s, DEFINITIONS)]
    keep_ids = {id(s) for s in defs}
    for stmt in defs:
        needed |= _definition_time_reads(stmt)
    others = {n for s in defs for n in body_reads.get(s.name, set())}
    expanded: set[int] = set()
    while True:
        before = len(needed), len(keep_ids)
        for stmt in defs:
            if id(stmt) not in expanded and stmt.name in needed:
                expanded.add(id(stmt))
                needed |= body_reads.get(stmt.name, set())
        for stmt in tree.body:
            if id(stmt) in keep_ids:
                continue
            if _definitional(stmt, needed, variables) or (
                _definitional(stmt, others, variables) and not _calls(stmt)
            ):
                keep_ids.add(id(stmt))
                needed |= _reads(stmt)
        if (len(needed), len(keep_ids)) == before:
            break
    keep = [s for s in tree.body if id(s) in keep_ids]
    skipped: list[tuple[int, int, str]] = []
    run: list[ast.stmt] = []  # consecutive statements not run, reported as one range
    statements: list[ast.stmt | None] = [*tree.body, None]
    for item in statements:
        if item is not None and id(item) not in keep_ids and not _is_main_guard(item):
            run.append(item)
            continue
        if run:
            first, last = run[0].lineno, run[-1].end_lineno or run[-1].lineno
            more = f" and {len(run) - 1} more statement(s)" if len(run) > 1 else ""
            skipped.append((first, last, f"{_why_skipped(run[0])}{more}"))
            run = []
        if item is not None and id(item) not in keep_ids:
            skipped.append((item.lineno, item.end_lineno or item.lineno, _why_skipped(item)))
    return keep, skipped, needed


def set_up_for_others(keep: list[ast.stmt], needed: set[str]) -> set[int]:
    """The ids of the assignments in `keep` that set up no `needed` name: kept only for
    the file's other functions (``script, first, second = argv`` that ``main`` reads),
    so their failure need not fail the load."""
    found = set()
    for stmt in keep:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if not {_root(t) for t in targets for t in _target_parts(t)} & needed:
                found.add(id(stmt))
    return found


def bound_names(stmt: ast.stmt) -> set[str]:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return set()
    return {(a.asname or a.name).split(".")[0] for a in stmt.names}


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _definition_time_reads(stmt: ast.stmt) -> set[str]:
    """The names a ``def`` or ``class`` statement reads when it runs (not its function body)."""
    if isinstance(stmt, ast.ClassDef):
        return _reads(stmt)
    assert isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
    parts: list[ast.expr] = list(stmt.decorator_list) + list(stmt.args.defaults)
    parts += [d for d in stmt.args.kw_defaults if d is not None]
    args = stmt.args.posonlyargs + stmt.args.args + stmt.args.kwonlyargs
    parts += [a.annotation for a in args if a.annotation is not None]
    if stmt.returns is not None:
        parts.append(stmt.returns)
    return {n for p in parts for n in _reads(p)}


def _calls(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(stmt))


def _why_skipped(stmt: ast.stmt) -> str:
    code = first_line(stmt)
    if len(code) > 60:
        code = code[:57] + "..."
    if _is_main_guard(stmt):
        return f"`{code}`: the program's __main__ block"
    return f"`{code}`"


def _is_main_guard(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.If)
        and isinstance(stmt.test, ast.Compare)
        and isinstance(stmt.test.left, ast.Name)
        and stmt.test.left.id == "__name__"
    )


def _assigned(tree: ast.Module) -> set[str]:
    """The names the file's top level assigns (its variables, not its imports)."""
    names: set[str] = set()
    for stmt in ast.walk(tree):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names |= {p.id for t in targets for p in _target_parts(t) if isinstance(p, ast.Name)}
    return names


def _definitional(stmt: ast.stmt, needed: set[str], variables: set[str]) -> bool:
    """Whether `stmt` only imports, defines, or sets up a needed name (NOTE [ What migrate runs ]).

    A method call counts as setting up its object only on a variable of the
    file (``parser.add_argument``, ``defaults.append``), never on an imported
    module (``os.makedirs`` writes), but for ``sys.path``, which the file's
    imports need.
    """
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return bool({_root(t) for t in targets for t in _target_parts(t)} & needed)
    if isinstance(stmt, ast.Expr):
        if isinstance(stmt.value, ast.Constant):
            return True  # a docstring
        if isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if last.startswith("DEFINE") or last in _FLAG_FUNCTIONS:
                return True
            if not isinstance(func, ast.Attribute):
                return False
            if ast.unparse(func.value) == "sys.path":
                return True
            root = _root(func.value)
            return root in needed and root in variables
        return False
    if _is_main_guard(stmt):
        return False
    if isinstance(stmt, ast.If):
        body = stmt.body + stmt.orelse
        return all(_definitional(s, needed, variables) for s in body)
    if isinstance(stmt, ast.With):  # `with graph.as_default(): BATCH = tf.constant(16)`
        opens = any(
            isinstance(n, ast.Call) and getattr(n.func, "id", "") == "open"
            for item in stmt.items
            for n in ast.walk(item.context_expr)
        )
        return not opens and all(_definitional(s, needed, variables) for s in stmt.body)
    if isinstance(stmt, ast.Try):
        body = stmt.body + stmt.orelse + stmt.finalbody
        handlers = [s for h in stmt.handlers for s in h.body]
        return all(_definitional(s, needed, variables) for s in body + handlers)
    return False


def _target_parts(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [p for e in target.elts for p in _target_parts(e)]
    if isinstance(target, ast.Starred):
        return _target_parts(target.value)
    return [target]


def _root(node: ast.expr) -> str:
    """The name at the root of ``a``, ``a.b``, ``a[k]``, ``a.b(...)``; '' for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _global_reads(tree: ast.Module) -> dict[str, set[str]]:
    """Top-level function or class name -> the module names its body reads.

    By Python's own scopes (:mod:`symtable`): a function's locals, parameters
    and its comprehensions' variables are not module names (``X, Y = ...``
    inside ``read_images`` does not need the module's ``X, Y``).
    """
    try:
        table = symtable.symtable(ast.unparse(tree), "<migrate>", "exec")
    except SyntaxError:  # pragma: no cover - the tree came from a parse
        return {}
    out: dict[str, set[str]] = {}
    for child in table.get_children():
        names: set[str] = set()
        _collect_globals(child, names, top=child.get_type() == "class")
        out.setdefault(child.get_name(), set()).update(names)
    return out


def _collect_globals(table: symtable.SymbolTable, names: set[str], *, top: bool) -> None:
    for symbol in table.get_symbols():
        if not symbol.is_referenced():
            continue
        # a class body's own names are read at module scope when it runs
        if symbol.is_global() or (top and not symbol.is_parameter()):
            names.add(symbol.get_name())
    for child in table.get_children():
        _collect_globals(child, names, top=False)


def names_read(expression: str | None) -> set[str]:
    """The names an argument list (``--call``) reads; none for one that does not parse."""
    if not expression:
        return set()
    try:
        return _reads(ast.parse(f"f({expression})", mode="eval"))
    except SyntaxError:
        return set()  # parse_call reports it


def _reads(node: ast.AST) -> set[str]:
    """Every name `node` reads (over-approximated: any load of the name, in any scope)."""
    names = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        # ``X[k] = v`` and ``X += v`` read X too
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names |= {
            _root(p) for t in targets for p in _target_parts(t) if not isinstance(p, ast.Name)
        }
        if isinstance(node, ast.AugAssign):
            names.add(_root(node.target))
    return names - {""}
