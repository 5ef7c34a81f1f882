"""Conditionals of a per-record region lowered to selects, before the region is vectorized.

NOTE [ Conditionals as selects ]
``tf.image.random_flip_left_right`` (and ``_up_down``, and any ``tf.cond``
on a per-record predicate) runs one of two branches per record: under TF
2.x a ``StatelessIf`` (or ``If``) whose branches are functions of the
graph's library, in TF1 mode ``Switch`` / ``Merge`` frames. A batch has no
single branch to take, so such a conditional is rewritten, before the
vectorizer walks the region, into "compute both branches, then
``SelectV2(pred, then, else)``". For every record the selected value is,
bitwise, the branch the conditional would have taken; the other branch is
computed and dropped. That is only sound when computing the branch not
taken cannot fail or do anything: every op of both branches must be in
``SAFE_OPS``, ops that neither raise for any input values of the shapes the
branch sees nor have side effects or state (element-wise arithmetic and
comparisons, casts, ``ReverseV2``, ``Transpose``, ``Identity``, ``Const``);
not ``Assert``, slices, gathers, integer division, decoders, random or other
stateful ops, nor calls of other functions. A conditional with any other op
is left as it is (the vectorizer then refuses it and the region runs per
record). The per-record region itself is not changed.

The select broadcasts the per-record scalar predicate over the batch
(``[B]`` -> ``[B, 1, 1, 1]``, the ``SelectV2`` rule), and the vectorizer
checks that both branches have the same fully known per-record shape (a
select of a ``[H, W, C]`` and a ``[W, H, C]`` branch has no batch form).

Under TF 2.x the conditional node keeps its name as an ``IdentityN`` of the
selects (its consumers and the region's sinks read it unchanged); the
branches' nodes are inlined under ``<cond>/_lowered_then`` and ``_else``. In
TF1 mode each ``Switch`` of the predicate becomes an ``IdentityN`` handing its
input to both branches, and each ``Merge`` an ``Identity`` of its select;
this is done only when every ``Merge`` fed by the predicate's switches has
one input from each branch (and its ``value_index`` output is unused), so
no frame is left half lowered.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["SAFE_OPS", "lower_conditionals"]

# Ops with one (non-list) output, no state or side effect, that raise for no
# input values of the shapes they are given (see NOTE). Integer division is
# out (division by zero raises), as is anything indexing by a value.
SAFE_OPS = frozenset(
    {
        "Const",
        "Identity",
        "Snapshot",
        "StopGradient",
        "NoOp",
        "ReverseV2",
        "Transpose",
        "ConjugateTranspose",
        "Cast",
        "Neg",
        "Abs",
        "Sign",
        "Square",
        "Floor",
        "Ceil",
        "Round",
        "Rint",
        "ZerosLike",
        "OnesLike",
        "LogicalNot",
        "LogicalAnd",
        "LogicalOr",
        "Add",
        "AddV2",
        "Sub",
        "Mul",
        "Maximum",
        "Minimum",
        "SquaredDifference",
        "Equal",
        "NotEqual",
        "Less",
        "LessEqual",
        "Greater",
        "GreaterEqual",
        "SelectV2",
        "ClipByValue",
    }
)

_FUNCTIONAL = ("If", "StatelessIf")


def lower_conditionals(graph_def) -> tuple[tf.compat.v1.GraphDef, dict[str, tuple[str, str]]]:
    """`graph_def` with its safe conditionals rewritten to selects (a copy).

    See NOTE [ Conditionals as selects ].

    Returns:
      The new GraphDef, and for each ``SelectV2`` node it added, the name and
      op type of the conditional it stands for (the op to name in a refusal).
    """
    out = tf.compat.v1.GraphDef()
    out.CopyFrom(graph_def)
    lowered: dict[str, tuple[str, str]] = {}
    names = {node.name for node in out.node}
    functions = {f.signature.name: f for f in out.library.function}
    for node in list(out.node):
        if node.op in _FUNCTIONAL:
            _lower_functional(out, node, functions, names, lowered)
    _lower_switch_merge(out, names, lowered)
    return out, lowered


def _fresh(names: set[str], hint: str) -> str:
    name, i = hint, 0
    while name in names:
        i += 1
        name = f"{hint}_{i}"
    names.add(name)
    return name


def _type_attr(dtype_enum: int) -> tf.compat.v1.AttrValue:
    return tf.compat.v1.AttrValue(type=dtype_enum)


def _types_attr(types) -> tf.compat.v1.AttrValue:
    return tf.compat.v1.AttrValue(list=tf.compat.v1.AttrValue.ListValue(type=list(types)))


def _calls_functions(node) -> bool:
    return any(
        v.HasField("func") or (v.HasField("list") and v.list.func) for v in node.attr.values()
    )


def _safe(node) -> bool:
    return node.op in SAFE_OPS and not _calls_functions(node)


# ------------------------------------------------------- If / StatelessIf


def _lower_functional(out, node, functions, names: set[str], lowered) -> None:
    branches = [functions.get(node.attr[key].func.name) for key in ("then_branch", "else_branch")]
    tout = list(node.attr["Tout"].list.type)
    if (
        node.attr["Tcond"].type != tf.bool.as_datatype_enum
        or not tout
        or any(f is None or not all(_safe(n) for n in f.node_def) for f in branches)
    ):
        return
    data = [i for i in node.input if not i.startswith("^")]
    controls = [i for i in node.input if i.startswith("^")]
    pred, args = data[0], data[1:]
    results = [
        _inline(out, f, args, f"{node.name}/_lowered_{side}", names)
        for f, side in zip(branches, ("then", "else"))
    ]
    if any(r is None or len(r) != len(tout) for r in results):
        return
    selects = []
    for k, (then, other) in enumerate(zip(*results)):
        select = out.node.add()
        select.name = _fresh(names, f"{node.name}/_lowered_select_{k}")
        select.op = "SelectV2"
        select.input.extend([pred, then, other])
        select.attr["T"].CopyFrom(_type_attr(tout[k]))
        lowered[select.name] = (node.name, node.op)
        selects.append(select.name)
    node.op = "IdentityN"  # keeps its name: consumers and sinks read it unchanged
    node.ClearField("attr")
    node.attr["T"].CopyFrom(_types_attr(tout))
    del node.input[:]
    node.input.extend(selects + controls)


def _inline(out, function, args: list[str], prefix: str, names: set[str]) -> list[str] | None:
    """Copies `function`'s nodes into `out` under `prefix`; returns its results' tensor names.

    Every node of a SAFE function has one output argument, so a FunctionDef
    reference ``node:out:i`` is the tensor ``node:i``.
    """
    params = [a.name for a in function.signature.input_arg]
    if len(params) != len(args):
        return None
    by_param = dict(zip(params, args))
    renamed = {n.name: _fresh(names, f"{prefix}/{n.name}") for n in function.node_def}

    def ref(spelled: str) -> str:
        if spelled.startswith("^"):
            return "^" + renamed[spelled[1:]]
        if spelled in by_param:
            return by_param[spelled]
        op_name, _, rest = spelled.partition(":")
        index = rest.rpartition(":")[2] if rest else "0"
        return renamed[op_name] + ("" if index == "0" else f":{index}")

    try:
        for fnode in function.node_def:
            new = out.node.add()
            new.CopyFrom(fnode)
            new.name = renamed[fnode.name]
            del new.input[:]
            new.input.extend(ref(i) for i in fnode.input)
            new.ClearField("device")
        return [ref(function.ret[a.name]) for a in function.signature.output_arg]
    except KeyError:
        return None


# ------------------------------------------------------------ Switch / Merge


def _canonical(ref: str) -> str:
    name, _, index = ref.lstrip("^").partition(":")
    return f"{name}:{index or 0}"


def _lower_switch_merge(out, names: set[str], lowered) -> None:
    nodes = {node.name: node for node in out.node}
    switches = [n for n in out.node if n.op == "Switch"]
    if not switches:
        return
    consumers: dict[str, list] = {}
    for node in out.node:
        for inp in node.input:
            consumers.setdefault(inp.lstrip("^").partition(":")[0], []).append((node, inp))

    def pred_of(switch) -> str:
        ref = _canonical(switch.input[1])
        while True:
            node = nodes.get(ref.partition(":")[0])
            if node is None or node.op != "Identity":
                return ref
            ref = _canonical(node.input[0])

    sides: dict[str, frozenset | None] = {}

    def side(name: str) -> frozenset | None:
        """The (switch, port) pairs that op `name` depends on, None if it is not SAFE."""
        if name in sides:
            return sides[name]
        sides[name] = None  # a cycle (a loop frame) is not a branch
        node = nodes.get(name)
        if node is None:  # a source or a variable read
            found: frozenset | None = frozenset()
        elif node.op == "Switch":
            found = frozenset()  # reached through a control edge: no port
        elif not _safe(node):
            found = None
        else:
            found = frozenset()
            for inp in node.input:
                ref = _canonical(inp)
                op_name, port = ref.partition(":")[0], int(ref.partition(":")[2])
                source = nodes.get(op_name)
                if source is not None and source.op == "Switch" and not inp.startswith("^"):
                    part: frozenset | None = frozenset({(op_name, port)})
                else:
                    part = side(op_name)
                if part is None:
                    found = None
                    break
                found |= part
        sides[name] = found
        return found

    groups: dict[str, list] = {}
    for switch in switches:
        groups.setdefault(pred_of(switch), []).append(switch)
    for group in groups.values():
        merges = _merges_after(group, nodes, consumers)
        plans = [_merge_plan(m, group, side, nodes, consumers) for m in merges]
        if not merges or any(p is None for p in plans):
            continue
        for switch in group:
            kind = switch.attr["T"].type
            data, controls = switch.input[0], [i for i in switch.input if i.startswith("^")]
            switch.op = "IdentityN"  # both outputs are its input: both branches run
            switch.ClearField("attr")
            switch.attr["T"].CopyFrom(_types_attr([kind, kind]))
            del switch.input[:]
            switch.input.extend([data, data] + controls)
        for merge, (condition, then, other) in zip(merges, plans):
            select = out.node.add()
            select.name = _fresh(names, f"{merge.name}/_lowered_select")
            select.op = "SelectV2"
            select.input.extend([condition, then, other])
            select.attr["T"].CopyFrom(_type_attr(merge.attr["T"].type))
            lowered[select.name] = (merge.name, "Merge")
            controls = [i for i in merge.input if i.startswith("^")]
            merge.op = "Identity"
            kind = merge.attr["T"].type
            merge.ClearField("attr")
            merge.attr["T"].CopyFrom(_type_attr(kind))
            del merge.input[:]
            merge.input.extend([select.name] + controls)


def _merges_after(group, nodes, consumers) -> list:
    """The Merge nodes the switches of `group` reach, through any ops but Merges."""
    seen: set[str] = set()
    merges = []
    stack = [s.name for s in group]
    while stack:
        name = stack.pop()
        for consumer, _ in consumers.get(name, ()):
            if consumer.name in seen:
                continue
            seen.add(consumer.name)
            if consumer.op == "Merge":
                merges.append(consumer)
            else:
                stack.append(consumer.name)
    return merges


def _merge_plan(merge, group, side, nodes, consumers):
    """(predicate, then input, else input) of a Merge of `group`'s branches, or None."""
    data = [i for i in merge.input if not i.startswith("^")]
    if len(data) != 2 or any(
        _canonical(inp) == f"{merge.name}:1" for _, inp in consumers.get(merge.name, ())
    ):
        return None
    names = {s.name for s in group}
    ports = []
    for inp in data:
        ref = _canonical(inp)
        op_name, port = ref.partition(":")[0], int(ref.partition(":")[2])
        node = nodes.get(op_name)
        found = (
            frozenset({(op_name, port)})
            if node is not None and node.op == "Switch"
            else side(op_name)
        )
        if not found or any(s not in names for s, _ in found):
            return None
        kinds = {p for _, p in found}
        if len(kinds) != 1:
            return None
        ports.append(kinds.pop())
    if sorted(ports) != [0, 1]:
        return None
    condition = group[0].input[1]
    then, other = (data[0], data[1]) if ports[0] == 1 else (data[1], data[0])
    return condition, then, other
