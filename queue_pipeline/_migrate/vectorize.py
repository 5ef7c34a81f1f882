"""Per-record decode statements rewritten to decode a whole batch (batch-then-decode).

NOTE [ Batch-then-decode in migrated code ]
tf.data runs a decoder much faster on a batch of records than on one record
at a time (one ``parse_example`` instead of 128 ``parse_single_example``).
When every statement of a per-record function is one this module knows how
to batch, the migrated pipeline batches the raw records first and maps the
batched function over the batches. The rules work on the syntax tree:

* ``parse_single_example`` -> ``parse_example`` (same arguments);
* element-wise ops (``decode_csv``, ``decode_raw``, ``cast``, arithmetic,
  comparisons, ``one_hot``, ...) stay as they are;
* ``stack(values)`` gains ``axis=1`` (a positive axis moves up by one);
* ``reshape(x, [d...])`` -> ``reshape(x, [-1, d...])``; ``transpose(x, [p...])``
  -> ``transpose(x, [0, p+1...])``; ``x.set_shape([d...])`` (or ``(d)``) ->
  ``x.set_shape([None, d...])``;
* a function of the file the decoder calls (``decode(serialized)``) gets a
  batched version of its own, by the same rules;
* an index of a tensor ``x[i]`` / ``x[a:b]`` -> ``x[:, i]`` / ``x[:, a:b]``
  (an index by a string literal, ``features["label"]``, is a dict lookup and
  stays).

Anything else (any other call, control flow, a lambda) leaves the function
per-record. The rules are a proposal, not a proof: a batched decoder can
still differ (``decode_raw`` of records of different lengths), so the
migration uses it only when the verification runs, and writes the per-record
version when the batched one does not verify MATCH.
"""

from __future__ import annotations

import libcst as cst

__all__ = ["Unbatchable", "batch_statement"]

ELEMENTWISE = frozenset(
    {
        "decode_csv",
        "decode_raw",
        "cast",
        "multiply",
        "add",
        "subtract",
        "divide",
        "truediv",
        "abs",
        "minimum",
        "maximum",
        "round",
        "sqrt",
        "exp",
        "log",
        "sigmoid",
        "equal",
        "not_equal",
        "less",
        "greater",
        "logical_and",
        "logical_or",
        "logical_not",
        "one_hot",
        "identity",
        "string_to_number",
        "to_float",
        "to_int32",
        "to_int64",
        # feature specs of parse_single_example, not per-record ops
        "FixedLenFeature",
        "VarLenFeature",
        "FixedLenSequenceFeature",
        "SparseFeature",
    }
)


class Unbatchable(Exception):
    """A statement these rules cannot batch."""


def _name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return ""


def _ints(node: cst.BaseExpression) -> list[int] | None:
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    out = []
    for e in node.elements:
        value = e.value
        sign = 1
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
            sign, value = -1, value.expression
        if not isinstance(value, cst.Integer):
            return None
        out.append(sign * int(value.value))
    return out


def _prepend(node: cst.BaseExpression, first: str) -> cst.BaseExpression:
    """``[a, b]`` -> ``[first, a, b]``; a bare dimension ``(784)`` counts as ``[784]``."""
    if isinstance(node, (cst.Integer, cst.Name)):
        node = cst.List([cst.Element(node.with_changes(lpar=[], rpar=[]))])
    if not isinstance(node, (cst.List, cst.Tuple)):
        raise Unbatchable("a shape that is not a list display")
    element = cst.Element(
        cst.parse_expression(first),
        comma=cst.Comma(cst.SimpleWhitespace(""), cst.SimpleWhitespace(" ")),
    )
    return cst.List([element, *node.elements])


