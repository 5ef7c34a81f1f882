"""The tf.data version of a function returning its pipelines in an object, put together.

See NOTE [ Several pipelines in one returned object ] in
:mod:`queue_pipeline._migrate.object_returns`: each pass's Dataset chain (what
it wrote for the statements it replaced) goes in place of its pipeline's
stages in the user's own function.
"""

from __future__ import annotations

import dataclasses
import difflib
import re

import libcst as cst

from queue_pipeline._migrate.constructor_pipelines import _locals_assigned
from queue_pipeline._migrate.proven import MigrationResult
from queue_pipeline._migrate.trace import MigrateError

__all__ = [
    "added",
    "assembled",
    "chain",
    "inserted_after",
    "key",
    "prefixed",
    "renamed_steps",
    "without",
]

_API = "queue-pipeline migrate"
_CODE = cst.Module([]).code_for_node


def key(stmt) -> str:
    return _CODE(stmt.with_changes(leading_lines=())).strip()


def chain(cut_fn: cst.FunctionDef, new_fn: cst.FunctionDef) -> tuple[list, list, str]:
    """(the cut function's statements the pass replaced, the statements it wrote for
    them, its Dataset expression): the difference of the two bodies but the returns."""
    before, after = list(cut_fn.body.body), list(new_fn.body.body)
    matcher = difflib.SequenceMatcher(
        a=[key(s) for s in before[:-1]], b=[key(s) for s in after[:-1]], autojunk=False
    )
    replaced, written = [], []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op != "equal":
            replaced += before[a0:a1]
            written += after[b0:b1]
    ret = after[-1].body[0] if isinstance(after[-1], cst.SimpleStatementLine) else None
    if not isinstance(ret, cst.Return) or ret.value is None:
        raise MigrateError(
            f"{_API}: the tf.data version of a pipeline does not end in `return dataset`: "
            "this is a bug in migrate; please report it with the function"
        )
    return replaced, written, _CODE(ret.value)


class _Renamer(cst.CSTTransformer):
    """Renames the names `names` maps; never an attribute's or a keyword's name."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original, updated):
        return updated.with_changes(value=self.names.get(updated.value, updated.value))


def prefixed(stmts: list, value: str, taken: set[str], prefix: str) -> tuple:
    """`stmts` and `value` with the names the chain binds (and the function does not)
    prefixed by its pipeline's."""
    bound: list[str] = []
    for s in stmts:
        if isinstance(s, (cst.FunctionDef, cst.ClassDef)):
            bound.append(s.name.value)
        else:
            bound += _locals_assigned(s)
    names = {n: f"{prefix}_{n}" for n in dict.fromkeys(bound) if n not in taken}
    renamer = _Renamer(names)
    expression = cst.parse_expression(value).visit(renamer)
    assert isinstance(expression, cst.BaseExpression)
    return [s.visit(renamer) for s in stmts], _CODE(expression), names


def without(source: str, name: str) -> str:
    """`source` without its module-level function `name`."""
    module = cst.parse_module(source)
    body = [s for s in module.body if not (isinstance(s, cst.FunctionDef) and s.name.value == name)]
    return module.with_changes(body=body).code


def assembled(
    shape, user_function, chains, prefixes, version, versions, renames
) -> cst.FunctionDef:
    """``<function>_dataset``: the user's function with each pipeline's stages replaced by
    its chain and its batch names bound to the chain's Dataset (`renames`: filled with
    each chain's names prefixed)."""
    body = list(user_function.body.body)
    keys = [key(s) for s in body]
    taken = {n for s in body for n in _locals_assigned(s)} | {
        p.name.value for p in user_function.params.params
    }
    removed: set[int] = set(shape.summaries)  # left out: the report lists them
    at: dict[int, list] = {}
    for k, (replaced, written, value) in enumerate(chains):
        indices = []
        start = 0
        for stmt in replaced:
            i = keys.index(key(stmt), start) if key(stmt) in keys[start:] else None
            if i is None:
                raise MigrateError(
                    f"{_API}: a statement the tf.data version of a pipeline replaced is not "
                    f"in {shape.function}: this is a bug in migrate; please report it"
                )
            indices.append(i)
            start = i + 1
        if prefixes[k]:
            written, value, renames[k] = prefixed(written, value, taken, prefixes[k])
        names = " = ".join(shape.groups[k])
        binding = cst.parse_statement(f"{names} = {value}\n")
        removed |= set(indices)
        at.setdefault(max(indices) if indices else len(body) - 1, []).extend([*written, binding])
    new_body = []
    for i, stmt in enumerate(body):
        if i in at:
            new_body += at[i]
        if i not in removed:
            new_body.append(stmt)
    params = max((v.params for v in versions), key=lambda p: len(p.kwonly_params))
    return user_function.with_changes(
        name=cst.Name(version),
        params=params,
        body=user_function.body.with_changes(body=new_body),
    )


def renamed_steps(result: MigrationResult, names: dict[str, str]) -> MigrationResult:
    """`result` with its steps' tf.data code naming the chain's names as written."""
    if not names:
        return result
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
    steps = [
        dataclasses.replace(s, replacement=pattern.sub(lambda m: names[m.group(1)], s.replacement))
        for s in result.steps
    ]
    return dataclasses.replace(result, steps=steps)


def inserted_after(source: str, function: str, node: cst.FunctionDef) -> str:
    module = cst.parse_module(source)
    body = list(module.body)
    at = next(
        i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == function
    )
    body.insert(at + 1, node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    return module.with_changes(body=body).code


def added(original: str, source: str) -> str:
    """The module-level definitions of `source` that `original` does not have, in order."""
    before = {
        s.name.value
        for s in cst.parse_module(original).body
        if isinstance(s, (cst.FunctionDef, cst.ClassDef))
    }
    module = cst.parse_module(source)
    return "".join(
        module.code_for_node(s)
        for s in module.body
        if isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value not in before
    )
