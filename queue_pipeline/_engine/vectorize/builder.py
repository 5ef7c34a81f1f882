"""The rewrite machinery of batch-vectorized decoding.

``_Builder`` walks a region's GraphDef node by node, applying the rules."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from queue_pipeline._core.graph_def import import_graph
from queue_pipeline._rebuild.lift import LiftedRegion
from queue_pipeline._engine import stateless
from queue_pipeline._engine.vectorize.base import (
    _UNBATCHED,
    _In,
    _Refused,
    _canonical,
    _gd_ref,
)
from queue_pipeline._engine.vectorize.reorder import widen_before_transposes
from queue_pipeline._engine.vectorize.results import (
    VectorizedRegion,
)
from queue_pipeline._engine.vectorize.rules import (
    _DRAW_RULES,
    _RULES,
)
from queue_pipeline._engine.vectorize.rules_random import DRAW_RULE
from queue_pipeline._engine.vectorize.rules_elementwise import (
    _BINARY,
    _SIZE_KEEPING_UNARY,
)
from queue_pipeline._engine.vectorize.rules_shape import (
    _assert,
)


_MAX_STATIC = 1 << 16  # elements


_RANDOM_REASON = (
    "per-example random op: every record draws its own values, which one "
    "draw per batch would not reproduce"
)


class _Builder:
    """One rewrite of a region; see NOTE [ Vectorizing a region ].

    It walks `graph_def` (the region's, or the region's with its conditionals
    lowered, see NOTE [ Conditionals as selects ] in ``lower.py``): `lowered`
    maps each select that stands for a conditional to the conditional's name
    and type. With `draws`, unseeded stateful random ops draw ``[B] + shape``
    (see NOTE [ Vectorizing a region ]); with `keyed` too, seeded ones do as
    well, and :meth:`result` makes every such draw stateless, keyed by the
    batch's position. :attr:`exact` is, for the node being
    rewritten, the caller's `exact` unless the node reads a random draw.
    """

    def __init__(
        self,
        region: LiftedRegion,
        lengths: dict[str, int],
        exact: bool,
        *,
        graph_def=None,
        lowered: Mapping[str, tuple[str, str]] | None = None,
        draws: bool = False,
        keyed: bool = False,
    ):
        self.region = region
        self.keyed = keyed
        self.graph_def = region.graph_def if graph_def is None else graph_def
        self.lowered = dict(lowered or {})
        self.draws = draws
        self.lengths = lengths
        self.exact_option = exact
        self.exact = exact
        self.drawn: set[str] = set()  # tensors downstream of a random draw
        self.out = tf.compat.v1.GraphDef()
        self.out.versions.CopyFrom(self.graph_def.versions)
        if self.graph_def.HasField("library"):
            self.out.library.CopyFrom(self.graph_def.library)
        self.names = {node.name for node in self.graph_def.node}
        self.new: dict[str, str] = {}  # legacy tensor -> tensor in self.out
        self.batched: dict[str, bool] = {}
        self.ops: dict[str, str] = {}  # legacy op -> op in self.out (control inputs)
        self.rules: list[tuple[str, str, str]] = []
        self.shapes, self.values, self.dtypes, self.per_record_ops = _per_record_facts(
            region, self.graph_def
        )
        for source in region.sources:
            self._set(source.name, source.name, True)
        for name in list(region.constants) + list(region.captured):
            self._set(name, name, False)
        self.consumers: dict[str, list] = {}
        for node in self.graph_def.node:
            for i, inp in enumerate(node.input):
                if not inp.startswith("^"):
                    self.consumers.setdefault(_canonical(inp), []).append((node, i))
        self.sink_names = [s.name for s in region.sinks]
        self.nodes = {node.name: node for node in self.graph_def.node}

    # ------------------------------------------------------------ bookkeeping

    def _set(self, ref: str, new: str, batched: bool) -> None:
        self.new[ref] = new
        self.batched[ref] = batched

    def inputs(self, node) -> list[_In]:
        out = []
        for inp in node.input:
            if inp.startswith("^"):
                continue
            ref = _canonical(inp)
            batched = self.batched[ref]
            out.append(
                _In(
                    ref,
                    self.new[ref],
                    batched,
                    self.shapes.get(ref, tf.TensorShape(None)),
                    self.dtypes[ref],
                    None if batched else self.values.get(ref),
                )
            )
        return out

    def fresh(self, hint: str) -> str:
        name, i = f"{hint}/_vectorized", 0
        while name in self.names:
            i += 1
            name = f"{hint}/_vectorized_{i}"
        self.names.add(name)
        return name

    def _controls(self, node) -> list[str]:
        return [f"^{self.ops.get(c[1:], c[1:])}" for c in node.input if c.startswith("^")]

    def copy(
        self,
        node,
        inputs: Sequence[str] | None = None,
        *,
        attrs: Mapping | None = None,
        batched: bool | Sequence[bool] = True,
        rule: str = "same op",
    ) -> None:
        """Copies `node` into the new GraphDef with `inputs` (new names) and `attrs`."""
        new = self.out.node.add()
        new.CopyFrom(node)
        del new.input[:]
        data = [i.new for i in self.inputs(node)] if inputs is None else list(inputs)
        new.input.extend(_gd_ref(n) for n in data)
        new.input.extend(self._controls(node))
        for key, value in (attrs or {}).items():
            new.attr[key].CopyFrom(value)
        self.ops[node.name] = node.name
        self._register(node, [f"{node.name}:{i}" for i in range(self._num_outputs(node))], batched)
        self.rules.append((node.name, node.op, rule))

    def _num_outputs(self, node) -> int:
        return len(self.per_record_ops[node.name].outputs)

    def _register(self, node, news: Sequence[str | None], batched) -> None:
        flags = [batched] * len(news) if isinstance(batched, bool) else list(batched)
        for i, (new, flag) in enumerate(zip(news, flags)):
            if new is not None:
                self._set(f"{node.name}:{i}", new, flag)

    def helper(self, hint: str, fn: Callable, args: Sequence[_In | tuple]) -> list:
        """Emits the ops `fn` builds on stand-ins for `args`; returns their new names.

        Each arg is an :class:`_In` (a batched one stands in with ``[None] +``
        its per-example shape) or ``(new name, dtype, shape)``. `fn` returns a
        list of tensors, ops or None.
        """
        graph = tf.Graph()
        specs = [
            (a.new, a.dtype, tf.TensorShape([None]).concatenate(a.shape) if a.batched else a.shape)
            if isinstance(a, _In)
            else a
            for a in args
        ]
        with graph.as_default():
            stand_ins = [
                tf.compat.v1.placeholder(dtype, shape, name=f"arg{i}")
                for i, (_, dtype, shape) in enumerate(specs)
            ]
            results = fn(*stand_ins)
        mapping = {t.op.name: new for t, (new, _, _) in zip(stand_ins, specs)}
        prefix = self.fresh(hint)
        for node in graph.as_graph_def().node:
            if node.name in mapping:
                continue
            new = self.out.node.add()
            new.CopyFrom(node)
            new.name = f"{prefix}/{node.name}"
            new.ClearField("device")
            if "_class" in new.attr:
                del new.attr["_class"]
            del new.input[:]
            for inp in node.input:
                control = inp.startswith("^")
                op_name, _, index = inp.lstrip("^").partition(":")
                if op_name in mapping:
                    if not control:
                        new.input.append(_gd_ref(mapping[op_name]))
                    continue
                inner = f"{prefix}/{op_name}" + (f":{index}" if index else "")
                new.input.append(("^" if control else "") + inner)
        names: list[str | None] = []
        for r in results:
            if r is None:
                names.append(None)
            elif isinstance(r, tf.Operation):
                names.append(f"{prefix}/{r.name}")
            elif r.op.name in mapping:
                names.append(mapping[r.op.name])
            else:
                names.append(f"{prefix}/{r.op.name}:{r.value_index}")
        return names

    def emit(
        self, node, fn: Callable, args: Sequence[_In | tuple], *, batched=True, rule: str
    ) -> None:
        """Replaces `node` by the ops `fn` builds (one result per legacy output)."""
        names = self.helper(node.name, fn, args)
        first = next((n for n in names if n is not None), None)
        if first is not None:
            self.ops[node.name] = first.partition(":")[0]
        self._register(node, names, batched)
        self.rules.append((node.name, node.op, rule))

    def used(self, ref: str) -> bool:
        return ref in self.consumers or ref in self.sink_names

    # ----------------------------------------------------------------- walk

    def run(self) -> None:
        for node in _topological(self.graph_def):
            try:
                self._node(node)
            except _Refused as refused:
                if refused.node is None:
                    refused.node = node
                raise

    def _node(self, node) -> None:
        op = self.per_record_ops[node.name]
        ins = self.inputs(node)
        drawn = any(i.ref in self.drawn for i in ins)
        self.exact = self.exact_option and not drawn
        if node.name in self.lowered:
            self._check_lowered(node, ins)
        if _is_random(node.op):
            if (
                self.draws
                and node.op in _DRAW_RULES
                and op.op_def.is_stateful
                and (self.keyed or _unseeded(node))
            ):
                _DRAW_RULES[node.op](self, node, ins)
                drawn = True
            elif op.op_def.is_stateful or any(i.batched for i in ins):
                # A stateless op with constant seeds gives every record the same values:
                # computed once per batch, they are the same.
                raise _Refused(_RANDOM_REASON)
            else:
                self.copy(node, batched=False, rule=_UNBATCHED)
            if drawn:
                self.drawn.update(f"{node.name}:{i}" for i in range(self._num_outputs(node)))
            return
        self._rule(node, op, ins)
        if drawn:
            self.drawn.update(f"{node.name}:{i}" for i in range(self._num_outputs(node)))

    def _rule(self, node, op, ins: list[_In]) -> None:
        rule = _RULES.get(node.op)
        if op.op_def.is_stateful and rule is not _assert:
            raise _Refused("stateful op: it has a side effect or state per record")
        if not any(i.batched for i in ins):
            self.copy(node, batched=False, rule=_UNBATCHED)
            return
        if rule is None:
            raise _Refused("no batch rule for this op type")
        rule(self, node, ins)

    def _check_lowered(self, node, ins: list[_In]) -> None:
        """A select standing for a conditional: a scalar predicate, branches of one shape."""
        cond, then, other = ins
        if cond.rank != 0 or not then.shape.is_fully_defined() or then.shape != other.shape:
            name, op_type = self.lowered[node.name]
            stand_in = tf.compat.v1.NodeDef(name=name, op=op_type)
            raise _Refused(
                "its branches differ in per-record shape (or the shape is not fully "
                f"known: {then.shape} and {other.shape}), so computing both and "
                "selecting has no batch form",
                stand_in,
            )

    def batch_like(self) -> _In:
        """The first source, as a batched input to take the batch size from."""
        name = self.region.sources[0].name
        return _In(name, self.new[name], True, self.shapes[name], self.dtypes[name], None)

    def result(self) -> VectorizedRegion:
        outputs = tuple(self.new[s] for s in self.sink_names)
        batched = tuple(self.batched[s] for s in self.sink_names)
        moved = set(widen_before_transposes(self.out, outputs))
        rules = tuple(
            (name, op, f"{rule}, on the cast's float32 (cast first)" if name in moved else rule)
            for name, op, rule in self.rules
        )
        graph_def, keyed = self.out, False
        if self.keyed:  # NOTE [ Seeded draws keyed by the batch ] in rules_random.py
            drawn = {name for name, _, rule in rules if rule.startswith(DRAW_RULE)}
            keyed = bool(drawn)
            if keyed:
                graph_def = stateless.keyed_graph_def(self.out, drawn)
        return VectorizedRegion(self.region, graph_def, outputs, batched, rules, keyed=keyed)

    # --------------------------------------------------------------- checks

    def check_float(self, dtype: tf.DType, what: str) -> None:
        if self.exact and (dtype.is_floating or dtype.is_complex):
            raise _Refused(
                f"floating-point {what} may round differently in the batched "
                "kernel (pass exact=False to accept last-bit differences)"
            )

    def forced_length(self, ref: str, seen: set | None = None) -> bool:
        """Whether every record's value of `ref` must have one known size (see NOTE)."""
        seen = set() if seen is None else seen
        if ref in seen:
            return False
        seen.add(ref)
        if (
            ref in self.sink_names
            and self.region.sinks[self.sink_names.index(ref)].shape.is_fully_defined()
        ):
            return True
        for node, index in self.consumers.get(ref, ()):
            out = f"{node.name}:0"
            if node.op == "Reshape" and index == 0:
                value = self.values.get(_canonical(node.input[1]))
                if value is not None and np.all(np.asarray(value) >= 0):
                    return True
            elif node.op == "EnsureShape":
                if tf.TensorShape(node.attr["shape"].shape).is_fully_defined():
                    return True
            elif node.op in _SIZE_KEEPING_UNARY and index == 0:
                if self.forced_length(out, seen):
                    return True
            elif node.op in _BINARY and index in (0, 1):
                other = _canonical(node.input[1 - index])
                if (
                    np.ndim(self.values.get(other)) == 0
                    and other in self.values
                    and self.forced_length(out, seen)
                ):
                    return True
        return False


