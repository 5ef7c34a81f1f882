"""Functions of the program's other modules, followed like the file's own.

NOTE [ Following a function of another module ]
Programs keep their reading code in a module of their own: ``images, labels =
reader.read_and_decode(filename_queue, batch_size)`` in ``model.py``, with
``read_and_decode`` in ``reader.py``; ``input_queue =
input_ops.prefetch_input_data(...)``. Migrate reads the pipeline of one file
(its helpers are functions of that file), so such a call was refused. Now a
function of another module of the program (a ``.py`` file found from the
file's imports: beside it, in its package or on ``sys.path``, never an
installed library) that builds input (it makes a reader, a producer or a
queue, reads, batches or dequeues) is **lifted into the copy** the migration
traces:

* after the file's last line, a marker line, then each followed function as
  ``<module>__<name>`` (decorators dropped; the file's other lines keep their
  numbers), and each call of it in the file spelled that way;
* a name it reads from its own module is written as that module's attribute
  (``reader.IMAGE_SIZE``); an ``import`` it needs that the file lacks is
  copied (under a name of its own where the file binds the same name to
  something else); a function of its module that builds input is followed
  in turn (a few levels);
* so to the rewrite and the proof it is a helper of the file like any other.

**Written back**: each call keeps its spelling (the function stays in its
module, unchanged); the versions the rewrite made of it (``read_and_decode_record``,
...) go into the file, before the migrated function, named after the
function itself (prefixed by its module where the file uses that name); an
import they need is added after the file's imports. Lines the report names
in a followed function are its own file's.

**A method of the program's object** handed a queue (youtube-8m's
``reader.prepare_reader(filename_queue)``, ``reader`` an instance of a class
of ``readers.py``) is found on the run's object (:func:`objects_called`,
after a first trace) and lifted as ``<Class>__<method>(self, ...)``, called
with the object first; it calls the object's other methods as it did.

Not followed: a decorated function, one with ``global`` or ``nonlocal``
statements or ``super()``, a function imported with ``*``, and anything of an
installed library (a class's own reading methods are followed by NOTE [
Reading methods of a migrated class ]).
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import os
import re

import libcst as cst
import libcst.matchers as m
from libcst.metadata import GlobalScope, MetadataWrapper, PositionProvider, ScopeProvider

from queue_pipeline._migrate.program_files import (
    BUILDS_INPUT,
    called,
    dotted as dotted_name,
    calls_in,
    import_names,
    imported,
    inline_objects,
    input_function,
    is_library,
    scope_of,
    stem as file_stem,
    top_level_names,
)

__all__ = ["BUILDS_INPUT", "MARKER", "Followed", "Foreign", "lift", "objects_called"]

MARKER = "# queue_pipeline migrate: functions of other modules, lifted"

_LEVELS = 4


@dataclasses.dataclass(frozen=True)
class Followed:
    """One function of another module, lifted into the copy.

    Attributes:
      spelled: how the program calls it (``reader.read_and_decode``).
      local: its name in the copy (``reader__read_and_decode``).
      short: the stem its versions get in the file (``read_and_decode``).
      path: its module's file.
      first: its ``def`` line there.
      start: its ``def`` line in the copy.
      last: its last line in the copy.
    """

    spelled: str
    local: str
    short: str
    path: str
    first: int
    start: int
    last: int
    method: bool = False  # an object's method: called as ``<local>(obj, ...)`` in the copy


@dataclasses.dataclass(frozen=True)
class Foreign:
    """The copy's text with the followed functions, and how to write the result back."""

    source: str
    followed: tuple[Followed, ...]
    imports: tuple[str, ...]  # import lines the lifted code needs that the file lacks
    bound: frozenset[str] = frozenset()  # the file's top-level names

    def renamed(self, text: str) -> str:
        """`text` with each followed function by the name the program calls it, and
        each of its versions (``<local>_record``) named after the function itself
        (prefixed by its module where the file binds that name)."""
        for f in self.followed:
            if f.local == f.spelled:  # imported by name: its versions keep that name
                continue
            if f.method:  # `Class__m(reader, q)` is `reader.m(q)`
                text = _as_method_calls(text, f.local, f.short)
            text = re.sub(rf"\b{f.local}\b", f.spelled, text)
            for suffix in dict.fromkeys(re.findall(rf"\b{f.local}(_\w+)\b", text)):
                name = f.short + suffix
                if name in self.bound:
                    name = f.local.replace("__", "_", 1) + suffix
                text = re.sub(rf"\b{f.local}{suffix}\b", name, text)
        return text

    def place(self, line: int) -> tuple[str, int] | None:
        """(file, line) of line `line` of the copy when a followed function holds it."""
        for f in self.followed:
            if f.start <= line <= f.last:
                return f.path, f.first + (line - f.start)
        return None

    def map_lines(self, text: str, copy_path: str) -> str:
        """`text` with each ``<copy>:<line>`` in a followed function as its file's line,
        and each followed function by the name the program calls it."""

        def one(mt: re.Match) -> str:
            where = self.place(int(mt.group(1)))
            return f"{where[0]}:{where[1]}" if where else mt.group(0)

        return self.renamed(re.sub(re.escape(copy_path) + r":(\d+)", one, text))

    def write_back(self, rewritten: str, before: str | None = None) -> str:
        """The rewrite with the lifted functions gone and their versions placed.

        The versions go before the top-level ``def before(`` (the migrated
        function), or at the end of the file's part when `before` is None
        (a method's lift places them itself). Names are not yet renamed:
        see :meth:`finish`.
        """
        head, _, tail = rewritten.partition("\n" + MARKER + "\n")
        locals_ = {f.local for f in self.followed}
        tail_module = cst.parse_module(tail)
        versions = [
            tail_module.code_for_node(s.with_changes(leading_lines=[])).rstrip("\n")
            for s in tail_module.body
            if isinstance(s, cst.FunctionDef) and s.name.value not in locals_
        ]
        head = head.rstrip("\n") + "\n"
        block = "".join(code + "\n\n\n" for code in versions)
        at = re.search(rf"^def {re.escape(before)}\(", head, re.M) if before else None
        if at is None:
            return head + ("\n\n" + block.rstrip("\n") + "\n" if block else "")
        return head[: at.start()] + block + head[at.start() :]

    def finish(self, text: str) -> str:
        """`text` with each call spelled as the program spells it, the versions named
        after their functions and the imports they need added."""
        text = self.renamed(text)
        needed = [i for i in self.imports if import_names(i) & set(re.findall(r"\w+", text))]
        if not needed:
            return text
        lines = text.splitlines(keepends=True)
        module = MetadataWrapper(cst.parse_module(text))
        positions = module.resolve(PositionProvider)
        ends = [
            positions[s].end.line
            for s in module.module.body
            if isinstance(s, cst.SimpleStatementLine)
            and all(isinstance(b, (cst.Import, cst.ImportFrom)) for b in s.body)
        ]
        at = max(ends) if ends else 0
        return "".join(lines[:at] + [i + "\n" for i in needed] + lines[at:])


