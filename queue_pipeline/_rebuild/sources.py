"""Where a rebuilt pipeline starts: producers, readers, and the values they read.

The :class:`Sources` half of :class:`queue_pipeline._rebuild.rebuilder.Rebuilder`:
the twin of the producer filling a work queue (sharded between the queue's
consumers), the twin of a reader over it, the streams a pipeline starts from
(``slice_input_producer``'s rows, a dequeue from a producer's queue, a
per-record counter), and the Python or numpy values of the legacy tensors
those twins need (static, computed once, or lifted).

Work queues shared by several consumers (N readers on one
``string_input_producer``, the "Reading data" guide's multiple readers) are
split by position: consumer ``i`` of ``N`` gets the producer's rows
``i, i+N, ...`` with the producer's own num_epochs and shuffle, so every row
is read once per epoch in total, as with the shared queue (which gives the
next file to whichever reader is free). Unused reader keys are not built
(``read(keys=False)``).
Under a gathering queue read by several dequeue ops the producers' rows are
split further (:meth:`Sources.split_sources`; NOTE [ Queues no builder
recorded ] in ``_rebuild/gathering.py``).
"""

from __future__ import annotations

import contextlib
import inspect

import numpy as np
import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._core import held_constants
from queue_pipeline._core.compat import variable_op_read_by
from queue_pipeline._rebuild import lift as _lift
from queue_pipeline._rebuild import walk as _walk
from queue_pipeline._rebuild.stream import SourceSplit, Stream
from queue_pipeline.data import producers as data_producers
from queue_pipeline.data import readers as data_readers
from queue_pipeline.errors import NotRebuildableError

__all__ = ["READER_METHODS", "Sources", "shard_rows"]

READER_METHODS = ("read", "read_up_to")


