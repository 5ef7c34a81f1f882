"""A record handed to a batching helper as an object whose attributes hold its tensors.

NOTE [ A record passed as an object ]
A reading helper may return one record as a plain object (a local class's
instance, a namespace: ``example.image = ...; example.label = ...; return
example``), and a batching helper take that object and batch its attributes
(``def get_batch(example, n): return tf.train.batch([example.image,
example.label], n)``). There is one pipeline: the object is the record. A
Dataset's element cannot be the object, but it can be the attributes the
batching helper reads: the caller's per-record function returns
``example.image, example.label``. Two forms:

* the helper only batches them: every use of the parameter is
  ``param.attribute`` of a record tensor inside a batching call's list, and
  every such list is the same; the helper's version batches that element as
  it is (the list spells the same names, so no map is needed);
* the helper computes on them first (CIFAR-10's shape: ``image =
  tf.cast(record.image, tf.float32) / 255.0``, a random flip, ``label =
  tf.reshape(record.label, [])``, then ``shuffle_batch([image, label], ...)``):
  every use of the parameter is ``param.attribute`` of one of the record
  tensors it holds (read, or set again). The element is the attributes it
  uses, in the order the reading helper set them, each named
  ``param_attribute`` in the helper's version (:func:`names`), where the
  per-record code is mapped over the Dataset as in any batching helper
  (NOTE [ A batching helper computing on its records ], in
  :mod:`~queue_pipeline._migrate.batching_helpers`).

Any other use (a plain attribute such as ``record.height``, a method call, the
object passed on or rebound) is refused at the call, naming that use, with the
fix (:func:`refusal`); before, it was called a second pipeline, or the
object's name was left unbound in the written code. A method's ``self`` is
never such a record: it holds what its constructor built (NOTE [ A method
reading what its constructor built ]).
"""

from __future__ import annotations

from typing import Any

import libcst as cst
import libcst.matchers as m
import tensorflow as tf

from queue_pipeline._migrate.known_names import BATCHING
from queue_pipeline._migrate.syntax import callee, names_in

__all__ = ["fields", "misuse", "names", "record_fields", "refusal"]


def record_fields(value: Any, kind_of) -> list[str]:
    """The attributes of a plain object `value` that hold record tensors (`kind_of`: the
    trace's), in the order they were set; [] for anything else."""
    held = getattr(value, "__dict__", None)
    if not isinstance(held, dict) or isinstance(value, (tf.Tensor, type)):
        return []
    return [k for k, v in held.items() if isinstance(v, tf.Tensor) and kind_of(v) == "record"]


def fields(node: cst.FunctionDef, arguments: dict[str, Any], kind_of) -> dict[str, list[str]]:
    """Each parameter of `node` that is a record passed as an object, with the attributes
    its batching calls batch: NOTE [ A record passed as an object ].

    Args:
      node: the helper.
      arguments: what the run called it with, by parameter.
      kind_of: the trace's ``kind_of``.
    """
    out: dict[str, list[str]] = {}
    for param, value in arguments.items():
        held = record_fields(value, kind_of)
        if not held or param in ("self", "cls"):  # NOTE [ A method reading what its ...
            continue
        batched = _batched_only(node, param, held)
        used = batched if batched is not None else _attributes_used(node, param, held)
        if used:
            out[param] = used
    return out


def names(node: cst.FunctionDef, param: str, attributes: list[str]) -> dict[str, str]:
    """``param.attribute`` -> the name the helper's version reads it by, for a record
    object the helper computes on; {} for one it only batches (its version batches the
    attributes as spelled): NOTE [ A record passed as an object ]."""
    if _batched_only(node, param, attributes) is not None:
        return {}
    taken = names_in(node)
    out: dict[str, str] = {}
    for attribute in attributes:
        name = f"{param}_{attribute}"
        while name in taken or name in out.values():
            name += "_"
        out[f"{param}.{attribute}"] = name
    return out


def misuse(node: cst.FunctionDef, param: str, held: list[str]) -> str:
    """The first use of `param` in `node` that is not ``param.attribute`` of a record
    tensor it holds (the code that keeps it from being migrated), or ``""``."""
    attributes = m.findall(node.body, m.Attribute(value=m.Name(param)))
    inside = {id(a.value) for a in attributes if isinstance(a, cst.Attribute)}
    for found in m.findall(node.body, m.Attribute(value=m.Name(param)) | m.Name(param)):
        if isinstance(found, cst.Attribute):
            if found.attr.value not in held:
                return f"`{param}.{found.attr.value}`"
        elif id(found) not in inside:
            return f"`{param}` itself"
    return ""


def _batched_only(node: cst.FunctionDef, param: str, held: list[str]) -> list[str] | None:
    """The attributes of `param` the helper batches, when it only batches them (every
    use in one and the same batching list); else None."""
    lists = _batched_lists(node, param)
    uses = len(m.findall(node.body, m.Name(param)))
    if not lists or any(lst != lists[0] for lst in lists):
        return None
    if not set(lists[0]) <= set(held) or uses != len(lists) * len(lists[0]):
        return None  # the object is used for more than its batch
    return lists[0]


def _attributes_used(node: cst.FunctionDef, param: str, held: list[str]) -> list[str]:
    """The record attributes `param` is used through, in `held`'s order, when every use
    of it is ``param.attribute`` of one of them; [] otherwise."""
    if misuse(node, param, held):
        return []
    found = m.findall(node.body, m.Attribute(value=m.Name(param)))
    used = {a.attr.value for a in found if isinstance(a, cst.Attribute)}
    return [a for a in held if a in used]


def _batched_lists(node: cst.FunctionDef, param: str) -> list[list[str]]:
    """The attribute names of each batching call's literal list that holds only
    ``param.attribute`` items (other batching calls are left out)."""
    lists: list[list[str]] = []
    for call in m.findall(node.body, m.Call()):
        assert isinstance(call, cst.Call)
        if callee(call) not in BATCHING or not call.args:
            continue
        first = call.args[0].value
        if not isinstance(first, (cst.List, cst.Tuple)) or not first.elements:
            continue
        names = [
            e.value.attr.value
            for e in first.elements
            if isinstance(e.value, cst.Attribute) and m.matches(e.value.value, m.Name(param))
        ]
        if len(names) == len(first.elements):
            lists.append(names)
    return lists


def refusal(helper: str, argument: str, held: list[str], use: str = "", param: str = "") -> str:
    """Why a helper handed a record object cannot be migrated, and the fix.

    Args:
      helper: the batching helper's name.
      argument: the caller's text for the object.
      held: the object's attributes holding record tensors.
      use: the helper's code keeping it from being migrated (from :func:`misuse`).
      param: the helper's parameter, naming the object where `argument` is no name.
    """
    named = argument if argument.isidentifier() or not param else param
    shown = ", ".join(f"{named}.{k}" for k in held)
    first = "" if named == argument else f"`{named} = {argument}`, then "
    why = f" ({use})" if use else ""
    plain = (
        f"read {use} from where the reading helper got it (a constant, an argument), or "
        if use and not use.endswith("itself`")
        else ""
    )
    return (
        f"`{helper}` is handed `{argument}`, an object whose attributes "
        f"({', '.join(held)}) hold one record's tensors, and uses it for more than reading "
        f"those attributes{why}: a Dataset's element cannot be the object. Fix: {plain}pass "
        f"the tensors themselves ({first}`{helper}({shown}, ...)`, with {helper} taking one "
        "parameter each), then migrate"
    )
