"""Reader values fetched directly, no batching call: served by the dataset engine per step.

NOTE [ Reader values fetched directly ]
Data-conversion scripts, evaluation loops and tutorials read one record per
step: producer -> reader -> decode, then ``sess.run([image, label])`` (or a
training op on the decoded value) in a loop, with no batching call and no
queue after the reader. Each step then reads and decodes one record in the
step itself. When the runners start (the pass of NOTE [ Queues filled from
tf.data ] in ``_engine/bridge.py``), the dataset engine serves such a read:

* **Which reads.** A reader read (recorded by a reader of ours or read from
  the graph, NOTE [ Stages read from the graph ]) whose values reach no
  enqueue op: nothing queues them, so the program fetches them.
* **The region.** The per-record ops downstream of the read that the
  rebuilder can lift (decoders, casts, crops, ``tf.py_func`` stages, ...;
  NOTE [ Lifting a region ]): an op belongs when everything it needs comes
  from the read or from values that do not change. Its first op outside
  (a model's layer, an optimizer, a summary writer) does not.
* **The Dataset.** The read's stream (producer and reader rebuilt) mapped by
  the region, one element per record holding every dense value of the
  region (the read's key and value included), prefetched; one iterator per
  read, so every step that needs the read takes the next record, as the
  reader would hand it out.
* **Steps.** The session hook (NOTE [ The session hook ]) rewrites each step
  that needs the region: a step fetching only region values fetches the
  iterator's values instead (one call); a step whose fetches need region
  values through other ops (a training op on the decoded image) first takes
  the next element, then runs with those values fed. Which fetches need
  what is worked out once per fetch signature. One element per step, so a
  step sees one record, as on TF's reader.
* **What stays TF's.** The producer and its runner (the reader no longer
  reads its queue, which fills to its capacity and waits), the region's ops
  (a step that runs one of them through a control dependency alone still
  reads the reader), names, shapes, ``OutOfRangeError`` at the end of the
  last epoch (raised by the iterator), errors naming the file and record.
* **Falls back** (one warning naming the read, why and the fix) when the
  read's stream cannot be rebuilt (a work queue no producer fills).
* **Not kept**: the input position in checkpoints (as for bridged queues).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import weakref

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._diagnostics import session_hook
from queue_pipeline._engine import graph_edits, serving
from queue_pipeline._engine import rebuilder as engine_rebuilder
from queue_pipeline._rebuild import walk as _walk
from queue_pipeline.errors import NotRebuildableError

__all__ = ["direct_reads", "serve"]

# Ops past which the region never grows: a region is a record's decoding,
# not a model; past this many ops the read stays on its reader.
_MAX_REGION_OPS = 400
_UNYIELDED = (tf.resource, tf.variant)
# Signatures of steps remembered per graph (as for cached steps).
_MAX_PLANS = 64


def direct_reads(graph: tf.Graph, seen: set) -> list[tf.Operation]:
    """The reader reads of `graph` whose values reach no enqueue op, not in `seen`."""
    out = []
    for op in graph.get_operations():
        if op.type not in graph_facts.RESOURCE_READ_OPS or op.name in seen:
            continue
        if not _reaches_enqueue(op):
            out.append(op)
    return out


def _reaches_enqueue(read_op: tf.Operation) -> bool:
    stack, seen = [read_op], {read_op.name}
    while stack:
        op = stack.pop()
        for out in op.outputs:
            for consumer in out.consumers():
                if consumer.type.startswith("QueueEnqueue"):
                    return True
                if consumer.name not in seen:
                    seen.add(consumer.name)
                    stack.append(consumer)
    return False


@dataclasses.dataclass
class _Served:
    """One served read: region tensor name -> its value in the iterator's next element."""

    region: dict[str, int]
    values: list[tf.Tensor]
    initializer: tf.Operation | None
    feeds: dict
    started: "weakref.WeakSet" = dataclasses.field(default_factory=weakref.WeakSet)


