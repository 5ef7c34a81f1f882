"""A pipeline behind a class: ``FILE.py:Class.method`` migrated, written back as a method.

NOTE [ Migrating a method ]
Model code often keeps its input behind a class: ``Reader(files).feed()``,
a method reading ``self.files`` and ``self.batch_size`` that the constructor
set. ``queue-pipeline migrate FILE.py:Class.method --call 'CONSTRUCTOR ARGS'``
migrates such a method:

* **The copy.** A copy of the file beside it (as for an inline pipeline)
  gets one more module-level function, ``Class__method(self, ...)``: the
  method's own lines, dedented, after a marker line. Nothing else changes,
  so every other line keeps its number.
* **The run.** ``--call`` holds the constructor's arguments: the function is
  called with ``Class(ARGS)`` as ``self``, made again in each graph that runs
  it (the trace, each side of the proof), since a constructor may build
  tensors. The method itself takes no other arguments.
* **The rewrite and the proof** are those of any function (the proof
  compares ``Class__method(self)`` with its tf.data version).
* **Written back.** The tf.data version becomes the method
  ``method_dataset(self, ...)``, right after the method, indented as the
  class body is; the helpers' versions stay where the rewrite put them.
  Lines named in the report are the file's own.
* **A constructor** (``FILE.py:Class``, NOTE [ Migrating a constructor ]
  below) is lifted the same way, its batch attributes made locals.
* Refused: a method whose code (not a comment) calls ``super()`` or reads a
  name-mangled ``self.__attribute`` (named at its line; both change meaning
  outside the class), a static or class method, and a class or method the
  file does not define at its top level.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m
import tensorflow as tf
from libcst.metadata import MetadataWrapper, PositionProvider

from queue_pipeline._migrate import constructor_pipelines as _pipelines
from queue_pipeline._migrate.graph_checks import input_tensor
from queue_pipeline._migrate.loading import MigrateError

__all__ = [
    "Lifted",
    "attributes_assigned",
    "lift",
    "lift_keeping",
    "lift_with_constructor",
    "queue_tensors",
    "with_reading_methods",
    "write_back",
]

_API = "queue-pipeline migrate"
_MARKER = "# queue_pipeline migrate: the method, lifted"


@dataclasses.dataclass
class Lifted:
    """A method lifted to a module-level function in a copy of its file.

    Attributes:
      source: the copy's text.
      function: the lifted function's name (``Class__method``).
      cls, method: the class and method names.
      method_first: the method's ``def`` line in the file.
      lifted_first: the lifted function's ``def`` line in the copy.
      indent: the class body's indentation.
      new_method: the name the tf.data version gets in the class.
    """

    source: str
    function: str
    cls: str
    method: str
    method_first: int
    lifted_first: int
    indent: str
    new_method: str = ""  # the tf.data version's name in the class (default method_dataset)
    # (first line in the copy, its line in the file) of each piece after the
    # first, in order: NOTE [ A method reading what its constructor built ]
    pieces: tuple[tuple[int, int], ...] = ()
    # reading methods lifted beside it (NOTE [ Reading methods of a migrated class ])
    helpers: tuple[str, ...] = ()
    # the method's lines after its input, left out: NOTE [ The model after the input, in a method ]
    model: tuple[int, int] | None = None

    def file_line(self, line: int) -> int:
        """The file's line for line `line` of the copy."""
        for start, file_start in reversed(self.pieces):
            if line >= start:
                return file_start + (line - start)
        if line >= self.lifted_first:
            return self.method_first + (line - self.lifted_first)
        return line

    def map_lines(self, text: str, copy_path: str, path: str) -> str:
        """`text` with each ``<copy>:<line>`` as ``<file>:<its line>``."""
        pattern = re.escape(copy_path) + r":(\d+)"
        text = re.sub(pattern, lambda mt: f"{path}:{self.file_line(int(mt.group(1)))}", text)
        text = text.replace(
            f"{self.function}() in {copy_path}", f"{path}: {self.cls}.{self.method}()"
        )
        text = re.sub(rf"\b{self.function}\(", f"{self.cls}.{self.method}(", text)
        return text.replace(copy_path, path)


