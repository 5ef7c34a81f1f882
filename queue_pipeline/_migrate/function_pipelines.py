"""Several pipelines in one function: which returned values go together, which lines each needs.

NOTE [ Several pipelines a function returns ]
A training program's input function often builds its training and its
validation pipeline side by side and returns both batches (``return
train_batch, val_batch``; ENet's, SegNet's and many GANs' readers). A
Dataset holds one pipeline, so ``FILE.py:FUNCTION`` migrates each on its
own, as NOTE [ Several pipelines in a constructor ] does for attributes:

* **Which values go together** is read from the graph the call built: the
  returned values computed from the same dequeue ops are one pipeline's
  (:func:`pipelines`). Only a function ending in ``return a, b, ...`` (a
  flat tuple or list, its one return) is split; any other shape keeps the
  one-pipeline rules.
* **Which lines each needs** (:func:`only`): the statements the kept values
  are computed from (by the names each statement reads and the last
  statement before it assigning them); those only the other pipelines' values
  need, and any other statement reading what only those built (a summary of
  the validation batch), become comment lines, so every line keeps its
  number, removed from what the pass wrote; the return returns the kept
  values alone, on its own lines.
* **Each is migrated and proven** as a function of its own, one after
  another, each on the file the last one wrote (the copy of the file with
  the function cut down, the user's function put back after each pass): its
  version is named ``<function>_<prefix>_dataset`` after what its values'
  names share (``train_images``, ``train_labels``: ``train``; else
  ``pipeline<n>``), and ``<function>_dataset`` returns their Datasets in the
  order of their first value, with the function's own parameters. A function
  whose pipelines start from data it draws at random (a shuffled list split
  between them) is built in one run instead: NOTE [ Several pipelines in one
  returned object ]; a cut blanks the other pipelines' stages, not the plain
  values they start from (:mod:`queue_pipeline._migrate.interleaved_stages`).
"""

from __future__ import annotations

import os
import re

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from queue_pipeline._migrate.constructor_pipelines import (
    _dequeues,
    _locals_assigned,
    _names_read,
    dependencies,
)
from queue_pipeline._migrate.syntax import names_in

# what a line of another pipeline becomes in a pass (a comment: it keeps its number)
CUT = "# (another pipeline's line)"

__all__ = [
    "CUT",
    "Split",
    "function_node",
    "function_text",
    "only",
    "pipelines",
    "prefixes",
    "renamed",
    "returned",
    "with_function",
    "with_wrapper",
    "without_cuts",
]


class Split:
    """The function's one ``return a, b, ...``: its elements' source texts."""

    def __init__(self, elements: list[str], first: int, last: int, indent: str):
        self.elements = elements
        self.first, self.last = first, last  # the return's lines, 1-based
        self.indent = indent


def returned(source: str, function: str) -> Split | None:
    """The flat tuple `function` (a module-level function of `source`) returns, when it
    is the function's last statement and its only return; else None."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    fn = next(
        (
            s
            for s in wrapper.module.body
            if isinstance(s, cst.FunctionDef) and s.name.value == function
        ),
        None,
    )
    if fn is None or not isinstance(fn.body, cst.IndentedBlock) or not fn.body.body:
        return None
    last = fn.body.body[-1]
    ret = last.body[0] if isinstance(last, cst.SimpleStatementLine) and last.body else None
    if not isinstance(ret, cst.Return) or not isinstance(ret.value, (cst.Tuple, cst.List)):
        return None
    returns = [r for r in _all_returns(fn)]
    if len(returns) != 1 or any(isinstance(e, cst.StarredElement) for e in ret.value.elements):
        return None
    code = wrapper.module.code_for_node
    span = positions[last]
    indent = source.splitlines()[span.start.line - 1]
    indent = indent[: len(indent) - len(indent.lstrip())]
    return Split([code(e.value) for e in ret.value.elements], span.start.line, span.end.line,
                 indent)  # fmt: skip


def _all_returns(fn: cst.FunctionDef) -> list[cst.Return]:
    found: list[cst.Return] = []

    class _Visitor(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn  # not the returns of a nested function

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

    fn.visit(_Visitor())
    return found


def pipelines(outputs) -> list[list[int]]:
    """The positions of a function's returned tuple `outputs` grouped by the dequeue ops
    their tensors are computed from, in the order of their first position; [] when a
    value is not a tensor (or a list of tensors) read from a queue."""
    if not isinstance(outputs, (tuple, list)):
        return []
    groups: dict[frozenset, list[int]] = {}
    for i, value in enumerate(outputs):
        values = value if isinstance(value, (list, tuple)) else [value]
        if not values or not all(hasattr(v, "op") for v in values):
            return []
        key = frozenset(op for v in values for op in _dequeues(v))
        if not key:
            return []
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def prefixes(names: list[list[str]]) -> list[str]:
    """A name for each group of returned names: what they share before their last
    ``_`` part (``train_images``, ``train_labels``: ``train``); else ``pipeline<n>``."""
    found = []
    for i, group in enumerate(names):
        prefix = os.path.commonprefix(group).rstrip("_")
        if "_" in prefix:
            prefix = prefix.rsplit("_", 1)[0]
        found.append(prefix if prefix.isidentifier() else f"pipeline{i + 1}")
    if len(set(found)) < len(found):
        found = [f"pipeline{i + 1}" for i in range(len(names))]
    return found


def only(
    source: str, function: str, split: Split, keep: list[int], stages: set[str] | None = None
) -> str:
    """`source` with `function` cut down to the pipeline of the returned positions
    `keep`: the other pipelines' statements blank, the return returning `keep`'s
    values (the same lines). `stages`: the names holding pipeline stages; when given,
    only the other pipelines' statements assigning one are blanked (the plain values
    they start from stay: :mod:`queue_pipeline._migrate.interleaved_stages`)."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    fn = next(
        s
        for s in wrapper.module.body
        if isinstance(s, cst.FunctionDef) and s.name.value == function
    )
    body = list(fn.body.body)[:-1]  # the return comes last (checked by `returned`)
    last, needs = dependencies(body)

    def closure(names: set[str]) -> set[int]:
        found: set[int] = set()
        stack = [last[n] for n in names if n in last]
        while stack:
            i = stack.pop()
            if i not in found:
                found.add(i)
                stack.extend(needs[i])
        return found

    kept_names = set().union(*(_expression_names(split.elements[i]) for i in keep))
    other_names = set().union(
        *(_expression_names(e) for i, e in enumerate(split.elements) if i not in keep)
    )
    kept = closure(kept_names)
    theirs = closure(other_names) - kept
    if stages is not None:
        theirs = {i for i in theirs if set(_locals_assigned(body[i])) & stages}
    built_by_them = {n for i in theirs for n in _locals_assigned(body[i])}
    for i, stmt in enumerate(body):  # statements no returned value needs
        if i in kept or i in theirs:
            continue
        if _names_read(stmt) & built_by_them:
            theirs.add(i)
        else:
            kept |= closure(_names_read(stmt)) | {i}
    lines = source.splitlines(keepends=True)
    for i in sorted(theirs - kept):
        span = positions[body[i]]
        column = len(lines[span.start.line - 1]) - len(lines[span.start.line - 1].lstrip())
        for k in range(span.start.line - 1, span.end.line):
            lines[k] = f"{' ' * column}{CUT}\n"
    values = ", ".join(split.elements[i] for i in keep)
    lines[split.first - 1] = f"{split.indent}return {values}\n"
    for k in range(split.first, split.last):
        lines[k] = f"{split.indent}{CUT}\n"
    return "".join(lines)