def lift(source: str, path: str, objects: dict | None = None) -> Foreign | None:
    """`source` (the file `path`, or a copy of it) with the functions of the program's
    other modules it calls that build input lifted after it; None when there are none.

    `objects`: ``"reader.prepare_reader"`` -> (file, class, method) for the
    methods of the program's objects it hands a queue (:func:`objects_called`).
    See NOTE [ Following a function of another module ].
    """
    module = cst.parse_module(source)
    directory = os.path.dirname(os.path.realpath(path))
    bound = top_level_names(module)
    own_imports = {
        module.code_for_node(s).strip()
        for s in module.body
        if isinstance(s, cst.SimpleStatementLine)
        and any(isinstance(b, (cst.Import, cst.ImportFrom)) for b in s.body)
    }
    names = imported(module, directory)
    wanted = called(module, names)
    objects = {**inline_objects(module, names), **(objects or {})}
    if not wanted and not objects:
        return None
    lifted: dict[str, str] = {}  # local name in the copy -> how the program calls it
    renames: dict[str, str] = {}  # spelled -> local, in the file
    imports: list[str] = []
    texts: list[tuple[str, str, int, str]] = []  # (local, code, first, path)
    queue = [(spelled, file, name, alias) for spelled, (file, name, alias) in wanted.items()]
    methods: dict[str, str] = {}  # local -> the method's name, for an object's method
    for spelled, (file, cls, name) in objects.items():
        local = f"{cls}__{name}"
        found = input_function(file, name, cls)
        if found is None or local in bound or local in lifted:
            continue
        other, node, first = found
        code, more = _rewritten(
            other, node, file, None, bound, own_imports, imports, cls, directory=directory
        )
        lifted[local] = spelled
        methods[local] = name
        renames[spelled] = local
        texts.append(
            (local, re.sub(rf"^def\s+{re.escape(name)}\b", f"def {local}", code), first, file)
        )
        queue += more
    for _ in range(_LEVELS):
        later = []
        for spelled, file, name, alias in queue:
            # `reader.read(...)` is called as `reader__read(...)` in the copy; a function
            # imported by name is lifted under that name (it shadows the import there)
            local = spelled.replace(".", "__") if "." in spelled else spelled
            if local in lifted:
                continue
            if local in bound and "." in spelled:
                continue
            found = input_function(file, name)
            if found is None:
                continue
            other, node, first = found
            if "." in spelled:
                renames[spelled] = local
            code, more = _rewritten(
                other, node, file, alias, bound, own_imports, imports, directory=directory
            )
            lifted[local] = spelled
            code = re.sub(rf"^def\s+{re.escape(name)}\b", f"def {local}", code)
            texts.append((local, code, first, file))
            later += more
        queue = later
        if not queue:
            break
    if not texts:
        return None
    body = _respelled(source, renames, set(methods))
    head = body.rstrip("\n") + "\n\n\n" + MARKER + "\n"
    head += "".join(i + "\n" for i in imports)
    followed = []
    for local, code, first, file in texts:
        head += "\n\n"
        start = head.count("\n") + 1
        head += code.rstrip("\n") + "\n"
        spelled = lifted[local]
        short = local.rsplit("__", 1)[-1]
        followed.append(
            Followed(spelled, local, short, file, first, start, head.count("\n"), local in methods)
        )
    return Foreign(head, tuple(followed), tuple(imports), frozenset(bound))


