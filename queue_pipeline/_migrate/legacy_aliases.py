"""Legacy calls made through a name bound to a legacy function: ``batchfn = tf.train.batch``.

NOTE [ A legacy function called through a name ]
The rewriter knows a legacy call by what its callee is spelled as
(``tf.train.batch(...)``, ``train.batch(...)``: :func:`syntax.callee`). A
program may bind the function to a name of its own first, in the function
(``batchfn = tf.train.batch``, maybe rebound in a branch: ``if mode ==
'train': batchfn = tf.train.maybe_batch``) or at the module level, and call
``batchfn(dat, ...)``. Such a call is a legacy call all the same: what its
callee EVALUATES to decides. :func:`resolved` reads every name a call of a
module-level function calls, and when the traced run left it holding a legacy
producer, reader class, queue or batching function (its locals, or the
module's value), the rewriter is given the source with the callee spelled as
that binding's right-hand side (``tf.train.batch(dat, ...)``), on the same
line, so every line number stays the user's. The binding statements in the
function then bind a name nothing reads and are left out (``pass``), so
they do not leak into the tf.data version. Where the branches bind
different legacy functions, the run's one is migrated and the report says
so; a binding to anything else (``functools.partial(...)``, a function of
the file) or a run that took none of the spelled ones is refused with the
line, since which function the call makes is not known from the source.
Parameters are not followed: their value is the caller's. In the same way, a
legacy call's ``**batch_kwargs`` of a dict literal bound once in the function,
read nowhere else and made of names not bound again after it, is written out
as its ``key=value`` arguments; a dict changed later
(``batch_kwargs['keep_input'] = keep``) stays refused.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from queue_pipeline._migrate.base import (
    API,
    BATCHING,
    OWN_QUEUES,
    PRODUCERS,
    READER_CLASSES,
)
from queue_pipeline._migrate.loading import MigrateError
from queue_pipeline._migrate.syntax import all_params, filled_blocks
from queue_pipeline._migrate.trace import Trace

__all__ = ["Resolved", "cleaned", "legacy_kind", "resolved"]

# The legacy functions and classes a name can stand for.
LEGACY = frozenset(PRODUCERS + BATCHING + READER_CLASSES + OWN_QUEUES + ("slice_input_producer",))
_HOMES = ("tensorflow", "queue_pipeline", "keras")
# What stands for a binding left out, until the written code drops it (:func:`cleaned`).
_LEFT_OUT = "pass  # queue-pipeline: a legacy function's name, left out"
_LEFT_OUT_MORE = "# queue-pipeline: left out"  # the binding's further lines


@dataclasses.dataclass
class Resolved:
    """The source the rewriter reads, and what the report says about it.

    Attributes:
      source: the module's source with each alias call spelled as its legacy
        function (same lines).
      notes: differences to report (a branch the run did not take).
      quoted: (the rewriter's text of a changed line, the user's).
    """

    source: str
    notes: list[str]
    quoted: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def rewritten(self, rw: Any, fn: Any) -> str:
        """``rw.pipeline(fn)`` (`rw` a rewriter of :attr:`source`): its refusals quote the
        user's lines, its code leaves out the bindings, its report has the notes."""
        try:
            name = rw.pipeline(fn)
        except MigrateError as e:
            text = str(e)
            for new, old in self.quoted:
                text = text.replace(f"`{new}", f"`{old}")
            if text == str(e):
                raise
            raise MigrateError(text) from e
        rw.generated = {k: cleaned(v) for k, v in rw.generated.items()}
        rw.differences.extend(self.notes)
        return name


