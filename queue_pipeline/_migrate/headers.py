"""The header of a generated tf.data function: the legacy function's own parameters.

The rewriter keeps the spelling of the legacy function's signature (its
annotations, defaults, keyword-only and positional-only groups) for the
parameters the tf.data version still reads, and puts ``dataset`` where the
per-record parameter was (a function applied to the records of a Dataset).
"""

from __future__ import annotations

import libcst as cst

from queue_pipeline._migrate.base import Function
from queue_pipeline._migrate.syntax import all_params


def dataset_header(fn: Function, name: str, keep: list[str], code) -> tuple[str, list[str]]:
    """``def name(...):`` with `fn`'s own spelling (annotations, defaults) of the `keep` params.

    A ``dataset`` in `keep` that `fn` does not have is inserted where `fn`'s
    record parameter was (else last). `code` renders a libcst node as source.

    Returns:
      (the header's text, ending in a newline; the names of its parameters).
    """
    params = fn.node.params
    replaced = next((p for p in all_params(params) if p.name.value in fn.record_params), None)
    dataset = cst.Param(
        cst.Name("dataset"),
        comma=replaced.comma
        if replaced is not None
        else cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
    )

    def kept(group) -> list:
        out = []
        for p in group:
            if p is replaced and "dataset" in keep:
                out.append(dataset)
            elif p.name.value in keep:
                out.append(p)
        if out and group and out[-1] is not group[-1]:
            out[-1] = out[-1].with_changes(comma=group[-1].comma)
        return out

    groups = {"posonly_params": kept(params.posonly_params), "params": kept(params.params)}
    kwonly = kept(params.kwonly_params)
    star = params.star_arg
    if isinstance(star, cst.ParamStar) and not kwonly:
        star = cst.MaybeSentinel.DEFAULT
        if groups["params"] and params.kwonly_params:
            groups["params"][-1] = groups["params"][-1].with_changes(
                comma=params.kwonly_params[-1].comma
            )
    new = params.with_changes(**groups, kwonly_params=kwonly, star_arg=star)
    definition = fn.node.with_changes(
        name=cst.Name(name),
        params=new,
        returns=None,
        decorators=[],
        leading_lines=[],
        body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])]),
    )
    text = code(definition)
    header = text[: text.rindex("pass")].rstrip() + "\n"
    return header, [p.name.value for p in all_params(new) if isinstance(p, cst.Param)]
