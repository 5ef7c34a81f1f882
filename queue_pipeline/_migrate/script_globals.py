"""A script's module-level pipeline names that its functions read: handed to them in the copy.

NOTE [ A script's functions reading the pipeline's globals ]
A script's function may read what the pipeline's lines make at module level
as a global: widerface's ``read_and_decode()`` takes no argument and reads
``filename_queue``, made at module level and called in the session block.
In the copy the region's names are the wrapper's locals, which the function
cannot see. So in the copy (its lines unchanged) each such function takes
those names as keyword-only parameters (``def read_and_decode(*,
filename_queue):``) and the region's calls of it pass them
(``read_and_decode(filename_queue=filename_queue)``): to the trace and the
rewrite it is a reading helper handed its queue, as usual. The written script
keeps the function as the user wrote it (:attr:`Wrapped.restore
<queue_pipeline._migrate.script.Wrapped>`).
"""

from __future__ import annotations

import symtable

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.syntax import assigned_names

__all__ = ["hand_globals"]


def hand_globals(module: cst.Module, region: list) -> tuple[str, list[tuple[str, str]]] | None:
    """`module`'s code with the region's names its functions read handed to them, and
    each changed function's (new code, code as written); None when none reads one."""
    bound = {n for s in region for n in assigned_names(s)}
    functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    called = {
        c.func.value
        for s in region
        for c in m.findall(s, m.Call())
        if isinstance(c, cst.Call) and isinstance(c.func, cst.Name) and c.func.value in functions
    }
    handed = {}
    for name in sorted(called):
        reads = sorted(_global_reads(functions[name]) & bound)
        if reads:
            handed[name] = reads
    if not handed:
        return None
    transformer = _Hand(handed, {id(s) for s in region})
    new = module.visit(transformer)
    code = cst.Module([], default_indent=module.default_indent).code_for_node
    restore = [(code(transformer.changed[n]), code(functions[n])) for n in transformer.changed]
    return new.code, restore


def _global_reads(fn: cst.FunctionDef) -> set[str]:
    """The names `fn` reads as globals (none when it declares one)."""
    try:
        table = symtable.symtable(cst.Module([fn]).code, "<function>", "exec")
    except SyntaxError:
        return set()
    scope = next(iter(table.get_children()), None)
    if scope is None or any(s.is_declared_global() for s in scope.get_symbols()):
        return set()
    return {s.get_name() for s in scope.get_symbols() if s.is_global() and s.is_referenced()}


class _Hand(cst.CSTTransformer):
    def __init__(self, handed: dict[str, list[str]], region: set[int]) -> None:
        self.handed = handed
        self.region = region
        self.inside = 0  # within a statement of the region
        self.depth = 0  # within a function
        self.changed: dict[str, cst.FunctionDef] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth += 1

    def visit_SimpleStatementLine(self, node) -> None:
        self.inside += id(node) in self.region

    def leave_SimpleStatementLine(self, original, updated):
        self.inside -= id(original) in self.region
        return updated

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        self.depth -= 1
        names = self.handed.get(original.name.value)
        if self.depth or names is None or original.name.value in self.changed:
            return updated
        params = updated.params
        star = params.star_arg if isinstance(params.star_arg, cst.Param) else cst.ParamStar()
        extra = [cst.Param(cst.Name(n)) for n in names]
        updated = updated.with_changes(
            params=params.with_changes(star_arg=star, kwonly_params=[*params.kwonly_params, *extra])
        )
        self.changed[original.name.value] = updated
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self.inside or not isinstance(updated.func, cst.Name):
            return updated
        names = self.handed.get(updated.func.value)
        if names is None:
            return updated
        tight = cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        )
        extra = [cst.Arg(cst.Name(n), keyword=cst.Name(n), equal=tight) for n in names]
        return updated.with_changes(args=[*updated.args, *extra])
