"""Syntax helpers of the migration: calls, names, arguments and source text, on libcst trees.

Pure functions of a concrete syntax tree (or of source text): what a call
calls, which names a statement reads and assigns, a call's arguments bound to
a signature, the text of a call a formatter would write, and dead
assignments. The rewriter (:mod:`queue_pipeline._migrate.codegen`) and the
caller rewrite (:mod:`queue_pipeline._migrate.callers`) share them.
"""

from __future__ import annotations

import inspect
import io
import re
import tokenize
from typing import Any

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate import chains

__all__ = [
    "registers_runner",
    "all_params",
    "assigned_names",
    "bare",
    "bind_arguments",
    "call_text",
    "callee",
    "dead_code",
    "element_params",
    "is_keyword",
    "list_of_reads",
    "names_in",
    "parse_expression",
    "string_lines",
    "tuple_returns",
    "without_empty_finally",
    "without_stop_test",
]


# The names migrated code gives its Datasets (a second pass reads them: NOTE
# [ Several pipelines in one function ]).
# a Dataset's name: migrate's own, or the fresh one it takes beside the user's
# (``records_1``, NOTE [ Names the written code binds ])
_DATASET_NAME = re.compile(r"(^|_)(dataset|records)(_\d+)?$")


def callee(call: cst.Call) -> str:
    """The name `call` calls (``batch`` for ``tf.train.batch(...)``); a migrated
    Dataset's ``dataset.batch(n)`` is ``Dataset.batch``, not the legacy call."""
    func = call.func
    if isinstance(func, cst.Attribute):
        if (
            func.attr.value == "batch"
            and isinstance(func.value, cst.Name)
            and _DATASET_NAME.search(func.value.value)
        ):
            return "Dataset.batch"
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


def registers_runner(call: cst.Call) -> bool:
    """Whether `call` makes or registers a QueueRunner: ``QueueRunner(...)``,
    ``add_queue_runner(qr)`` or what that does, ``add_to_collection(
    tf.GraphKeys.QUEUE_RUNNERS, qr)``."""
    name = callee(call)
    if name in ("QueueRunner", "add_queue_runner"):
        return True
    if name != "add_to_collection" or not call.args:
        return False
    key = cst.Module([]).code_for_node(call.args[0].value)
    return key.endswith("QUEUE_RUNNERS") or key.strip("'\"") == "queue_runners"


