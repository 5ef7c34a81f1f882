"""The dataset engine: each legacy batching call served by a tf.data iterator in the user's graph.

Under ``queue_pipeline.engine("dataset")`` (or ``QUEUE_PIPELINE_ENGINE=dataset``)
every batching function (``batch``, ``shuffle_batch``, the joins, ``maybe_*``)
first builds its faithful queue graph, which records its plan node, then
:func:`serve` rebuilds the pipeline behind the call with the rebuilder of
:mod:`queue_pipeline.rebuild`, inside the same graph, and returns the
``get_next()`` of a one-shot iterator over it, in the caller's structure and
with TF 1.x's static shapes. A pipeline that cannot be rebuilt keeps its
faithful queue graph (the *fallback*), and the reason is logged once.

NOTE [ The dataset engine ]
What a legacy program sees, and why:

* **The returned tensors** are the components of ``IteratorGetNext`` of a
  one-shot iterator (``tf.compat.v1.data.make_one_shot_iterator``), packed
  like the faithful call's result (list, dict or bare tensor; SparseTensors
  stay SparseTensors), with the faithful result's static shapes merged in.
  A one-shot iterator needs no initializer, so plain ``Session`` loops,
  ``MonitoredTrainingSession`` and ``Supervisor`` work unchanged, and each
  new Session starts the input from the beginning, as a queue pipeline
  whose local variables are re-initialized does. It cannot capture stateful
  resources, and a rebuilt pipeline never does (the rebuilder refuses lookup
  tables and turns the variables it reads into constants); should it fail
  anyway, the call falls back to the queue engine.
* **End of input** is ``OutOfRangeError`` from ``get_next`` (``num_epochs``
  is handled by the Dataset; the faithful ``epochs`` local variables still
  exist, so ``local_variables_initializer()`` works and changes nothing).
* **Queue runners.** The faithful runners of the stages the Dataset replaces
  are removed from the ``"queue_runners"`` collection, so no thread fills a
  queue nobody reads; a runner stays when a consumer outside the rebuilt
  pipeline also takes from its queue. Instead, one :class:`_ServedRunner`
  per call stands in the collection: its ``create_threads`` returns ``[]``,
  so ``start_queue_runners``, ``MonitoredTrainingSession`` and
  ``Supervisor`` start nothing and do not warn about an empty collection. It
  exports to a meta graph as a runner with no enqueue op (no thread). A
  later call that falls back and needs a removed runner (a producer queue
  shared with it) puts that runner back.
* **Fill summaries** of the replaced stages (the batching queue's, the
  producers') keep TF's tags (``batch/fraction_of_32_full``, ...) in the
  ``SUMMARIES`` collection; their value is the constant 1.0: there is no
  queue to fill, tf.data's buffers are autotuned, and the unused faithful
  queue's 0.0 would read as a starved input.
* **Determinism.** When the pipeline is seeded (a graph-level seed, or a
  ``seed`` on a producer or batcher upstream) the Dataset runs with
  ``tf.data.Options().deterministic = True`` and every per-record region
  with stateful ops (random distortions) runs in a sequential ``map``, so the
  order and the random values are the same on every run. Without a seed,
  ``num_threads > 1`` leaves the order free, as TF 1.x's threads did.
* **Checkpoints.** The iterator's state is a saveable object in the
  ``SAVEABLE_OBJECTS`` collection
  (``tf.compat.v1.data.experimental.make_saveable_from_iterator``), so a
  default ``tf.compat.v1.train.Saver()`` (and ``MonitoredTrainingSession``'s)
  saves and restores the input position, shuffle buffers included, in the
  same or a rebuilt graph; a checkpoint without it (trained natively or on
  queues) still restores, from the start of the input (NOTE [ Checkpoints
  without an input position ] in ``_engine/input_position.py``). The state of
  per-record random ops is not saved (external state is ignored): after a
  restore the same records come, in the same order, but their random
  distortions start a fresh stream.
* **Vectorized decoding.** When :mod:`queue_pipeline._engine.vectorize` is present
  and the per-record region feeding a batching call has a batch form, the
  raw records are shuffled and batched first and the region runs once per
  batch (see :class:`_EngineRebuilder`); otherwise each record is decoded by
  a parallel ``map`` before batching. Which path each call took is logged
  once (INFO).
* **Large preloaded arrays** (``slice_input_producer`` over constants of
  16 MiB or more): see NOTE [ Variables read when the input starts ]
A legacy pipeline reads its variables when it runs: the classic
``fully_connected_preloaded_var`` builds ``slice_input_producer`` over
variables created with ``collections=[]`` whose initializers are run with a
``feed_dict`` after the graph is built and before ``start_queue_runners``.
The engine builds its Dataset when the batching call is made, so it cannot
read them then. Its rebuilder lifts variable reads as reads in the legacy
graph (``_lift.lift(capture=True)``): the Dataset captures the read tensors
(``from_tensor_slices`` of a variable, or a per-record op reading one), and
such a Dataset gets an initializable iterator, which the call's stand-in
runner initializes when ``start_queue_runners`` (or MonitoredTrainingSession,
or Supervisor) starts it, once per session: the variables are read then, as
the faithful runners would read them. Variables that change while the input
runs are refused as in ``to_dataset`` (the call falls back). A pipeline
reading no variable keeps its one-shot iterator, which needs no start.

NOTE [ Large preloaded arrays ].
* **Not covered:** a pipeline with no batching call (a reader's value read
  directly) stays on queues; tensors fetched by the faithful graph's names
  (``"batch:0"``) read the unused faithful queue; variables the per-record
  ops read need a Session at build time and fall back.

NOTE [ Large preloaded arrays ]
A Session optimizes (grappler) and copies every subgraph it runs for the
first time, constants included: a 188 MB ``tf.constant`` behind a Dataset
costs 5 to 18 seconds before the first batch on 2 cores (TF's own queue
pipelines pay it too, in their runner's first run). So ``slice_input_producer``
over constants of ``LARGE_ROWS_BYTES`` or more is rebuilt without a second
copy in the graph: the Dataset produces the row *indices* (the
``range_input_producer`` twin, with the same ``num_epochs``, ``shuffle`` and
``seed``, hence the same order as the slice twin) and gathers the rows, 1,024
at a time, from the arrays held in memory with a ``tf.numpy_function``
(stateless, so the iterator's state still checkpoints). The graph then holds
a Python function: it runs only in the process that built it (a meta graph
exported from it cannot run elsewhere). What is left is the legacy graph's
own constant, which a Session copies for every new fetch signature (0.23 s
for 188 MB here).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
import threading
import warnings
import weakref
from typing import Any, Callable

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import queue_runner_pb2

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._rebuild import rebuilder as rebuild
from queue_pipeline._engine import input_position as _input_position
from queue_pipeline.data import producers as data_producers
from queue_pipeline._core.compat import QUEUE_RUNNERS, SUMMARIES, PrivateKey, logger
from queue_pipeline.errors import NotRebuildableError

__all__ = ["serve"]

# See NOTE [ Large preloaded arrays ].
LARGE_ROWS_BYTES = 16 << 20
_GATHER_ROWS = 1024
_LOCK = threading.Lock()
# graph -> keys of the messages already logged for it ("once" per pipeline).
_LOGGED: "weakref.WeakKeyDictionary[tf.Graph, set]" = weakref.WeakKeyDictionary()
# The faithful runners the engine took out of a graph's collection, kept in
# that graph (a dictionary keyed by graph would keep it alive).
_RETIRED = PrivateKey("retired queue runners")


def serve(node: plan.PlanNode, result, *, queue, scope: str):
    """Serves a batching call from a tf.data iterator; see NOTE [ The dataset engine ].

    Args:
      node: the plan node the faithful build just recorded.
      result: the faithful result (the caller's structure).
      queue: the faithful batching queue.
      scope: the call's name scope (e.g. ``"shuffle_batch/"``).

    Returns:
      The iterator's ``get_next()`` in `result`'s structure, or `result`
      itself when the pipeline cannot be rebuilt (logged once, as a warning).
    """
    graph = tf.compat.v1.get_default_graph()
    api = node.kind
    where = f"{api} '{scope.rstrip('/')}'"
    leaves = tf.nest.flatten(result)
    try:
        served, paths = _build(graph, node, leaves, scope)
    except Exception as e:  # noqa: BLE001 - any failure keeps the faithful graph
        _fall_back(graph, where, leaves, e)
        return result
    iterator, values, initializer = served
    faithful = _runner_of(graph, queue)
    retired = _retire_runners(graph, leaves)
    tf.compat.v1.add_to_collection(QUEUE_RUNNERS, _ServedRunner(queue, faithful, initializer))
    _replace_fill_summaries(graph, {_queue_op_name(qr.queue) for qr in retired}, scope)
    _add_saveable(iterator)
    out = tf.nest.pack_sequence_as(result, values)
    plan.record(
        api, dict(node.args, engine="dataset"), node.inputs, tf.nest.flatten(out), graph=graph
    )
    _log_once(
        graph,
        ("path", where),
        logging.INFO,
        "queue_pipeline dataset engine: %s runs on tf.data (%s).",
        where,
        "; ".join(paths) or "no per-record ops",
    )
    return out


# --------------------------------------------------------------------- building


def _build(graph: tf.Graph, node: plan.PlanNode, leaves: list, scope: str):
    """((iterator, flat values, initializer or None), paths) of the rebuilt pipeline.

    Raises whatever stops the rebuild (the caller falls back).
    """
    deterministic = _is_seeded(graph, leaves)
    rebuilder = _EngineRebuilder(
        graph,
        api=f"{node.kind} (dataset engine)",
        deterministic=deterministic,
        vectorizer=_vectorizer(),
    )
    rebuilder.restrict_to(leaves)
    with _quiet_tf_data(), tf.compat.v1.name_scope(f"{scope.rstrip('/')}_dataset/"):
        stream = rebuilder.rebuild(leaves, exact=True)
        dataset = stream.dataset
        if deterministic:
            options = tf.data.Options()
            options.deterministic = True
            dataset = dataset.with_options(options)
        if any(region.captured for _, region in rebuilder.regions):
            iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
            initializer = iterator.initializer
        else:
            iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
            initializer = None
        element = iterator.get_next()
        values = [element] if len(leaves) == 1 else list(element)
        if len(values) != len(leaves):
            raise AssertionError(f"{len(values)} components for {len(leaves)} outputs")
        values = [_merge_static_shape(value, leaf) for value, leaf in zip(values, leaves)]
    return (iterator, values, initializer), rebuilder.paths


def _merge_static_shape(value, leaf):
    """`value` with exactly the faithful `leaf`'s static shape (raises if incompatible).

    Where the Dataset knows more than TF 1.x's queue (a batched SparseTensor's
    dense shape is unknown after a queue, ``[None, None]``; tf.data often
    knows it), the shape is relaxed to TF's through a
    ``placeholder_with_default``, which passes the value through at run time.
    """
    if isinstance(value, tf.SparseTensor) != isinstance(leaf, tf.SparseTensor):
        raise TypeError(f"the rebuilt component {value} is not of the faithful kind {leaf}")
    if isinstance(value, tf.SparseTensor):
        dense_shape = value.dense_shape
        if value.shape.merge_with(leaf.shape) != leaf.shape:
            dense_shape = tf.compat.v1.placeholder_with_default(
                dense_shape, dense_shape.shape, name="sparse_shape"
            )
        value = tf.SparseTensor(value.indices, value.values, dense_shape)
        if value.shape.merge_with(leaf.shape) != value.shape:
            value.set_shape(leaf.shape)
        return value
    if value.dtype != leaf.dtype:
        raise TypeError(
            f"the rebuilt component has dtype {value.dtype}, the faithful one {leaf.dtype}"
        )
    if value.shape.merge_with(leaf.shape) != leaf.shape:
        return tf.compat.v1.placeholder_with_default(value, leaf.shape, name="static_shape")
    value.set_shape(leaf.shape)
    return value


def _is_seeded(graph: tf.Graph, leaves: list) -> bool:
    if graph.seed is not None:
        return True
    return any(n.args.get("seed") is not None for n in plan.plan_for(leaves))


def _vectorizer():
    """The batch-vectorizer module, or None while it does not exist."""
    try:
        return importlib.import_module("queue_pipeline._engine.vectorize")
    except ImportError:
        return None


class _AbslFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "Changing the value of option deterministic" not in record.getMessage()


@contextlib.contextmanager
def _quiet_tf_data():
    """Silences tf.data's construction-time notes the engine makes on purpose.

    Overriding a twin's ``deterministic=False`` (absl log), the graph seed
    reaching lifted random ops (a UserWarning) and the deprecation of
    ``make_saveable_from_iterator`` are all expected here.
    """
    absl = logging.getLogger("absl")
    quiet = _AbslFilter()
    absl.addFilter(quiet)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Seed .* from outer graph")
            yield
    finally:
        absl.removeFilter(quiet)


# --------------------------------------------------------------------- rebuilder


@dataclasses.dataclass
class _Pending:
    """A region to run on whole batches after the batching twin."""

    base: rebuild.Stream
    vectorized: Callable


class _EngineRebuilder(rebuild.Rebuilder):
    """The rebuilder with the engine's two changes to how regions are mapped.

    * Determinism: with `deterministic`, a region holding stateful ops
      (random distortions) maps sequentially; a parallel map would hand out
      the random draws in thread order.
    * Vectorized decoding: a region that feeds the only list of a batching
      call with no per-example options (`shapes`, `dynamic_pad`,
      `enqueue_many`, a `keep_input` tensor) and that the vectorizer accepts
      is not mapped per record: the raw records go through the batching twin
      (record-level shuffle, then batch) and the vectorized region is mapped
      on each batch (see :meth:`batching_stream`).

    Attributes:
      paths: one line per region mapped, saying which path it took and why.
    """

    def __init__(self, graph: tf.Graph, *, api: str, deterministic: bool, vectorizer) -> None:
        # See NOTE [ Variables read when the input starts ].
        super().__init__(graph, api=api, capture_variables=True)
        self.deterministic = deterministic
        self.vectorizer = vectorizer
        self.paths: list[str] = []
        self._batching: list[plan.PlanNode] = []
        self._pending: dict[int, _Pending] = {}

    def restrict_to(self, leaves) -> None:
        """As the rebuilder's, also counting the consumers behind served calls upstream.

        A call the engine already served hands out an iterator's tensors, so
        the graph no longer connects them to that call's readers; its plan
        node does.
        """
        leaves = list(leaves)
        served = [n for n in plan.plan_nodes(self.graph) if n.args.get("engine") == "dataset"]
        added: set[int] = set()
        while True:
            scope = graph_facts.upstream_ops(leaves, self.graph.get_collection(QUEUE_RUNNERS))
            more = [
                n
                for n in served
                if n.index not in added
                and any(
                    t.op.name in scope
                    for leaf in n.outputs
                    for t in tf.nest.flatten(leaf, expand_composites=True)
                )
            ]
            if not more:
                break
            for n in more:
                added.add(n.index)
                leaves += [x for x in n.inputs if isinstance(x, (tf.Tensor, tf.SparseTensor))]
        super().restrict_to(leaves)

    def batching_stream(self, node: plan.PlanNode) -> rebuild.Stream:
        self._batching.append(node)
        try:
            stream = super().batching_stream(node)
        finally:
            self._batching.pop()
        pending = self._pending.pop(node.index, None)
        if pending is None:
            return stream
        leaves = list(node.outputs)

        def decode(*args):
            outputs = pending.vectorized(*graph_facts.dense_components(pending.base.flatten(args)))
            outputs = [_at_least(value, leaf.shape) for value, leaf in zip(outputs, leaves)]
            return outputs[0] if len(outputs) == 1 else tuple(outputs)

        dataset = stream.dataset.map(
            tf.autograph.experimental.do_not_convert(decode), num_parallel_calls=tf.data.AUTOTUNE
        )
        return rebuild.Stream(dataset.prefetch(tf.data.AUTOTUNE), leaves, stream.form)

    def apply_region(
        self,
        base: rebuild.Stream,
        region,
        leaves: list,
        pack: Callable[[list], Any] | None,
        *,
        role: str = "output",
        parallel=tf.data.AUTOTUNE,
    ) -> rebuild.Stream:
        node = self._batching[-1] if self._batching else None
        path = "per-record map"
        if node is not None and role.startswith(f"{node.kind} list "):
            why_not = self._why_not_vectorized(node, region, leaves, pack, base)
            if why_not is None:
                vectorized, why_not = _vectorize(
                    self.vectorizer, region, self._fixed_lengths(region)
                )
                if vectorized is not None:
                    self._pending[node.index] = _Pending(base, vectorized)
                    self.paths.append(f"{role}: vectorized, decoded once per batch")
                    return rebuild.Stream(base.dataset, list(base.leaves), base.form, base.parts)
            path += f" ({why_not})"
        stateful = sorted({op.type for op in region.ops if op.op_def.is_stateful})
        if self.deterministic and stateful:
            self.paths.append(f"{role}: {path}, sequential for determinism ({', '.join(stateful)})")
            return super().apply_region(base, region, leaves, pack, role=role, parallel=None)
        self.paths.append(f"{role}: {path}")
        return super().apply_region(base, region, leaves, pack, role=role, parallel=parallel)

    def slice_stream(self, node: plan.PlanNode) -> rebuild.Stream:
        """``slice_input_producer``; large preloaded arrays stay out of the graph.

        See NOTE [ Large preloaded arrays ]. Smaller or computed rows take
        the rebuilder's own path (``from_tensor_slices`` of the values).
        """
        rows = [self._rows(t) for t in node.inputs]
        arrays = [r for r in rows if isinstance(r, np.ndarray)]
        if (
            len(arrays) != len(rows)
            or sum(a.nbytes for a in arrays) < LARGE_ROWS_BYTES
            or len({a.shape[0] if a.ndim else -1 for a in arrays}) != 1
            or arrays[0].ndim == 0
            or arrays[0].shape[0] == 0
        ):
            return super().slice_stream(node)
        args = node.args
        indices = data_producers.range_input_producer(
            arrays[0].shape[0],
            num_epochs=args["num_epochs"],
            shuffle=args["shuffle"],
            seed=args["seed"],
            capacity=args["capacity"],
        )
        leaves = list(node.outputs)
        dtypes = [leaf.dtype for leaf in leaves]

        def gather(index):
            return [np.asarray(a[index]) for a in arrays]

        def rows_of(index):
            values = tf.numpy_function(
                gather, [index], dtypes, stateful=False, name="preloaded_rows"
            )
            for value, array in zip(values, arrays):
                value.set_shape((None,) + array.shape[1:])
            return tuple(values)

        dataset = (
            indices.batch(_GATHER_ROWS).map(rows_of, num_parallel_calls=tf.data.AUTOTUNE).unbatch()
        )
        self.paths.append(
            f"slice_input_producer: {sum(a.nbytes for a in arrays):,} bytes "
            "of preloaded rows gathered in memory, not embedded in the graph"
        )
        return rebuild.Stream(dataset, leaves, "tuple")

    def _fixed_lengths(self, region) -> dict[str, int]:
        """Sources that are a FixedLengthRecordReader's value: name -> record bytes."""
        lengths = {}
        for node in plan.plan_nodes(self.graph):
            if node.kind == "FixedLengthRecordReader.read" and len(node.outputs) == 2:
                value = node.outputs[1]
                if any(s.name == value.name for s in region.sources):
                    lengths[value.name] = int(node.args["record_bytes"])
        return lengths

    def _why_not_vectorized(self, node, region, leaves, pack, base) -> str | None:
        """Why the region feeding `node` must run per record, or None if it need not."""
        if self.vectorizer is None:
            return "queue_pipeline._engine.vectorize is not available"
        args = node.args
        keep = args.get("keep_input", True)
        keep_true = keep is True or (
            isinstance(keep, tf.Tensor) and tf.get_static_value(keep) is True
        )
        for name, bad in (
            ("tensors_list", args.get("num_lists", 1) != 1),
            ("enqueue_many", bool(args.get("enqueue_many"))),
            ("dynamic_pad", bool(args.get("dynamic_pad"))),
            ("shapes", args.get("shapes") is not None),
            ("keep_input", not keep_true),
        ):
            if bad:
                return f"`{name}` of {node.kind} works on decoded examples"
        if pack is not None or not region.sources:
            return "the region has no record input"
        if any(isinstance(x, tf.SparseTensor) for x in list(leaves) + list(base.leaves)):
            return "SparseTensor components"
        return None


