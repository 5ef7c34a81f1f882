"""The session code's lines that use the queue objects a migrated inline pipeline no longer makes.

NOTE [ Lines that use the removed queue objects ]
An inline pipeline's lines (NOTE [ Migrating an inline pipeline ] in
:mod:`queue_pipeline._migrate.script`) become tf.data code; the queue, its
enqueue op and its runner they made are gone. The session code may still use
them: ``enqueue_threads = qr.create_threads(sess, coord=coord, start=True)``,
``for t in enqueue_threads: t.join()``, ``sess.run(queue.close())``. Such a
line only drives the queue machinery, so it goes too (and what it assigns is
gone in turn): a line whose call is a method of a removed object, a
``sess.run`` of removed objects alone, a call of removed objects alone
(``coord.join(enqueue_threads)``), a ``for`` over a removed object. A line that
reads a removed object otherwise (``print(sess.run(queue.size()))``) stays,
and the static check of the rewritten scope refuses the rewrite
(:func:`queue_pipeline._migrate.static_check.check_rewritten_scope`).
"""

from __future__ import annotations

import libcst as cst

from queue_pipeline._migrate.syntax import assigned_names, names_in, without_empty_finally

__all__ = ["drop_uses"]

_CONSTANTS = frozenset({"True", "False", "None"})


def drop_uses(source: str, scope: str | None, gone: set[str]) -> tuple[str, list[str]]:
    """`source` without the lines of `scope` (None: the module's own statements) that only
    use the objects named `gone`; and those lines' text."""
    if not gone:
        return source, []
    module = cst.parse_module(source)
    transformer = _Uses(set(gone), scope is not None)
    body = []
    for stmt in module.body:
        target = (
            isinstance(stmt, cst.FunctionDef) and stmt.name.value == scope
            if scope is not None
            else not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
        )
        new = stmt.visit(transformer) if target else stmt
        if isinstance(new, cst.BaseStatement):
            body.append(new)
    if not transformer.removed:
        return source, []
    return module.with_changes(body=body).code, transformer.removed


class _Uses(cst.CSTTransformer):
    def __init__(self, gone: set[str], function: bool) -> None:
        self.gone = gone
        self.removed: list[str] = []
        self.function = function  # the scope is a function: enter it, not those it nests

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        enter, self.function = self.function, False
        return enter

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False  # a class is not session code

    def _only_gone(self, node: cst.CSTNode) -> bool:
        read = names_in(node) - _CONSTANTS
        return bool(read) and read <= self.gone

    def _drives_queues(self, call: cst.Call) -> bool:
        func = call.func
        root = func
        while isinstance(root, (cst.Attribute, cst.Call)):
            root = root.value if isinstance(root, cst.Attribute) else root.func
        if isinstance(func, cst.Attribute) and isinstance(root, cst.Name):
            if root.value in self.gone:  # qr.create_threads(...), queue.close()
                return True
        if not call.args:
            return False
        return all(self._only_gone(a.value) for a in call.args)  # sess.run(q.close())

    def leave_SimpleStatementLine(self, original, updated):
        if len(updated.body) != 1:
            return updated
        small = updated.body[0]
        value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        if not isinstance(value, cst.Call) or not self._drives_queues(value):
            return updated
        self.gone |= set(assigned_names(updated))
        self.removed.append(_text(updated))
        return cst.RemoveFromParent()

    def leave_For(self, original: cst.For, updated: cst.For):
        if updated.orelse is None and self._only_gone(updated.iter):
            self.removed.append(_text(updated).splitlines()[0] + " ...")
            return cst.RemoveFromParent()
        return updated

    def leave_Try(self, original: cst.Try, updated: cst.Try):
        return without_empty_finally(updated)

    def leave_IndentedBlock(self, original, updated):
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated


def _text(stmt: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(stmt.with_changes(leading_lines=())).strip()
