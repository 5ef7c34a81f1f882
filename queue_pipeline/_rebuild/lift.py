"""Lifting a legacy graph's per-record ops into a function that Dataset.map can call.

A legacy pipeline computes each example with the user's own ops between two
queue_pipeline stages: ``decode_csv`` between a reader's value and a batching
call, a cast between ``slice_input_producer`` and ``batch``. :func:`lift`
cuts exactly those ops out of the legacy graph, from its *sources* (the
tensors a stage delivers) to its *sinks* (the tensors the next stage takes),
and returns a :class:`LiftedRegion`: an inspectable record of the region (its
ops, sources, sinks, GraphDef and the variable values it read) that, called
with one tensor per source, imports the ops into the current graph or
function and returns one tensor per sink. :func:`find_sources` walks the same
way to discover which stage outputs a set of sinks needs.

NOTE [ Lifting a region ]
The walk goes backwards from the sinks along data inputs and stops at:

* a source (the tensors the caller names, or those its ``is_source`` accepts);
* an ``Identity`` of a source, which *is* the source (the readers may hand
  out their value through such an identity), and any identity under a
  diagnostics scope ``*_qp_guard/``, which is skipped (guards are never
  lifted);
* a variable read (``ReadVariableOp`` of a ``VarHandleOp``, or a ref
  variable): the value is read *once* through the session and fed as a
  constant, provided the variable does not change (see below).

Everything else the sinks need is copied into the region, constants
included. Control inputs are kept only between ops of the region; those on
ops outside it (asserts, the ``_qp_guard`` checks) are dropped. These stop
the walk with a :class:`NotRebuildableError` that names the op, its type
and why: a Python function (``PyFunc``, ``EagerPyFunc``), a ``Placeholder``
(it needs a feed), a queue or reader op the caller does not accept as a
source, an op that writes a variable, an op using a variable or another
stateful resource (a lookup table) through its handle, a diagnostics op
other than an identity, and a read of a variable that changes.

A variable *changes* when it is trainable (an optimizer updates the
trainable variables by default) or when any op of the graph other than its
initializer (``<variable>/Assign``) writes it (``assign``, an optimizer's
apply op, ``count_up_to``). A changing variable cannot become a constant, so
lifting it is refused; a non-trainable variable only its initializer writes
(preloaded data, a normalization table) is read once.

The GraphDef holds the region's nodes with devices and colocation attributes
stripped; their inputs from sources and variable reads keep the legacy
tensor names, which the import maps (``input_map``) to the function's
arguments and to constants. The legacy graph is never modified.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
import tensorflow as tf

from queue_pipeline._core.compat import VARIABLE_OP_TYPES, is_ref_tensor
from queue_pipeline._core.graph import GUARD_SUFFIX
from queue_pipeline.errors import NotRebuildableError

__all__ = [
    "LiftedRegion",
    "external_inputs",
    "find_sources",
    "import_graph",
    "lift",
    "not_rebuildable",
    "variable_changes",
]

GUARD_SCOPE = GUARD_SUFFIX + "/"
PY_FUNC_TYPES = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})
PLACEHOLDER_TYPES = frozenset({"Placeholder", "PlaceholderV2"})
# Ops that only read a resource variable (or ask about it); anything else with
# the handle as input writes it or uses it in ways a constant cannot replace.
_VARIABLE_READERS = frozenset(
    {
        "ReadVariableOp",
        "VarIsInitializedOp",
        "VariableShape",
        "ResourceGather",
        "ResourceGatherNd",
        "IsVariableInitialized",
        "Identity",
        "DestroyResourceOp",
    }
)


def _is_guard(op: tf.Operation) -> bool:
    return GUARD_SCOPE in op.name


def _is_queue_or_reader(op: tf.Operation) -> bool:
    return op.type.startswith(("Queue", "Reader")) or op.type.endswith(
        ("QueueV2", "Queue", "ReaderV2", "Reader")
    )


def not_rebuildable(api: str, op: tf.Operation, reason: str, fix: str) -> NotRebuildableError:
    """The error for `op`: "<api>: op '<name>' (type <type>) <reason>. Fix: <fix>"."""
    return NotRebuildableError(
        f"{api}: op {op.name!r} (type {op.type}) {reason}. Fix: {fix}",
        op_name=op.name,
        op_type=op.type,
        reason=reason,
    )


@dataclasses.dataclass(frozen=True)
class _VariableRead:
    tensor: tf.Tensor  # the legacy tensor whose value stands for the read
    variable: tf.Operation  # the VarHandleOp or VariableV2 op


def variable_changes(variable: tf.Operation) -> str | None:
    """Why `variable` (a VarHandleOp or VariableV2 op) changes at run time, or None.

    See NOTE [ Lifting a region ] for what counts as a change.
    """
    graph = variable.graph
    for v in graph.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES):
        if getattr(getattr(v, "op", None), "name", None) == variable.name:
            return (
                "is trainable, so training updates it (create it with "
                "trainable=False if it never changes)"
            )
    initializer = f"{variable.name}/Assign"
    for op in graph.get_operations():
        if op.name == initializer or op.type in _VARIABLE_READERS:
            continue
        if any(t.op is variable for t in op.inputs):
            return f"is written by op {op.name!r} (type {op.type})"
    return None


class _Walker:
    """One backwards walk; see NOTE [ Lifting a region ]."""

    def __init__(
        self,
        api: str,
        is_source: Callable[[tf.Tensor], bool],
        *,
        follow_control: bool,
        allow_reads: bool = True,
    ):
        self.api = api
        self.is_source = is_source
        self.follow_control = follow_control
        self.allow_reads = allow_reads
        self.ops: dict[str, tf.Operation] = {}  # region ops, inputs first
        self.sources: dict[str, tf.Tensor] = {}  # sources used, in order of discovery
        self.aliases: dict[str, tf.Tensor] = {}  # tensor name -> what it equals
        self.reads: dict[str, _VariableRead] = {}
        self.control: dict[str, list[str]] = {}  # op name -> kept control inputs
        self._seen: set[str] = set()  # tensors visited
        self._entered: set[str] = set()  # ops whose inputs are being walked

    def resolve(self, t: tf.Tensor) -> tf.Tensor:
        """`t`, or what it equals when it is an identity of a source or a guard."""
        while t.name in self.aliases:
            t = self.aliases[t.name]
        return t

    def walk(self, sinks: Iterable[tf.Tensor]) -> None:
        """Walks back from `sinks`; then, if asked, pulls in liftable control inputs."""
        for sink in sinks:
            self._visit_tensor(sink)
        if self.follow_control:
            self._add_controls()

    def _visit_tensor(self, t: tf.Tensor) -> None:
        """Iterative post-order walk: each op enters `ops` after its data inputs."""
        stack = [(t, False)]
        while stack:
            tensor, expanded = stack.pop()
            op = tensor.op
            if expanded:
                self.ops.setdefault(op.name, op)
                continue
            if tensor.name in self._seen:
                continue
            self._seen.add(tensor.name)
            if self.is_source(tensor):
                self.sources.setdefault(tensor.name, tensor)
                continue
            if (
                op.type == "Identity"
                and op.inputs
                and (_is_guard(op) or self._is_source_like(op.inputs[0]))
            ):
                self.aliases[tensor.name] = op.inputs[0]
                stack.append((op.inputs[0], False))
                continue
            if self._variable_read(tensor) or op.name in self._entered:
                continue
            self._entered.add(op.name)
            self._check(op)
            stack.append((tensor, True))
            stack.extend((inp, False) for inp in reversed(op.inputs))

    def _add_controls(self) -> None:
        """Keeps control inputs between region ops; tries to lift the others."""
        done: set[str] = set()
        while len(done) < len(self.ops):
            for name, op in list(self.ops.items()):
                if name in done:
                    continue
                done.add(name)
                self.control[name] = [
                    c.name
                    for c in op.control_inputs
                    if c.name in self.ops or self._include_control(c)
                ]

    def _is_source_like(self, t: tf.Tensor) -> bool:
        """Whether `t` is a source or an identity chain over one."""
        seen = 0
        while seen < 64:
            if self.is_source(t):
                return True
            if t.op.type != "Identity" or not t.op.inputs:
                return False
            t = t.op.inputs[0]
            seen += 1
        return False

    def _include_control(self, control: tf.Operation) -> bool:
        """Pulls a control input (e.g. the user's Assert) into the region if it can be lifted.

        Only ops that need nothing but the sources and constants qualify;
        anything else (a guard, a queue, a variable) is dropped.
        """
        if _is_guard(control):
            return False
        trial = _Walker(self.api, self.is_source, follow_control=False, allow_reads=False)
        trial._entered = set(self.ops) | {control.name}
        try:
            trial._check(control)
            for t in control.inputs:
                trial._visit_tensor(t)
        except NotRebuildableError:
            return False
        for name, op in trial.ops.items():
            self.ops.setdefault(name, op)
        self.ops[control.name] = control
        self.sources.update(trial.sources)
        self.aliases.update(trial.aliases)
        return True

    def _variable_read(self, t: tf.Tensor) -> bool:
        """Records `t` as a variable read and returns True, if it is one."""
        op = t.op
        if op.type == "ReadVariableOp":
            variable = op.inputs[0].op
            if variable.type != "VarHandleOp":
                raise not_rebuildable(
                    self.api,
                    op,
                    f"reads a variable through {variable.name!r} "
                    f"(type {variable.type}), not directly from its handle",
                    "read the variable itself (variable.read_value()).",
                )
        elif is_ref_tensor(t) and op.type in VARIABLE_OP_TYPES:
            variable = op
        else:
            return False
        if not self.allow_reads:
            raise not_rebuildable(
                self.api,
                variable,
                "is read in a control dependency",
                "no fix needed: the dependency is dropped",
            )
        why = variable_changes(variable)
        if why is not None:
            raise not_rebuildable(
                self.api,
                variable,
                f"is a variable that a per-record op reads, and it {why}; a Dataset "
                "cannot follow a value that changes while it runs",
                "compute the value outside the pipeline, or make the variable "
                "non-trainable and written only by its initializer, so that it is "
                "read once as a constant.",
            )
        self.reads[t.name] = _VariableRead(t, variable)
        return True

    def _check(self, op: tf.Operation) -> None:
        """Raises NotRebuildableError if `op` cannot be copied into a map function."""
        if op.type in PY_FUNC_TYPES:
            raise not_rebuildable(
                self.api,
                op,
                "runs a Python function, which cannot be moved "
                "out of its graph into a tf.data function (nor serialized for "
                "tf.data service)",
                "express it with TensorFlow ops, or write the tf.data twin by "
                "hand with tf.py_function in Dataset.map.",
            )
        if op.type in PLACEHOLDER_TYPES:
            raise not_rebuildable(
                self.api,
                op,
                "is a placeholder, which needs a feed at every run; a Dataset has no feed",
                "replace it with the value it is fed (a constant, or a "
                "non-trainable variable read once through `session`).",
            )
        if _is_guard(op):
            raise not_rebuildable(
                self.api,
                op,
                "is a queue_pipeline diagnostic, which is never lifted",
                "report this: only identities of diagnostics are expected on the data path.",
            )
        if _is_queue_or_reader(op):
            raise not_rebuildable(
                self.api,
                op,
                "is a queue or reader op that no queue_pipeline "
                "builder recorded, so its input cannot be rebuilt",
                "build the stage with queue_pipeline's producers, readers "
                "and batching functions (they record a plan).",
            )
        if op.type in VARIABLE_OP_TYPES or op.type in (
            "HashTableV2",
            "MutableHashTableV2",
            "MutableDenseHashTableV2",
            "MutableHashTableOfTensorsV2",
        ):
            raise not_rebuildable(
                self.api,
                op,
                "is a stateful resource (a variable or lookup table) used through its handle",
                "read a variable's value first (variable.read_value()); build "
                "lookup tables inside a hand-written Dataset.map.",
            )
        for inp in op.inputs:
            if inp.dtype == tf.resource and inp.op.type in VARIABLE_OP_TYPES:
                raise not_rebuildable(
                    self.api,
                    op,
                    f"uses variable {inp.op.name!r} through its "
                    "handle (a per-record op that writes or gathers from it)",
                    "read the variable's value first (tf.identity(variable) "
                    "or variable.read_value()), and never assign to it "
                    "per record.",
                )
            if is_ref_tensor(inp) and op.type not in ("Identity",):
                raise not_rebuildable(
                    self.api,
                    op,
                    f"uses ref variable {inp.op.name!r} directly "
                    "(it writes it, or reads it in place)",
                    "read the variable's value (variable.value()) and never "
                    "assign to it per record.",
                )


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

    def __call__(self, *args) -> list[tf.Tensor]:
        """Imports the region with `args` as its sources; returns its sinks.

        Args:
          *args: one tensor per source, in the order of :attr:`sources`.

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


def _tensor_ref(t: tf.Tensor) -> str:
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


def _uses_functions(op: tf.Operation) -> bool:
    for attr in op.node_def.attr.values():
        if attr.HasField("func") or (attr.HasField("list") and attr.list.func):
            return True
    return False


def _graph_def(graph: tf.Graph, walker: _Walker) -> tf.compat.v1.GraphDef:
    graph_def = tf.compat.v1.GraphDef()
    graph_def.versions.CopyFrom(graph.graph_def_versions)
    needs_library = False
    for name, op in walker.ops.items():
        node = graph_def.node.add()
        node.CopyFrom(op.node_def)
        node.ClearField("device")
        if "_class" in node.attr:
            del node.attr["_class"]
        del node.input[:]
        for t in op.inputs:
            node.input.append(_tensor_ref(walker.resolve(t)))
        node.input.extend(f"^{c}" for c in walker.control.get(name, ()))
        needs_library = needs_library or _uses_functions(op)
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


def find_sources(
    sinks: Sequence[tf.Tensor], is_source: Callable[[tf.Tensor], bool], *, api: str = "lift"
) -> list[tf.Tensor]:
    """The source tensors that `sinks` depend on, in order of discovery.

    Walks back from `sinks` along data inputs as :func:`lift` does (see
    NOTE [ Lifting a region ]), stopping at tensors for which `is_source`
    returns True; identities of sources resolve to the source.

    Args:
      sinks: dense tensors of one graph.
      is_source: tells whether a tensor is a source (e.g. a reader's value).
      api: the public name used in error messages.

    Returns:
      The sources reached (each once).

    Raises:
      NotRebuildableError: the walk met an op that cannot be lifted.
    """
    walker = _Walker(api, is_source, follow_control=False)
    walker.walk(sinks)
    return list(walker.sources.values())


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
        an initializable iterator after the variables are initialized.

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
    walker = _Walker(api, lambda t: t.name in names, follow_control=True)
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


def _read_variables(api: str, reads: dict[str, _VariableRead], session, cache) -> dict:
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