class _StaticValues:
    """Static values of the per-record region's tensors, computed on demand.

    Only for tensors of at most ``_MAX_STATIC`` elements (axes, shapes,
    scalars, small tables): folding a large constant would cost more than
    any rule needs.
    """

    def __init__(self, tensors: dict, constants: Mapping[str, np.ndarray], sources):
        self._tensors = tensors
        self._cache: dict[str, np.ndarray | None] = {
            name: np.asarray(v) for name, v in constants.items()
        }
        self._sources = {s.name for s in sources}

    def get(self, ref: str) -> np.ndarray | None:
        if ref in self._cache:
            return self._cache[ref]
        value = None
        t = self._tensors.get(ref)
        if (
            t is not None
            and ref not in self._sources
            and t.shape.is_fully_defined()
            and t.shape.num_elements() <= _MAX_STATIC
        ):
            try:
                value = tf.get_static_value(t)
            except (TypeError, ValueError, NotImplementedError):
                value = None
        self._cache[ref] = None if value is None else np.asarray(value)
        return self._cache[ref]

    def __contains__(self, ref: str) -> bool:
        return self.get(ref) is not None


def _per_record_facts(region: LiftedRegion, graph_def):
    """Per-record static shapes, dtypes, (lazy) static values and ops of `graph_def`'s tensors.

    Imports `graph_def` (the region's, or it with conditionals lowered) once
    into a scratch graph with stand-ins of the sources' shapes: the shapes are
    those the per-record region infers (and so guarantees), not the legacy
    graph's ``set_shape`` claims. The ops are the scratch graph's, by node name.
    """
    graph = tf.Graph()
    with graph.as_default():
        by_name = {}
        for i, source in enumerate(region.sources):
            by_name[source.name] = tf.compat.v1.placeholder(
                source.dtype.base_dtype, source.shape, name=f"source{i}"
            )
        for name, value in region.constants.items():
            by_name[name] = tf.constant(
                value, dtype=region.graph.get_tensor_by_name(name).dtype.base_dtype
            )
        for i, (name, read) in enumerate(region.captured.items()):  # values known later
            by_name[name] = tf.compat.v1.placeholder(
                read.dtype.base_dtype, read.shape, name=f"captured{i}"
            )
        tensors = dict(by_name)
        ops = {}
        if graph_def.node:
            import_graph(graph_def, by_name, [], name="per_record")
            for node in graph_def.node:
                op = graph.get_operation_by_name(f"per_record/{node.name}")
                ops[node.name] = op
                tensors.update((f"{node.name}:{i}", t) for i, t in enumerate(op.outputs))
    shapes = {name: t.shape for name, t in tensors.items()}
    dtypes = {name: t.dtype.base_dtype for name, t in tensors.items()}
    return shapes, _StaticValues(tensors, region.constants, region.sources), dtypes, ops