def lift(source: str, path: str, qualified: str) -> Lifted:
    """The copy of `source` with ``Class.method`` (`qualified`) as a module-level function.

    Raises:
      MigrateError: no such class or method at the file's top level, or a
        method that cannot run outside its class (see the NOTE above).
    """
    cls_name, _, method_name = qualified.partition(".")
    wrapper = MetadataWrapper(cst.parse_module(source))
    module = wrapper.module
    positions = wrapper.resolve(PositionProvider)
    cls = next(
        (s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == cls_name),
        None,
    )
    if cls is None:
        raise MigrateError(f"{_API}: {path} defines no class {cls_name!r} at its top level.")
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    method = next(
        (s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == method_name),
        None,
    )
    if method is None:
        raise MigrateError(f"{_API}: {path}: class {cls_name} defines no method {method_name!r}.")
    line = positions[method].start.line
    where = f"{path}:{line}: {qualified}()"
    decorators = {module.code_for_node(d.decorator).strip() for d in method.decorators}
    if decorators & {"staticmethod", "classmethod"}:
        raise MigrateError(
            f"{_API}: {where} is a {' '.join(sorted(decorators))}: migrate a plain method, or "
            "the function it calls."
        )
    params = method.params.params
    if not params or params[0].name.value != "self":
        raise MigrateError(f"{_API}: {where} takes no `self` first; migrate a plain method.")
    for bound in _class_bound(method)[:1]:  # the first, at its own line
        raise MigrateError(
            f"{_API}: {path}:{positions[bound].start.line}: {qualified}() "
            f"{'calls' if isinstance(bound, cst.Call) else 'reads'} "
            f"`{module.code_for_node(bound)}`, which means something else outside the class "
            "(super() / a name-mangled self.__attribute): migrate the function it calls, or "
            "rename the attribute."
        )
    indent = cls.body.indent if isinstance(cls.body, cst.IndentedBlock) else None
    unit = indent if isinstance(indent, str) else module.default_indent
    first = positions[method].start.line
    last = positions[method].end.line
    lines = source.splitlines(keepends=True)
    method_lines = lines[first - 1 : last]
    dedented = [ln[len(unit) :] if ln.startswith(unit) else ln.lstrip(" \t") for ln in method_lines]
    function = f"{cls_name}__{method_name}"
    dedented[0] = re.sub(
        rf"^(\s*(?:async\s+)?def\s+){re.escape(method_name)}\b", rf"\g<1>{function}", dedented[0]
    )
    head = "".join(lines)
    if not head.endswith("\n"):
        head += "\n"
    # Decorators sit above the def line in the file; the lifted function keeps none.
    def_offset = next(i for i, ln in enumerate(dedented) if re.match(r"\s*(async\s+)?def\b", ln))
    dedented = dedented[def_offset:]
    prefix = head + "\n\n" + _MARKER + "\n"
    lifted_first = prefix.count("\n") + 1
    return Lifted(
        source=prefix + "".join(dedented),
        function=function,
        cls=cls_name,
        method=method_name,
        method_first=first + def_offset,
        lifted_first=lifted_first,
        indent=unit,
    )


def _class_bound(method: cst.FunctionDef) -> Sequence[cst.CSTNode]:
    """The ``super()`` calls and name-mangled ``self.__x`` (not ``__x__``) of `method`'s
    code, in order: code only (comments and strings hold no CST names)."""
    mangled: m.MatchIfTrue[str] = m.MatchIfTrue(lambda n: n.startswith("__") and n[-2:] != "__")
    return m.findall(
        method.body,
        m.Call(func=m.Name("super")) | m.Attribute(value=m.Name("self"), attr=m.Name(mangled)),
    )