def serve(graph: tf.Graph, reads: list[tf.Operation]) -> None:
    """Serves each of `reads` from tf.data, or logs why not; see the NOTE above.

    Must run with `graph` as the default graph, unfinalized.

    Side effects: adds each read's Dataset and iterator to `graph`, installs
    the step rewrite of the session hook for `graph`, logs one INFO line per
    read served and one WARNING per read left on its reader.
    """
    served = []
    for read_op in reads:
        where = f"reader read '{read_op.name}' ({read_op.inputs[0].op.type.replace('V2', '')})"
        try:
            one = _serve_one(graph, read_op, where)
        except (NotRebuildableError, TypeError, ValueError) as e:
            serving.log_once(
                graph,
                ("direct-read", read_op.name),
                logging.WARNING,
                "queue_pipeline dataset engine: %s, fetched directly, stays on its reader: %s",
                where,
                e,
            )
            continue
        if one is not None:
            served.append(one)
    if served:
        _Rewriter.of(graph).add(served)


def _region(rebuilder, read_op: tf.Operation) -> list[tf.Tensor]:
    """The read's outputs and the dense outputs of the per-record ops downstream of it."""
    values = {t.name for t in read_op.outputs}
    region_ops = [read_op]

    def is_source(t: tf.Tensor) -> bool:
        return t.name in values or rebuilder.is_source(t)

    frontier = [c for t in read_op.outputs for c in t.consumers()]
    tried: set[str] = set()
    while frontier and len(region_ops) < _MAX_REGION_OPS:
        op = frontier.pop(0)
        if op.name in tried:
            continue
        tried.add(op.name)
        outputs = [t for t in op.outputs if t.dtype.base_dtype not in _UNYIELDED]
        if not outputs or len(outputs) != len(op.outputs) or op.control_inputs:
            continue
        if any(t.name not in values and _downstream_of(t, read_op) for t in op.inputs):
            continue  # it also needs a value downstream of the read the region lacks
        try:
            sources = _walk.find_sources(outputs, is_source, api="engine", py_funcs=True)
        except NotRebuildableError:
            continue
        if any(s.name not in values for s in sources):
            continue
        region_ops.append(op)
        values.update(t.name for t in outputs)
        frontier.extend(c for t in outputs for c in t.consumers())
    return [t for op in region_ops for t in op.outputs if t.name in values]


def _downstream_of(t: tf.Tensor, read_op: tf.Operation) -> bool:
    stack, seen = [t.op], set()
    while stack:
        op = stack.pop()
        if op is read_op:
            return True
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(i.op for i in op.inputs)
    return False


def _serve_one(graph: tf.Graph, read_op: tf.Operation, where: str) -> _Served | None:
    rebuilder = engine_rebuilder.EngineRebuilder(
        graph, api=f"{where} (dataset engine)", deterministic=False, vectorizer=None
    )
    leaves = _region(rebuilder, read_op)
    rebuilder.restrict_to(leaves)
    rebuilder.deterministic = serving.is_seeded(graph, leaves)
    with (
        graph_edits.quiet_tf_data(),
        tf.compat.v1.name_scope(f"{read_op.name}_dataset/"),
    ):
        stream = rebuilder.rebuild(leaves, role=f"read {read_op.name}", exact=True)
        values, initializer = rebuilder.start(stream.dataset.prefetch(2))
    for value, leaf in zip(values, leaves):
        value.set_shape(value.shape.merge_with(leaf.shape))
    serving.log_once(
        graph,
        ("direct-read-path", read_op.name),
        logging.INFO,
        "queue_pipeline dataset engine: %s, fetched directly, is read from tf.data (%s).",
        where,
        "; ".join(rebuilder.paths) or "no per-record ops",
    )
    return _Served(
        {leaf.name: i for i, leaf in enumerate(leaves)},
        values,
        initializer,
        dict(rebuilder.feeds),
    )


