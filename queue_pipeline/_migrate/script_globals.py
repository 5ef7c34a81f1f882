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

NOTE [ A stage only the script's other functions read ]
A script may make at module level, among its pipeline's lines, a stage its
pipeline never reads (``eval_queue = tf.train.string_input_producer(...)``
and ``eval_reader = tf.TFRecordReader()``, read as globals by an
``eval_inputs()`` the script does not call). Rewritten with the
pipeline, such a line became an unused chain of Datasets and the names the
other function reads were gone from the written script. Such a statement (it
makes a producer or reader; no other statement of the region, no function the
script calls at module level and no code after the region reads what it binds;
a function of the script that it does not call there does) is set aside
(:func:`set_aside`): it is not traced with the pipeline, and the written script
keeps it as written, right after the tf.data code.
"""

from __future__ import annotations

import symtable

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.base import PRODUCERS, READER_CLASSES
from queue_pipeline._migrate.syntax import assigned_names, callee, names_in

__all__ = ["hand_globals", "set_aside"]


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


_STAGES = frozenset(PRODUCERS + READER_CLASSES + ("slice_input_producer",))


def set_aside(module: cst.Module, region: list, after: list, builders) -> tuple[list, list]:
    """(the region but the statements set aside, those statements): NOTE [ A stage only
    the script's other functions read ]. `builders`: the calls that build a stage; a
    region left with none of them is no pipeline (the region comes back empty)."""
    functions = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    reads = {name: _global_reads(f) for name, f in functions.items()}
    called = {  # by the script: at module level, its session code included
        c.func.value
        for s in [*region, *after]
        for c in m.findall(s, m.Call())
        if isinstance(c, cst.Call) and isinstance(c.func, cst.Name) and c.func.value in functions
    }
    while True:  # and the functions they read (call) in turn
        more = {n for f in called for n in reads[f] if n in functions} - called
        if not more:
            break
        called |= more
    used = {n for s in after for n in names_in(s)} | {n for f in called for n in reads[f]}
    others = {n for f in set(functions) - called for n in reads[f]}
    aside = []
    for st in region:
        bound = set(assigned_names(st))
        makes = {callee(c) for c in m.findall(st, m.Call()) if isinstance(c, cst.Call)}
        in_region = {n for s in region if s is not st for n in names_in(s)}
        if (
            isinstance(st, cst.SimpleStatementLine)
            and bound & others
            and not bound & (used | in_region)
            and makes & _STAGES
        ):
            aside.append(st)
    rest = [s for s in region if not any(s is a for a in aside)]
    builds = any(
        callee(c) in builders
        for s in rest
        for c in m.findall(s, m.Call())
        if isinstance(c, cst.Call)
    )
    return (rest if builds else []), aside


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