def _topological(graph_def) -> list:
    """The nodes, each after its data and control inputs, otherwise in GraphDef order.

    The lifted GraphDef lists data inputs first, but a control input kept
    from the legacy graph (an ``Assert``) may come after the ops that wait on it.
    A TF1 while loop's back edge (``NextIteration`` -> ``Merge``) closes a
    cycle: an input already being expanded is not expanded again (the order
    is then the loop's, and the vectorizer refuses its ops).
    """
    nodes = {node.name: node for node in graph_def.node}
    done: set[str] = set()
    expanding: set[str] = set()
    order = []
    for root in graph_def.node:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node.name in done:
                continue
            if expanded:
                done.add(node.name)
                order.append(node)
                continue
            if node.name in expanding:  # reached again through a cycle
                continue
            expanding.add(node.name)
            stack.append((node, True))
            for inp in reversed(node.input):
                name = inp.lstrip("^").partition(":")[0]
                if name in nodes and name not in done and name not in expanding:
                    stack.append((nodes[name], False))
    return order


_STATELESS_CONTROL_FLOW = frozenset({"StatelessIf", "StatelessWhile", "StatelessCase"})


def _unseeded(node) -> bool:
    """Whether a stateful random op draws from a fresh, unrepeatable stream (seed = seed2 = 0)."""
    return not node.attr["seed"].i and not node.attr["seed2"].i


def _is_random(op_type: str) -> bool:
    return (
        "Random" in op_type
        or (op_type.startswith("Stateless") and op_type not in _STATELESS_CONTROL_FLOW)
        or op_type
        in (
            "TruncatedNormal",
            "Multinomial",
            "ParameterizedTruncatedNormal",
            "SampleDistortedBoundingBox",
            "SampleDistortedBoundingBoxV2",
        )
    )