class _Batcher(cst.CSTTransformer):
    def __init__(self, helpers: dict[str, str], replace: dict[int, str], tensors: set[str]):
        self.helpers = helpers  # per-record helper -> its batched version
        self.replace = replace  # id of a node -> the text standing for it
        self.tensors = tensors  # names that hold a tensor (not a list or a dict)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Lambda, cst.If, cst.For, cst.While, cst.With, cst.FunctionDef)):
            raise Unbatchable(f"a {type(node).__name__}")
        return True

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) in self.replace:
            text = self.replace[id(original)]
            head, _, rest = text.partition("(")
            if head in self.helpers:
                text = self.helpers[head] + "(" + rest
            else:
                raise Unbatchable(f"a call of {head}")
            return cst.parse_expression(text)
        name = _name(updated.func)
        args = list(updated.args)
        if name in self.helpers and isinstance(updated.func, cst.Name):
            return updated.with_changes(func=cst.Name(self.helpers[name]))
        if name == "parse_single_example" and isinstance(updated.func, cst.Attribute):
            return updated.with_changes(
                func=updated.func.with_changes(attr=cst.Name("parse_example"))
            )
        if name in ELEMENTWISE:
            return updated
        if name == "stack":
            axis = next((a for a in args if a.keyword and a.keyword.value == "axis"), None)
            if axis is None and len(args) > 1:
                axis = args[1]
            if axis is None:
                return updated.with_changes(
                    args=[
                        *args[:-1],
                        args[-1].with_changes(
                            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                        ),
                        cst.Arg(
                            cst.Integer("1"),
                            keyword=cst.Name("axis"),
                            equal=cst.AssignEqual(
                                cst.SimpleWhitespace(""), cst.SimpleWhitespace("")
                            ),
                        ),
                    ]
                )
            value = _ints(cst.List([cst.Element(axis.value)]))
            if value is None:
                raise Unbatchable("stack with a computed axis")
            if value[0] >= 0:
                new_axis = axis.with_changes(value=cst.Integer(str(value[0] + 1)))
                return updated.with_changes(args=[a if a is not axis else new_axis for a in args])
            return updated
        if name == "reshape" and len(args) >= 2:
            return updated.with_changes(
                args=[args[0], args[1].with_changes(value=_prepend(args[1].value, "-1")), *args[2:]]
            )
        if name == "transpose" and len(args) >= 2:
            perm = _ints(args[1].value)
            if perm is None or any(p < 0 for p in perm):
                raise Unbatchable("transpose with a computed permutation")
            new = cst.parse_expression(str([0] + [p + 1 for p in perm]))
            return updated.with_changes(args=[args[0], args[1].with_changes(value=new), *args[2:]])
        if name == "set_shape" and isinstance(updated.func, cst.Attribute) and len(args) == 1:
            return updated.with_changes(
                args=[args[0].with_changes(value=_prepend(args[0].value, "None"))]
            )
        raise Unbatchable(f"a call of {name or 'an expression'}")

    def leave_Subscript(
        self, original: cst.Subscript, updated: cst.Subscript
    ) -> cst.BaseExpression:
        first = updated.slice[0].slice if updated.slice else None
        if isinstance(first, cst.Index) and isinstance(
            first.value, (cst.SimpleString, cst.ConcatenatedString)
        ):
            return updated  # a dict lookup
        value = updated.value
        if isinstance(value, cst.Name) and value.value not in self.tensors:
            return updated  # a Python list (decode_csv's columns) or dict
        if not isinstance(value, (cst.Name, cst.Call)):
            raise Unbatchable("an index of an attribute or expression")
        everything = cst.SubscriptElement(
            cst.Slice(lower=None, upper=None),
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
        )
        return updated.with_changes(slice=[everything, *updated.slice])


def batch_statement(
    stmt: cst.CSTNode, helpers: dict[str, str], replace: dict[int, str], tensors: set[str]
) -> cst.CSTNode:
    """`stmt` rewritten to work on a batch; see NOTE [ Batch-then-decode in migrated code ].

    Args:
      stmt: a per-record statement (or a whole per-record function body).
      helpers: names of per-record helper functions -> their batched versions.
      replace: ``id(call node)`` -> the text the migration puts there.
      tensors: the names that hold tensors in the run (an index of any other
        name is a list or dict lookup and stays).

    Raises:
      Unbatchable: a construct the rules do not cover.
    """
    new = stmt.visit(_Batcher(helpers, replace, tensors))
    if not isinstance(new, cst.CSTNode):  # pragma: no cover - the batcher removes nothing
        raise Unbatchable("a removed statement")
    return new
