"""``tf.train.limit_epochs(x)`` in the code a migration rewrites.

NOTE [ limit_epochs in a migrated function ]
``limit_epochs(tensor, num_epochs=None)`` returns `tensor` while it has been
evaluated at most `num_epochs` times. It counts evaluations, not passes over
the files: in a per-record region, one evaluation per record. With
``num_epochs=None`` (the public recommendation reader's ``return
tf.train.limit_epochs([l, user, items])``) it is `tensor` itself, and the
rewriter is given the source with the call spelled as its tensor, on the same
lines, so the tf.data version holds no legacy call; the report lists it. With
a number it would end the records after that many: that is refused with the
line and the fix (``num_epochs`` on the producer, or ``Dataset.take``),
since a variable-backed counter cannot live in a Dataset function. The
proof leaves a bare ``limit_epochs`` as written (NOTE [ limit_epochs is no
producer ] in proof_conditions.py).
"""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from queue_pipeline._migrate.base import API, Step
from queue_pipeline._migrate.loading import MigrateError

__all__ = ["Unlimited", "unlimited"]


@dataclasses.dataclass
class Unlimited:
    """The rewriter's source with each ``limit_epochs(x)`` of no limit spelled ``x``."""

    source: str
    lines: list[int]  # the line of each call so spelled

    def report(self, rw) -> None:
        """Adds the report's line of each call in a function `rw` rewrote, in line order."""
        ranges = [(rw.functions[n].first, rw.functions[n].last) for n in rw.generated]
        for line in self.lines:
            if not any(first <= line <= last for first, last in ranges):
                continue
            step = Step(line, "limit_epochs", "the tensor itself (num_epochs=None: no limit)")
            later = [i for i, s in enumerate(rw.steps) if not s.file and s.line > line]
            rw.steps.insert(later[0] if later else len(rw.steps), step)


def _is_legacy(call: cst.Call, module) -> bool:
    """Whether `call` calls TF's or queue_pipeline's ``limit_epochs``."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value == "limit_epochs"
    if isinstance(func, cst.Name) and func.value == "limit_epochs":
        home = getattr(getattr(module, "limit_epochs", None), "__module__", "") or ""
        return home.startswith(("tensorflow", "queue_pipeline"))
    return False


def unlimited(source: str, trace) -> Unlimited:
    """`source` with ``limit_epochs(x)`` (no `num_epochs`, or None) as ``x``, on its lines.

    Args:
      trace: the run: its module (what a bare ``limit_epochs`` name is bound
        to) and the functions it called (a ``limit_epochs`` with a number in
        one of them is refused).

    Raises:
      MigrateError: a ``limit_epochs`` with a number in a function the run called.
    """
    if "limit_epochs" not in source:
        return Unlimited(source, [])
    path, module = trace.path, trace.module
    called = {first for (_, first) in trace.calls}
    wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    found: list[tuple[cst.Call, bool]] = []  # (call, in a function the run called)
    inside: list[bool] = []

    class _Calls(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            first, body = positions[node].start.line, positions[node.body].start.line
            inside.append(any(first <= line <= body for line in called))

        def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
            inside.pop()

        def visit_Call(self, node: cst.Call) -> None:
            if _is_legacy(node, module):
                found.append((node, bool(inside) and inside[-1]))

    wrapper.module.visit(_Calls())
    lines = source.splitlines(keepends=True)
    spelled: list[int] = []
    for call, run in sorted(found, key=lambda c: _at(positions[c[0]]), reverse=True):
        pos = positions[call]
        bound = _bound(call)
        epochs = bound.get("num_epochs", "None").strip()
        if "tensor" not in bound or epochs != "None":
            if run:
                raise MigrateError(
                    f"{API}: {path}:{pos.start.line}: limit_epochs(..., num_epochs={epochs}) "
                    "counts evaluations of its tensor (one per record here), and its counter "
                    "is a variable a Dataset function cannot hold; not migrated. Fix: set "
                    "num_epochs on the producer (string_input_producer(..., num_epochs=N)) "
                    "or drop the limit, then migrate (tf.data: Dataset.take(N) on the records)."
                )
            continue
        start, end = pos.start, pos.end
        if start.line != end.line:
            continue  # several lines: left as written (the tensor itself at run time)
        text = lines[start.line - 1]
        lines[start.line - 1] = text[: start.column] + _spelled(call) + text[end.column :]
        spelled.append(start.line)
    return Unlimited("".join(lines), sorted(spelled))


def _spelled(call: cst.Call) -> str:
    """The tensor `call` limits, as written: with no limit, TF returns what it was
    given (a list stays a list)."""
    node = call.args[0].value
    code = cst.Module([]).code_for_node(node)
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List)):
        return code
    return f"({code})"


def _at(position) -> tuple[int, int]:
    return position.start.line, position.start.column


def _bound(call: cst.Call) -> dict[str, str]:
    """``limit_epochs(tensor, num_epochs=None, name=None)``'s arguments as source text."""
    code = cst.Module([]).code_for_node
    out: dict[str, str] = {}
    order = ["tensor", "num_epochs", "name"]
    for i, arg in enumerate(call.args):
        if arg.star:
            return {}
        key = arg.keyword.value if arg.keyword is not None else (order[i] if i < 3 else "")
        out[key] = code(arg.value)
    return out
