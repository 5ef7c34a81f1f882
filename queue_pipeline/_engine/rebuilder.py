"""The dataset engine's Rebuilder: whole-batch decoding and large preloaded arrays.

:class:`EngineRebuilder` extends :class:`queue_pipeline._rebuild.rebuilder.Rebuilder`
with the engine's two speed paths: per-record regions run on whole batches
after the batching twin when the vectorizer can rewrite them, and large
preloaded arrays gathered from the legacy graph's constant instead of being
embedded (NOTE [ Large preloaded arrays ] in ``_engine/serving.py``).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._engine import runners, stateless
from queue_pipeline._rebuild.rebuilder import Rebuilder
from queue_pipeline._rebuild.stream import Stream
from queue_pipeline.data import batching as data_batching
from queue_pipeline.data import producers as data_producers
from queue_pipeline.data._batch_engine import PositionedDecode

__all__ = ["LARGE_ROWS_BYTES", "EngineRebuilder"]

# See NOTE [ Large preloaded arrays ] in _engine/serving.py.
LARGE_ROWS_BYTES = 16 << 20
_GATHER_ROWS = 1024
# The batching twin's arguments a batching call over preloaded rows passes on.
_TWIN_ARGS = (
    "batch_size",
    "num_threads",
    "capacity",
    "min_after_dequeue",
    "seed",
    "allow_smaller_final_batch",
)


@dataclasses.dataclass
class _Pending:
    """A region to run on whole batches after the batching twin."""

    base: Stream
    vectorized: Callable


class EngineRebuilder(Rebuilder):
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
      feeds: placeholder -> large preloaded array, fed when the input starts.
      constants: the legacy ``Const`` op -> value of each large preloaded
        array the Dataset no longer reads from the graph.
    """

    def __init__(self, graph: tf.Graph, *, api: str, deterministic: bool, vectorizer) -> None:
        # See NOTE [ Variables read when the input starts ].
        super().__init__(graph, api=api, capture_variables=True)
        self.deterministic = deterministic
        self.vectorizer = vectorizer
        self.paths: list[str] = []
        self.feeds: dict[tf.Tensor, np.ndarray] = {}
        self.constants: dict[tf.Operation, np.ndarray] = {}
        self._placeholders: dict[int, tf.Tensor] = {}  # id(array) -> its placeholder
        self._batching: list[plan.PlanNode] = []
        self._pending: dict[int, _Pending] = {}
        self._shuffled_first: set[int] = set()  # shuffle_batch nodes shuffled before the map

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
            scope = graph_facts.upstream_ops(leaves, self.queue_runners())
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

    def queue_runners(self) -> list:
        """The graph's runners, with those the engine retired (their queues' fillers)."""
        return super().queue_runners() + runners.retired(self.graph)

    def start(self, dataset: tf.data.Dataset) -> tuple[list[tf.Tensor], tf.Operation | None]:
        """The flat values of `dataset`'s next element, and the initializer to run first.

        Sets the Dataset's options from what was rebuilt (determinism; no
        default rewrites when large arrays are fed, see NOTE [ Large preloaded
        arrays ]). The iterator is one-shot unless a region captures
        variables or arrays are fed: then it is initializable and its
        initializer (fed :attr:`feeds`) must run once per session first.
        """
        options = tf.data.Options()
        if self.deterministic:
            options.deterministic = True
        if self.feeds:  # a rewrite would copy the fed arrays
            options.experimental_optimization.apply_default_optimizations = False
        dataset = dataset.with_options(options)
        if self.feeds or any(region.captured for _, region in self.regions):
            iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
            return tf.nest.flatten(iterator.get_next()), iterator.initializer
        iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
        return tf.nest.flatten(iterator.get_next()), None

    def batching_stream(self, node: plan.PlanNode) -> Stream:
        preloaded = self._preloaded_batches(node)
        if preloaded is not None:
            return preloaded
        self._batching.append(node)
        try:
            return super().batching_stream(node)
        finally:
            self._batching.pop()

    def batching_twin(self, node: plan.PlanNode) -> Callable:
        """``batch`` for a ``shuffle_batch`` whose raw records were shuffled (:meth:`_shuffled`)."""
        if node.index in self._shuffled_first:
            return data_batching.batch
        return super().batching_twin(node)

    def _shuffled(self, node: plan.PlanNode, base: Stream) -> Stream:
        """`base` through `node`'s shuffle buffer, before the per-record map.

        NOTE [ Records shuffled before their map ]
        A ``shuffle_batch`` whose per-record region has no batch form (a
        random distortion per example) is served as shuffle -> map ->
        batch, not map -> shuffle -> batch: a per-record function of
        independent records commutes with the order they come in, the
        shuffle buffer (`capacity` elements, the same seed) then holds the
        raw records (a 12 KB string where the decoded image is 37 KB of
        floats), and tf.data fuses the map into the batch (each example is
        written into its batch once). On the augmentation workload (W7 of
        ``benchmarks/own_queue.py``) it cuts the CPU per example by 15-25%.
        The batching call's own twin is then ``batch`` with its other
        arguments.
        """
        args = node.args
        self._shuffled_first.add(node.index)
        capacity = self._value(args["capacity"], "capacity")
        dataset = base.dataset.shuffle(
            capacity, seed=args.get("seed"), reshuffle_each_iteration=True
        )
        return Stream(dataset, list(base.leaves), base.form, base.parts)

    def batch_decoder(self, node: plan.PlanNode) -> Callable | PositionedDecode | None:
        """The vectorized region left out of `node`'s inputs, as the twin's `decode`.

        The twin maps it over each batch in parallel (order kept) before its
        one ``prefetch``.
        """
        pending = self._pending.pop(node.index, None)
        if pending is None:
            return None
        leaves = list(node.outputs)

        def decode(*args, position=None):
            components = graph_facts.dense_components(pending.base.flatten(args))
            outputs = pending.vectorized(*components, position=position)
            outputs = [_at_least(value, leaf.shape) for value, leaf in zip(outputs, leaves)]
            return outputs[0] if len(outputs) == 1 else tuple(outputs)

        if not getattr(pending.vectorized, "keyed", False):
            return tf.autograph.experimental.do_not_convert(decode)

        def keyed_decode(position, batch):  # NOTE [ Seeded draws keyed by the batch ]
            return decode(*(batch if isinstance(batch, tuple) else (batch,)), position=position)

        return PositionedDecode(tf.autograph.experimental.do_not_convert(keyed_decode))

    def apply_region(
        self,
        base: Stream,
        region,
        leaves: list,
        pack: Callable[[list], Any] | None,
        *,
        role: str = "output",
        parallel=tf.data.AUTOTUNE,
        keyed: bool = False,
    ) -> Stream:
        if keyed:  # already made stateless by the caller
            return super().apply_region(
                base, region, leaves, pack, role=role, parallel=parallel, keyed=True
            )
        node = self._batching[-1] if self._batching else None
        path = "per-record map"
        if node is not None and role.startswith(f"{node.kind} list "):
            why_not = self._why_not_vectorized(node, region, leaves, pack, base)
            if why_not is None:
                vectorized, why_not = _vectorize(
                    self.vectorizer,
                    region,
                    self._fixed_lengths(region),
                    keyed_draws=self.deterministic,
                )
                if vectorized is not None:
                    self._pending[node.index] = _Pending(base, vectorized)
                    self.paths.append(
                        f"{role}: vectorized, decoded once per batch{_draws_said(vectorized)}"
                    )
                    return Stream(base.dataset, list(base.leaves), base.form, base.parts)
                if node.kind == "shuffle_batch":  # NOTE [ Records shuffled before their map ]
                    base = self._shuffled(node, base)
                    why_not += "; mapped after the shuffle"
            path += f" ({why_not})"
        unkeyable = stateless.unkeyable_ops(region)
        keyable = self.deterministic and not unkeyable
        stateless_region = stateless.keyed_region(region) if keyable else None
        if stateless_region is not None:
            # NOTE [ Stateless randomness keyed by the record ]
            made = sorted({op.type for op in region.ops if op.type in stateless.FORMS})
            self.paths.append(
                f"{role}: {path}, parallel, random ops stateless keyed by the record "
                f"({', '.join(made)})"
            )
            return super().apply_region(
                base, stateless_region, leaves, pack, role=role, parallel=parallel, keyed=True
            )
        if self.deterministic and unkeyable:
            self.paths.append(
                f"{role}: {path}, sequential for determinism ({', '.join(unkeyable)})"
            )
            return super().apply_region(base, region, leaves, pack, role=role, parallel=None)
        self.paths.append(f"{role}: {path}")
        return super().apply_region(base, region, leaves, pack, role=role, parallel=parallel)

    def slice_stream(self, node: plan.PlanNode) -> Stream:
        """``slice_input_producer``; large preloaded arrays stay out of the graph.

        See NOTE [ Large preloaded arrays ]. Smaller or computed rows take
        the rebuilder's own path (``from_tensor_slices`` of the values).
        """
        arrays = None if self._split is not None else self._large_arrays(node)
        if arrays is None:  # small or computed rows, or a share of them
            return super().slice_stream(node)
        leaves = list(node.outputs)
        rows_of = self._gatherer(arrays, list(range(len(arrays))), [leaf.dtype for leaf in leaves])
        dataset = (
            self._indices(node, arrays)
            .batch(_GATHER_ROWS)
            .map(rows_of, num_parallel_calls=tf.data.AUTOTUNE)
            .unbatch()
        )
        self.paths.append(
            f"slice_input_producer: {sum(a.nbytes for a in arrays):,} bytes "
            "of preloaded rows gathered in memory, not embedded in the graph"
        )
        return Stream(dataset, leaves, "tuple")

    def _preloaded_batches(self, node: plan.PlanNode) -> Stream | None:
        """A batching call over large preloaded rows: batches of row indices, gathered whole.

        See NOTE [ Large preloaded arrays ]: when `node` (``batch`` or
        ``shuffle_batch``, with no per-example option) batches exactly rows of
        one ``slice_input_producer`` over large arrays, the twin shuffles and
        batches the row *indices* (the same order as the rows: a shuffle
        buffer and a batch do not look at what they move) and each batch of
        rows is gathered once, instead of gathering 1,024 rows, splitting
        them into single rows and batching those again. None when it does
        not apply.
        """
        args = node.args
        if (
            node.kind not in ("batch", "shuffle_batch")
            or args.get("num_lists", 1) != 1
            or args.get("enqueue_many")
            or args.get("dynamic_pad")
            or args.get("shapes") is not None
            or not node.inputs
            or not all(isinstance(t, tf.Tensor) for t in node.inputs)
        ):
            return None
        slices = {self._by_output.get(t.name) for t in node.inputs}
        if len(slices) != 1:
            return None
        (source,) = slices
        if source is None or source.kind != "slice_input_producer":
            return None
        names = [t.name for t in source.outputs]
        if any(t.name not in names for t in node.inputs):
            return None
        arrays = self._large_arrays(source)
        if arrays is None:
            return None
        leaves = list(node.outputs)
        picks = [names.index(t.name) for t in node.inputs]
        indices = self._indices(source, arrays)
        twin = getattr(data_batching, node.kind)
        params = inspect.signature(twin).parameters
        kwargs = {name: args[name] for name in _TWIN_ARGS if name in params and name in args}
        kwargs["batch_size"] = self._value(args["batch_size"], "batch_size")
        gather = self._gatherer(arrays, picks, [leaf.dtype for leaf in leaves])

        def rows_of(index):
            values = gather(index)
            for value in values:
                value.set_shape(index.shape[:1].concatenate(value.shape[1:]))
            return values[0] if len(values) == 1 else values

        dataset = twin(indices, decode=rows_of, **kwargs)
        self.paths.append(
            f"{node.kind}: {sum(arrays[k].nbytes for k in set(picks)):,} bytes of preloaded "
            "rows gathered in memory a batch at a time, not embedded in the graph"
        )
        return Stream(dataset, leaves, "bare" if len(leaves) == 1 else "tuple")

    def _large_arrays(self, node: plan.PlanNode) -> list[np.ndarray] | None:
        """The rows of a ``slice_input_producer`` `node` if they are large arrays, else None.

        Side effect: the legacy constants they come from are noted in
        :attr:`constants`.
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
            return None
        arrays = [_aligned(a) for a in arrays]
        for tensor, array in zip(node.inputs, arrays):
            if isinstance(tensor, tf.Tensor) and tensor.op.type == "Const":
                self.constants[tensor.op] = array
        return arrays

    def _gatherer(self, arrays: list[np.ndarray], picks: list[int], dtypes: list) -> Callable:
        """A graph function: int row indices -> the rows ``arrays[k][indices]`` for k in `picks`.

        Each array is a placeholder of the legacy graph, fed when the input
        starts (:attr:`feeds`), and captured by the function: the rows are
        gathered in TF (no Python, no GIL); each value's static shape is
        ``[None] + row shape``.
        """
        placeholders = []
        for k, dtype in zip(picks, dtypes):
            array = arrays[k]
            placeholder = self._placeholders.get(id(array))
            if placeholder is None:
                placeholder = tf.compat.v1.placeholder(dtype, array.shape, name="preloaded_rows")
                self._placeholders[id(array)] = placeholder
                self.feeds[placeholder] = array
            placeholders.append(placeholder)

        def rows_of(index):
            return tuple(tf.gather(p, index) for p in placeholders)

        return rows_of

    @staticmethod
    def _indices(node: plan.PlanNode, arrays: list[np.ndarray]) -> tf.data.Dataset:
        """The row indices of ``slice_input_producer`` `node`, in its order (the range twin)."""
        args = node.args
        return data_producers.range_input_producer(
            arrays[0].shape[0],
            num_epochs=args["num_epochs"],
            shuffle=args["shuffle"],
            seed=args["seed"],
            capacity=args["capacity"],
        )

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


def _vectorize(module, region, fixed_lengths: dict[str, int], *, keyed_draws: bool):
    """(function on batches, None) or (None, why not) from the vectorizer `module`.

    Random ops draw once per batch (NOTE [ Vectorizing a region ] in
    ``vectorize/api.py``); with `keyed_draws` (a seeded pipeline), every
    draw, seeded or not, is stateless, keyed by the batch (NOTE [ Seeded
    draws keyed by the batch ] in ``vectorize/rules_random.py``).
    """
    refusal = getattr(module, "NotVectorizable", None)
    try:
        result = module.vectorize(
            region,
            fixed_lengths=fixed_lengths or None,
            random_draws=True,
            keyed_draws=keyed_draws,
        )
    except Exception as e:  # noqa: BLE001 - a vectorizer bug must not break the build
        return None, f"the vectorizer failed: {type(e).__name__}: {e}"
    if (
        result is None
        or (isinstance(refusal, type) and isinstance(result, refusal))
        or not callable(result)
    ):
        return None, str(result)
    return result, None


def _draws_said(vectorized) -> str:
    """ ", random ops drawn ..." for the engine's log line, when the region draws."""
    drawn = sorted(
        {op for _, op, rule in getattr(vectorized, "rules", ()) if rule.startswith("one draw of")}
    )
    if not drawn:
        return ""
    keyed = ", stateless keyed by the batch" if getattr(vectorized, "keyed", False) else ""
    return f", random ops drawn [B] at a time{keyed} ({', '.join(drawn)})"


# TF's CPU allocator alignment: a fed array whose data is aligned to it is
# used in place; any other is copied at every feed (W4's 188 MB: 100-230 ms).
_FEED_ALIGNMENT = 64


def _aligned(array: np.ndarray) -> np.ndarray:
    """`array`, or a copy of it whose data is C-contiguous and aligned for a zero-copy feed.

    Strings are returned as they are: TF converts a fed string array anyway.
    """
    if array.dtype.kind in "OSU" or (
        array.flags.c_contiguous and array.ctypes.data % _FEED_ALIGNMENT == 0
    ):
        return array
    buffer = np.empty(array.nbytes + _FEED_ALIGNMENT, np.uint8)
    start = -buffer.ctypes.data % _FEED_ALIGNMENT
    out = buffer[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    np.copyto(out, array)
    return out


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