def cleaned(code: str) -> str:
    """`code` without the bindings :func:`resolved` left out, and without an ``if``
    (with no call in its test) that held only them."""
    lines = [
        ln for ln in code.splitlines(keepends=True) if ln.strip() not in (_LEFT_OUT, _LEFT_OUT_MORE)
    ]
    if len(lines) == len(code.splitlines()):
        return code
    lines = filled_blocks(lines)
    out: list[str] = []
    for i, text in enumerate(lines):
        indent = len(text) - len(text.lstrip(" "))
        head = text.strip()
        after = lines[i + 2] if i + 2 < len(lines) else ""
        after_indent = len(after) - len(after.lstrip(" "))
        if (
            head.startswith("if ")
            and head.endswith(":")
            and "(" not in head
            and i + 1 < len(lines)
            and lines[i + 1].strip() == "pass"
            and not (after_indent == indent and after.lstrip().startswith(("elif", "else")))
        ):
            lines[i + 1] = ""
            continue
        if text:
            out.append(text)
    return "".join(out)


def legacy_kind(value: Any) -> str:
    """The legacy API `value` is (``"batch"``), or "" for anything else."""
    name = getattr(value, "__name__", "")
    home = getattr(value, "__module__", "") or ""
    if name in LEGACY and home.split(".")[0] in _HOMES:
        return name
    return ""


def _spelled(node: cst.BaseExpression) -> str:
    """The legacy API an expression spells (``tf.train.batch`` -> ``batch``), or ""."""
    if isinstance(node, cst.Attribute) and node.attr.value in LEGACY:
        return node.attr.value
    if isinstance(node, cst.Name) and node.value in LEGACY:
        return node.value
    return ""


@dataclasses.dataclass
class _Binding:
    stmt: cst.CSTNode  # the statement that binds the name
    line: int
    value: cst.BaseExpression | None  # None: bound by something other than `name = value`