def write_back(lifted: Lifted, rewritten: str, new_function: str) -> str:
    """The file's text with the lifted function's tf.data version written back as a method.

    `rewritten` is the copy after the rewrite (the helpers' versions inserted
    in the file's part, the lifted function's version after it at the end).
    """
    marker = rewritten.index(_MARKER)
    head, tail = rewritten[:marker].rstrip("\n") + "\n", rewritten[marker:]
    tail_module = cst.parse_module(tail)
    versions = [
        s
        for s in tail_module.body
        if isinstance(s, cst.FunctionDef) and s.name.value != lifted.function
    ]
    if not versions:
        raise MigrateError(f"{_API}: the rewrite of {lifted.cls}.{lifted.method} wrote nothing.")
    method_name = lifted.new_method or f"{lifted.method}_dataset"
    blocks, outside = [], []
    for fn in versions:
        name = fn.name.value
        if name in lifted.helpers:  # a reading method's lifted copy: the class keeps it
            continue
        if name == new_function:
            fn = fn.with_changes(name=cst.Name(method_name))
        code = tail_module.code_for_node(fn.with_changes(leading_lines=[])).rstrip("\n")
        if any(name.startswith(h) for h in lifted.helpers):
            outside.append(code)  # a reading method's version: a function of the module
            continue
        blocks.append(
            "\n".join(lifted.indent + ln if ln.strip() else "" for ln in code.splitlines())
        )
    # The file's part of `rewritten` is the file with the helpers' versions
    # inserted; the method's version goes after the method in it.
    wrapper = MetadataWrapper(cst.parse_module(head))
    positions = wrapper.resolve(PositionProvider)
    cls = next(
        s for s in wrapper.module.body if isinstance(s, cst.ClassDef) and s.name.value == lifted.cls
    )
    method = next(
        s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == lifted.method
    )
    end = positions[method].end.line
    lines = head.splitlines(keepends=True)
    inserted = "\n" + "\n\n".join(blocks) + "\n"
    after_class = positions[cls].end.line
    # a reading method's version an earlier migration of the class wrote is there already
    functions = "".join("\n\n" + code + "\n" for code in outside if code not in head)
    return (
        "".join(lines[:end])
        + inserted
        + "".join(lines[end:after_class])
        + functions
        + "".join(lines[after_class:])
    )


def lift_keeping(
    source: str,
    path: str,
    qualified: str,
    attributes: list[str],
    others: list[str] | None = None,
    new_method: str = "",
) -> Lifted:
    """A constructor (`qualified` is ``Class``) or a method that keeps its batches as
    attributes and returns nothing, lifted with those `attributes` returned as a dict.

    NOTE [ Migrating a constructor ]
    A model's input class may build the whole pipeline in ``__init__`` and
    keep the batches as attributes (``self.images, self.labels =
    tf.train.shuffle_batch(...)``); a model class may do it in a
    ``build_model(self)`` that returns nothing. ``FILE.py:Class --call
    'ARGS'`` (or ``FILE.py:Class.build_model``) migrates it as a method: the
    constructor (and the method) is run once (in a graph of its own) to
    learn which attributes hold tensors read from a queue; in the lifted copy
    each ``self.<attribute>`` becomes a local of that name and one line is
    added after the body, ``return {"images": images, "labels": labels}``
    (every line of the file keeps its number). The function runs with an
    instance made by ``Class.__new__`` as ``self`` (so the constructor's
    other statements and its calls of other methods work), is rewritten and
    proven as any function, and is written back into the class as
    ``init_dataset(self, ARGS)`` (a method's as ``method_dataset``): the
    constructor's work with the pipeline as a Dataset whose elements are those
    attributes, by name.

    Raises:
      MigrateError: see :func:`lift`; or no attribute holds a batch.
    """
    constructor = "." not in qualified
    if not attributes:
        raise MigrateError(
            f"{_API}: {path}: {qualified}(...) keeps no tensor read from a queue as an "
            "attribute; migrate the method or function that builds its pipeline "
            "(FILE.py:Class.method)."
        )
    lifted = lift(source, path, f"{qualified}.__init__" if constructor else qualified)
    head, marker, tail = lifted.source.partition(_MARKER + "\n")
    tail, local = _as_locals(tail, attributes)
    if others:  # NOTE [ Several pipelines in a constructor ]: this one's statements
        tail = _pipelines.only(tail, list(local.values()), others)
    model: tuple[int, int] | None = None
    if not constructor:  # NOTE [ The model after the input, in a method ]
        tail, model = _without_the_model(tail, set(local.values()))
        if model is not None:
            model = (lifted.method_first + model[0] - 1, lifted.method_first + model[1] - 1)
    tail_module = cst.parse_module(tail)
    function = tail_module.body[0]
    body = function.body if isinstance(function, cst.FunctionDef) else None
    indent = body.indent if isinstance(body, cst.IndentedBlock) else None
    pad = indent if isinstance(indent, str) else tail_module.default_indent  # 2 spaces, or 4
    fields = ", ".join(f"{a!r}: {n}" for a, n in local.items())
    tail = tail.rstrip("\n") + f"\n{pad}return {{{fields}}}\n"
    new_method = new_method or ("init_dataset" if constructor else "")
    return dataclasses.replace(
        lifted, source=head + marker + tail, new_method=new_method, model=model
    )


