"""Loading the user's file for a migration without running its program.

NOTE [ What migrate runs of the user's file ]
``queue-pipeline migrate FILE.py:FUNCTION`` must learn what FUNCTION builds
by calling it, but it must never run what the file does as a program: the
module-level model and training loop of a course script, a dataset download,
``os.makedirs(a.output_dir)``, a ``tf.app.run()`` under ``__main__``. So the
file is never imported. Its top level is parsed and only what FUNCTION needs
is executed, in the file's own order, with the real file name and line
numbers (tracebacks and the trace's source lines are the file's own):

* imports, function and class definitions (defining runs no body);
* flag definitions: ``flags.DEFINE_*(...)`` (absl, ``tf.app.flags``) and the
  calls on an ``argparse`` parser that FUNCTION's globals reach
  (``parser.add_argument``);
* the assignments, augmented assignments and mutations (``X[k] = ...``,
  ``X.attr = ...``, ``X.append(...)``) of the module names that FUNCTION
  reads, directly or through the functions and names it reaches
  (``FLAGS = flags.FLAGS``, ``a = parser.parse_args()``, ``DATA_FILES =
  glob(...)``, ``sys.path.insert(...)``);
* compound statements (``if`` / ``try``) made only of the above.

Everything else is skipped and listed (``Loaded.skipped``, the report's
"Not run" lines): module-level sessions and loops, other calls, the
``if __name__ == "__main__":`` block.

The file sees its own command line, never migrate's: while it is loaded,
traced and proven, ``sys.argv`` is ``[FILE.py] + argv`` (``--argv``, empty
by default), so ``parser.parse_args()`` and absl's flag parsing read the
program's arguments, and flags keep their defaults unless ``--argv`` sets
them. absl flags that the file defines are parsed from that argv once it is
loaded; flags a previous load of a module of the same name defined are
forgotten first, so a second migration in one process sees its own
defaults.

The migrated version (:func:`load_beside`) reuses this load: a copy of the
loaded module's namespace, in which only the definitions of the migrated
source run, so nothing of the top level runs twice and ``__file__`` stays
the user's (``os.path.dirname(__file__)`` paths find the user's data). Its
source is registered with :mod:`linecache` under a name of its own (no
temporary file), so AutoGraph and tracebacks find it.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib.util
import itertools
import linecache
import os
import shlex
import symtable
import sys
import types
from typing import Iterable, Iterator, Sequence

__all__ = [
    "Loaded",
    "MigrateError",
    "load",
    "load_beside",
    "module_name",
    "names_read",
    "own_argv",
    "split_argv",
]

_API = "queue-pipeline migrate"
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
_counter = itertools.count(1)


class MigrateError(Exception):
    """A migration that cannot start or finish: bad input, nothing to migrate."""


@dataclasses.dataclass
class Loaded:
    """A file loaded for a migration.

    Attributes:
      module: the module object (registered in ``sys.modules`` under `name`).
      name: its module name (``pkg.mod`` for a file in a package).
      skipped: (first line, last line, what) of each top-level statement not run.
    """

    module: types.ModuleType
    name: str
    skipped: list[tuple[int, int, str]]

    def skipped_lines(self, path: str) -> list[str]:
        """The report's lines for what was not run, ``FILE:LINE: `code`: not run (...)``."""
        return [
            f"{path}:{first}" + (f"-{last}" if last != first else "") + f": {what}"
            for first, last, what in self.skipped
        ]


def split_argv(argv: str | Sequence[str] | None) -> list[str]:
    """`argv` as a list: a string is split as a shell would (``"--input_dir 'my data'"``)."""
    if argv is None:
        return []
    if isinstance(argv, str):
        try:
            return shlex.split(argv)
        except ValueError as e:
            raise MigrateError(
                f"{_API}: `--argv` {argv!r} does not split into arguments ({e}). Fix: quote "
                "it as on a shell command line."
            ) from e
    return [str(a) for a in argv]