def _vectorize(module, region, fixed_lengths: dict[str, int]):
    """(function on batches, None) or (None, why not) from the vectorizer `module`."""
    refusal = getattr(module, "NotVectorizable", None)
    try:
        result = module.vectorize(region, fixed_lengths=fixed_lengths or None)
    except Exception as e:  # noqa: BLE001 - a vectorizer bug must not break the build
        return None, f"the vectorizer failed: {type(e).__name__}: {e}"
    if (
        result is None
        or (isinstance(refusal, type) and isinstance(result, refusal))
        or not callable(result)
    ):
        return None, str(result)
    return result, None


def _at_least(value: tf.Tensor, shape: tf.TensorShape) -> tf.Tensor:
    """`value`, checked at run time to have `shape` where its static shape is vaguer."""
    value = tf.convert_to_tensor(value)
    if (
        shape.rank is None
        or value.shape.is_fully_defined()
        or value.shape.merge_with(shape) == value.shape
    ):
        return value
    return tf.ensure_shape(value, shape)


# ----------------------------------------------------------------------- runners


class _ServedRunner:
    """Stands in the ``"queue_runners"`` collection for a call the Dataset serves.

    It has a QueueRunner's interface (TF's meta-graph exporter reads
    ``queue``, ``enqueue_ops``, ``close_op``, ``cancel_op`` and the closed
    exception types) but no enqueue op, so it starts no thread. When the
    call's iterator is initializable (the pipeline reads variables), starting
    the runner initializes it, once per session; see NOTE [ Variables read
    when the input starts ].
    """

    def __init__(self, queue, faithful, initializer=None) -> None:
        self._initializer = initializer
        self._started: "weakref.WeakSet" = weakref.WeakSet()
        self._queue = queue
        self._enqueue_ops: list = []
        close_op = getattr(faithful, "close_op", None)
        cancel_op = getattr(faithful, "cancel_op", None)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = (
            cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True)
        )
        self._queue_closed_exception_types = (tf.errors.OutOfRangeError,)
        self.exceptions_raised: list = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: self._enqueue_ops)
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    queue_closed_exception_types = property(lambda self: self._queue_closed_exception_types)
    name = property(lambda self: self._queue.name)

    def create_threads(self, sess, coord=None, daemon=False, start=False) -> list:
        """Returns ``[]``: the Dataset runs its own threads inside the session.

        Side effect: the first call for `sess` runs the iterator's
        initializer, if it has one (the variables it reads are read then).
        """
        del coord, daemon, start
        if self._initializer is not None:
            with _LOCK:
                first = sess not in self._started
                self._started.add(sess)
            if first:
                sess.run(self._initializer)
        return []

    def to_proto(self, export_scope=None):
        """A ``QueueRunnerDef`` with no enqueue op, or None outside `export_scope`."""
        name = self._queue.queue_ref.op.name
        if export_scope is not None and not name.startswith(export_scope):
            return None
        strip = (
            (lambda s: s[len(export_scope.rstrip("/")) + 1 :]) if export_scope else (lambda s: s)
        )
        proto = queue_runner_pb2.QueueRunnerDef(
            queue_name=strip(name),
            close_op_name=strip(self._close_op.name),
            cancel_op_name=strip(self._cancel_op.name),
        )
        proto.queue_closed_exception_types.append(tf.errors.OUT_OF_RANGE)
        return proto