def _without_the_model(text: str, names: set[str]) -> tuple[str, tuple[int, int] | None]:
    """The lifted function `text` ending at its last statement assigning one of `names`;
    and the (first, last) lines of `text` left out, or None.

    NOTE [ The model after the input, in a method ]
    A model class's ``build_model(self)`` often makes its input and then the
    model on it (placeholders, variables, the loss, a Saver) in one method.
    The Dataset version is the input: the lifted function ends with the last
    statement of the method's body that assigns one of the batch attributes
    (a statement holding such an assignment, as an ``if`` whose branches make
    the batches two ways); the statements after it are the model's, stay in
    the method, and are reported as such.
    """
    wrapper = MetadataWrapper(cst.parse_module(text))
    function = wrapper.module.body[0]
    positions = wrapper.resolve(PositionProvider)
    if not isinstance(function, cst.FunctionDef) or not isinstance(
        function.body, cst.IndentedBlock
    ):
        return text, None
    body = list(function.body.body)
    last = max(
        (
            i
            for i, stmt in enumerate(body)
            if any(
                isinstance(n, cst.Name) and n.value in names
                for t in m.findall(stmt, m.AssignTarget())
                for n in m.findall(t, m.Name())
            )
        ),
        default=None,
    )
    if last is None or last == len(body) - 1:
        return text, None
    end = positions[body[last]].end.line
    first, final = positions[body[last + 1]].start.line, positions[body[-1]].end.line
    lines = text.splitlines(keepends=True)
    return "".join(lines[:end]), (first, final)


def attributes_assigned(lifted: Lifted) -> set[str]:
    """The attributes of ``self`` the lifted method assigns (``self.a, self.b = ...``)."""
    tail = lifted.source.partition(_MARKER + "\n")[2]
    found: set[str] = set()
    for target in m.findall(cst.parse_module(tail), m.AssignTarget()):
        assert isinstance(target, cst.AssignTarget)
        parts = (
            [e.value for e in target.target.elements]
            if isinstance(target.target, (cst.Tuple, cst.List))
            else [target.target]
        )
        for part in parts:
            if (
                isinstance(part, cst.Attribute)
                and isinstance(part.value, cst.Name)
                and part.value.value == "self"
            ):
                found.add(part.attr.value)
    return found


def _as_locals(text: str, attributes: list[str]) -> tuple[str, dict[str, str]]:
    """`text` with each ``self.<attribute>`` as a local name; and attribute -> that name.

    The name is the attribute's own unless `text` uses it already (``self_<attribute>``).
    """
    used = set(re.findall(r"(?<![.\w])([A-Za-z_]\w*)", text))
    local = {a: a if a not in used else f"self_{a}" for a in attributes}
    for attribute, name in local.items():
        text = re.sub(rf"\bself\.{re.escape(attribute)}\b", name, text)
    return text, local


def queue_tensors(instance: object, reads: bool = False) -> list[str]:
    """The attributes of `instance` holding tensors read from a queue (or lists of them),
    and from no variable or placeholder (those are the model's).

    With `reads`, a reader's read counts too (a record read in the constructor).
    """

    found = []
    for name, value in vars(instance).items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if values and all(isinstance(v, tf.Tensor) and input_tensor(v, reads) for v in values):
            found.append(name)
    return found


