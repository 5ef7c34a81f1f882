"""The backwards walk from a region's sinks to its sources: what is lifted, read or refused.

:func:`find_sources` discovers which stage outputs a set of sinks needs;
:func:`queue_pipeline._rebuild.lift.lift` walks the same way to cut the
region out. Both follow NOTE [ Lifting a region ] below; the walk never
modifies the legacy graph.

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
and why: a Python function (``PyFunc``, ``EagerPyFunc``; except for a
region that stays in its graph, see below), a ``Placeholder``
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

A Python function op names its callable by a token in the process's
registry of Python functions, which lives as long as the op's graph. So a
region whose Dataset is built in the legacy graph itself, in the same
process (the dataset engine: ``lift(capture=True)``), keeps ``tf.py_func``,
``tf.numpy_function`` and ``tf.py_function`` stages: the map calls the same
Python callable with the same inputs, and its errors are the same. Anywhere
else (``to_dataset`` into another graph, a serialized Dataset, tf.data
service) they are refused.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Sequence

import tensorflow as tf

from queue_pipeline._core.compat import VARIABLE_OP_TYPES, is_ref_tensor
from queue_pipeline._core.graph import GUARD_SUFFIX
from queue_pipeline.errors import NotRebuildableError

__all__ = ["Walker", "VariableRead", "find_sources", "not_rebuildable", "variable_changes"]

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
class VariableRead:
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


class Walker:
    """One backwards walk; see NOTE [ Lifting a region ]."""

    def __init__(
        self,
        api: str,
        is_source: Callable[[tf.Tensor], bool],
        *,
        follow_control: bool,
        allow_reads: bool = True,
        py_funcs: bool = False,
    ):
        self.api = api
        self.is_source = is_source
        self.follow_control = follow_control
        self.allow_reads = allow_reads
        self.py_funcs = py_funcs
        self.ops: dict[str, tf.Operation] = {}  # region ops, inputs first
        self.sources: dict[str, tf.Tensor] = {}  # sources used, in order of discovery
        self.aliases: dict[str, tf.Tensor] = {}  # tensor name -> what it equals
        self.reads: dict[str, VariableRead] = {}
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
        trial = Walker(
            self.api,
            self.is_source,
            follow_control=False,
            allow_reads=False,
            py_funcs=self.py_funcs,
        )
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
        self.reads[t.name] = VariableRead(t, variable)
        return True

    def _check(self, op: tf.Operation) -> None:
        """Raises NotRebuildableError if `op` cannot be copied into a map function."""
        if op.type in PY_FUNC_TYPES and not self.py_funcs:
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


def find_sources(
    sinks: Sequence[tf.Tensor],
    is_source: Callable[[tf.Tensor], bool],
    *,
    api: str = "lift",
    py_funcs: bool = False,
) -> list[tf.Tensor]:
    """The source tensors that `sinks` depend on, in order of discovery.

    Walks back from `sinks` along data inputs as :func:`lift` does (see
    NOTE [ Lifting a region ]), stopping at tensors for which `is_source`
    returns True; identities of sources resolve to the source.

    Args:
      sinks: dense tensors of one graph.
      is_source: tells whether a tensor is a source (e.g. a reader's value).
      api: the public name used in error messages.
      py_funcs: walk through Python functions (``tf.py_func`` and the like)
        instead of refusing them; see :func:`queue_pipeline._rebuild.lift.lift`.

    Returns:
      The sources reached (each once).

    Raises:
      NotRebuildableError: the walk met an op that cannot be lifted.
    """
    walker = Walker(api, is_source, follow_control=False, py_funcs=py_funcs)
    walker.walk(sinks)
    return list(walker.sources.values())