def _queue_op_name(queue) -> str | None:
    ref = getattr(queue, "queue_ref", None)
    if ref is not None:
        return ref.op.name
    return getattr(queue, "name", None) if isinstance(queue, tf.Operation) else None


def _runner_of(graph: tf.Graph, queue):
    name = _queue_op_name(queue)
    for qr in graph.get_collection(QUEUE_RUNNERS):
        if _queue_op_name(getattr(qr, "queue", None)) == name:
            return qr
    return None


def _consumers(graph: tf.Graph) -> dict[str, list[str]]:
    """queue op name -> the dequeue and reader-read ops that take from it."""
    out: dict[str, list[str]] = {}
    for op in graph.get_operations():
        if op.type in graph_facts.DEQUEUE_OPS:
            out.setdefault(op.inputs[0].op.name, []).append(op.name)
        elif op.type in graph_facts.READ_OPS:
            out.setdefault(op.inputs[1].op.name, []).append(op.name)
    return out


def _retire_runners(graph: tf.Graph, leaves: list) -> list:
    """Removes the faithful runners only the rebuilt pipeline consumed.

    A runner stays when a consumer of its queue is outside the pipeline, or
    when something outside the pipeline uses what a consumer delivers (a
    reader's value also decoded and fetched directly).
    """
    collection = graph.get_collection_ref(QUEUE_RUNNERS)
    scope = graph_facts.upstream_ops(leaves, list(collection))
    consumers = _consumers(graph)

    def only_the_pipeline(consumer: str) -> bool:
        if consumer not in scope:
            return False
        op = graph.get_operation_by_name(consumer)
        return all(user.name in scope for t in op.outputs for user in t.consumers())

    retired = []
    for qr in list(collection):
        name = _queue_op_name(getattr(qr, "queue", None))
        if name is None or name not in scope or isinstance(qr, _ServedRunner):
            continue
        if all(only_the_pipeline(c) for c in consumers.get(name, ())):
            collection.remove(qr)
            retired.append(qr)
    with _LOCK:
        graph.get_collection_ref(_RETIRED).extend(retired)
    return retired


