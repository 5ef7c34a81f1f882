"""Lifting a legacy graph's per-record ops into a function that Dataset.map can call.

A legacy pipeline computes each example with the user's own ops between two
queue_pipeline stages: ``decode_csv`` between a reader's value and a batching
call, a cast between ``slice_input_producer`` and ``batch``. :func:`lift`
cuts exactly those ops out of the legacy graph, from its *sources* (the
tensors a stage delivers) to its *sinks* (the tensors the next stage takes),
and returns a :class:`LiftedRegion`: an inspectable record of the region (its
ops, sources, sinks, GraphDef and the variable values it read) that, called
with one tensor per source, imports the ops into the current graph or
function and returns one tensor per sink.
:func:`~queue_pipeline._rebuild.walk.find_sources` walks the same way to
discover which stage outputs a set of sinks needs.

The walk (what is copied, what is read once, what is refused) is NOTE
[ Lifting a region ] in :mod:`queue_pipeline._rebuild.walk`.

NOTE [ A region's GraphDef ]
The GraphDef holds the region's nodes with devices and colocation attributes
stripped; their inputs from sources and variable reads keep the legacy
tensor names, which the import maps (``input_map``) to the function's
arguments and to constants. The legacy graph is never modified.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np
import tensorflow as tf

from queue_pipeline._core import held_constants
from queue_pipeline._core.graph_def import import_graph, tensor_ref, uses_functions
from queue_pipeline._rebuild.walk import VariableRead, Walker
from queue_pipeline.errors import NotRebuildableError

__all__ = ["POSITION", "LiftedRegion", "lift"]

# The external input a region made stateless reads: the record's position
# since the input started (see NOTE [ Stateless randomness keyed by the
# record ] in _engine/stateless.py). No legacy tensor has this name.
POSITION = "qp_record_position:0"


@dataclasses.dataclass(frozen=True)
class LiftedRegion:
    """The per-record ops between sources and sinks, ready to be imported elsewhere.

    Call it with one tensor per source (in a ``Dataset.map`` function, a
    ``tf.function`` or any graph) to get one tensor per sink; each call imports
    the region's GraphDef (``tf.compat.v1.import_graph_def``) into the current
    graph, so nothing of the legacy graph is touched or captured.

    Attributes:
      graph: the legacy graph the region was cut from.
      sources: the legacy tensors the function takes, in argument order.
      sinks: the legacy tensors it returns, in order.
      ops: the region's ops, each after its inputs (empty when every sink is a
        source or a variable read).
      graph_def: a ``GraphDef`` of exactly those ops (devices and colocation
        stripped, external control inputs dropped); inputs from sources and
        variable reads keep their legacy tensor names.
      aliases: legacy tensor name -> the tensor it equals (identities of
        sources, diagnostics identities), resolved before import.
      constants: legacy tensor name -> numpy value of each variable read,
        read once through the session.
      variables: legacy tensor name -> the name of the variable it reads.
      captured: legacy tensor name -> that legacy tensor, for the variable
        reads of a region lifted with ``capture=True``: the region then
        reads the variable in the legacy graph each time it runs (when an
        initializable iterator starts), so it can only be called in that
        graph or its functions. See NOTE [ Variables read when the input
        starts ].
    """

    graph: tf.Graph
    sources: tuple[tf.Tensor, ...]
    sinks: tuple[tf.Tensor, ...]
    ops: tuple[tf.Operation, ...]
    graph_def: tf.compat.v1.GraphDef
    aliases: Mapping[str, tf.Tensor]
    constants: Mapping[str, np.ndarray]
    variables: Mapping[str, str]
    captured: Mapping[str, tf.Tensor] = dataclasses.field(default_factory=dict)

    @property
    def is_identity(self) -> bool:
        """True when the function returns its arguments unchanged, in order."""
        return (
            not self.ops
            and not self.constants
            and not self.captured
            and [s.name for s in self.sinks] == [s.name for s in self.sources]
        )

    def describe(self) -> str:
        """A readable summary: sources, sinks, op types and variable reads."""
        lines = [
            f"sources: {[s.name for s in self.sources]}",
            f"sinks: {[s.name for s in self.sinks]}",
            f"ops ({len(self.ops)}): " + ", ".join(f"{op.name} ({op.type})" for op in self.ops),
        ]
        if self.variables:
            lines.append(f"variables read once: {sorted(set(self.variables.values()))}")
        return "\n".join(lines)

    def variable_values(self) -> dict[str, tf.Tensor]:
        """Legacy tensor name -> the tensor standing for each variable read, built here.

        A constant of the value read once, or, for :attr:`captured` reads,
        the legacy read itself (captured by the function being built).
        """
        values = {
            name: tf.constant(value, dtype=self.graph.get_tensor_by_name(name).dtype.base_dtype)
            for name, value in self.constants.items()
        }
        values.update(self.captured)
        return values

    def __call__(self, *args, position: tf.Tensor | None = None) -> list[tf.Tensor]:
        """Imports the region with `args` as its sources; returns its sinks.

        Args:
          *args: one tensor per source, in the order of :attr:`sources`.
          position: the record's position (int64 scalar), for a region that
            reads :data:`POSITION` (one made stateless).

        Returns:
          A list with one tensor per sink, each with at least the legacy
          sink's static shape (checked with ``tf.ensure_shape`` where the
          imported shape is less specific).

        Raises:
          TypeError: the number of arguments differs from the sources'.
        """
        if len(args) != len(self.sources):
            raise TypeError(
                f"LiftedRegion: expected {len(self.sources)} argument(s) "
                f"(one per source {[s.name for s in self.sources]}); got "
                f"{len(args)}."
            )
        by_name = {s.name: tf.convert_to_tensor(a) for s, a in zip(self.sources, args)}
        by_name.update(self.variable_values())
        if position is not None:
            by_name[POSITION] = position
        imported: dict[str, tf.Tensor] = {}
        if self.graph_def.node:
            wanted = [s.name for s in self.sinks if s.name not in by_name]
            results = import_graph(self.graph_def, by_name, wanted, name="lifted")
            imported = dict(zip(wanted, results))
        outputs = []
        for sink in self.sinks:
            value = by_name.get(sink.name, imported.get(sink.name))
            if value is None:
                raise AssertionError(f"unresolved sink {sink.name}")  # pragma: no cover
            outputs.append(_with_shape(value, sink.shape))
        return outputs


def _with_shape(value: tf.Tensor, shape: tf.TensorShape) -> tf.Tensor:
    if (
        shape.rank is None
        or value.shape == shape
        or (value.shape.rank is not None and value.shape.is_fully_defined())
    ):
        return value
    merged = value.shape.merge_with(shape) if value.shape.is_compatible_with(shape) else shape
    if merged == value.shape:
        return value
    return tf.ensure_shape(value, shape)


def _graph_def(graph: tf.Graph, walker: Walker) -> tf.compat.v1.GraphDef:
    graph_def = tf.compat.v1.GraphDef()
    graph_def.versions.CopyFrom(graph.graph_def_versions)
    needs_library = False
    for name, op in walker.ops.items():
        node = graph_def.node.add()
        node.CopyFrom(held_constants.node_def(op))  # a held constant copies its value
        node.ClearField("device")
        if "_class" in node.attr:
            del node.attr["_class"]
        del node.input[:]
        for t in op.inputs:
            node.input.append(tensor_ref(walker.resolve(t)))
        node.input.extend(f"^{c}" for c in walker.control.get(name, ()))
        needs_library = needs_library or uses_functions(op)
    if needs_library:
        graph_def.library.CopyFrom(graph.as_graph_def().library)
    return graph_def


def _graph_of(tensors: Sequence[tf.Tensor], api: str) -> tf.Graph:
    graphs = {t.graph for t in tensors}
    if len(graphs) != 1:
        raise ValueError(
            f"{api}: the tensors must come from one graph; got tensors from {len(graphs)} graphs."
        )
    return graphs.pop()


def lift(
    sinks: Sequence[tf.Tensor],
    sources: Sequence[tf.Tensor] = (),
    *,
    session: tf.compat.v1.Session | None = None,
    api: str = "lift",
    values: dict | None = None,
    capture: bool = False,
) -> LiftedRegion:
    """Cuts the ops computing `sinks` from `sources` out of their legacy graph.

    See NOTE [ Lifting a region ] for what is copied, what is read once and
    what is refused.

    Args:
      sinks: dense tensors of one legacy graph, the function's results.
      sources: tensors of that graph the function takes as arguments (their
        identities count as them); they need not all be used.
      session: a Session on the legacy graph, used once to read the
        variables the region reads (they must be initialized in it).
      api: the public name used in error messages.
      values: a cache of variable values by tensor name, shared between
        regions so that each variable is read once; filled in place.
      capture: do not read variables now: the region reads them in the
        legacy graph when it runs (see :attr:`LiftedRegion.captured`); for
        callers that build the Dataset in the legacy graph and start it with
        an initializable iterator after the variables are initialized. Such
        a region also keeps Python function ops (NOTE [ Lifting a region ]).

    Returns:
      A :class:`LiftedRegion`.

    Raises:
      NotRebuildableError: an op cannot be lifted, or a variable must be read
        and `session` is None.
    """
    sinks = tuple(sinks)
    sources = tuple(sources)
    if not sinks:
        graph = tf.Graph()
    else:
        graph = _graph_of(list(sinks) + list(sources), api)
    names = {s.name for s in sources}
    # NOTE [ Lifting a region ]: a region captured in its own graph keeps Python functions.
    walker = Walker(api, lambda t: t.name in names, follow_control=True, py_funcs=capture)
    walker.walk(sinks)
    resolved_sinks = tuple(walker.resolve(s) for s in sinks)
    if capture:
        constants, captured = {}, {name: read.tensor for name, read in walker.reads.items()}
    else:
        constants, captured = _read_variables(api, walker.reads, session, values), {}
    return LiftedRegion(
        graph=graph,
        sources=sources,
        sinks=resolved_sinks,
        ops=tuple(walker.ops.values()),
        graph_def=_graph_def(graph, walker),
        aliases=dict(walker.aliases),
        constants=constants,
        variables={name: read.variable.name for name, read in walker.reads.items()},
        captured=captured,
    )


def _read_variables(api: str, reads: dict[str, VariableRead], session, cache) -> dict:
    if not reads:
        return {}
    cache = {} if cache is None else cache
    missing = [name for name in reads if name not in cache]
    if missing:
        variables = sorted({reads[name].variable.name for name in missing})
        if session is None:
            first = reads[missing[0]].variable
            raise NotRebuildableError(
                f"{api}: the pipeline reads variable(s) {variables}, whose values must "
                "be read once through a session. Fix: pass session= a tf.compat.v1."
                "Session on the legacy graph in which the variables are initialized "
                "(e.g. after running the initializers, or the `load` step of a "
                "preloaded-data program).",
                op_name=first.name,
                op_type=first.type,
                reason="needs a session",
            )
        if session.graph is not reads[missing[0]].tensor.graph:
            raise ValueError(
                f"{api}: `session` runs another graph than the pipeline's; "
                "pass a Session on the legacy graph."
            )
        try:
            fetched = session.run([reads[name].tensor for name in missing])
        except tf.errors.FailedPreconditionError as e:
            raise NotRebuildableError(
                f"{api}: reading variable(s) {variables} through `session` failed: "
                f"{e.message}. Fix: initialize them in that session first.",
                reason="uninitialized variable",
            ) from e
        cache.update(zip(missing, (np.asarray(v) for v in fetched)))
    return {name: cache[name] for name in reads}