def _rewritten(
    other: cst.Module, node: cst.FunctionDef, file: str, alias: str | None, bound: set[str],
    own_imports: set[str], imports: list[str], cls: str | None = None, *, directory: str = "",
) -> tuple[str, list[tuple[str, str, str, str | None]]]:  # fmt: skip
    """`node`'s code with its module's names reachable from the file; and the functions
    of its module it calls that build input (followed in turn)."""
    wrapper = MetadataWrapper(other)
    scopes = wrapper.resolve(ScopeProvider)
    target = next(
        s
        for s in scope_of(wrapper.module, cls)
        if isinstance(s, cst.FunctionDef) and s.name.value == node.name.value
    )
    globals_used: dict[str, list[cst.Name]] = {}
    inner = {id(n) for n in _names(target)}
    for scope in set(scopes.values()):
        if scope is None:
            continue
        for access in scope.accesses:
            name_node = access.node
            if id(name_node) not in inner or not isinstance(name_node, cst.Name):
                continue
            referents = list(access.referents)
            if referents and not all(isinstance(r.scope, GlobalScope) for r in referents):
                continue
            if not referents and hasattr(builtins, name_node.value):
                continue
            globals_used.setdefault(name_node.value, []).append(name_node)
    stem = file_stem(file)
    module_alias = alias or stem
    imports_of = {}
    functions = {}
    for s in wrapper.module.body:
        if isinstance(s, cst.SimpleStatementLine) and any(
            isinstance(b, (cst.Import, cst.ImportFrom)) for b in s.body
        ):
            line = wrapper.module.code_for_node(s).strip()
            if "__future__" in line:
                continue
            if not any(isinstance(b, cst.ImportFrom) and b.relative for b in s.body):
                for bound_name in import_names(line):
                    imports_of[bound_name] = line
        elif isinstance(s, cst.FunctionDef):
            functions[s.name.value] = s
    replace: dict[str, str] = {}
    more: list[tuple[str, str, str, str | None]] = []
    for name in globals_used:
        if name in imports_of:
            line = imports_of[name]
            if line in own_imports:
                continue
            if name not in bound:
                if line not in imports:
                    imports.append(line)
                continue
            replace[name] = f"{stem}_{name}"  # the file binds it to something else
            dotted = re.sub(r"^\s*import\s+([\w.]+).*$", r"\1", line)
            own = f"import {dotted} as {stem}_{name}"
            if line.startswith("import ") and own not in imports:
                imports.append(own)
            continue
        function = functions.get(name)
        if function is not None and BUILDS_INPUT.search(wrapper.module.code_for_node(function)):
            replace[name] = f"{module_alias}.{name}".replace(".", "__")
            more.append((f"{module_alias}.{name}", file, name, module_alias))
            continue
        replace[name] = f"{module_alias}.{name}"
    qualified = any(v.startswith(module_alias + ".") for v in replace.values())
    if alias is None and (qualified or more) and stem not in bound:
        dotted = dotted_name(file, directory)  # `from datasets.read import f`: in a package
        line = f"import {stem}" if dotted == stem else f"import {dotted} as {stem}"
        if line not in imports:  # `from reader import f`: the module by name
            imports.append(line)
    changed = target.visit(_Renamer(replace, {id(n) for ns in globals_used.values() for n in ns}))
    assert isinstance(changed, cst.FunctionDef)
    code = wrapper.module.code_for_node(changed.with_changes(leading_lines=[], decorators=[]))
    return code, more