@contextlib.contextmanager
def own_argv(path: str, argv: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` is ``[path] + argv`` inside: the program's command line, not the tool's."""
    saved = sys.argv
    sys.argv = [path, *argv]
    try:
        yield
    finally:
        sys.argv = saved


def module_name(path: str) -> tuple[str, str]:
    """The module name of the file at `path` as its package would import it, and the
    directory that must be on ``sys.path`` for that (the one above its outermost package)."""
    directory, base = os.path.split(path)
    parts = [os.path.splitext(base)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
    return ".".join(parts), directory


def load(
    path: str,
    source: str,
    function: str | None,
    argv: Sequence[str] = (),
    *,
    code_path: str | None = None,
    also: Iterable[str] = (),
) -> Loaded:
    """Runs what `function` needs of `source` (the file at `path`): NOTE [ What migrate runs ].

    Args:
      path: the real path of the file (the module's ``__file__``).
      source: its text.
      function: the function to be traced; None keeps every definitional
        statement of the top level (no name is known to be needed).
      argv: the program's arguments (``sys.argv[1:]`` while it loads).
      code_path: the file name its code objects carry (default `path`): a
        wrapped copy's own name, registered with linecache.
      also: more module names needed (those a ``--call`` expression reads).

    Raises:
      MigrateError: the file does not parse, or a statement it needs fails
        (its line and the error).
    """
    tree = _parse(source, code_path or path)
    keep, skipped = select(tree, function, also)
    name, directory = module_name(path)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # the module's own imports need it
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:  # pragma: no cover - a .py path always has a spec
        raise MigrateError(f"{_API}: {path} cannot be loaded as a module.")
    module = importlib.util.module_from_spec(spec)
    if code_path is not None and code_path != path:
        _register_source(code_path, source)
    module.__dict__["__qp_code_path__"] = code_path or path
    previous = sys.modules.get(name)
    sys.modules[name] = module
    _forget_flags(name)
    try:
        with own_argv(path, argv):
            _run(tree, keep, module, code_path or path)
            _parse_absl_flags(module, path, argv)
    except BaseException:
        if previous is not None:
            sys.modules[name] = previous
        else:
            sys.modules.pop(name, None)
        raise
    return Loaded(module, name, skipped)


def load_beside(original: types.ModuleType, source: str, path: str | None) -> types.ModuleType:
    """The migrated `source` as a module that reuses `original`'s load: NOTE [ What migrate runs ].

    Only the function and class definitions of `source` run, in a copy of
    `original`'s namespace; `path` (the file written, or None) names its code.
    """
    name = f"{original.__name__}__migrated"
    real = original.__file__ or "migrated.py"
    code_path = path or f"{os.path.splitext(real)[0]} (migrated {next(_counter)}).py"
    tree = _parse(source, code_path)
    if path is None:
        _register_source(code_path, source)
    module = types.ModuleType(name)
    module.__dict__.update(
        {k: v for k, v in vars(original).items() if k not in ("__name__", "__spec__")}
    )
    module.__name__ = name
    module.__file__ = real
    module.__dict__["__qp_code_path__"] = code_path
    definitions: list[ast.stmt] = [s for s in tree.body if isinstance(s, _DEFINITIONS)]
    sys.modules[name] = module
    try:
        with own_argv(real, []):
            _run(tree, definitions, module, code_path)
    except MigrateError:
        del sys.modules[name]
        raise
    return module


def _parse(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename)
    except SyntaxError as e:
        raise MigrateError(
            f"{_API}: {filename}:{e.lineno}: the file does not parse ({e.msg}). Fix: give a "
            "Python file that runs."
        ) from e


def _register_source(code_path: str, source: str) -> None:
    """`source` under `code_path` in linecache (mtime None: kept, never re-read from disk)."""
    linecache.cache[code_path] = (len(source), None, source.splitlines(True), code_path)


def _run(tree: ast.Module, keep: list[ast.stmt], module: types.ModuleType, filename: str) -> None:
    for stmt in keep:
        code = compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec")
        try:
            exec(code, module.__dict__)  # noqa: S102 - the user's own definitions
        except SystemExit as e:
            raise MigrateError(
                f"{_API}: {filename}:{stmt.lineno}: `{_first_line(stmt)}` exited ({e.code}) "
                f"with the program's arguments {sys.argv[1:]!r}. Fix: give the program's own "
                "arguments with --argv '...' (its parser's usage is above)."
            ) from e
        except Exception as e:  # noqa: BLE001 - the user's statement failed
            usual = (
                "run migrate where the file's imports and data are found, or give its "
                "arguments with --argv"
            )
            raise MigrateError(
                f"{_API}: {filename}:{stmt.lineno}: `{_first_line(stmt)}` (needed by the "
                f"function) raised {type(e).__name__}: {e}. Fix: {fix_for(e, usual)}."
            ) from e


def fix_for(error: BaseException, usual: str) -> str:
    """The fix to suggest for the user's code raising `error`: `usual`, or ``--tf1`` for a
    file written for TensorFlow 1.x (``tf.gfile``, ``tf.train.batch`` missing on 2.x)."""
    if isinstance(error, AttributeError) and "module 'tensorflow" in str(error):
        return (
            "the file is written for TensorFlow 1.x (`import tensorflow as tf` meaning "
            "tf.compat.v1): add --tf1"
        )
    return usual


def _first_line(stmt: ast.stmt) -> str:
    text = ast.unparse(stmt).strip().splitlines()
    return text[0] if text else ""


# ------------------------------------------------------------------- selection


def select(
    tree: ast.Module, function: str | None, also: Iterable[str] = ()
) -> tuple[list[ast.stmt], list]:
    """The top-level statements to run for `function`, and (first, last, what) of the rest.

    `also`: more names needed (read by the call's arguments).
    """
    definitions: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions[stmt.name] = stmt
    body_reads = _global_reads(tree)
    if function is None or function not in definitions:
        needed = {n for s in tree.body for n in _reads(s)}
    else:
        needed = set(body_reads.get(function, set()))
    needed |= set(also)
    variables = _assigned(tree)
    # The names needed grow with what the kept statements read, to a fixed point.
    # Every definition is kept; what it evaluates when defined (defaults,
    # decorators, annotations, a class body) is needed at once, its body's
    # names once the function is. The names only other functions read
    # (``result.load()`` and the callers use them) are set up where that
    # calls nothing: constants such as ``OP_TIMEOUT_MS = 20_000``.
    defs = [s for s in tree.body if isinstance(s, _DEFINITIONS)]
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
    return keep, skipped


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


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
    code = _first_line(stmt)
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


# --------------------------------------------------------------------- flags


def _forget_flags(name: str) -> None:
    """Removes the absl flags an earlier load of module `name` defined (its defaults may differ)."""
    absl_flags = sys.modules.get("absl.flags")
    if absl_flags is None:
        return
    values = absl_flags.FLAGS
    for flag in list(values.flags_by_module_dict().get(name, [])):
        with contextlib.suppress(AttributeError, KeyError):
            delattr(values, flag.name)


def _parse_absl_flags(module: types.ModuleType, path: str, argv: Sequence[str]) -> None:
    """Parses absl's flags from ``[path] + argv`` when the file defined any."""
    absl_flags = sys.modules.get("absl.flags")
    if absl_flags is None:
        return
    values = absl_flags.FLAGS
    if not values.flags_by_module_dict().get(module.__name__):
        return
    values.unparse_flags()
    try:
        values([path, *argv])
    except absl_flags.Error as e:
        raise MigrateError(
            f"{_API}: the program's flags reject the arguments {list(argv)!r}: {e}. Fix: give "
            "the program's own arguments with --argv '...'."
        ) from e