def _fall_back(graph: tf.Graph, where: str, leaves: list, error: Exception) -> None:
    """Keeps the faithful graph: logs why once and restores runners it needs."""
    with _LOCK:
        retired = graph.get_collection(_RETIRED)
    if retired:
        scope = graph_facts.upstream_ops(leaves, graph.get_collection(QUEUE_RUNNERS) + retired)
        back = [qr for qr in retired if _queue_op_name(qr.queue) in scope]
        # Upstream first, as they were: runners start in collection order, and a
        # consumer's first dequeue must not come before its producer is marked
        # started (see NOTE [ Unstarted guard ] in _diagnostics/traps.py).
        graph.get_collection_ref(QUEUE_RUNNERS)[:0] = back
        with _LOCK:
            graph.get_collection_ref(_RETIRED)[:] = [qr for qr in retired if qr not in back]
    if isinstance(error, NotRebuildableError):
        reason, key = str(error), (error.op_name, error.reason)
        if error.reason in ("needs a session", "uninitialized variable"):
            reason += (
                " (Under the dataset engine the Dataset is built with the pipeline: "
                "build it inside `with sess.as_default():` once the variables are "
                "initialized, or use constants.)"
            )
    else:
        reason, key = f"{type(error).__name__}: {error}", (type(error).__name__, str(error))
    _log_once(
        graph,
        ("fallback", where) + key,
        logging.WARNING,
        "queue_pipeline dataset engine: %s stays on the queue engine: %s",
        where,
        reason,
    )