class _Rewriter:
    """The session hook's step rewrite for one graph's served reads."""

    _BY_GRAPH: "weakref.WeakKeyDictionary[tf.Graph, _Rewriter]" = weakref.WeakKeyDictionary()

    def __init__(self, graph: tf.Graph) -> None:
        self._graph = weakref.ref(graph)
        self._served: list[_Served] = []
        self._owner: dict[str, _Served] = {}  # region tensor name -> its read
        self._plans: dict[tuple, tuple] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(cls, graph: tf.Graph) -> "_Rewriter":
        rewriter = cls._BY_GRAPH.get(graph)
        if rewriter is None:
            rewriter = cls._BY_GRAPH[graph] = cls(graph)
            session_hook.rewrite_steps(graph, rewriter)
        return rewriter

    def add(self, served: list[_Served]) -> None:
        with self._lock:
            self._served.extend(served)
            for one in served:
                for name in one.region:
                    self._owner[name] = one
            self._plans.clear()

    def __call__(self, sess, fetches, feed_dict, raw_run):
        """(fetches, feed_dict) for the step; takes the next elements it needs."""
        graph = self._graph()
        if graph is None:
            return fetches, feed_dict
        flat: list = []
        _flatten(fetches, flat)
        key = (tuple(id(f) for f in flat), tuple(sorted(map(id, feed_dict or ()))))
        with self._lock:
            plan = self._plans.get(key)
        if plan is None:
            plan = (self._plan(graph, flat, feed_dict), flat)
            with self._lock:
                if len(self._plans) < _MAX_PLANS:
                    self._plans[key] = plan
        (direct, needed), _ = plan
        if not direct and not needed:
            return fetches, feed_dict
        if not needed:  # only region values: fetch the iterator's in their place
            substitutes = {}
            for name in direct:
                one = self._owner[name]
                self._start(sess, one, raw_run)
                substitutes[name] = one.values[one.region[name]]
            return _substituted(graph, fetches, substitutes), feed_dict
        by_read: dict[int, tuple[_Served, list[str]]] = {}
        for name in needed:
            one = self._owner[name]
            by_read.setdefault(id(one), (one, []))[1].append(name)
        fed = dict(feed_dict or {})
        for one, names in by_read.values():
            self._start(sess, one, raw_run)
            element = raw_run(sess, one.values, None, None, None)
            for name in names:
                fed[graph.get_tensor_by_name(name)] = element[one.region[name]]
        return fetches, fed

    def _start(self, sess, one: _Served, raw_run) -> None:
        if one.initializer is None or sess in one.started:
            return
        with self._lock:
            if sess in one.started:
                return
            raw_run(sess, one.initializer, one.feeds or None, None, None)
            one.started.add(sess)

    def _plan(self, graph: tf.Graph, flat: list, feed_dict) -> tuple[list[str], list[str]]:
        """(region tensors fetched directly, region tensors the other fetches need)."""
        fed = {getattr(k, "name", k) for k in (feed_dict or ())}
        direct, ops = [], []
        for f in flat:
            element = f
            if isinstance(f, str):
                try:
                    element = graph.as_graph_element(f)
                except (KeyError, ValueError, TypeError):
                    continue
            if isinstance(element, tf.Tensor) and element.name in self._owner:
                if element.name not in fed:
                    direct.append(element.name)
                continue
            if isinstance(element, tf.Operation):
                ops.append(element)
            elif isinstance(element, (tf.Tensor, tf.SparseTensor)):
                ops.extend(t.op for t in graph_facts.components(element))
        needed: list[str] = []
        seen: set[str] = set()
        while ops:
            op = ops.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            for t in op.inputs:
                if t.name in fed:
                    continue
                if t.name in self._owner:
                    if t.name not in needed:
                        needed.append(t.name)
                else:
                    ops.append(t.op)
            ops.extend(op.control_inputs)
        if needed:
            needed += [n for n in direct if n not in needed]
        return direct, needed


def _flatten(fetches, out: list) -> None:
    if isinstance(fetches, (list, tuple)):
        for f in fetches:
            _flatten(f, out)
    elif isinstance(fetches, dict):
        for f in fetches.values():
            _flatten(f, out)
    else:
        out.append(fetches)


def _substituted(graph: tf.Graph, fetches, substitutes: dict):
    """`fetches` with each region tensor (or its name) replaced by its substitute."""
    if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):  # a namedtuple
        return type(fetches)(*(_substituted(graph, f, substitutes) for f in fetches))
    if isinstance(fetches, (list, tuple)):
        return type(fetches)(_substituted(graph, f, substitutes) for f in fetches)
    if isinstance(fetches, dict):
        items = [(k, _substituted(graph, v, substitutes)) for k, v in fetches.items()]
        try:
            return type(fetches)(items)
        except TypeError:
            return dict(items)
    name = fetches if isinstance(fetches, str) else getattr(fetches, "name", None)
    if isinstance(fetches, (str, tf.Tensor)) and name in substitutes:
        return substitutes[name]
    return fetches