class Sources:
    """The producer, reader and value methods of the Rebuilder (a mixin).

    It reads the Rebuilder's state: the graph, the Session, the plan nodes
    and which queue each fills, the consumers' scope, and the lifted regions.
    """

    graph: tf.Graph
    session: tf.compat.v1.Session | None
    api: str
    capture_variables: bool
    regions: list
    _values: dict
    _nodes: tuple
    _fillers: dict
    _scope: set | None
    _order: dict | None
    _split: SourceSplit | None
    counter_starts: dict[str, int] | None

    @contextlib.contextmanager
    def split_sources(self, index: int, count: int):
        """Streams rebuilt inside read the `index`-th of `count` shares of their producers' rows.

        Nested splits compose. Yields the :class:`SourceSplit`, whose ``used``
        tells whether a producer was split. See NOTE [ Queues no builder
        recorded ] in ``_rebuild/gathering.py``.
        """
        outer = self._split
        split = SourceSplit(index, count)
        if outer is not None:
            split = SourceSplit(outer.index * count + index, outer.count * count)
        self._split = split
        try:
            yield split
        finally:
            self._split = outer
            if outer is not None and split.used:
                outer.used = True

    def consumers(self, queue_op: tf.Operation) -> list[tf.Operation]:
        """The dequeue and read ops that take from `queue_op`, in creation order."""
        if self._order is None:
            self._order = {op.name: i for i, op in enumerate(self.graph.get_operations())}
        order = self._order
        out = []
        for op in self.graph.get_operations():
            if self._scope is not None and op.name not in self._scope:
                continue
            if op.type in graph_facts.DEQUEUE_OPS and op.inputs[0].op is queue_op:
                out.append(op)
            elif op.type in graph_facts.READ_OPS and op.inputs[1].op is queue_op:
                out.append(op)
        return sorted(out, key=lambda op: order[op.name])

    def producer_dataset(
        self, queue_op: tf.Operation, consumer: tf.Operation | None
    ) -> tf.data.Dataset:
        """The twin of the producer filling `queue_op`, sharded for `consumer`."""
        node = self._fillers.get(queue_op.name)
        if node is None or node.kind not in plan.PRODUCER_KINDS:
            what = f"a {node.kind} call" if node is not None else "no queue_pipeline producer"
            raise _walk.not_rebuildable(
                self.api,
                queue_op,
                f"is a work queue filled by {what}, so its elements are unknown",
                "fill it with queue_pipeline.string_input_producer (or "
                "range_input_producer / input_producer).",
            )
        consumers = self.consumers(queue_op) if consumer is not None else []
        index = next((i for i, c in enumerate(consumers) if c is consumer), 0)
        shards = max(len(consumers), 1)
        if self._split is not None:  # under a gathering queue's dequeue: NOTE there
            self._split.used = True
            index, shards = self._split.index * shards + index, self._split.count * shards
        args = node.args
        common = dict(
            num_epochs=args["num_epochs"],
            shuffle=args["shuffle"],
            seed=args["seed"],
            capacity=args["capacity"],
        )
        if node.kind == "range_input_producer" and shards == 1:
            return data_producers.range_input_producer(
                self._value(args["limit"], "limit"), **common
            )
        rows = shard_rows(
            self._rows(node.inputs[0], files=node.kind == "string_input_producer"), index, shards
        )
        empty = _empty_rows(rows)
        if empty is not None:
            return empty
        if node.kind == "string_input_producer":
            return data_producers.string_input_producer(rows, **common)
        element_shape = args.get("element_shape") if node.kind == "input_producer" else []
        return data_producers.input_producer(rows, element_shape=element_shape, **common)

    # ------------------------------------------------------------------ readers

    def _reader_stream(self, node: plan.PlanNode, used: list[tf.Tensor]) -> Stream:
        class_name, _, method = node.kind.rpartition(".")
        twin_class = getattr(data_readers, class_name, None)
        read_op = node.outputs[0].op
        if class_name == "ReaderBase" or twin_class is None or method not in READER_METHODS:
            raise _walk.not_rebuildable(
                self.api,
                read_op,
                f"reads with {class_name}, a reader with no tf.data twin",
                "use one of queue_pipeline's readers (TextLineReader, "
                "FixedLengthRecordReader, TFRecordReader, WholeFileReader, "
                "IdentityReader).",
            )
        params = inspect.signature(twin_class.__init__).parameters
        reader = twin_class(
            **{k: v for k, v in node.args.items() if k in params and k not in ("self", "name")}
        )
        filenames = self.producer_dataset(read_op.inputs[1].op, read_op)
        key = node.outputs[0]
        keys = any(t.name == key.name for t in used)
        if method == "read":
            dataset = reader.read(filenames, keys=keys)
        else:
            count = self._value(node.args["num_records"], "num_records")
            dataset = reader.read_up_to(filenames, count, keys=keys)
        if keys:
            return Stream(dataset, list(node.outputs), "tuple")
        return Stream(dataset, [node.outputs[1]], "bare")

    # ------------------------------------------------------------------- values

    def _value(self, value, what: str):
        """A Python/numpy value, or the value of a legacy tensor (static or lifted)."""
        if isinstance(value, tf.Variable):
            raise NotRebuildableError(
                f"{self.api}: `{what}` is a variable ({value.name}); a Dataset needs its "
                "value when it is built. Fix: pass a Python value or a constant.",
                op_name=value.name,
                reason=f"variable {what}",
            )
        if not isinstance(value, tf.Tensor):
            return value
        return self._rows(value)

    def _rows(self, tensor, *, files: bool = False):
        """A producer's input as numpy (static or computed once) or a Dataset of files.

        Args:
          tensor: a legacy tensor.
          files: the input of a string_input_producer: a ``match_filenames_once``
            variable becomes its twin, which globs when iterated.
        """
        if isinstance(tensor, tf.IndexedSlices):
            raise NotRebuildableError(
                f"{self.api}: an IndexedSlices input of slice_input_producer cannot be "
                "rebuilt. Fix: pass a dense tensor.",
                reason="IndexedSlices input",
            )
        try:
            # a constant the dataset engine holds out of the graph reads as its value
            static = held_constants.static_value(tensor)
        except (TypeError, ValueError):
            static = None
        if static is not None:
            return np.asarray(static)
        if files:
            match = self._matched_files(tensor)
            if match is not None:
                return match
        region = _lift.lift(
            [tensor],
            session=self.session,
            api=self.api,
            values=self._values,
            capture=self.capture_variables,
        )
        self.regions.append(("input", region))
        return _evaluate(region)

    def _matched_files(self, tensor: tf.Tensor):
        handle = variable_op_read_by(tensor)
        if handle is None:
            return None
        for node in self._nodes:
            if (
                node.kind == "match_filenames_once"
                and getattr(getattr(node.outputs[0], "op", None), "name", None) == handle.name
            ):
                pattern = self._value(node.args["pattern"], "pattern")
                return data_producers.match_filenames_once(pattern)
        return None

    # -------------------------------------------------- streams a pipeline starts from

    def slice_stream(self, node: plan.PlanNode) -> Stream:
        """The stream of ``slice_input_producer``'s rows (an extension point)."""
        rows = [self._rows(t) for t in node.inputs]
        if self._split is not None:
            # Under a split (consumers taking turns at these rows): this share's
            # rows, each shuffled on its own, as a shared queue hands them out.
            self._split.used = True
            rows = [shard_rows(r, self._split.index, self._split.count) for r in rows]
        dataset = data_producers.slice_input_producer(
            rows,
            num_epochs=node.args["num_epochs"],
            shuffle=node.args["shuffle"],
            seed=node.args["seed"],
            capacity=node.args["capacity"],
        )
        return Stream(dataset, list(node.outputs), "tuple")

    def _dequeue_stream(self, op: tf.Operation) -> Stream:
        queue_op = op.inputs[0].op
        filler = self._fillers.get(queue_op.name)
        if filler is None:
            return self._prefetch_stream(op)
        if filler.kind not in plan.PRODUCER_KINDS:
            raise _walk.not_rebuildable(
                self.api,
                op,
                f"dequeues directly from the queue of a {filler.kind} "
                "call instead of using the tensors the call returned",
                f"use the tensors {filler.kind} returned.",
            )
        dataset = self.producer_dataset(queue_op, op)
        if op.type in graph_facts.DEQUEUE_MANY_OPS + graph_facts.DEQUEUE_UP_TO_OPS:
            count = self._value(op.inputs[1], "dequeue count")
            dataset = dataset.batch(count, drop_remainder=op.type in graph_facts.DEQUEUE_MANY_OPS)
        return Stream(dataset, list(op.outputs), "bare")

    def _counter_stream(self, op: tf.Operation) -> Stream:
        """The values a per-record counter hands out; see NOTE [ Per-record counters ]."""
        start = (self.counter_starts or {}).get(op.name)
        if start is None:
            raise _walk.not_rebuildable(
                self.api,
                op,
                "is a per-record counter whose start (its variable's value when the "
                "input starts) is not known here",
                "let the dataset engine fill the queue when the runners start.",
            )
        step = 1
        if self._split is not None:  # enqueue ops taking turns at one counter
            start += self._split.index
            step = self._split.count
            self._split.used = True
        dtype = op.outputs[0].dtype
        dataset = tf.data.Dataset.range(start, int(op.get_attr("limit")), step)
        if dtype != tf.int64:
            dataset = dataset.map(lambda v: tf.cast(v, dtype))
        return Stream(dataset, [op.outputs[0]], "bare")

    def _prefetch_stream(self, op: tf.Operation) -> Stream:
        """A queue no builder recorded: the Rebuilder's (it rebuilds what fills it)."""
        raise NotImplementedError


def shard_rows(rows, index: int, shards: int):
    """Rows ``index, index + shards, ...`` of `rows` (numpy, or a Dataset of rows)."""
    if shards == 1:
        return rows
    if isinstance(rows, tf.data.Dataset):
        return rows.shard(shards, index)
    return rows[index::shards]


def _empty_rows(rows) -> tf.data.Dataset | None:
    """An empty Dataset if `rows` (numpy) has no rows, else None."""
    if isinstance(rows, np.ndarray) and rows.ndim >= 1 and rows.shape[0] == 0:
        dtype = tf.string if rows.dtype.kind in "OSU" else tf.as_dtype(rows.dtype)
        return tf.data.Dataset.from_tensor_slices(tf.zeros(rows.shape, dtype))
    return None


def _evaluate(region: _lift.LiftedRegion):
    """Runs a region with no sources once: numpy eagerly, a tensor in a graph."""
    if tf.executing_eagerly():
        (value,) = tf.function(lambda: region())()
        return value.numpy()
    (value,) = region()
    return value
