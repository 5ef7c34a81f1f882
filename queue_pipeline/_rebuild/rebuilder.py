"""The Rebuilder: a legacy pipeline's plan turned into tf.data streams, stage by stage.

:func:`queue_pipeline.to_dataset` (the public facade, ``rebuild.py``) and the
dataset engine (``_engine/serving.py``) both build on :class:`Rebuilder`: it
turns the tensors a legacy pipeline hands out into the ``tf.data.Dataset``
with the same element structure, dtypes and static shapes, assembled from
the tf.data twins in :mod:`queue_pipeline.data`. The user's own per-record ops between two
stages are lifted out of the legacy graph (see :mod:`queue_pipeline._rebuild.lift`)
and applied with ``Dataset.map``.

NOTE [ Rebuilding from the plan ]
A *stream* is a stage output: a Dataset plus the legacy tensors its
element's components stand for. :meth:`Rebuilder.rebuild` turns any legacy
tensors into a stream in three steps:

1. walk back from the tensors (``_walk.find_sources``) to the stage outputs
   they need: the outputs of a recorded batching call, reader read,
   ``slice_input_producer`` or ``limit_epochs``, and dequeues;
2. build one stream per stage, recursively: batching -> its twin over the
   rebuilt stream of each input list (the joins: one per list, interleaved
   by the twin; lists computed from the same stages: one stream, its records
   dealt to the lists in turn, NOTE [ Records dealt to lists sharing a
   source ] in ``_rebuild/dealing.py``); a reader -> its twin's ``read``/``read_up_to`` over the
   rebuilt work queue; a dequeue from a producer's queue -> the producer's
   twin; a dequeue from a queue no builder recorded but that QueueRunners
   fill with plain enqueue ops (a prefetch queue, as the Object Detection
   API's, or tf-slim's parallel reader) -> the rebuilt enqueued tensors
   interleaved, with ``prefetch(capacity)`` (NOTE [ Queues no builder
   recorded ]);
   several stages feeding one example are zipped (each ``sess.run``
   evaluated each stage once);
3. lift the ops between the stage outputs and the tensors into one function
   and ``map`` it (no map when there are none).

Producers, readers and the values they read are in :mod:`queue_pipeline._rebuild.sources`.

Extension points for other engines: :class:`Rebuilder` records every
:class:`~queue_pipeline._rebuild.lift.LiftedRegion` it maps in :attr:`Rebuilder.regions`,
and a subclass can override :meth:`Rebuilder.apply_region` (e.g. to run a
region on whole batches; it gets the region's role), :meth:`Rebuilder.batch_decoder`,
:meth:`Rebuilder.batching_stream`
and :meth:`Rebuilder.slice_stream`, as the dataset engine (``_engine/serving.py``) does.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping

import numpy as np
import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._rebuild import lift as _lift
from queue_pipeline._rebuild import gathering, graph_model
from queue_pipeline._rebuild import walk as _walk
from queue_pipeline._rebuild.dealing import DealtRegion
from queue_pipeline._rebuild.sources import READER_METHODS, Sources
from queue_pipeline._rebuild.stream import (
    SourceSplit,
    Stream,
    combine,
    keeps_static_shapes,
    leaf_name,
)
from queue_pipeline._core import graph as graph_facts
from queue_pipeline.data import batching as data_batching
from queue_pipeline.data._batch_engine import PositionedDecode

__all__ = ["Rebuilder"]

_API = "to_dataset"  # the API named in errors

_BATCH_ARGS = (
    "batch_size",
    "num_threads",
    "capacity",
    "min_after_dequeue",
    "seed",
    "enqueue_many",
    "shapes",
    "dynamic_pad",
    "allow_smaller_final_batch",
)


def _sinks(leaves) -> list[tf.Tensor]:
    """The dense components of `leaves` (a SparseTensor's three), in order."""
    return [t for leaf in leaves for t in graph_facts.components(leaf)]


def _static_bool(value):
    """`value` as a Python bool if statically known, else None."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    static = tf.get_static_value(value) if isinstance(value, tf.Tensor) else None
    if static is not None and np.ndim(static) == 0:
        return bool(static)
    if isinstance(value, tf.Tensor):
        return None
    return bool(value)


class Rebuilder(Sources):
    """Rebuilds the streams of one legacy graph; see NOTE [ Rebuilding from the plan ].

    Args:
      graph: the legacy graph.
      session: a Session on `graph` for reading variables once (optional).
      api: the public name used in error messages.
      capture_variables: lift variable reads as reads in the legacy graph
        (``_lift.lift(capture=True)``) instead of values read once through
        `session`; the Dataset must then be built in `graph` and started by
        an initializable iterator.

    Attributes:
      regions: every lifted region mapped so far, in order, as
        ``(role, LiftedRegion)`` (role: what the region feeds).
    """

    def __init__(
        self,
        graph: tf.Graph,
        *,
        session: tf.compat.v1.Session | None = None,
        api: str = _API,
        capture_variables: bool = False,
    ) -> None:
        self.graph = graph
        self.session = session
        self.api = api
        self.capture_variables = capture_variables
        self.regions: list[tuple[str, _lift.LiftedRegion]] = []
        self._values: dict[str, np.ndarray] = {}
        recorded = plan.plan_nodes(graph)
        # NOTE [ Stages read from the graph ] in _rebuild/graph_model.py
        self._nodes = recorded + graph_model.graph_nodes(graph, recorded)
        self._by_output: dict[str, plan.PlanNode] = {}
        self._fillers: dict[str, plan.PlanNode] = {}
        for node in self._nodes:
            if self._is_stage(node):
                for leaf in node.outputs:
                    for t in tf.nest.flatten(leaf, expand_composites=True):
                        name = getattr(t, "name", None)
                        if name is not None:
                            self._by_output.setdefault(name, node)
            queue_op = graph_facts.queue_op(node.fills)
            if queue_op is not None:
                self._fillers.setdefault(queue_op.name, node)
        self._scope: set[str] | None = None
        self._order: dict[str, int] | None = None
        self._split: SourceSplit | None = None
        # NOTE [ Per-record counters ]: counter op name -> the variable's value
        # when the input starts; None: counters are not sources.
        self.counter_starts: dict[str, int] | None = None

    @staticmethod
    def _is_stage(node: plan.PlanNode) -> bool:
        return (
            node.kind in plan.BATCHING_KINDS
            or node.kind in ("slice_input_producer", "limit_epochs")
            or node.kind.endswith(tuple("." + m for m in READER_METHODS))
        )

    # ------------------------------------------------------------------ public

    def restrict_to(self, leaves) -> None:
        """Counts only the consumers of work queues that `leaves` depend on."""
        self._scope = graph_facts.upstream_ops(leaves, self.queue_runners())

    def queue_runners(self) -> list:
        """The runners that fill the graph's queues (an extension point).

        The dataset engine adds the runners it took out of the collection:
        they still say what fills a queue it rebuilds again.
        """
        return self.graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)

    def has_plan(self) -> bool:
        """Whether a recorded builder is upstream of the leaves of :meth:`restrict_to`."""
        for node in self._nodes:
            ops = [
                getattr(t, "op", None)
                for t in tf.nest.flatten(node.outputs, expand_composites=True)
            ] + [graph_facts.queue_op(node.fills)]
            if any(
                op is not None and (self._scope is None or op.name in self._scope) for op in ops
            ):
                return True
        return False

    def rebuild(
        self,
        leaves,
        *,
        pack: Callable[[list], Any] | None = None,
        role: str = "output",
        exact: bool = False,
    ) -> Stream:
        """The stream of `leaves` (legacy Tensors or SparseTensors).

        Args:
          leaves: what one element holds, in order.
          pack: builds the element from the list of component values; default:
            the single component, or a tuple of them.
          role: what the stream feeds, for :attr:`regions`.
          exact: without `pack`, require the default element form (a bare
            component for one leaf); else a one-tuple stream may be returned
            as is (the twins treat both alike).

        Returns:
          A :class:`Stream` whose leaves are `leaves`.

        Raises:
          NotRebuildableError: something upstream cannot be rebuilt.
        """
        leaves = list(leaves)
        sinks = _sinks(leaves)
        base = self._base_stream(sinks)
        region = self._lift_over(sinks, base)
        form = "bare" if len(leaves) == 1 else "tuple"
        if (
            pack is None
            and region.is_identity
            and base.form in (form, "tuple")
            and (not exact or base.form == form)
            and [leaf_name(x) for x in base.leaves] == [leaf_name(x) for x in leaves]
            and keeps_static_shapes(base.dataset, leaves)
        ):
            return Stream(base.dataset, leaves, base.form)
        self.regions.append((role, region))
        return self.apply_region(base, region, leaves, pack, role=role)

    def _source_groups(self, sinks: list[tf.Tensor]) -> dict[str, list[tf.Tensor]]:
        """The stage outputs `sinks` need, grouped by the stream each belongs to."""
        sources = _walk.find_sources(
            sinks, self.is_source, api=self.api, py_funcs=self.capture_variables
        )
        groups: dict[str, list[tf.Tensor]] = {}
        for t in sources:
            groups.setdefault(self._stream_key(t), []).append(t)
        return groups

    def _base_stream(self, sinks: list[tf.Tensor]) -> Stream:
        """The stages `sinks` need, each rebuilt once and zipped."""
        groups = self._source_groups(sinks)
        return combine([self._build(key, tensors) for key, tensors in groups.items()])

    def _lift_over(self, sinks: list[tf.Tensor], base: Stream) -> _lift.LiftedRegion:
        """The per-record ops from the components of `base` to `sinks`."""
        return _lift.lift(
            sinks,
            [t for leaf in base.leaves for t in graph_facts.components(leaf)],
            session=self.session,
            api=self.api,
            values=self._values,
            capture=self.capture_variables,
        )

    def apply_region(
        self,
        base: Stream,
        region: _lift.LiftedRegion | DealtRegion,
        leaves: list,
        pack: Callable[[list], Any] | None,
        *,
        role: str = "output",
        parallel: int | None = tf.data.AUTOTUNE,
        keyed: bool = False,
    ) -> Stream:
        """Maps `region` over `base`; returns the stream of `leaves`.

        Override to run regions differently (e.g. vectorized over batches).

        Args:
          base: the stream whose elements are the region's sources.
          region: the lifted per-record ops.
          leaves: the legacy values the mapped elements stand for.
          pack: builds the final structure from the values, or None.
          role: what the region feeds, e.g. ``"batch list 0"`` (as recorded
            in :attr:`regions`).
          parallel: ``num_parallel_calls`` of the map (None: sequential,
            which keeps per-record random ops reproducible).
          keyed: `region` reads the record's position (:data:`lift.POSITION`,
            a region made stateless): the map numbers the records first. A
            :class:`~queue_pipeline._rebuild.dealing.DealtRegion` always does.
        """
        keyed = keyed or isinstance(region, DealtRegion)
        sparse = [isinstance(leaf, tf.SparseTensor) for leaf in leaves]

        def per_record(*args, position=None):
            sources = graph_facts.dense_components(base.flatten(args))
            outputs = region(*sources, position=position)
            values, i = [], 0
            for leaf, is_sparse in zip(leaves, sparse):
                if is_sparse:
                    value = tf.SparseTensor(*outputs[i : i + 3])
                    value.set_shape(value.shape.merge_with(leaf.shape))
                    values.append(value)
                    i += 3
                else:
                    values.append(outputs[i])
                    i += 1
            if pack is not None:
                return pack(values)
            return values[0] if len(values) == 1 else tuple(values)

        def numbered(position, element):
            args = element if isinstance(element, tuple) and base.form != "bare" else (element,)
            return per_record(*args, position=position)

        # No AutoGraph: the function is plain graph building (imports a GraphDef).
        if keyed:
            dataset = base.dataset.enumerate().map(
                tf.autograph.experimental.do_not_convert(numbered), num_parallel_calls=parallel
            )
        else:
            dataset = base.dataset.map(
                tf.autograph.experimental.do_not_convert(per_record), num_parallel_calls=parallel
            )
        if pack is not None:
            return Stream(dataset, leaves, "packed")
        return Stream(dataset, leaves, "bare" if len(leaves) == 1 else "tuple")

    # ----------------------------------------------------------------- sources

    def is_source(self, t: tf.Tensor) -> bool:
        """Whether `t` starts a stream: a stage's output (recorded or read), a dequeue, a read."""
        return (
            t.name in self._by_output
            or t.op.type in graph_facts.DEQUEUE_OPS
            or t.op.type in graph_facts.READ_OPS
            or (self.counter_starts is not None and t.op.type in graph_facts.COUNT_UP_TO_OPS)
        )

    def _stream_key(self, t: tf.Tensor) -> str:
        node = self._by_output.get(t.name)
        return f"node:{node.index}" if node is not None else f"op:{t.op.name}"

    def _build(self, key: str, used: list[tf.Tensor]) -> Stream:
        node = self._by_output.get(used[0].name)
        if node is None:
            op = used[0].op
            if op.type in graph_facts.READ_OPS:
                raise _walk.not_rebuildable(
                    self.api,
                    op,
                    "is a reader op that no queue_pipeline reader recorded "
                    "(e.g. TF's own tf.compat.v1 reader), so its reader is unknown",
                    "create the reader with queue_pipeline (queue_pipeline.TextLineReader "
                    "and the others).",
                )
            if op.type in graph_facts.COUNT_UP_TO_OPS:
                return self._counter_stream(op)
            return self._dequeue_stream(op)
        if node.kind in plan.BATCHING_KINDS:
            return self.batching_stream(node)
        if node.kind == "slice_input_producer":
            return self.slice_stream(node)
        if node.kind == "limit_epochs":
            limited = node.outputs[0]
            inner = self.rebuild([limited.op.inputs[0]], role="limit_epochs")
            return Stream(inner.dataset.take(node.args["num_epochs"]), [limited], inner.form)
        return self._reader_stream(node, used)

    # ---------------------------------------------------------------- batching

    def batching_stream(self, node: plan.PlanNode) -> Stream:
        """The stream a batching call delivers: its twin over its rebuilt inputs.

        An extension point, like :meth:`apply_region` and :meth:`slice_stream`.
        """
        args = node.args
        num_lists = args.get("num_lists", 1)
        inputs = list(node.inputs)
        size = len(inputs) // num_lists
        keep = args.get("keep_input", True)
        static_keep = _static_bool(keep)
        lists = []
        for i in range(num_lists):
            leaves = inputs[i * size : (i + 1) * size]
            if static_keep is None:
                leaves = leaves + [keep]
            lists.append(leaves)
        roles = [f"{node.kind} list {i}" for i in range(num_lists)]
        datasets = [s.dataset for s in self.rebuild_each(lists, roles)]
        twin = self.batching_twin(node)
        params = inspect.signature(twin).parameters
        kwargs = {name: args[name] for name in _BATCH_ARGS if name in params and name in args}
        kwargs["batch_size"] = self._value(args["batch_size"], "batch_size")
        if isinstance(kwargs.get("shapes"), Mapping):
            shapes = kwargs["shapes"]
            kwargs["shapes"] = [shapes[k] for k in sorted(shapes, key=str)]
        if "keep_input" in params:
            kwargs["keep_input"] = size if static_keep is None else static_keep
        decode = self.batch_decoder(node)
        if decode is not None:
            kwargs["decode"] = decode
        first = datasets if node.kind.endswith("_join") else datasets[0]
        dataset = twin(first, **kwargs)
        outputs = list(node.outputs)
        return Stream(dataset, outputs, "bare" if len(outputs) == 1 else "tuple")

    def batching_twin(self, node: plan.PlanNode) -> Callable:
        """The tf.data twin that batches `node`'s rebuilt inputs (its own, by default).

        Called after the inputs are rebuilt; an extension point (the engine
        batches inputs it already shuffled with ``batch``).
        """
        return getattr(data_batching, node.kind)

    def rebuild_each(
        self, leaf_lists: list[list], roles: list[str], *, exact: bool = False
    ) -> list[Stream]:
        """The streams of several lists of leaves (a join's lists, a queue's enqueue ops).

        Lists that share a source (the four lists of inception's
        ``batch_join`` over one reader's value, or over one
        ``slice_input_producer``'s row; two enqueue ops over one dequeue)
        take turns at it in TF: each record goes through one of them. When
        every list reads the same stages, they are built once and their
        records dealt to the lists in turn: the result is then ONE stream,
        of all lists' records (NOTE [ Records dealt to lists sharing a
        source ] in ``_rebuild/dealing.py``). When the lists share some
        stages and read others of their own, each list's stream is built
        over a share of the shared producers' rows (see
        :meth:`split_sources`), so that together they read every row once.
        Otherwise there is one stream per list. `exact` is :meth:`rebuild`'s.

        Raises:
          NotRebuildableError: the lists share some sources whose rows cannot
            be split (they start from no producer).
        """
        keys = []
        if len(leaf_lists) > 1:
            keys = [set(self._source_groups(_sinks(leaves))) for leaves in leaf_lists]
        shared = sorted({k for i, a in enumerate(keys) for b in keys[i + 1 :] for k in a & b})
        if not shared:
            return [
                self.rebuild(leaves, role=role, exact=exact)
                for leaves, role in zip(leaf_lists, roles)
            ]
        if all(k == keys[0] for k in keys):
            return [self._dealt_stream(leaf_lists, roles)]
        streams = []
        for i, (leaves, role) in enumerate(zip(leaf_lists, roles)):
            with self.split_sources(i, len(leaf_lists)) as split:
                streams.append(self.rebuild(leaves, role=role, exact=exact))
            if not split.used:
                raise _walk.not_rebuildable(
                    self.api,
                    self._key_op(shared[0]),
                    f"is read by {len(leaf_lists)} lists (or enqueue ops) in turn, along "
                    "with sources of their own, and its rows come from no producer that "
                    "can be split between them",
                    "give each list its own reader, or read the rows from a "
                    "string_input_producer or slice_input_producer.",
                )
        return streams

    def _key_op(self, key: str) -> tf.Operation:
        """An op of the stage a stream key names (for error messages)."""
        kind, _, name = key.partition(":")
        if kind == "node":
            node = next(n for n in self._nodes if str(n.index) == name)
            first = tf.nest.flatten(node.outputs, expand_composites=True)[0]
            return first.op
        return self.graph.get_operation_by_name(name)

    def _dealt_stream(self, leaf_lists: list[list], roles: list[str]) -> Stream:
        """Lists reading the same stages: one stream, record ``k`` through list ``k mod N``.

        See NOTE [ Records dealt to lists sharing a source ] in
        ``_rebuild/dealing.py``. The stream's leaves are the first list's.
        """
        sinks = [
            [c for leaf in leaves for c in graph_facts.components(leaf)] for leaves in leaf_lists
        ]
        base = self._base_stream([t for s in sinks for t in s])
        parts = []
        for part_sinks, role in zip(sinks, roles):
            region = self._lift_over(part_sinks, base)
            self.regions.append((role, region))
            parts.append(region)
        role = f"{roles[0]} .. {roles[-1].rpartition(' ')[2]} (records dealt in turn)"
        dealt = DealtRegion(tuple(parts))
        return self.apply_region(base, dealt, list(leaf_lists[0]), None, role=role)

    def batch_decoder(self, node: plan.PlanNode) -> Callable | PositionedDecode | None:
        """A function the twin of `node` maps over each batch (its `decode`), or None.

        An extension point, called by :meth:`batching_stream` once the inputs
        of `node` are rebuilt: the dataset engine returns the batch form of a
        per-record region it left out of the inputs.
        """
        return None

    # ---------------------------------------------------------------- producers

    def _prefetch_stream(self, op: tf.Operation) -> Stream:
        """A queue no builder recorded; see NOTE [ Queues no builder recorded ]."""
        return gathering.gathering_stream(self, op)


# --------------------------------------------------------------------- structure
