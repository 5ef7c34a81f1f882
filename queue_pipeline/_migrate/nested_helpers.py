"""A nested function or lambda of the migrated function that makes a stage, inlined at its call.

NOTE [ A nested function that makes a stage ]
CycleGAN's ``get_image_batch`` defines, in each branch of ``if train:``, a
``def queue(): return tf.train.string_input_producer(...)`` and a ``def
batch(f, x): return tf.train.shuffle_batch([f, x], ...)`` (or lambdas), and
calls them after the ``if``: module-level helpers returning a producer or a
batch, written where they are used. So the function is migrated from a copy
of the file where each call of such a helper (one the function only ever
calls) is replaced by the helper's statements and returned expression, its
parameters by the call's arguments; a helper defined once per branch of one
``if`` (``else`` included), or in a lone ``if``, has its call's statement
written once per branch under the same test (a returned call bound to a fresh
name first). Both branches are migrated; the run proves the one it takes.
Each written line counts as the user's line it comes from, and the function
is written back as the user wrote it. A helper of another shape (a loop or
a test in its body, ``*args``, a decorator) is refused at the definition the
run took, with the fix.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from queue_pipeline._migrate.base import STAGE_CALLS
from queue_pipeline._migrate.syntax import callee
from queue_pipeline._migrate.trace import MigrateError

__all__ = ["Inlined", "Refusal", "inline"]

API = "queue-pipeline migrate"


@dataclasses.dataclass
class Inlined:
    """A copy of the file with the nested stage helpers inlined.

    Attributes:
      source: the copy's text.
      lines: the user's line of each of the copy's lines (1-based: ``lines[i - 1]``).
    """

    source: str
    lines: list[int]

    def line_map(self) -> dict[int, int]:
        return {i + 1: line for i, line in enumerate(self.lines)}


@dataclasses.dataclass
class _Helper:
    name: str
    nodes: list  # each a FunctionDef, or the SimpleStatementLine of `name = lambda ...`


def _makes_stage(node: cst.CSTNode) -> bool:
    return any(callee(cast(cst.Call, c)) in STAGE_CALLS for c in m.findall(node, m.Call()))


def _lambda_of(stmt: cst.CSTNode) -> tuple[str, cst.Lambda] | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        a = stmt.body[0]
        if (
            isinstance(a, cst.Assign)
            and len(a.targets) == 1
            and isinstance(a.targets[0].target, cst.Name)
            and isinstance(a.value, cst.Lambda)
        ):
            return a.targets[0].target.value, a.value
    return None


class _Refused(Exception):  # the shape not inlined: the end of "inlined only when ..."
    pass


class _Inliner:
    def __init__(self, source: str, function: str):
        self.source = source
        self.lines = source.splitlines(keepends=True)
        wrapper = MetadataWrapper(cst.parse_module(source))
        self.module = wrapper.module
        self.pos = wrapper.resolve(PositionProvider)
        self.parent: Any = wrapper.resolve(ParentNodeProvider)
        tops = [s for s in self.module.body if isinstance(s, cst.FunctionDef)]
        self.fn: Any = next((s for s in tops if s.name.value == function), None)

    def line(self, node) -> int:
        return self.pos[node].start.line

    def helpers(self) -> dict[str, _Helper]:
        found: dict[str, _Helper] = {}
        assert self.fn is not None
        for node in m.findall(self.fn.body, m.FunctionDef() | m.SimpleStatementLine()):
            if self._inside_def(node):
                continue
            body: cst.CSTNode
            if isinstance(node, cst.FunctionDef):
                name, body = node.name.value, node
            else:
                lam = _lambda_of(node)
                if lam is None:
                    continue
                name, body = lam[0], lam[1]
            if _makes_stage(body):
                found.setdefault(name, _Helper(name, [])).nodes.append(node)
        return found

    def _inside_def(self, node) -> bool:
        p = self.parent.get(node)
        while p is not None and p is not self.fn:
            if isinstance(p, (cst.FunctionDef, cst.Lambda)):
                return True
            p = self.parent.get(p)
        return False

    def refuse(self, nodes, why: str) -> Refusal:
        """The refusal of a helper at each of its definitions `nodes` (or one statement)."""
        choices = []
        for node in nodes if isinstance(nodes, list) else [nodes]:
            text = self.module.code_for_node(node).strip().splitlines()[0]
            code = node.name.value if isinstance(node, cst.FunctionDef) else "<lambda>"
            choices.append((code, self.line(node), _refusal(self.line(node), text, why)))
        return Refusal(choices)


def _refusal(line: int, text: str, why: str) -> str:
    return (
        f"{API}: <path>:{line}: cannot migrate `{text}`: a nested function that makes a "
        f"pipeline stage is inlined where it is called only when {why}. Fix: make its body "
        "plain statements ending in `return` of the stage, define it once (or once in every "
        "branch of one `if`, `else` included) and call it, or move it to module level."
    )


class Refusal(MigrateError):
    """A nested stage helper not inlined, refused at one of its definitions.

    Attributes:
      choices: per definition, (its code object's name, its line, the refusal there): the
        caller names the one the run took (the first if it cannot tell).
    """

    def __init__(self, choices: list[tuple[str, int, str]]):
        super().__init__(choices[0][2])
        self.choices = choices


def _body(helper_node) -> tuple[list, Any, Any, Any]:
    """(statements before the return, the returned expression, parameters, return line node)."""
    if isinstance(helper_node, cst.SimpleStatementLine):
        lam = _lambda_of(helper_node)
        assert lam is not None
        return [], lam[1].body, lam[1].params, helper_node
    block = helper_node.body
    if helper_node.decorators or not isinstance(block, cst.IndentedBlock):
        raise _Refused("it has no decorator and an indented body")
    stmts: list[Any] = list(block.body)
    if stmts and m.matches(stmts[0], m.SimpleStatementLine([m.Expr(m.SimpleString())])):
        stmts = stmts[1:]
    if not stmts or not all(isinstance(s, cst.SimpleStatementLine) for s in stmts):
        raise _Refused("its body is plain statements (no loop or test)")
    last = stmts[-1]
    if not (len(last.body) == 1 and isinstance(last.body[0], cst.Return) and last.body[0].value):
        raise _Refused("it ends in `return` of the stage")
    if any(m.findall(s, m.Return() | m.Global() | m.Nonlocal()) for s in stmts[:-1]):
        raise _Refused("it returns once, at its end, and declares no global or nonlocal")
    return stmts[:-1], last.body[0].value, helper_node.params, last


class _Rename(cst.CSTTransformer):
    """Names replaced by expressions (never an attribute's or a keyword's name)."""

    def __init__(self, replace: dict[str, cst.BaseExpression]):
        self.replace = replace
        self.skip: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if id(original) in self.skip or original.value not in self.replace:
            return updated
        return self.replace[original.value]


def _simple(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.SimpleString))


def _bound(params: cst.Parameters, call: cst.Call) -> dict[str, cst.BaseExpression]:
    if params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or params.star_kwarg:
        raise _Refused("it takes no *args or **kwargs")
    plain = list(params.posonly_params) + list(params.params)
    names = [p.name.value for p in plain + list(params.kwonly_params)]
    bound: dict[str, cst.BaseExpression] = {}
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or len(positional) > len(plain):
        raise _Refused("its calls pass each argument by position or name, no `*`")
    for p, a in zip(plain, positional):
        bound[p.name.value] = a.value
    for a in call.args:
        if a.keyword is not None:
            if a.keyword.value not in names:
                raise _Refused("its calls pass only its parameters")
            bound[a.keyword.value] = a.value
    for p in plain + list(params.kwonly_params):
        if p.name.value not in bound:
            if p.default is None:
                raise _Refused("its calls give every parameter without a default")
            bound[p.name.value] = p.default
    return bound


def _parens(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.Call, cst.Name, cst.Attribute, cst.Subscript, cst.List)):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def inline(source: str, function: str) -> Inlined | None:
    """The copy of `source` with `function`'s nested stage helpers inlined, or None.

    None when `function` defines no nested function or lambda that makes a stage.

    Raises:
      MigrateError: a nested stage helper of a shape this does not inline; the
        message's ``<path>`` is for the caller to fill in.
    """
    try:
        return _inline(source, function)
    except cst.ParserSyntaxError:
        return None


def _inline(source: str, function: str) -> Inlined | None:
    ins = _Inliner(source, function)
    if ins.fn is None:
        return None
    # only a helper the function only ever calls is inlined: one it returns or passes on
    # (an input_fn factory's `_input_fn`: NOTE [ Migrating an input_fn factory ]) is not
    helpers = ins.helpers()
    sites = _sites(ins, helpers)
    helpers = {n: h for n, h in helpers.items() if _only_called(ins, h, sites)}
    if not helpers:
        return None
    sites = _sites(ins, helpers)
    # each helper's definitions: one, or one per branch of one `if` (else included)
    branches: dict[str, tuple[cst.If | None, list]] = {}
    for h in helpers.values():
        try:
            for node in h.nodes:
                _body(node)
            branches[h.name] = _branching(ins, h)
        except _Refused as e:
            raise ins.refuse(h.nodes, str(e)) from e
    replaced: dict[int, list[tuple[str, int]]] = {}
    for stmt, calls in sites:
        try:
            replaced[ins.line(stmt)] = _written(ins, stmt, calls, helpers, branches)
        except _Refused as e:
            raise ins.refuse(stmt, str(e)) from e
    return _assembled(ins, helpers, replaced)


def _sites(ins: _Inliner, helpers: dict) -> list[tuple[Any, list[Any]]]:
    """The statements of the function (outside the helpers) calling a helper, with the calls."""
    defs = {id(n) for h in helpers.values() for n in h.nodes}
    sites: list[tuple[Any, list[Any]]] = []
    for stmt in m.findall(ins.fn.body, m.SimpleStatementLine()):
        if id(stmt) in defs or ins._inside_def(stmt):
            continue
        calls = [
            c
            for c in m.findall(stmt, m.Call(func=m.Name()))
            if cast(cst.Name, cast(cst.Call, c).func).value in helpers
        ]
        if calls:
            sites.append((stmt, calls))
    return sites


def _only_called(ins: _Inliner, h: _Helper, sites) -> bool:
    """Whether the function calls `h` and reads its name nowhere else."""
    funcs = {id(c.func) for _, calls in sites for c in calls}
    uses = [
        n
        for n in m.findall(ins.fn.body, m.Name(h.name))
        if id(n) not in funcs
        and not any(n is getattr(d, "name", None) or _targets(d, n) for d in h.nodes)
        and not _a_field(ins.parent.get(n), n)
        and not isinstance(ins.parent.get(n), cst.AssignTarget)  # `group = None` first
    ]
    called = any(c.func.value == h.name for _, calls in sites for c in calls)
    return called and not uses


def _a_field(parent, name: cst.CSTNode) -> bool:
    """Whether `name` is an attribute's or a keyword's name, not a variable."""
    return (isinstance(parent, cst.Attribute) and parent.attr is name) or (
        isinstance(parent, cst.Arg) and parent.keyword is name
    )


def _targets(stmt, name: cst.CSTNode) -> bool:
    lam = _lambda_of(stmt)
    return lam is not None and stmt.body[0].targets[0].target is name


def _branching(ins: _Inliner, h: _Helper) -> tuple[cst.If | None, list]:
    if len(h.nodes) == 1:
        return None, []
    parents = [ins.parent.get(ins.parent.get(n)) for n in h.nodes]  # block -> If / Else
    top = parents[0]
    while isinstance(top, cst.If) and isinstance(ins.parent.get(top), cst.If):
        top = ins.parent.get(top)  # an `elif`'s chain starts at its `if`
    if isinstance(top, cst.Else):
        top = ins.parent.get(top)
        while isinstance(ins.parent.get(top), cst.If):
            top = ins.parent.get(top)
    if not isinstance(top, cst.If):
        raise _Refused("it is defined once, or once in every branch of one `if`")
    chain = top
    arms: list[Any] = []
    while True:
        arms.append(chain)
        orelse = chain.orelse
        if isinstance(orelse, cst.If):
            chain = orelse
            continue
        if isinstance(orelse, cst.Else):
            arms.append(orelse)
        break
    if not isinstance(arms[-1], cst.Else) or sorted(map(id, parents)) != sorted(map(id, arms)):
        raise _Refused("it is defined once, or once in every branch of one `if`, `else` included")
    return top, [(arm, next(n for n, p in zip(h.nodes, parents) if p is arm)) for arm in arms]


def _written(ins, stmt, calls, helpers, branches) -> list[tuple[str, int]]:
    """The lines (text, the user's line) that replace the call statement `stmt`."""
    column = ins.pos[stmt].start.column
    pad = " " * column
    branching = {branches[c.func.value][0] for c in calls} - {None}
    if len(branching) > 1:
        raise _Refused("the helpers one statement calls are defined in the same `if`")
    if not branching:
        choice = {c.func.value: helpers[c.func.value].nodes[0] for c in calls}
        outside = {
            n: node for n, node in choice.items() if not _encloses(ins, ins.parent.get(node), stmt)
        }
        if not outside:
            return _variant(ins, stmt, calls, choice, pad)
        # defined in an `if` with no other branch (`if True:`): the call under that test
        owners = {id(_lone_if(ins, node)) for node in choice.values()}
        top = _lone_if(ins, next(iter(choice.values())))
        if top is None or len(owners) != 1:
            raise _Refused("it is defined in a block its call runs in, or in every branch")
        arms_of = {n: {id(top): node} for n, node in choice.items()}
        arms = [(top, None)]
    else:
        top = branching.pop()
        arms = next(branches[c.func.value][1] for c in calls if branches[c.func.value][0] is top)
        arms_of = {c.func.value: {id(a): n for a, n in branches[c.func.value][1]} for c in calls}
    out: list[tuple[str, int]] = []
    value = stmt.body[0] if len(stmt.body) == 1 else None
    fresh = ""
    if isinstance(value, cst.Return):
        taken = {cast(cst.Name, n).value for n in m.findall(ins.fn, m.Name())}
        fresh = next(n for n in ("batches", "stage", "stage_1", "stage_2") if n not in taken)
        stmt = stmt.with_changes(
            body=[
                cst.Assign(
                    [cst.AssignTarget(cst.Name(fresh))], cast(cst.BaseExpression, value.value)
                )
            ]
        )
    for i, (arm, _) in enumerate(arms):
        if isinstance(arm, cst.Else):
            head = "else:"
        else:
            head = ("if " if i == 0 else "elif ") + ins.module.code_for_node(arm.test) + ":"
        out.append((pad + head + "\n", ins.line(arm)))
        choice = {c.func.value: arms_of[c.func.value][id(arm)] for c in calls}
        out += _variant(ins, stmt, calls, choice, pad + "    ")
    if fresh:
        out.append((f"{pad}return {fresh}\n", ins.line(value)))
    return out


def _lone_if(ins: _Inliner, node) -> Any:
    """The `if` (no `elif`, no `else`) whose body defines `node`, or None."""
    owner = ins.parent.get(ins.parent.get(node))
    if isinstance(owner, cst.If) and owner.orelse is None:
        if not isinstance(ins.parent.get(owner), cst.If):
            return owner
    return None


def _encloses(ins: _Inliner, block, stmt) -> bool:
    p = ins.parent.get(stmt)
    while p is not None:
        if p is block:
            return True
        p = ins.parent.get(p)
    return False


def _variant(ins, stmt, calls, choice, pad) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    swap: dict[int, cst.BaseExpression] = {}
    for call in calls:
        helper = choice[call.func.value]
        before, value, params, ret = _body(helper)
        bound = _bound(params, call)
        for p, arg in bound.items():
            uses = len(
                m.findall(
                    cst.Module([cst.SimpleStatementLine([cst.Expr(value)]), *before]), m.Name(p)
                )
            )
            if not _simple(arg) and uses > 1:
                raise _Refused("an argument that is not a name or a constant is used once")
        rename = _Rename(bound)
        for s in before:
            text = cst.Module([]).code_for_node(s.visit(rename).with_changes(leading_lines=()))
            out += _lines(text, pad, ins.line(s))
        written = _parens(cast(cst.BaseExpression, value.visit(_Rename(bound))))
        at = ins.line(ret)
        if _direct(stmt, call):
            swap[id(call)] = written
            continue
        # one inside an expression (`reader.read(queue())`) is bound to a name first
        taken = {cast(cst.Name, n).value for n in m.findall(ins.module, m.Name())}
        name = next(
            n
            for n in (f"{call.func.value}_{k}" for k in ("made", "out", "value"))
            if n not in taken
        )
        out += _lines(f"{name} = {cst.Module([]).code_for_node(written)}\n", pad, at)
        swap[id(call)] = cst.Name(name)
    new = _swap_in(stmt, calls, swap)
    text = cst.Module([]).code_for_node(new.with_changes(leading_lines=()))
    return out + _lines(text, pad, at)


def _direct(stmt, call) -> bool:
    """Whether `call` is the whole value `stmt` assigns or returns."""
    body = stmt.body[0] if len(stmt.body) == 1 else None
    return isinstance(body, (cst.Assign, cst.Return, cst.Expr)) and body.value is call


def _swap_in(stmt, calls, swap):
    ids = {id(c) for c in calls}

    class _Swap(cst.CSTTransformer):
        def leave_Call(self, original, updated):
            return swap[id(original)] if id(original) in ids else updated

    return stmt.visit(_Swap())


def _lines(text: str, pad: str, line: int) -> list[tuple[str, int]]:
    rows = text.splitlines(keepends=True)
    return [((pad + r.lstrip(" \t")) if i == 0 else r, line) for i, r in enumerate(rows)]


def _assembled(ins: _Inliner, helpers, replaced) -> Inlined:
    drop: dict[int, int] = {}  # a helper definition's first line -> its last
    for h in helpers.values():
        for node in h.nodes:
            drop[ins.line(node)] = ins.pos[node].end.line
    # an `if` whose every branch only defined helpers goes; another block left empty
    # keeps a `pass`
    top: Any
    for top in m.findall(ins.fn, m.If()):
        if isinstance(ins.parent.get(top), cst.If):
            continue
        arms, arm = [], top
        while isinstance(arm, cst.If):
            arms.append(arm.body)
            arm = arm.orelse
        if isinstance(arm, cst.Else):
            arms.append(arm.body)
        if all(ins.line(s) in drop for a in arms for s in a.body) and not m.findall(
            top.test, m.Call()
        ):
            drop[ins.line(top)] = ins.pos[top].end.line
    empty: set[int] = set()
    for h in helpers.values():
        for node in h.nodes:
            block: Any = ins.parent.get(node)
            if all(ins.line(s) in drop for s in getattr(block, "body", [])):
                empty.add(min(ins.line(s) for s in block.body))
    out: list[tuple[str, int]] = []
    n, total = 1, len(ins.lines)
    stmts = {ins.line(s): s for s in m.findall(ins.fn, m.SimpleStatementLine())}
    while n <= total:
        if n in drop:
            if n in empty:
                text = ins.lines[n - 1]
                out.append((text[: len(text) - len(text.lstrip())] + "pass\n", n))
            n = drop[n] + 1
        elif n in replaced:
            out += replaced[n]
            n = ins.pos[stmts[n]].end.line + 1
        else:
            out.append((ins.lines[n - 1], n))
            n += 1
    return Inlined("".join(t for t, _ in out), [line for _, line in out])
