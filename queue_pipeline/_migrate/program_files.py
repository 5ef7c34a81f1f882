"""The program's own modules: where they are, what a file imports and calls of them.

Used by NOTE [ Following a function of another module ] (in foreign.py): a
module is the program's when its ``.py`` file is found from the file's
imports (beside it, in its package or on ``sys.path``) and it is not part of
Python, an installed package or queue_pipeline itself.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

__all__ = [
    "BUILDS_INPUT",
    "called",
    "calls_in",
    "dotted",
    "import_names",
    "imported",
    "inline_objects",
    "input_function",
    "is_library",
    "module_file",
    "scope_of",
    "stem",
    "top_level_names",
]

# what marks a function as building input (NOTE [ Following a function of another module ])
# (a Dataset's ``.batch(`` is not a batching call; a file's ``.read()`` takes no queue)
BUILDS_INPUT = re.compile(
    r"\.read\(\s*\w|Reader\(|_input_producer\(|(?<![\w.])(?:shuffle_)?batch(?:_join)?\("
    r"|train\.(?:shuffle_|maybe_)?batch|\.dequeue(?:_many|_up_to)?\(|Queue\("
)
# this package's own directory (its files are never the program's)
OWN_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def dotted(file: str, directory: str) -> str:
    """The module name of `file` as the program in `directory` imports it
    (``datasets.read`` for ``directory/datasets/read.py``), else its stem."""
    relative = os.path.relpath(os.path.splitext(file)[0], directory) if directory else ""
    parts = relative.split(os.sep)
    if not relative or parts[0] == ".." or not all(p.isidentifier() for p in parts):
        return stem(file)
    return ".".join(parts)


def stem(path: str) -> str:
    return re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])


def import_names(line: str) -> set[str]:
    """The names an import line binds."""
    node = cst.parse_statement(line)
    names: set[str] = set()
    for b in node.body if isinstance(node, cst.SimpleStatementLine) else ():
        if isinstance(b, (cst.Import, cst.ImportFrom)) and not isinstance(b.names, cst.ImportStar):
            for a in b.names:
                if a.asname is not None:
                    names.add(cst.Module([]).code_for_node(a.asname.name))
                else:
                    names.add(cst.Module([]).code_for_node(a.name).split(".")[0])
    return names


def top_level_names(module: cst.Module) -> set[str]:
    names: set[str] = set()
    for s in module.body:
        if isinstance(s, (cst.FunctionDef, cst.ClassDef)):
            names.add(s.name.value)
        elif isinstance(s, cst.SimpleStatementLine):
            names |= (
                import_names(module.code_for_node(s).strip())
                if any(isinstance(b, (cst.Import, cst.ImportFrom)) for b in s.body)
                else set()
            )
            for b in s.body:
                if isinstance(b, cst.Assign):
                    for t in b.targets:
                        if isinstance(t.target, cst.Name):
                            names.add(t.target.value)
    return names


def is_library(path: str) -> bool:
    """Whether `path` is part of Python, an installed package or queue_pipeline itself
    (never followed)."""
    real = os.path.realpath(path)
    if real.startswith(OWN_DIR + os.sep):
        return True
    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")}
    return (
        any(real.startswith(os.path.realpath(r) + os.sep) for r in roots)
        or "site-packages" in real
        or "dist-packages" in real
    )


def module_file(dotted: str, level: int, directory: str) -> str | None:
    """The source file of module `dotted` as imported from a file in `directory`."""
    parts = dotted.split(".") if dotted else []
    if level:
        base = directory
        for _ in range(level - 1):
            base = os.path.dirname(base)
        roots = [base]
    else:
        roots = [directory] + [p for p in sys.path if p and os.path.isdir(p)]
    for root in roots:
        stem = os.path.join(root, *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if parts and os.path.isfile(candidate):
                return None if is_library(candidate) else os.path.realpath(candidate)
    return None


def imported(module: cst.Module, directory: str) -> dict[str, tuple[str, str | None]]:
    """Each top-level imported name -> (the program module's file, the function's name
    or None for the module itself)."""
    code = cst.Module([]).code_for_node
    found: dict[str, tuple[str, str | None]] = {}
    for s in module.body:
        for b in s.body if isinstance(s, cst.SimpleStatementLine) else ():
            if isinstance(b, cst.Import):
                for a in b.names:
                    dotted = code(a.name)
                    file = module_file(dotted, 0, directory)
                    if file is not None:
                        found[code(a.asname.name) if a.asname else dotted] = (file, None)
            elif isinstance(b, cst.ImportFrom) and not isinstance(b.names, cst.ImportStar):
                dotted = code(b.module) if b.module is not None else ""
                level = len(b.relative)
                for a in b.names:
                    name = code(a.name)
                    local = code(a.asname.name) if a.asname else name
                    sub = module_file(f"{dotted}.{name}" if dotted else name, level, directory)
                    if sub is not None:
                        found[local] = (sub, None)
                        continue
                    file = module_file(dotted, level, directory) if dotted else None
                    if file is not None:
                        found[local] = (file, name)
    return found


def called(module: cst.Module, imported: dict) -> dict[str, tuple[str, str, str | None]]:
    """Each call of an imported program function: spelled -> (file, name, module alias)."""
    code = cst.Module([]).code_for_node
    wanted: dict[str, tuple[str, str, str | None]] = {}
    for call in calls_in(module):
        func = call.func
        spelled = code(func)
        if isinstance(func, cst.Name) and func.value in imported:
            file, name = imported[func.value]
            if name is not None:
                wanted[spelled] = (file, name, None)
        elif isinstance(func, cst.Attribute):
            owner = code(func.value)
            if owner in imported and imported[owner][1] is None:
                wanted[spelled] = (imported[owner][0], func.attr.value, owner)
    return wanted


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    return [c for c in m.findall(node, m.Call()) if isinstance(c, cst.Call)]


def input_function(
    file: str, name: str, cls: str | None = None
) -> tuple[cst.Module, cst.FunctionDef, int] | None:
    """The top-level function `name` of `file` (or method of its top-level class `cls`)
    when it builds input and can be followed."""
    try:
        with open(file, encoding="utf-8") as f:
            wrapper = MetadataWrapper(cst.parse_module(f.read()))
    except (OSError, UnicodeDecodeError, cst.ParserSyntaxError):
        return None
    module = wrapper.module
    positions = wrapper.resolve(PositionProvider)
    for s in scope_of(module, cls):
        if isinstance(s, cst.FunctionDef) and s.name.value == name:
            code = module.code_for_node(s)
            if s.decorators or re.search(r"^\s*(global|nonlocal)\b|super\(|self\.__", code, re.M):
                return None
            if not BUILDS_INPUT.search(code):
                return None
            return wrapper.module, s, positions[s.name].start.line
    return None


def scope_of(module: cst.Module, cls: str | None) -> list:
    """The top-level statements of `module`, or the body of its top-level class `cls`."""
    if cls is None:
        return list(module.body)
    for s in module.body:
        if isinstance(s, cst.ClassDef) and s.name.value == cls:
            return list(s.body.body) if isinstance(s.body, cst.IndentedBlock) else []
    return []


def inline_objects(module: cst.Module, names: dict) -> dict[str, tuple[str, str, str]]:
    """The methods called on objects of the program's classes, built inline or held by a
    name the file binds once, that read input: ``"Records(files).read_records"`` (or
    ``"reader.read_records"``) -> (the class's file, class, method).

    NOTE [ A method of an object built inline ]
    A script may build a reader object and call its reading method that makes
    its own producer (``blocks = Records(files).read_records()``, or ``r =
    Records(files)`` then ``r.read_records()``; ``Records`` imported from a
    module of the program). The method is handed no queue, so
    :func:`objects_called` does not find it on the run. The call is read from
    the file: a class imported from a program module (``from m import C``, or
    ``m.C`` with ``import m``) whose own method builds input is lifted as
    ``C__method(self, ...)``, called with the object (``C(...)`` or the name)
    as its first argument, as a method handed a queue is; written back, the
    call keeps its spelling. A name bound more than once is left alone.
    """
    code = cst.Module([]).code_for_node

    def made(value) -> tuple[str, str] | None:  # (file, class) when `value` is ``C(...)``
        maker = value.func if isinstance(value, cst.Call) else None
        if isinstance(maker, cst.Name) and names.get(maker.value, (None, None))[1]:
            return names[maker.value]
        if (
            isinstance(maker, cst.Attribute)
            and code(maker.value) in names
            and names[code(maker.value)][1] is None
        ):
            return names[code(maker.value)][0], maker.attr.value
        return None

    bound: dict[str, list] = {}
    for target in m.findall(module, m.AssignTarget() | m.AugAssign() | m.For() | m.AsName()):
        node = getattr(target, "target", None) or getattr(target, "name", None)
        for name in m.findall(node, m.Name()) if node is not None else ():
            assert isinstance(name, cst.Name)
            bound.setdefault(name.value, []).append(target)
    held: dict[str, tuple[str, str]] = {}
    for assign in m.findall(module, m.Assign()):
        assert isinstance(assign, cst.Assign)
        one = assign.targets[0].target if len(assign.targets) == 1 else None
        of = made(assign.value)
        if isinstance(one, cst.Name) and of and len(bound.get(one.value, [])) == 1:
            held[one.value] = of
    found: dict[str, tuple[str, str, str]] = {}
    for call in calls_in(module):
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        of = held.get(func.value.value) if isinstance(func.value, cst.Name) else None
        of = of or made(func.value)
        if of is not None and input_function(of[0], func.attr.value, of[1]) is not None:
            found[code(func)] = (os.path.realpath(of[0]), of[1], func.attr.value)
    return found
