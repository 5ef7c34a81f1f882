"""The check every migrated module passes before it is proven or written: it parses and
every name its new functions read is defined.

The rewrite moves the user's statements between functions (NOTE [ How a legacy
function is rewritten ] in :mod:`queue_pipeline._migrate.codegen`); a statement
moved away from the definition of a name it reads would fail only when the new
code runs, or, in a branch the proof does not take, only on the user's machine.
So the new functions are checked statically, with the standard library's
:mod:`symtable` (Python's own scope rules): a name a new function reads as a
global must be bound at the module's top level (an import, a definition, an
assignment, also inside ``if`` / ``try``) or be a builtin. A failure is a bug in
migrate: the error names the migrated line and a copy of the migrated code, kept
in the temporary directory for the report (the copies migrate works on are
removed after the run), and nothing is written.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import symtable
import tempfile

from queue_pipeline._migrate.loading import MigrateError

__all__ = ["check_names", "check_rewritten_scope"]

_API = "queue-pipeline migrate"


def check_names(
    source: str, functions: list[str], where: str, user: str = "", ran: frozenset = frozenset()
) -> None:
    """Raises MigrateError when `source` does not parse or a new function reads an unbound name.

    Args:
      source: the migrated module's source.
      functions: the names of the functions the migration wrote.
      where: the user's file, for the message.
      user: the source the rewrite read (`where`'s), and `ran` the (code name, first line)
        of its functions the run called: NOTE [ A closure over a local the map moves ].
    """
    try:
        tree = ast.parse(source)
        table = symtable.symtable(source, where, "exec")
    except SyntaxError as e:
        raise MigrateError(
            f"{_API}: {_parse_failure_at(source, e.lineno or 0, where, user, functions)}"
            f"the migrated code does not parse (line {e.lineno} of the migrated module: "
            f"{e.msg}); this is a bug in migrate: please report it with "
            f"{_evidence(where, source)}. Nothing was written."
        ) from e
    bound = set(dir(builtins)) | {"__file__", "__name__", "__doc__"}
    for symbol in table.get_symbols():
        if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace():
            bound.add(symbol.get_name())
    lines = {n.name: n.lineno for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for child in table.get_children():
        if child.get_name() not in functions:
            continue
        for name, scope in _global_reads(child):
            if name not in bound:
                closure = _closure_over_local(_user_tree(user, tree), functions, name, ran)
                if closure is not None:  # NOTE [ A closure over a local the map moves ]
                    raise MigrateError(closure.replace("<where>", where))
                line = _first_read(tree, scope, name, lines.get(child.get_name(), 0))
                raise MigrateError(
                    f"{_API}: the migrated code reads `{name}` in {scope}() (line {line} of the "
                    f"migrated module), which is defined nowhere it can see; this is a bug in "
                    f"migrate: please report it with {_evidence(where, source)}. Nothing was "
                    "written."
                )


def _parse_failure_at(source: str, lineno: int, where: str, user: str, functions) -> str:
    """``<file>:<line>: <the user's function>(): `` for the user's function whose new
    version holds migrated line `lineno` (the line of its ``def`` in the user's file), or
    "" when none does."""
    lines = source.splitlines()[: max(lineno, 0)]
    for text in reversed(lines):
        found = re.match(r"\s*(?:async\s+)?def\s+(\w+)\s*\(", text)
        if found is None or found.group(1) not in functions:
            continue
        name = found.group(1)
        legacy = re.sub(r"_dataset(_\d+)?$", "", name)
        at = re.search(rf"^[ \t]*(?:async\s+)?def\s+{re.escape(legacy)}\s*\(", user, re.M)
        line = user.count("\n", 0, at.start()) + 1 if at is not None else 0
        return f"{where}:{line}: {legacy}(): " if line else f"{where}: {legacy}(): "
    return ""


def _user_tree(user: str, tree: ast.Module) -> ast.Module:
    try:
        return ast.parse(user) if user else tree
    except SyntaxError:
        return tree


def _closure_over_local(
    tree: ast.Module, functions: list[str], name: str, ran: frozenset
) -> str | None:
    """The refusal of a user's nested function reading its function's local `name`, or None.

    NOTE [ A closure over a local the map moves ]
    ``crop = lambda x: tf.random_crop(image, ...)`` in the user's function reads
    that function's ``image`` when it is called (after ``image = decode(...)``),
    not its argument. The tf.data version computes ``image`` per record inside
    the mapped function, where the closure, defined in the outer function,
    cannot see it: not a bug in migrate but a read the rewrite cannot keep, so
    it is refused at the user's line with the fix (the one the run called, of
    one per branch).
    """
    found = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name in functions:
            continue
        nested = [n for n in ast.walk(fn) if isinstance(n, (ast.Lambda, ast.FunctionDef))]
        nested = [n for n in nested if n is not fn]
        inner = {id(x) for n in nested for x in ast.walk(n)}
        for n in nested:
            params = {a.arg for a in ast.walk(n.args) if isinstance(a, ast.arg)}
            reads = any(
                isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Load)
                for x in ast.walk(n)
            )
            if reads and name not in params and _assigns(fn, name, inner):
                kind = "lambda" if isinstance(n, ast.Lambda) else f"def {n.name}"
                code = "<lambda>" if isinstance(n, ast.Lambda) else n.name
                message = (
                    f"{_API}: <where>:{n.lineno}: cannot migrate the {kind} of {fn.name}(): "
                    f"it reads `{name}`, a local of {fn.name}() it is not given, so it reads "
                    f"the value `{name}` holds when it is called; the tf.data version "
                    f"computes `{name}` per record inside Dataset.map, where the {kind} "
                    f"cannot see it. Fix: pass `{name}` (or the argument it stands for) as a "
                    "parameter, then migrate."
                )
                found.append(((code, n.lineno) not in ran, message))
    return min(found, key=lambda f: f[0])[1] if found else None


def _assigns(fn: ast.FunctionDef, name: str, inner: set) -> bool:
    return any(
        isinstance(x, ast.Name) and x.id == name and isinstance(x.ctx, ast.Store)
        and id(x) not in inner
        for x in ast.walk(fn)
    )  # fmt: skip


def check_rewritten_scope(original: str, source: str, function: str | None, where: str) -> None:
    """Raises MigrateError when the rewrite left a name `function` reads unbound.

    For a pipeline migrated where it stands, inside the user's own function
    or at a script's module level (`function` None; the functions its
    statements call are judged with it), its session code around it: every
    name that scope reads must still be bound after the rewrite as it was
    before (a statement of the region that defined one must not be dropped,
    nor a line kept that uses a queue object the rewrite removed). Names the
    original already read unbound, and files with a star import, are not
    judged.
    """
    before, after = _unbound_reads(original, function), _unbound_reads(source, function)
    if before is None or after is None:
        return
    lost = sorted(after - before)
    if lost:
        tree = ast.parse(source)
        line = _first_read(tree, function, lost[0], 0)
        what = f"{function}()" if function else "script"
        raise MigrateError(
            f"{_API}: the migrated {what} reads `{lost[0]}` (line {line} of the migrated "
            "file), which the rewrite left unbound (a statement of the pipeline's lines that "
            "defined it was not kept); this is a bug in migrate: please report it with "
            f"{_evidence(where, source)}. Nothing was written."
        )


def _evidence(where: str, source: str) -> str:
    """`where` and the migrated module `source`, saved in a file that outlives the run."""
    stem = os.path.splitext(os.path.basename(where))[0]
    stem = re.sub(r"^_(.+)__qp_[a-z]+_\d+$", r"\1", stem)  # a copy's: the file's name
    fd, saved = tempfile.mkstemp(prefix=f"{stem}_migrated_", suffix=".py", text=True)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(source)
    return f"{where} and the migrated module it refused, saved as {saved}"


def _unbound_reads(source: str, function: str | None) -> set[str] | None:
    """Names top-level `function` of `source` (None: the module's own statements and the
    functions they call) reads as globals that nothing binds, or None."""
    try:
        tree = ast.parse(source)
        table = symtable.symtable(source, "<migrated>", "exec")
    except SyntaxError:
        return None
    star = any(
        isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
        for n in ast.walk(tree)
    )
    bound = set(dir(builtins)) | {"__file__", "__name__", "__doc__"}
    for symbol in table.get_symbols():
        if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace():
            bound.add(symbol.get_name())
    if function is None:
        read = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
        called = [
            c for c in table.get_children() if c.get_type() == "function" and c.get_name() in read
        ]
        reads = read.union(*({n for n, _ in _global_reads(c)} for c in called))
        return None if star else {name for name in reads if name not in bound}
    scopes = [c for c in table.get_children() if c.get_name() == function]
    if star or len(scopes) != 1:
        return None
    return {name for name, _ in _global_reads(scopes[0]) if name not in bound}


def _global_reads(table: symtable.SymbolTable) -> list[tuple[str, str]]:
    """(name, function) of each name `table` and the scopes nested in it read as globals."""
    out = []
    for symbol in table.get_symbols():
        if symbol.is_referenced() and symbol.is_global() and not symbol.is_assigned():
            out.append((symbol.get_name(), table.get_name()))
    for child in table.get_children():
        out += _global_reads(child)
    return out


def _first_read(tree: ast.Module, scope: str | None, name: str, fallback: int) -> int:
    if scope is None:  # the module's own statements, then the functions they call
        loads = [
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        ]
        return min(loads, default=fallback)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == scope:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and inner.id == name:
                    return inner.lineno
    return fallback