def lift_with_constructor(source: str, path: str, qualified: str, attributes: list[str]) -> Lifted:
    """``Class.method`` lifted together with ``Class.__init__``, which built its input.

    NOTE [ A method reading what its constructor built ]
    Segmentation code of the TF 1.x era keeps the per-record part of its
    pipeline in a constructor and batches in a method (DeepLab-ResNet's
    ``ImageReader(data_dir, data_list, input_size, ...).dequeue(n)``:
    ``self.queue = slice_input_producer(...)``, ``self.image, self.label =
    read_images_from_disk(self.queue, ...)`` in ``__init__``, then
    ``tf.train.batch([self.image, self.label], n)``). Neither half is a
    pipeline alone, so both are lifted into one function of the copy,
    ``Class__method(self, <constructor's parameters>, *, <method's
    parameters>)``: a new ``def`` line, the constructor's body, then the
    method's (each body's lines map back to the file's), with each attribute
    holding a tensor read from a queue or reader (`attributes`) made a local,
    as for a constructor (a Dataset has no such tensors to keep). It runs with an
    instance made by ``Class.__new__`` as ``self``, is rewritten and proven
    as any function, and is written back as ``method_dataset(self,
    <constructor's parameters>, *, <method's parameters>)``: the constructor's
    statements and the method's, the pipeline as one Dataset.

    Raises:
      MigrateError: see :func:`lift`; or a ``*args`` / ``**kwargs`` parameter.
    """
    cls, _, method = qualified.partition(".")
    lifted = lift(source, path, qualified)
    init = lift(source, path, f"{cls}.__init__")
    parts = []
    for one in (init, lifted):
        head, _, tail = one.source.partition(_MARKER + "\n")
        function = cst.parse_module(tail).body[0]
        assert isinstance(function, cst.FunctionDef)
        params = function.params
        if params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or params.star_kwarg:
            raise MigrateError(
                f"{_API}: {path}:{one.method_first}: {cls}.{one.method}() takes *args or "
                "**kwargs; name its parameters to migrate it with the constructor."
            )
        names = [
            p.name.value + (f" = {cst.Module([]).code_for_node(p.default)}" if p.default else "")
            for p in [*params.params[1:], *params.kwonly_params]
        ]
        wrapper = MetadataWrapper(cst.parse_module(tail))
        statements = wrapper.module.body[0].body
        assert isinstance(statements, cst.IndentedBlock)
        first = wrapper.resolve(PositionProvider)[statements.body[0]].start.line
        body = tail.splitlines(keepends=True)[first - 1 :]
        parts.append((names, body, one.method_first + (first - 1)))
        prefix = head + _MARKER + "\n"
    (init_names, init_body, init_first), (names, body, body_first) = parts
    signature = ", ".join(["self", *init_names] + (["*", *names] if names else []))
    text = f"def {lifted.function}({signature}):\n"
    init_text = "".join(init_body).rstrip("\n") + "\n"
    lifted_first = prefix.count("\n") + 1
    init_start = lifted_first + 1
    body_start = init_start + init_text.count("\n")
    both, _ = _as_locals(init_text + "".join(body), attributes)
    return dataclasses.replace(
        lifted,
        source=prefix + text + both,
        lifted_first=lifted_first,
        pieces=((init_start, init_first), (body_start, body_first)),
    )


# what marks a method as reading a queue (NOTE [ Reading methods of a migrated class ])
_READING = re.compile(
    r"\.read\(|Reader\(|_input_producer\(|\bbatch(?:_join)?\(|shuffle_batch|dequeue"
)


def with_reading_methods(lifted: Lifted, source: str, path: str) -> Lifted:
    """`lifted` with the class's methods it calls that read a queue lifted beside it.

    NOTE [ Reading methods of a migrated class ]
    A class-based reader may read in a method of its own
    (``image, label = self._file_reader(filename_queue)``). Such a method (one
    whose code reads, makes a reader or a producer, batches or dequeues) is
    lifted too, as ``Class__name(self, ...)`` after the lifted function, and
    each ``self.name(`` of the lifted code calls it: to the rewrite it is a
    helper of the file like any other (a reading helper becomes
    ``Class__name_record``). Its tf.data versions are written as functions of
    the module after the class; the class keeps its method. Methods it calls
    in turn are followed the same way (a few levels).
    """
    head, marker, tail = lifted.source.partition(_MARKER + "\n")
    module = cst.parse_module(source)
    cls = next(s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == lifted.cls)
    methods = {
        s.name.value: module.code_for_node(s)
        for s in (cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ())
        if isinstance(s, cst.FunctionDef) and not s.decorators
    }
    pieces, helpers = list(lifted.pieces), list(lifted.helpers)
    for _ in range(4):
        called = [
            n
            for n in dict.fromkeys(re.findall(r"\bself\.(\w+)\(", tail))
            if n in methods and n != lifted.method and _READING.search(methods[n])
        ]
        if not called:
            break
        for name in called:
            helper = lift(source, path, f"{lifted.cls}.{name}")
            text = helper.source.partition(_MARKER + "\n")[2]
            tail = tail.rstrip("\n") + "\n\n\n"
            start = (head + marker + tail).count("\n") + 1
            pieces.append((start, helper.method_first))
            helpers.append(helper.function)
            tail += text
            del methods[name]
        for name in called:
            function = f"{lifted.cls}__{name}"
            tail = re.sub(rf"\bself\.{name}\(\s*\)", f"{function}(self)", tail)
            tail = re.sub(rf"\bself\.{name}\(", f"{function}(self, ", tail)
    if not helpers:
        return lifted
    return dataclasses.replace(
        lifted, source=head + marker + tail, pieces=tuple(pieces), helpers=tuple(helpers)
    )