class _NameCollector(cst.CSTVisitor):
    """The variable names a node reads or writes (not attribute or keyword names)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    # A comprehension's and a lambda's own variables are not the enclosing
    # function's names (``[[1.0] for _ in range(n)]`` reads no ``_``).
    def _own_scope(self, node: cst.CSTNode, bound: set[str]) -> bool:
        inner = _NameCollector()
        for child in node.children:
            child.visit(inner)
        self.names |= inner.names - bound
        return False

    def _comprehension(self, node) -> bool:
        bound: set[str] = set()
        comp = node.for_in
        while comp is not None:
            bound |= names_in(comp.target)
            comp = comp.inner_for_in
        return self._own_scope(node, bound)

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return self._comprehension(node)

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return self._comprehension(node)

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return self._comprehension(node)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        bound = {p.name.value for p in all_params(node.params) if isinstance(p, cst.Param)}
        return self._own_scope(node, bound)


def names_in(node: cst.CSTNode) -> set[str]:
    collector = _NameCollector()
    node.visit(collector)
    return collector.names


class _AttributeReads(cst.CSTVisitor):
    def __init__(self, name: str):
        self.name = name
        self.uses = 0  # every occurrence of the name
        self.through: int = 0  # those that are the object of an attribute access
        self.read: set[str] = set()  # the attributes read (assignment targets are written)
        self.targets: set[int] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Attribute):
            self.targets.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == self.name:
            self.through += 1
            if id(node) not in self.targets:
                self.read.add(node.attr.value)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.uses += 1


def attributes_read(node: cst.CSTNode, name: str) -> set[str] | None:
    """The attributes of `name` that `node` reads, when it uses `name` only through them.

    ``self.size = size`` reads none of ``self``; ``x = self.reader.read(q)``
    reads ``reader``; None where `name` is used bare (``f(self)``).
    """
    visitor = _AttributeReads(name)
    node.visit(visitor)
    return visitor.read if visitor.uses == visitor.through else None


def mutated_names(stmt: cst.CSTNode) -> set[str]:
    """The names a simple statement changes in place: ``x[k] = v``, ``x.a = v``, ``x += v``,
    ``x.append(v)`` (a method call as the whole statement)."""
    out: set[str] = set()
    if not isinstance(stmt, cst.SimpleStatementLine):
        return out
    for small in stmt.body:
        if isinstance(small, cst.Assign):
            for t in small.targets:
                if isinstance(t.target, (cst.Subscript, cst.Attribute)):
                    out |= _root_name(t.target)
        elif isinstance(small, cst.AugAssign):
            out |= _root_name(small.target)
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute):
                out |= _root_name(func.value)
    return out


def _root_name(node: cst.CSTNode) -> set[str]:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return {node.value} if isinstance(node, cst.Name) else set()


def assigned_names(stmt: cst.CSTNode) -> list[str]:
    """Names a statement assigns (tuple targets flattened; attributes count by their base)."""
    out: list[str] = []
    for assign in m.findall(stmt, m.Assign() | m.AugAssign() | m.AnnAssign()):
        if isinstance(assign, cst.Assign):
            targets: list[cst.CSTNode] = [t.target for t in assign.targets]
        elif isinstance(assign, (cst.AugAssign, cst.AnnAssign)):
            targets = [assign.target]
        else:
            continue
        for target in targets:
            out += [n.value for n in m.findall(target, m.Name()) if isinstance(n, cst.Name)]
    return out


def all_params(params: cst.Parameters) -> list[cst.Param]:
    out = list(params.posonly_params) + list(params.params)
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg)
    out += list(params.kwonly_params)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def bind_arguments(
    api: Any, call: cst.Call, module: cst.Module, skip_self: bool = False
) -> dict[str, str]:
    """Source text of each argument of `call`, by `api`'s parameter names."""
    params = [
        p
        for p in inspect.signature(api).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if skip_self and params and params[0].name == "self":
        params = params[1:]
    out: dict[str, str] = {}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    i = 0
    for arg in call.args:
        text = module.code_for_node(arg.value)
        if arg.star:
            raise chains.Unsupported(
                f"a `{arg.star}{text}` argument in a call of {callee(call)}: which of its "
                "arguments it sets is known only when it runs. Fix: write the arguments "
                "out (`name=value`), then migrate"
            )
        if arg.keyword is not None:
            out[arg.keyword.value] = text
        else:
            if i >= len(positional):
                raise chains.Unsupported(f"too many positional arguments to {callee(call)}")
            out[positional[i].name] = text
            i += 1
    return out


def call_text(name: str, pieces: list[str]) -> str:
    """``name(a, b)``, or one argument per line when that is long (as a formatter would)."""
    flat = f"{name}({', '.join(pieces)})"
    if len(flat) <= 72:
        return flat
    return f"{name}(\n" + "".join(f"    {p},\n" for p in pieces) + ")"


def tuple_returns(stmt) -> list[tuple[cst.CSTNode, str]]:
    """``return [a, b]`` as ``return a, b``: tf.data would stack a list into one tensor."""
    out: list[tuple[cst.CSTNode, str]] = []
    for ret in m.findall(stmt, m.Return(value=m.List())):
        if not isinstance(ret, cst.Return) or not isinstance(ret.value, cst.List):
            continue
        elements = [cst.Module([]).code_for_node(e.value) for e in ret.value.elements]
        out.append((ret.value, ", ".join(elements) + ("," if len(elements) == 1 else "")))
    return out


def list_of_reads(stmt) -> cst.ListComp | None:
    """The list comprehension `stmt` assigns, if it is ``x = [helper(...) for ...]``."""
    if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
        value = stmt.body[0].value
        if isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Call):
            return value
    return None


def parse_expression(text: str) -> cst.BaseExpression | None:
    try:
        return cst.parse_expression(text.strip())
    except cst.ParserSyntaxError:
        return None


def bare(text: str) -> str:
    """`text` without spaces, outer brackets and a trailing comma, for comparing element lists."""
    text = text.replace(" ", "").replace("\n", "")
    if text[:1] in "([" and text[-1:] in ")]":
        text = text[1:-1]
    return text.rstrip(",")


def string_lines(source: str) -> set[int]:
    """Line numbers that continue a multi-line string (never re-indented)."""
    lines: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                lines.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return lines


def is_keyword(call: cst.Call, param: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == param for a in call.args)


