"""Batch-vectorized decoding: a lifted per-record region rewritten to run on whole batches.

:func:`vectorize` takes a :class:`~queue_pipeline._rebuild.lift.LiftedRegion` (the
user's per-record ops between two pipeline stages) and returns either a
:class:`VectorizedRegion`, which computes the same values for a whole batch of
records at once, or a :class:`NotVectorizable` naming the first op that has no
batch form and why. The engine then shuffles and batches the raw records
first and decodes once per batch (``ParseExample`` instead of one
``ParseSingleExample`` per record), which is where tf.data gets its speed.

NOTE [ Vectorizing a region ]
The region's GraphDef is walked in topological order (data and control
inputs first) and rewritten node by node into a new GraphDef. Every tensor is either *batched*
(it depends on a source and has a leading batch dimension ``B``; its
per-example shape is the one the per-record region infers) or *unbatched*
(it does not depend on a source: constants, shapes, variable reads). A node
whose inputs are all unbatched is copied unchanged and stays unbatched. A
node with a batched input needs a *rule* (``_RULES`` in _engine/vectorize_rules.py): most rules copy
the node unchanged (element-wise ops, ``DecodeCSV``, ``ParseExampleV2`` on a
scalar), others copy it with rewritten axis, shape, slice or permutation
inputs (an extra leading entry for the batch axis) or attributes, built by
small helper subgraphs. A node without a rule, or whose rule cannot prove the
batched result equal to the per-record one, makes the whole region
:class:`NotVectorizable` (all or nothing).

A rule is accepted only where, for every example ``i``, row ``i`` of the
batched result is bitwise the per-record result for record ``i``, or both
raise. Three facts keep that true:

* *Same kernels, same rounding.* Integer, string and boolean ops are exact.
  Floating-point ops are exact only when each element is one correctly
  rounded IEEE operation (add, multiply, divide, sqrt, min/max, casts,
  comparisons, floor/round ...). Transcendental functions (``Exp``, ``Log``,
  ``Sigmoid``, ``Rsqrt``, float ``Pow``, ...) and ``Reciprocal`` use a
  vectorized approximation on whole SIMD packets and a scalar libm call or
  division on the tail, so an element may
  round differently depending on where it lands in the batch (measured: up to
  1 ulp on a few percent of elements); float reductions sum in another order.
  Both are refused unless ``exact=False``. Grappler adds a last trap, see
  NOTE [ Grappler and float arithmetic ].
* *Dense batches.* A batched tensor is dense, so every example has the same
  per-example shape. Only ``DecodeRaw`` makes a per-record shape depend on the
  data (the byte length of each string). It is vectorized only when that
  length is provably the same for every record that does not raise: the
  string comes from a source the caller declares fixed-length
  (``fixed_lengths``, e.g. a ``FixedLengthRecordReader``'s value), or its
  result reaches, through element-wise ops that keep its size, a ``Reshape``
  to a fully known shape or a sink with a fully known static shape (which the
  per-record region checks with ``ensure_shape``). Then a batch whose strings
  differ in length has a record that fails per record too, and the batched
  ``DecodeRaw`` fails. Reshapes take the batch size from the tensor
  (``[B] + shape``, never ``[-1] + shape``), so a batch of same-length but wrong
  strings fails instead of silently regrouping.
* *No per-example state.* Random and other stateful ops (``RandomUniform``
  in a random crop or flip) draw per record; one draw per batch would change
  the distribution of the data, so they are refused, as are stateless random
  ops seeded from the record (with constant seeds every record gets the same
  values, so one computation per batch is exact). ``Assert`` is kept: the
  batch fails iff a record fails.

Errors still raise, with the batched op's message (it may name the batch
rather than the record). Outputs that do not depend on any source are
broadcast to ``[B, ...]``. Sparse or ragged outputs of the parse ops are
refused when used (a batch of per-record SparseTensors has no dense form);
unused ones are parsed and dropped, as per record.

NOTE [ Grappler and float arithmetic ]
The per-record and the batched functions are optimized by Grappler
separately, and some of its rewrites of float arithmetic depend on static
shapes, which differ between the two (``[4]`` against ``[None, 4]``): the
arithmetic optimizer regroups trees of additions (``(x + c) + d`` became
``x + (c + d)`` on one side only: 62 of 256 elements differed in the last
bit, measured in ``Dataset.map`` on TF 2.21), minimizes broadcasts in chains
of multiplications, hoists common factors out of sums of products and turns
``x / sqrt(y)`` into ``x * rsqrt(y)``; constant folding pushes constants
through chains and drops ``x + 0`` (which turns ``-0.0`` into ``+0.0`` where it
is not dropped). With ``exact=True`` those shapes of float arithmetic are
refused: an addition fed by an addition, a multiplication or division fed
by one, a sum of two products, a division by a square root, an addition or
multiplication with a constant zero, and ``AddN``. Single operations and
chains that alternate (``x * (1 / 255) - 0.5``, ``(x - mean) / std``) are
not rewritten and stay exact. Integer arithmetic is exact in any grouping.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from queue_pipeline._rebuild import lift as _lift
from queue_pipeline._core.compat import static_dim
from queue_pipeline._rebuild.lift import LiftedRegion
from queue_pipeline._engine.vectorize_rules import (
    _BINARY,
    _RULES,
    _SIZE_KEEPING_UNARY,
    _assert,
    _canonical,
    _In,
    _Refused,
)

__all__ = ["NotVectorizable", "VectorizedRegion", "vectorize"]

_UNBATCHED = "unbatched (no source reaches it)"
_MAX_STATIC = 1 << 16  # elements
_RANDOM_REASON = (
    "per-example random op: every record draws its own values, which one "
    "draw per batch would not reproduce"
)


@dataclasses.dataclass(frozen=True)
class NotVectorizable:
    """Why a region cannot run on whole batches: the first op without a batch form.

    Attributes:
      op_name: the op's name in the legacy graph ("" when no single op is at fault).
      op_type: its type.
      reason: why it has no batch form, in a few words.
    """

    op_name: str
    op_type: str
    reason: str

    def describe(self) -> str:
        """One line for a fallback message."""
        if not self.op_name:
            return f"the region is not vectorizable: {self.reason}; it runs per record."
        return (
            f"op {self.op_name!r} (type {self.op_type}) has no batch form: "
            f"{self.reason}; the region runs per record."
        )

    __str__ = describe


@dataclasses.dataclass(frozen=True)
class VectorizedRegion:
    """A lifted region rewritten to compute a whole batch of records at once.

    Called with one batched tensor per source of :attr:`region` (a leading
    batch dimension ``B``, then the source's per-record shape), it returns
    one tensor per sink, ``[B] + sink shape``, whose row ``i`` is what
    :attr:`region` returns for record ``i``. Like the region, each call
    imports a GraphDef into the current graph or function.

    Attributes:
      region: the per-record region.
      graph_def: the batched GraphDef; it reads the sources and variable
        reads under their legacy tensor names, like ``region.graph_def``.
      outputs: per sink, the tensor name in :attr:`graph_def` (or the source
        or variable-read name) that holds it.
      batched: per sink, whether it has the batch dimension (False: it does
        not depend on the sources and is broadcast to the batch).
      rules: ``(op name, op type, rule)`` for every op of the region, in order.
    """

    region: LiftedRegion
    graph_def: tf.compat.v1.GraphDef
    outputs: tuple[str, ...]
    batched: tuple[bool, ...]
    rules: tuple[tuple[str, str, str], ...]

    def describe(self) -> str:
        """A readable summary: how each op of the region runs on a batch."""
        batched = [r for r in self.rules if r[2] != _UNBATCHED]
        lines = [
            f"vectorized region: {len(self.rules)} op(s), "
            f"{len(self.region.sources)} source(s), {len(self.outputs)} sink(s); "
            f"{len(self.rules) - len(batched)} op(s) that no source reaches copied "
            "as they are"
        ]
        lines += [f"  {name} ({op_type}): {rule}" for name, op_type, rule in batched]
        return "\n".join(lines)

    def __call__(self, *args) -> list[tf.Tensor]:
        """Imports the batched region with `args` as its sources; returns its sinks.

        Args:
          *args: one batched tensor per source, in the order of
            ``region.sources``; all with the same leading dimension ``B``.

        Returns:
          One tensor per sink, each ``[B] + `` the sink's static shape
          (checked with ``tf.ensure_shape`` where the imported shape is less
          specific, as the per-record region does).

        Raises:
          TypeError: the number of arguments differs from the sources'.
          ValueError: an argument's shape is not ``[B] +`` its source's shape.
        """
        sources = self.region.sources
        if len(args) != len(sources):
            raise TypeError(
                f"VectorizedRegion: expected {len(sources)} argument(s) (one "
                f"batch per source {[s.name for s in sources]}); got "
                f"{len(args)}."
            )
        by_name = {}
        for source, arg in zip(sources, args):
            value = tf.convert_to_tensor(arg, dtype=source.dtype.base_dtype)
            expected = tf.TensorShape([None]).concatenate(source.shape)
            if not value.shape.is_compatible_with(expected):
                raise ValueError(
                    f"VectorizedRegion: the batch for source {source.name!r} "
                    f"must have shape {expected}; got {value.shape}."
                )
            if expected.rank is not None and value.shape.merge_with(expected) != value.shape:
                # The rules rely on the per-record shapes of the sources; check them.
                value = tf.ensure_shape(value, expected)
            by_name[source.name] = value
        by_name.update(self.region.variable_values())
        imported = {}
        if self.graph_def.node:
            wanted = sorted({n for n in self.outputs if n not in by_name})
            results = _lift.import_graph(self.graph_def, by_name, wanted, name="vectorized")
            imported = dict(zip(wanted, results))
        first = by_name[sources[0].name]
        size = tf.shape(first)[0]
        static_size = static_dim(first, 0)
        outputs = []
        for sink, name, batched in zip(self.region.sinks, self.outputs, self.batched):
            value = by_name[name] if name in by_name else imported[name]
            if not batched:
                value = tf.broadcast_to(value[tf.newaxis], tf.concat([[size], tf.shape(value)], 0))
            outputs.append(_with_shape(value, sink.shape, static_size))
        return outputs


def vectorize(
    region: LiftedRegion,
    *,
    fixed_lengths: Mapping[str | int, int] | None = None,
    exact: bool = True,
) -> VectorizedRegion | NotVectorizable:
    """Rewrites `region` to run on whole batches, if every op has a batch form.

    See NOTE [ Vectorizing a region ] for the rules and why each gives, for
    every example, exactly the per-record result.

    Args:
      region: a lifted per-record region.
      fixed_lengths: string sources whose every value has a known byte
        length, by source name or position (e.g. ``{0: 3073}`` for a
        ``FixedLengthRecordReader(3073)``'s value). It lets ``DecodeRaw`` of
        such a source run on the batch. The caller vouches for it.
      exact: refuse floating-point ops whose batched form may round
        differently (transcendental functions, float reductions, and the
        float arithmetic Grappler may regroup per shape, see NOTE [ Grappler
        and float arithmetic ]). With False they are vectorized and may
        differ in the last bit.

    Returns:
      A :class:`VectorizedRegion`, or a :class:`NotVectorizable` naming the
      first op without a batch form and why.

    Raises:
      ValueError: `fixed_lengths` names something that is not a source.

    Example::

        vectorized = vectorize(region)
        if isinstance(vectorized, NotVectorizable):
            logging.info(vectorized.describe())     # once; map `region` per record
        else:
            dataset = records.batch(32).map(lambda r: tuple(vectorized(r)))
    """
    if not region.sources:
        return NotVectorizable("", "", "it reads no source, so there is no batch to map")
    lengths = {}
    for key, length in (fixed_lengths or {}).items():
        if isinstance(key, int):
            source = region.sources[key] if 0 <= key < len(region.sources) else None
        else:
            source = next((s for s in region.sources if s.name == key), None)
        if source is None:
            raise ValueError(
                f"vectorize: `fixed_lengths` names {key!r}, which is not a "
                f"source of the region {[s.name for s in region.sources]}."
            )
        lengths[source.name] = int(length)
    builder = _Builder(region, lengths, exact)
    try:
        builder.run()
    except _Refused as refused:
        node = refused.node
        return NotVectorizable(
            node.name if node is not None else "",
            node.op if node is not None else "",
            refused.reason,
        )
    return builder.result()


# ----------------------------------------------------------------------- machinery


def _gd_ref(name: str) -> str:
    """A tensor name in GraphDef input spelling (``op`` for output 0)."""
    op, _, index = name.partition(":")
    return op if index in ("", "0") else name


def _with_shape(value: tf.Tensor, shape: tf.TensorShape, size) -> tf.Tensor:
    """`value` with static shape ``[size] + shape``, checked at run time as per record."""
    if shape.rank is not None:
        wanted = tf.TensorShape([None]).concatenate(shape)
        if value.shape.is_compatible_with(wanted) and value.shape.merge_with(wanted) != value.shape:
            value = tf.ensure_shape(value, wanted)
    if size is not None and value.shape.rank:
        value.set_shape(tf.TensorShape([size]).concatenate(value.shape[1:]))
    return value


class _Builder:
    """One rewrite of a region; see NOTE [ Vectorizing a region ]."""

    def __init__(self, region: LiftedRegion, lengths: dict[str, int], exact: bool):
        self.region = region
        self.lengths = lengths
        self.exact = exact
        self.out = tf.compat.v1.GraphDef()
        self.out.versions.CopyFrom(region.graph_def.versions)
        if region.graph_def.HasField("library"):
            self.out.library.CopyFrom(region.graph_def.library)
        self.names = {node.name for node in region.graph_def.node}
        self.new: dict[str, str] = {}  # legacy tensor -> tensor in self.out
        self.batched: dict[str, bool] = {}
        self.ops: dict[str, str] = {}  # legacy op -> op in self.out (control inputs)
        self.rules: list[tuple[str, str, str]] = []
        self.shapes, self.values, self.dtypes = _per_record_facts(region)
        for source in region.sources:
            self._set(source.name, source.name, True)
        for name in list(region.constants) + list(region.captured):
            self._set(name, name, False)
        self.consumers: dict[str, list] = {}
        for node in region.graph_def.node:
            for i, inp in enumerate(node.input):
                if not inp.startswith("^"):
                    self.consumers.setdefault(_canonical(inp), []).append((node, i))
        self.sink_names = [s.name for s in region.sinks]
        self.nodes = {node.name: node for node in region.graph_def.node}

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
        return len(self.region.graph.get_operation_by_name(node.name).outputs)

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
        for node in _topological(self.region.graph_def):
            try:
                self._node(node)
            except _Refused as refused:
                refused.node = node
                raise

    def _node(self, node) -> None:
        op = self.region.graph.get_operation_by_name(node.name)
        ins = self.inputs(node)
        if _is_random(node.op) and (op.op_def.is_stateful or any(i.batched for i in ins)):
            # A stateless op with constant seeds gives every record the same values:
            # computed once per batch, they are the same.
            raise _Refused(_RANDOM_REASON)
        rule = _RULES.get(node.op)
        if op.op_def.is_stateful and rule is not _assert:
            raise _Refused("stateful op: it has a side effect or state per record")
        if not any(i.batched for i in ins):
            self.copy(node, batched=False, rule=_UNBATCHED)
            return
        if rule is None:
            raise _Refused("no batch rule for this op type")
        rule(self, node, ins)

    def result(self) -> VectorizedRegion:
        outputs = tuple(self.new[s] for s in self.sink_names)
        batched = tuple(self.batched[s] for s in self.sink_names)
        return VectorizedRegion(self.region, self.out, outputs, batched, tuple(self.rules))

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


def _per_record_facts(region: LiftedRegion):
    """Per-record static shapes, dtypes and (lazy) static values of the region's tensors.

    Imports the region once into a scratch graph with stand-ins of the
    sources' shapes: the shapes are those the per-record region infers (and
    so guarantees), not the legacy graph's ``set_shape`` claims.
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
        if region.graph_def.node:
            names = [
                f"{node.name}:{i}"
                for node in region.graph_def.node
                for i in range(len(region.graph.get_operation_by_name(node.name).outputs))
            ]
            imported = _lift.import_graph(region.graph_def, by_name, names, name="per_record")
            tensors.update(zip(names, imported))
    shapes = {name: t.shape for name, t in tensors.items()}
    dtypes = {name: t.dtype.base_dtype for name, t in tensors.items()}
    return shapes, _StaticValues(tensors, region.constants, region.sources), dtypes


def _topological(graph_def) -> list:
    """The nodes, each after its data and control inputs, otherwise in GraphDef order.

    The lifted GraphDef lists data inputs first, but a control input kept
    from the legacy graph (an ``Assert``) may come after the ops that wait on it.
    """
    nodes = {node.name: node for node in graph_def.node}
    done: set[str] = set()
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
            stack.append((node, True))
            for inp in reversed(node.input):
                name = inp.lstrip("^").partition(":")[0]
                if name in nodes and name not in done:
                    stack.append((nodes[name], False))
    return order


def _is_random(op_type: str) -> bool:
    return (
        "Random" in op_type
        or op_type.startswith("Stateless")
        or op_type
        in (
            "TruncatedNormal",
            "Multinomial",
            "ParameterizedTruncatedNormal",
            "SampleDistortedBoundingBox",
            "SampleDistortedBoundingBoxV2",
        )
    )