def without_cuts(source: str) -> str:
    """`source` without the lines :func:`only` cut (wherever a rewrite copied them)."""
    return re.sub(rf"^[ \t]*{re.escape(CUT)}\n", "", source, flags=re.M)


def _expression_names(text: str) -> set[str]:
    return names_in(cst.parse_expression(text))


def function_node(source: str, function: str) -> cst.FunctionDef:
    """The module-level ``def`` of `function` in `source`."""
    module = cst.parse_module(source)
    return next(
        s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == function
    )


def function_text(source: str, function: str) -> str:
    """The source text of the module-level `function` of `source`, blank lines before it."""
    return cst.Module([]).code_for_node(function_node(source, function))


def with_function(source: str, node: cst.FunctionDef) -> str:
    """`source` with its module-level function of `node`'s name replaced by `node`."""
    module = cst.parse_module(source)
    body = [
        node if isinstance(s, cst.FunctionDef) and s.name.value == node.name.value else s
        for s in module.body
    ]
    return module.with_changes(body=body).code


def renamed(source: str, old: str, new: str) -> str:
    """`source` with the module-level function `old` renamed `new`."""
    module = cst.parse_module(source)
    body = [
        s.with_changes(name=cst.Name(new))
        if isinstance(s, cst.FunctionDef) and s.name.value == old
        else s
        for s in module.body
    ]
    return module.with_changes(body=body).code


def with_wrapper(source: str, function: str, versions: list[str], prefixes_: list[str]) -> str:
    """`source` with ``<function>_dataset`` after the last of `versions`: the function's
    own parameters, returning each pipeline's Dataset (its version called with what it
    takes of them)."""
    module = cst.parse_module(source)
    defs = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    params = module.code_for_node(defs[function].params)
    calls = []
    for version in versions:
        p = defs[version].params
        passed = [a.name.value for a in (*p.posonly_params, *p.params)]
        if isinstance(p.star_arg, cst.Param):
            passed.append(f"*{p.star_arg.name.value}")
        passed += [f"{a.name.value}={a.name.value}" for a in p.kwonly_params]
        if p.star_kwarg is not None:
            passed.append(f"**{p.star_kwarg.name.value}")
        calls.append(f"        {version}({', '.join(passed)}),\n")
    text = (
        f"def {function}_dataset({params}):\n"
        f'    """{function}\'s pipelines as tf.data Datasets: ({", ".join(prefixes_)}), '
        'in the order of\n    the batches it returns."""\n'
        "    return (\n" + "".join(calls) + "    )\n"
    )
    new = cst.parse_module(text).body[0]
    at = max(i for i, s in enumerate(module.body) if isinstance(s, cst.FunctionDef)
             and s.name.value in versions)  # fmt: skip
    body = list(module.body)
    body.insert(at + 1, new.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    return module.with_changes(body=body).code