def dead_code(lines: list[str]) -> list[str]:
    """Drops assignments without calls whose targets nothing later reads."""
    out = list(lines)
    changed = True
    while changed:
        changed = False
        for i in range(len(out) - 1, -1, -1):
            text = out[i]
            match = _PLAIN_ASSIGN.match(text)
            if match is None or "\n" in text.rstrip("\n") or "(" in match.group(3):
                continue
            targets = [t.strip() for t in match.group(2).split(",") if t.strip()]
            later = "".join(out[i + 1 :])
            if targets and not any(
                re.search(rf"(?<![\w.]){re.escape(t)}(?!\w)", later) for t in targets
            ):
                del out[i]
                changed = True
    return out


def filled_blocks(lines: list[str]) -> list[str]:
    """`lines` with each block left empty (its only line was dropped) filled or removed.

    An empty ``else:`` goes; any other empty block gets ``pass``.
    """
    out: list[str] = []
    for i, text in enumerate(lines):
        stripped = text.rstrip()
        header = stripped.endswith(":") and "\n" not in stripped
        indent = len(text) - len(text.lstrip(" "))
        following = next((t for t in lines[i + 1 :] if t.strip()), None)
        # its first line that is not blank (a statement may come with blank lines above it)
        first = next((ln for ln in (following or "").splitlines() if ln.strip()), "")
        empty = following is None or len(first) - len(first.lstrip(" ")) <= indent
        if header and empty and not stripped.lstrip().startswith("#"):
            if stripped.strip() == "else:":
                continue
            out += [text, " " * (indent + 4) + "pass\n"]
            continue
        out.append(text)
    return out


_PLAIN_ASSIGN = re.compile(r"^(\s*)([\w, ]+?)\s*=\s*(?!=)(.*)$", re.S)


def without_empty_finally(node: cst.Try):
    """`node` without a ``finally:`` left holding only ``pass`` (its lines were removed);
    a ``try`` left with neither handlers nor ``finally`` is its body's statements."""
    final = node.finalbody
    if final is None or not all(
        m.matches(st, m.SimpleStatementLine(body=[m.Pass()])) for st in final.body.body
    ):
        return node
    if node.handlers or node.orelse is not None:
        return node.with_changes(finalbody=None)
    body = list(node.body.body)
    body[0] = body[0].with_changes(leading_lines=node.leading_lines)
    return cst.FlattenSentinel(body)


def without_stop_test(test: cst.BaseExpression, coords: set[str]) -> cst.BaseExpression | None:
    """A loop's `test` without its ``not coord.should_stop()`` (`coords`: the Coordinators'
    names): ``True`` for that test alone, the rest of an ``and``; None if it has none."""
    if (
        isinstance(test, cst.UnaryOperation)
        and isinstance(test.operator, cst.Not)
        and isinstance(test.expression, cst.Call)
        and m.matches(test.expression.func, m.Attribute(attr=m.Name("should_stop")))
        and isinstance(test.expression.func.value, cst.Name)  # type: ignore[attr-defined]
        and test.expression.func.value.value in coords  # type: ignore[attr-defined]
    ):
        return cst.Name("True")
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        left, right = (without_stop_test(t, coords) for t in (test.left, test.right))
        if left is None and right is None:
            return None
        left, right = left or test.left, right or test.right
        if m.matches(left, m.Name("True")):
            return right
        if m.matches(right, m.Name("True")):
            return left
        return test.with_changes(left=left, right=right)
    return None


def element_params(element: list[str]) -> tuple[list[str], list[str]]:
    """Valid parameters for the names an element was unpacked into, and the lines that bind
    the rest.

    NOTE [ Unpacking targets as parameters ]
    The element's names are the user's unpacking targets (``image, sketch, cid,
    keep, _, _, _ = read(...)``), and a ``def`` takes a name once: a name given
    again is bound by its last place, as the unpacking binds it, and the places
    before take a fresh name (``_0``); a nested target (``(a, b), c = ...``) takes
    a fresh parameter unpacked in the body (``(a, b) = value_0``). A starred name
    (``*rest``) stays starred.
    """
    names = [e.lstrip("*") for e in element]
    used = set(names)
    params: list[str] = []
    lines: list[str] = []
    for i, (entry, name) in enumerate(zip(element, names)):
        star = "*" if entry.startswith("*") else ""
        if name.isidentifier() and name not in names[i + 1 :]:
            params.append(entry)
            continue
        base = f"{name.strip('_')}_{i}" if name.isidentifier() else f"value_{i}"
        base = base if base.isidentifier() else f"value_{i}"
        while base in used:
            base += "_"
        used.add(base)
        params.append(star + base)
        if not name.isidentifier():
            lines.append(f"{name} = {base}")
    return params, lines