class _Bindings(cst.CSTVisitor):
    """The bindings of every name in a function body (not in nested functions)."""

    def __init__(self, positions) -> None:
        self.positions = positions
        self.found: dict[str, list[_Binding]] = {}
        self._stmt: cst.CSTNode | None = None

    def _add(self, target: cst.CSTNode, value: cst.BaseExpression | None) -> None:
        stmt = self._stmt if self._stmt is not None else target
        line = self.positions[stmt].start.line
        if isinstance(target, cst.Name):
            self.found.setdefault(target.value, []).append(_Binding(stmt, line, value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._add(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._add(target.value, None)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._stmt = node

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self._stmt = None

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            bare = isinstance(target.target, cst.Name)
            self._add(target.target, node.value if bare else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._stmt = node
        self._add(node.target, None)
        self._stmt = None

    def visit_AsName(self, node: cst.AsName) -> None:
        self._add(node.name, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._add(node.name, None)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._add(node.name, None)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def resolved(trace: Trace, source: str) -> Resolved:
    """`source` with each call through a name bound to a legacy API spelled as that API.

    NOTE [ A legacy function called through a name ].

    Raises:
      MigrateError: a name a call calls is bound to a legacy function and to
        something else, or the run's one is not spelled in the source.
    """
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return Resolved(source, [])  # the rewriter reports it
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    globals_ = _Bindings(positions)
    module.visit(globals_)
    work = _Work(trace, source, positions)
    for fn in module.body:
        if isinstance(fn, cst.FunctionDef):
            work.function(fn, globals_.found)
    return Resolved(work.edited(), work.notes, work.quoted)


class _Work:
    """The edits and notes of one :func:`resolved`."""

    def __init__(self, trace: Trace, source: str, positions) -> None:
        self.trace = trace
        self.lines = source.splitlines(keepends=True)
        self.positions = positions
        self.edits: dict[int, list[tuple[int, int, str]]] = {}  # line -> (start, end, text)
        self.notes: list[str] = []
        self.quoted: list[tuple[str, str]] = []

    def function(self, fn: cst.FunctionDef, module_names: dict[str, list[_Binding]]) -> None:
        local = _Bindings(self.positions)
        fn.body.visit(local)
        params = {p.name.value for p in all_params(fn.params)}
        first = self.positions[fn].start.line
        last = self.positions[fn].end.line
        values = next(
            (
                c.local_values
                for (name, line), c in self.trace.calls.items()
                if name == fn.name.value and first <= line <= last
            ),
            None,
        )
        if values is None:
            return  # not called in the run: not part of the pipeline
        followed: dict[str, list[cst.Name]] = {}
        legacy: list[cst.Call] = []
        for call in m.findall(fn.body, m.Call(func=m.Name())):
            assert isinstance(call, cst.Call) and isinstance(call.func, cst.Name)
            name = call.func.value
            if name in LEGACY or name in params:
                continue
            if name in local.found:
                bindings = local.found[name]
                value = values.get(name)
            elif name in module_names:
                bindings = module_names[name]
                value = vars(self.trace.module).get(name)
            else:
                continue
            if self._follow(fn, call, name, bindings, value):
                legacy.append(call)
                if name in local.found:
                    followed.setdefault(name, []).append(call.func)
        for call in m.findall(fn.body, m.Call(func=m.Attribute() | m.Name())):
            assert isinstance(call, cst.Call)
            if call in legacy or _spelled(call.func):
                self._spell_out(fn, call, local.found, followed)
        for name, funcs in followed.items():
            self._drop_bindings(fn, name, local.found[name], funcs)

    def _spell_out(self, fn, call: cst.Call, local: dict[str, list[_Binding]], followed) -> None:
        """A legacy call's ``**name`` of a dict literal bound once and never changed,
        written out as ``key=value, ...`` (NOTE [ A legacy function called through a name ])."""
        last = call.args[-1] if call.args else None
        if last is None or last.star != "**" or not isinstance(last.value, cst.Name):
            return
        name = last.value.value
        bindings = local.get(name, [])
        if len(bindings) != 1 or not isinstance(bindings[0].value, cst.Dict):
            return
        binding, literal = bindings[0], bindings[0].value
        pieces = []
        for element in literal.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(
                element.key, cst.SimpleString
            ):
                return
            key = element.key.evaluated_value
            if not isinstance(key, str) or not key.isidentifier():
                return
            for read in m.findall(element.value, m.Name()):
                assert isinstance(read, cst.Name)
                if any(b.line >= binding.line for b in local.get(read.value, [])):
                    return  # bound again after the dict: its value may differ at the call
            pieces.append(f"{key}={_text(element.value)}")
        uses = m.findall(fn.body, m.Name(value=name))
        if len(uses) != 2:  # the binding's target and the `**name`: nothing changes it
            return
        pos = self.positions[last]
        self.edits.setdefault(pos.start.line, []).append(
            (pos.start.column, pos.end.column, ", ".join(pieces))
        )
        followed.setdefault(name, []).append(last.value)

    def _follow(self, fn, call: cst.Call, name: str, bindings: list[_Binding], value) -> bool:
        """Spells `call`'s callee as the legacy API `name` held in the run; whether it did."""
        options = [(b, _options(b.value)) for b in bindings]
        spelled = [(b, kind, expr) for b, found in options for kind, expr in found if kind]
        if not spelled:
            return False  # not bound to a legacy API in the source: the user's own
        start = self.positions[call].start.line
        end = self.positions[call].end.line
        kind = self._built_at(fn.name.value, start, end) or legacy_kind(value)
        if not kind:
            if value is not None or len({k for _, k, _ in spelled}) > 1:
                return False  # the run called something else: the user's own
            kind = spelled[0][1]
        where = f"{API}: {self.trace.path}:{start}: cannot migrate `{self._line(start)}`"
        for binding, found in options:
            if any(not k for k, _ in found) or not found:
                other = _text(binding.value) if binding.value is not None else ""
                bound = f"to `{other}`" if other else f"by `{self._line(binding.line)}`"
                raise MigrateError(
                    f"{where}: `{name}` is bound to `{_text(spelled[0][2])}` at line "
                    f"{spelled[0][0].line} and {bound} at line {binding.line}, which is not "
                    "a legacy function: which one the call makes depends on the run, and "
                    "a tf.data version can be written for a legacy call only. Fix: call the "
                    f"legacy function by its own name where it is meant "
                    f"(`{_text(spelled[0][2])}(...)`), then migrate."
                )
        chosen = next(((b, e) for b, k, e in spelled if k == kind), None)
        if chosen is None:
            lines = ", ".join(str(b.line) for b, _, _ in spelled)
            raise MigrateError(
                f"{where}: `{name}` was {kind} in the run, and none of its bindings (line "
                f"{lines}) spells it. Fix: call the legacy function by its own name there, "
                "then migrate."
            )
        pos = self.positions[call.func]
        self.edits.setdefault(pos.start.line, []).append(
            (pos.start.column, pos.end.column, _text(chosen[1]))
        )
        others = sorted({_text(e) for _, k, e in spelled if k != kind})
        if others:
            self.notes.append(
                f"{self.trace.path}:{start}: `{name}` is `{_text(chosen[1])}` (line "
                f"{chosen[0].line}, the branch this run took) or "
                f"{', '.join(f'`{o}`' for o in others)} "
                "in other branches; the tf.data version does what this run did: migrate "
                "again with arguments that take another branch to get that one"
            )
        return True

    def _built_at(self, function: str, start: int, end: int) -> str:
        """The one legacy API the run built at lines `start`..`end` of `function`, or ""."""
        kinds = set()
        for index, frames in self.trace.sites.items():
            if any(f == function and start <= line <= end for f, line in frames[-1:]):
                kind = (
                    self.trace.nodes[index].kind.split(".")[0]
                    if index < len(self.trace.nodes)
                    else ""
                )
                kinds.add(kind)
        kinds &= LEGACY
        return kinds.pop() if len(kinds) == 1 else ""

    def _drop_bindings(self, fn, name: str, bindings: list[_Binding], funcs) -> None:
        """Leaves out `name`'s bindings once no statement of `fn` reads it any more."""
        followed = {id(f) for f in funcs}
        targets = set()
        for binding in bindings:
            if isinstance(binding.stmt, cst.SimpleStatementLine):
                for small in binding.stmt.body:
                    if isinstance(small, cst.Assign):
                        targets |= {id(t.target) for t in small.targets}
        reads = [
            n
            for n in m.findall(fn.body, m.Name(value=name))
            if id(n) not in followed and id(n) not in targets
        ]
        if reads:
            return
        for binding in bindings:
            stmt = binding.stmt
            if not (
                isinstance(stmt, cst.SimpleStatementLine)
                and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Assign)
                and len(stmt.body[0].targets) == 1
            ):
                continue
            pos = self.positions[stmt]
            for line in range(pos.start.line, pos.end.line + 1):
                text = self.lines[line - 1]
                end = len(text.rstrip("\r\n"))
                new = _LEFT_OUT if line == pos.start.line else _LEFT_OUT_MORE
                column = pos.start.column if line == pos.start.line else 0
                self.edits.setdefault(line, []).append((column, end, new))

    def _line(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def edited(self) -> str:
        lines = list(self.lines)
        for line, edits in self.edits.items():
            text = lines[line - 1]
            for start, end, new in sorted(edits, reverse=True):
                text = text[:start] + new + text[end:]
            lines[line - 1] = text
            if text.strip() and _LEFT_OUT not in text and _LEFT_OUT_MORE not in text:
                self.quoted.append((text.strip(), self.lines[line - 1].strip()))
        return "".join(lines)


def _options(value: cst.BaseExpression | None) -> list[tuple[str, cst.BaseExpression]]:
    """The (legacy API or "", expression) each leaf of a bound value may be
    (``a if c else b`` has two); [] for a binding that is not ``name = value``."""
    if value is None:
        return []
    if isinstance(value, cst.IfExp):
        return _options(value.body) + _options(value.orelse)
    return [(_spelled(value), value)]


def _text(node: cst.CSTNode) -> str:
    return " ".join(cst.Module([]).code_for_node(node).split())
