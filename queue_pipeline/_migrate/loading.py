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
import contextvars
import dataclasses
import importlib.util
import itertools
import linecache
import os
import re
import shlex
import sys
import types
from typing import Iterable, Iterator, Sequence

from queue_pipeline._migrate import selection
from queue_pipeline._migrate.selection import DEFINITIONS, first_line, names_read, select
from queue_pipeline._migrate.python2_hints import python2_fix
from queue_pipeline._scripts.removed import removed_message

__all__ = [
    "DEFERRED",
    "Loaded",
    "MigrateError",
    "fix_for",
    "load",
    "load_beside",
    "module_name",
    "names_read",
    "own_argv",
    "split_argv",
]

_API = "queue-pipeline migrate"
_counter = itertools.count(1)
# the lines of top-level statements the load leaves to each graph the function runs
# in (NOTE [ A queue made at module level ], in module_stages.py)
DEFERRED: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "deferred", default=frozenset()
)


class MigrateError(Exception):
    """A migration that cannot start or finish: bad input, nothing to migrate."""


class NoPipelineError(MigrateError):
    """The traced function returned nothing a producer, reader or batching call made.

    Attributes:
      function: the function traced.
    """

    def __init__(self, message: str, function: str):
        super().__init__(message)
        self.function = function


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
      function: the function to be traced; None runs only the definitions
        and the constants they need (nothing of the program).
      argv: the program's arguments (``sys.argv[1:]`` while it loads).
      code_path: the file name its code objects carry (default `path`): a
        wrapped copy's own name, registered with linecache.
      also: more module names needed (those a ``--call`` expression reads).

    Raises:
      MigrateError: the file does not parse, or a statement it needs fails
        (its line and the error).
    """
    tree = _parse(source, code_path or path)
    keep, skipped, needed = select(tree, function, also)
    # An import the function does not need may fail (a name SciPy removed): it is
    # listed as not run instead (NOTE [ What migrate runs of the user's file ]).
    optional = {
        id(s) for s in keep if selection.bound_names(s) and not selection.bound_names(s) & needed
    }
    # So may a statement that sets up names only the file's other functions read
    # (``script, first, second = argv`` for ``main``), with the program's own argv.
    optional |= selection.set_up_for_others(keep, needed)
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
            _run(tree, keep, module, code_path or path, optional, skipped)
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
    definitions: list[ast.stmt] = [s for s in tree.body if isinstance(s, DEFINITIONS)]
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


def _run(
    tree: ast.Module,
    keep: list[ast.stmt],
    module: types.ModuleType,
    filename: str,
    optional: set[int] | frozenset[int] = frozenset(),
    skipped: list | None = None,
) -> None:
    """Runs `keep` in `module`; a failing statement whose id is in `optional` is added to
    `skipped` (the statements not run) instead of failing the load."""
    for stmt in keep:
        if stmt.lineno in DEFERRED.get():
            continue
        code = compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec")
        try:
            exec(code, module.__dict__)  # noqa: S102 - the user's own definitions
        except SystemExit as e:
            raise MigrateError(
                f"{_API}: {filename}:{stmt.lineno}: `{first_line(stmt)}` exited ({e.code}) "
                f"with the program's arguments {sys.argv[1:]!r}. Fix: give the program's own "
                "arguments with --argv '...' (its parser's usage is above)."
            ) from e
        except Exception as e:  # noqa: BLE001 - the user's statement failed
            if id(stmt) in optional and skipped is not None:
                skipped.append(
                    (
                        stmt.lineno,
                        stmt.end_lineno or stmt.lineno,
                        f"`{first_line(stmt)}`: raised {type(e).__name__} "
                        f"({str(e).rstrip('.')}); the function does not need it",
                    )
                )
                continue
            usual = (  # --argv only where the program reads its arguments
                "change the import (or install the module), or run migrate where the file's "
                "own modules are found"
                if isinstance(e, ImportError)
                else "run migrate where the file's imports and data are found"
                + (", or give its arguments with --argv" if reads_arguments(tree) else "")
            )
            raise MigrateError(
                f"{_API}: {filename}:{stmt.lineno}: `{first_line(stmt)}` (needed by the "
                f"function) raised {type(e).__name__}: {str(e).rstrip('.')}. Fix: "
                f"{fix_for(e, usual)}."
            ) from e


def reads_arguments(tree: ast.AST) -> bool:
    """Whether the program reads its command line (``sys.argv``, a parser, flags)."""
    names = {"argv", "parse_args", "parse_known_args", "FLAGS", "getopt", "DEFINE_string"}
    return any(
        (isinstance(n, ast.Attribute) and n.attr in names)
        or (isinstance(n, ast.Name) and n.id in names)
        for n in ast.walk(tree)
    )


def raised_at(error: BaseException, path: str) -> str:
    """`` at FILE:LINE (`statement`)``: the innermost line of the program's own files (those
    beside `path` and below) that `error` went through; "" if none did."""
    found = raised_frame(error, path)
    if found is None:
        return ""
    filename, lineno, text = found
    return f" at {filename}:{lineno}" + (f" (`{text}`)" if text else "")


def raised_frame(error: BaseException, path: str) -> tuple[str, int, str] | None:
    """(file, line, statement) of the innermost line of the program's own files (those
    beside `path` and below) that `error` went through; None if none did."""
    import traceback  # noqa: PLC0415

    directory = os.path.dirname(os.path.realpath(path)) + os.sep
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        name = os.path.realpath(frame.filename)
        installed = f"{os.sep}site-packages{os.sep}" in name or "dist-packages" in name
        if name.startswith(directory) and not name.startswith(here) and not installed:
            text = linecache.getline(frame.filename, frame.lineno or 0).strip()
            found = (frame.filename, frame.lineno or 0, text)
    return found


def fix_for(error: BaseException, usual: str) -> str:
    """The fix to suggest for the user's code raising `error`: `usual`, or ``--tf1`` for a
    file written for TensorFlow 1.x (``tf.gfile``, ``tf.train.batch`` missing on 2.x)."""
    text = str(error)
    ported = python2_fix(error)  # NOTE [ A Python 2 file's errors ]
    if ported:
        return ported
    if isinstance(error, AttributeError) and (
        "removed in TensorFlow 2.x" in text or "has no attribute 'contrib'" in text
    ):
        reader = (
            " (a tf.contrib input reader such as read_batch_record_features: with the core "
            "queue API, tf.train.string_input_producer + a reader + tf.train.batch, which "
            "migrate then rewrites and proves, or with tf.data directly)"
            if "contrib" in text
            else ""
        )
        renamed = re.search(
            r"`(tf\.[\w.]+)` was removed in TensorFlow 2\.x; (?:it was renamed|use) `(tf\.[\w.]+)`",
            text,
        )
        if renamed:  # its replacement is known (a TF 0.x name, a tf.contrib function)
            return (
                f"that API is gone from TensorFlow 2.x (--tf1 does not bring it back): use "
                f"`{renamed.group(2)}` for `{renamed.group(1)}` in your file (check its "
                "arguments), then migrate"
            )
        return (
            "that API is gone from TensorFlow 2.x (--tf1 does not bring it back): replace "
            f"the call with its TensorFlow 2.x equivalent in your file{reader}, then migrate"
        )
    gone = re.search(r"module 'tensorflow(?:\.compat\.v1)?' has no attribute '(\w+)'", text)
    if (
        isinstance(error, AttributeError)
        and gone
        and "was removed" in (removed := removed_message("tf", [gone.group(1)]))
    ):  # `import tensorflow.compat.v1 as tf`: tf.scalar_summary is gone even under --tf1
        return f"{removed.rstrip('.')}; --tf1 does not bring it back: change it in your file"
    if isinstance(error, AttributeError) and "module 'tensorflow" in str(error):
        return (
            "the file is written for TensorFlow 1.x (`import tensorflow as tf` meaning "
            "tf.compat.v1): add --tf1"
        )
    return usual


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
            f"{_API}: the program's flags reject the arguments {list(argv)!r}: "
            f"{str(e).rstrip('.')}. Fix: give "
            "the program's own arguments with --argv '...'."
        ) from e
