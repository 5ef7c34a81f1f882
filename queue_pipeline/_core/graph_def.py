"""GraphDef helpers: the spelling of a tensor input, a GraphDef's external inputs, importing one.

The lifter writes each region as a GraphDef whose external inputs keep the
legacy tensor names; the lifted region and the vectorizer import such
GraphDefs into a Dataset function or a scratch graph with these helpers.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import tensorflow as tf

__all__ = ["external_inputs", "import_graph", "tensor_ref", "uses_functions"]


def tensor_ref(t: tf.Tensor) -> str:
    """The GraphDef spelling of a tensor input: ``op`` for output 0, else ``op:i``."""
    return t.op.name if t.value_index == 0 else t.name


# NOTE [ v1 control flow in a map function ]
# In TF1 mode a region can hold v1 control flow: the Enter / Merge / Switch /
# NextIteration / Exit frames of `tf.while_loop` or `tf.map_fn`, the Switch /
# Merge of `tf.cond`. tf.data traces map functions with automatic control
# dependencies, which chain the stateful ops of the imported region
# (TensorArrays, Merges) in creation order across frames; the executor then
# refuses the function ("has inputs from different frames"). Imported into a
# function, such a GraphDef goes into a function of its own, built without
# automatic control dependencies (`tf.compat.v1.wrap_function`, TF's route for
# frozen TF1 graphs), called from the map function. Into a plain graph (the
# vectorizer's scratch graph, where static values are folded) it is imported
# as is.
_V1_CONTROL_FLOW = frozenset(
    {
        "Enter",
        "RefEnter",
        "Exit",
        "RefExit",
        "Merge",
        "RefMerge",
        "Switch",
        "RefSwitch",
        "NextIteration",
        "RefNextIteration",
        "LoopCond",
    }
)


def import_graph(
    graph_def, values: Mapping[str, tf.Tensor], wanted: Sequence[str], *, name: str
) -> list[tf.Tensor]:
    """Imports `graph_def` into the current graph or function; returns the `wanted` tensors.

    Args:
      graph_def: a region's GraphDef whose external inputs are legacy tensor
        names.
      values: legacy tensor name (``op:i``) -> the tensor to feed there; it
        must hold every external input.
      wanted: names of tensors of `graph_def` to return, in order.
      name: the import scope.

    See NOTE [ v1 control flow in a map function ].
    """
    used = external_inputs(graph_def)
    if not (
        tf.compat.v1.get_default_graph().building_function
        and any(node.op in _V1_CONTROL_FLOW for node in graph_def.node)
    ):
        return tf.compat.v1.import_graph_def(
            graph_def,
            input_map={n: values[n] for n in used},
            return_elements=list(wanted),
            name=name,
        )
    args = [tf.convert_to_tensor(values[n]) for n in used]

    def body(*fed):
        return tf.compat.v1.import_graph_def(
            graph_def, input_map=dict(zip(used, fed)), return_elements=list(wanted), name=name
        )

    wrapped = tf.compat.v1.wrap_function(body, [tf.TensorSpec.from_tensor(a) for a in args])
    return list(wrapped(*args))


def external_inputs(graph_def) -> list[str]:
    """Tensor names the GraphDef's nodes read but do not define (``op:i`` form)."""
    defined = {node.name for node in graph_def.node}
    names = []
    for node in graph_def.node:
        for inp in node.input:
            if inp.startswith("^"):
                continue
            op_name, _, index = inp.partition(":")
            if op_name not in defined:
                full = f"{op_name}:{index or 0}"
                if full not in names:
                    names.append(full)
    return names


def uses_functions(op: tf.Operation) -> bool:
    for attr in op.node_def.attr.values():
        if attr.HasField("func") or (attr.HasField("list") and attr.list.func):
            return True
    return False
