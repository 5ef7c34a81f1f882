"""A record handed to a batching helper as an object whose attributes hold its tensors.

NOTE [ A record passed as an object ]
A reading helper may return one record as a plain object (a local class's
instance, a namespace: ``example.image = ...; example.label = ...; return
example``), and a batching helper take that object and batch its attributes
(``def get_batch(example, n): return tf.train.batch([example.image,
example.label], n)``). There is one pipeline: the object is the record. A
Dataset's element cannot be the object, but it can be the attributes the
batching helper reads: the caller's per-record function returns
``example.image, example.label`` and the helper's version batches that
element as it is (the batching call's list spells the same names, so no map
is needed). This holds only when the helper uses the object for nothing else:
every use of the parameter is ``param.attribute`` of a record tensor inside a
batching call's list, and every such list is the same. Any other use (per-record
code on the attributes, a method call, the object passed on) is refused at the
call with the fix (:func:`refusal`); before, it was called a second pipeline,
or the object's name was left unbound in the written code. A method's ``self``
is never such a record: it holds what its constructor built (NOTE [ A method
reading what its constructor built ]).
"""

from __future__ import annotations

from typing import Any

import libcst as cst
import libcst.matchers as m
import tensorflow as tf

from queue_pipeline._migrate.known_names import BATCHING
from queue_pipeline._migrate.syntax import callee

__all__ = ["fields", "record_fields", "refusal"]


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
        lists = _batched_lists(node, param)
        uses = len(m.findall(node.body, m.Name(param)))
        if not lists or any(lst != lists[0] for lst in lists):
            continue
        if not set(lists[0]) <= set(held) or uses != len(lists) * len(lists[0]):
            continue  # the object is used for more than its batch
        out[param] = lists[0]
    return out


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


def refusal(helper: str, argument: str, held: list[str]) -> str:
    """Why a helper handed a record object cannot be migrated, and the fix."""
    shown = ", ".join(f"{argument}.{k}" for k in held)
    return (
        f"`{helper}` is handed `{argument}`, an object whose attributes ({shown}) hold one "
        "record's tensors, and uses it for more than batching them in one literal list "
        "(a Dataset's element cannot be the object). Fix: pass the tensors themselves "
        f"(`{helper}({shown}, ...)`, with {helper} taking one parameter each), then migrate"
    )