def _log_once(graph: tf.Graph, key: tuple, level: int, message: str, *args) -> None:
    with _LOCK:
        logged = _LOGGED.setdefault(graph, set())
        if key in logged:
            return
        logged.add(key)
    logger.log(level, message, *args)


# ------------------------------------------------------------ summaries, saving


def _replace_fill_summaries(graph: tf.Graph, queue_names: set, scope: str) -> None:
    """Swaps the fill summaries of the retired queues for a constant 1.0 under the same tags."""
    collection = graph.get_collection_ref(SUMMARIES)
    for summary in list(collection):
        op = getattr(summary, "op", None)
        if op is None or op.type != "ScalarSummary" or not _reads_size_of(op, queue_names):
            continue
        tag = tf.get_static_value(op.inputs[0])
        collection.remove(summary)
        with tf.compat.v1.name_scope(f"{scope.rstrip('/')}_dataset/"):
            replacement = tf.raw_ops.ScalarSummary(
                tags=tf.constant(tag), values=tf.constant(1.0), name="fill"
            )
        collection.append(replacement)


def _reads_size_of(op: tf.Operation, queue_names: set, depth: int = 8) -> bool:
    stack, seen = [(op, 0)], set()
    while stack:
        current, d = stack.pop()
        if current.name in seen or d > depth:
            continue
        seen.add(current.name)
        if (
            current.type in ("QueueSizeV2", "QueueSize")
            and current.inputs[0].op.name in queue_names
        ):
            return True
        stack.extend((t.op, d + 1) for t in current.inputs)
    return False


class _DeprecationFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "make_saveable_from_iterator" not in record.getMessage()


def _add_saveable(iterator) -> None:
    """Puts the iterator's state in ``SAVEABLE_OBJECTS`` for ``tf.compat.v1.train.Saver``."""
    tf_logger = tf.get_logger()
    quiet = _DeprecationFilter()
    tf_logger.addFilter(quiet)
    try:
        saveable = tf.compat.v1.data.experimental.make_saveable_from_iterator(
            iterator, external_state_policy="ignore"
        )
    finally:
        tf_logger.removeFilter(quiet)
    _input_position.mark(saveable)  # see NOTE [ Checkpoints without an input position ]
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS, saveable)
