"""A function returning its pipelines in an object: its statements, batch names and stores.

See NOTE [ Several pipelines in one returned object ] in
:mod:`queue_pipeline._migrate.object_returns`.
"""

from __future__ import annotations

import builtins
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from queue_pipeline._migrate import function_pipelines as _fp
from queue_pipeline._migrate import object_returns_places as _places
from queue_pipeline._migrate.constructor_pipelines import (
    _locals_assigned,
    _names_read,
    dependencies,
)
from queue_pipeline._migrate.syntax import names_in
from queue_pipeline._migrate.trace import MigrateError

__all__ = ["Shape", "ret_text"]

_API = "queue-pipeline migrate"
_CODE = cst.Module([]).code_for_node


class Shape:
    """The function's statements, its batch names per pipeline and the statements storing them."""

    def __init__(self, source: str, function: str, traced, real: str):
        wrapper = MetadataWrapper(cst.parse_module(source))
        self.positions = wrapper.resolve(PositionProvider)
        fn = next(
            (
                s
                for s in wrapper.module.body
                if isinstance(s, cst.FunctionDef) and s.name.value == function
            ),
            None,
        )
        if fn is None:
            raise MigrateError(f"{_API}: {real} has no module-level function {function}.")
        self.fn, self.real, self.function = fn, real, function
        if not isinstance(fn.body, cst.IndentedBlock) or not fn.body.body:
            raise self.fail(fn, "it has no body of statements")
        self.body = list(fn.body.body)
        returns = _fp._all_returns(fn)
        last = self.body[-1]
        ret = last.body[0] if isinstance(last, cst.SimpleStatementLine) and last.body else None
        if not isinstance(ret, cst.Return) or len(returns) != 1 or ret.value is None:
            raise self.fail(
                returns[0] if returns else fn,
                "it returns its object from more than one place (or not last); the "
                "pipelines it holds are migrated from a function with one `return` at its end",
            )
        self.ret = ret
        first = self.positions[fn].start.line
        calls = [c for (name, _), c in traced.calls.items() if name == function]
        call = next((c for c in calls if c.first_line == first), calls[0] if calls else None)
        local_values = call.local_values if call is not None else {}
        self.scope = {**vars(builtins), **vars(traced.module), **local_values}
        self.kinds = {n: traced.kind_of(v) for n, v in local_values.items()}
        stmts = self.body[:-1]
        self.last, self.needs = dependencies(stmts)
        queues = [p for p, v in _places.walk(traced.outputs) if _places.is_queue(v)]
        if queues:
            raise self.fail(
                last,
                f"it returns a queue or reader at `{ret_text(self)}"
                f"{_places.spelled(queues[0])}`, which its tf.data version does not make "
                "(a Dataset replaces the pipeline)",
                fix="keep only the batches (and plain values) in what it returns",
            )
        self.groups: list[list[str]] = []  # each pipeline's batch names, in place order
        unheld = []
        for group in _places.pipeline_groups(traced.outputs):
            names: list[str] = []
            for path in group:
                name = self._holder(traced.outputs, path, set(group), local_values)
                if name is None:
                    unheld.append(path)
                elif name not in names:
                    names.append(name)
            self.groups.append(names)
        self.names = {n for g in self.groups for n in g}
        self.stores = [i for i, s in enumerate(stmts) if self._is_use(i, s)]
        # a summary of a batch (``tf.summary.image("images", images)``): left out
        self.summaries = [i for i in self.stores if _is_summary(stmts[i])]
        for i in self.stores:
            if i not in self.summaries and not self._stores_only(stmts[i]):
                where = "" if isinstance(stmts[i], cst.SimpleStatementLine) else " in a block"
                raise self.fail(
                    stmts[i],
                    f"it uses{where} the batches of a pipeline the function returns in an "
                    "object other than by storing them, where its tf.data version puts the "
                    "pipeline's Dataset",
                    fix="move it to the code that reads the batches (the training step), or "
                    "into the function before the batching call",
                )
        if unheld:
            raise self.fail(
                last,
                f"the batch it returns at `{ret_text(self)}{_places.spelled(unheld[0])}` "
                "is held by no local name of the function (a Dataset is bound where "
                "the batches were)",
                fix="unpack the batching call's outputs into names (`images, labels = "
                "tf.train.batch(...)`) and store those names",
            )
        if not self._store_value(ret.value):
            raise self.fail(last, "its return computes on the batches")

    def _holder(self, outputs, path, group: set, local_values: dict) -> str | None:
        """The local name holding the batch at `path` of `outputs`, or the list or tuple
        of this pipeline's batches around it (``batch = tf.train.batch(...)``, stored
        whole); the first made when several do; None when none does."""
        for depth in range(1, len(path) + 1):
            node = _places.get(outputs, path[:depth])
            whole = depth == len(path) or (
                isinstance(node, (list, tuple))
                and all(
                    _places.is_leaf(v) and (*path[:depth], *p) in group
                    for p, v in _places.walk(node)
                )
            )
            if not whole:
                continue
            held = [n for n, v in local_values.items() if v is node and n in self.last]
            if held:
                return min(held, key=lambda n: self.last[n])
        return None

    def _is_use(self, i: int, stmt) -> bool:
        """Whether statement `i` reads a batch name after it was made."""
        return any(n in self.names and self.last[n] < i for n in _names_read(stmt)) or (
            any(n in self.names and self.last[n] < i for n in names_in(stmt))
            and not isinstance(stmt, cst.SimpleStatementLine)
        )

    def _stores_only(self, stmt) -> bool:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        line = stmt.body[0]
        if isinstance(line, cst.Assign):
            return self._store_value(line.value)
        if isinstance(line, cst.Expr) and isinstance(line.value, cst.Call):
            call = line.value
            func = call.func
            named = func.value if isinstance(func, cst.Name) else None
            method = func.attr.value if isinstance(func, cst.Attribute) else None
            return (named == "setattr" or method in _STORING_METHODS) and all(
                self._store_value(a.value) for a in call.args
            )
        return False

    def _store_value(self, node) -> bool:
        """Whether `node` only names the batches and puts them in a structure (computing
        nothing from them)."""
        if not names_in(node) & self.names or isinstance(node, cst.Name):
            return True
        if isinstance(node, cst.Attribute):
            return self._store_value(node.value)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            return all(self._store_value(e.value) for e in node.elements)
        if isinstance(node, cst.Dict):
            return all(
                self._store_value(e.value)
                and (not isinstance(e, cst.DictElement) or self._store_value(e.key))
                for e in node.elements
            )
        if isinstance(node, cst.Call):
            return isinstance(self._resolved(node.func), type) and all(
                self._store_value(a.value) for a in node.args
            )
        return False

    def _resolved(self, node) -> Any:
        if isinstance(node, cst.Name):
            return self.scope.get(node.value)
        if isinstance(node, cst.Attribute):
            return getattr(self._resolved(node.value), node.attr.value, None)
        return None

    def fail(self, node, why: str, fix: str | None = None) -> MigrateError:
        line = self.positions[node].start.line if node in self.positions else 0
        text = _CODE(node).strip().splitlines()[0] if node is not None else ""
        fix = fix or (
            "return the batches (`return images, labels`), or build each pipeline in a "
            "function of its own and migrate those"
        )
        return MigrateError(
            f"{_API}: {self.real}:{line}: cannot migrate `{text}` of {self.function}: {why}. "
            f"Fix: {fix}."
        )

    def cut_for(self, source: str, k: int) -> str:
        """`source` (the user's function as it is, wherever it now stands) with the
        function cut down to pipeline `k`: the stores and the other pipelines' lines as
        comment lines, the return returning `k`'s batch names."""
        wrapper = MetadataWrapper(cst.parse_module(source))
        positions = wrapper.resolve(PositionProvider)
        fn = next(
            s
            for s in wrapper.module.body
            if isinstance(s, cst.FunctionDef) and s.name.value == self.function
        )
        body = list(fn.body.body)
        lines = source.splitlines(keepends=True)
        for i in self.stores:
            span = positions[body[i]]
            column = len(lines[span.start.line - 1]) - len(lines[span.start.line - 1].lstrip())
            for n in range(span.start.line - 1, span.end.line):
                lines[n] = f"{' ' * column}{_fp.CUT}\n"
        stmts = body[:-1]
        kept = self._closure(set(self.groups[k]))
        others = {n for j, g in enumerate(self.groups) if j != k for n in g}
        theirs = {  # the other pipelines' stages (not the plain values they start from)
            i
            for i in self._closure(others) - kept
            if any(self.kinds.get(n, "plain") != "plain" for n in _locals_assigned(stmts[i]))
        }
        built = {n for i in theirs for n in _locals_assigned(stmts[i])}
        for i, stmt in enumerate(stmts):  # and what reads them (a summary of their batch)
            if i not in kept and i not in theirs and _names_read(stmt) & built:
                theirs.add(i)
                built |= set(_locals_assigned(stmt))
        for i in theirs:
            span = positions[stmts[i]]
            column = len(lines[span.start.line - 1]) - len(lines[span.start.line - 1].lstrip())
            for n in range(span.start.line - 1, span.end.line):
                lines[n] = f"{' ' * column}{_fp.CUT}\n"
        span = positions[body[-1]]
        indent = lines[span.start.line - 1][: span.start.column]
        lines[span.start.line - 1] = f"{indent}return {', '.join(self.groups[k])}\n"
        for n in range(span.start.line, span.end.line):
            lines[n] = f"{indent}{_fp.CUT}\n"
        return "".join(lines)

    def _closure(self, names: set[str]) -> set[int]:
        found: set[int] = set()
        stack = [self.last[n] for n in names if n in self.last]
        while stack:
            i = stack.pop()
            if i not in found:
                found.add(i)
                stack.extend(self.needs[i])
        return found


def _is_summary(stmt) -> bool:
    """Whether `stmt` is a call of a summary op whose result it drops."""
    line = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and stmt.body else None
    if not isinstance(line, cst.Expr) or not isinstance(line.value, cst.Call):
        return False
    dotted = _CODE(line.value.func).split(".")
    return "summary" in dotted[:-1] or dotted[-1].endswith("_summary")


def ret_text(shape: Shape) -> str:
    return _CODE(shape.ret.value) if shape.ret.value is not None else ""


_STORING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "add"})