def _names(node: cst.CSTNode) -> list[cst.Name]:
    return [n for n in m.findall(node, m.Name()) if isinstance(n, cst.Name)]


class _Renamer(cst.CSTTransformer):
    """Replaces the given Name nodes (by identity of the original) by an expression."""

    def __init__(self, replace: dict[str, str], nodes: set[int]):
        self.replace = replace
        self.nodes = nodes

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if id(original) in self.nodes and original.value in self.replace:
            return cst.parse_expression(self.replace[original.value])
        return updated


def _respelled(source: str, renames: dict[str, str], methods: frozenset | set = frozenset()) -> str:
    """`source` with each call of a followed function spelled by its name in the copy
    (an object's method, `methods`, with the object as its first argument)."""
    if not renames:
        return source
    module = cst.parse_module(source)
    code = cst.Module([]).code_for_node

    class Calls(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
            local = renames.get(code(original.func))
            if not local:
                return updated
            if local in methods and isinstance(original.func, cst.Attribute):
                first = cst.Arg(original.func.value)
                return updated.with_changes(func=cst.Name(local), args=[first, *updated.args])
            return updated.with_changes(func=cst.Name(local))

    return module.visit(Calls()).code


def objects_called(traced, source: str) -> dict[str, tuple[str, str, str]]:
    """The methods of the program's objects that the traced run handed a queue.

    ``reader.prepare_reader(filename_queue)`` in youtube-8m's
    ``get_input_data_tensors(reader, ...)``: ``reader`` was an instance of a
    class of the program (``readers.YT8MFrameFeatureReader``) whose method
    reads the queue. Returns ``"reader.prepare_reader"`` -> (its class's file,
    the class defining the method, the method), for :func:`lift`, which lifts
    the method as ``<Class>__<method>(self, ...)`` (NOTE [ Following a
    function of another module ]).
    """
    values: dict[str, object] = {}
    for call in traced.calls.values():
        for name, value in [*call.arguments.items(), *call.local_values.items()]:
            values.setdefault(name, value)
    found: dict[str, tuple[str, str, str]] = {}
    for call in calls_in(cst.parse_module(source)):
        func = call.func
        if not (
            call.args
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in values
        ):
            continue
        handed = [
            values[a.value.value]
            for a in call.args
            if isinstance(a.value, cst.Name) and a.value.value in values
        ]
        if not any(traced.kind_of(v) == "queue" for v in handed):
            continue  # a method handed no queue (a folder to walk): the program's own
        value = values[func.value.value]
        if isinstance(value, type) or not hasattr(type(value), "__mro__"):
            continue
        owner = next((c for c in type(value).__mro__ if func.attr.value in vars(c)), None)
        method = vars(owner).get(func.attr.value) if owner is not None else None
        if owner is None or not inspect.isfunction(method):
            continue
        try:
            file = inspect.getsourcefile(owner)
        except TypeError:
            continue
        if file is None or is_library(file):
            continue
        found[f"{func.value.value}.{func.attr.value}"] = (
            os.path.realpath(file),
            owner.__name__,
            func.attr.value,
        )
    return found


def _as_method_calls(text: str, local: str, method: str) -> str:
    """`text` with each ``local(obj, args...)`` as ``obj.method(args...)``; ``obj`` may
    be a call itself (``Records(files)``: NOTE [ A method of an object built inline ])."""
    out, at = [], 0
    for found in re.finditer(rf"\b{re.escape(local)}\(", text):
        if found.start() < at:
            continue
        depth, i = 0, found.end()
        while i < len(text) and not (depth == 0 and text[i] in ",)"):
            depth += (text[i] in "([{") - (text[i] in ")]}")
            i += 1
        first = text[found.end() : i].strip()
        if i >= len(text) or not first:
            continue
        rest = i + 1 if text[i] == "," else i
        while rest < len(text) and text[rest] in " \t" and text[i] == ",":
            rest += 1
        out.append(text[at : found.start()] + f"{first}.{method}(")
        at = rest
    return "".join(out) + text[at:]
