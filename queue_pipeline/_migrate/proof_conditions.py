"""What a migration's proof holds fixed on both sides: endless repeats and random draws.

NOTE [ Proving a random, endless input pipeline ]
CIFAR-10's ``distorted_inputs`` reads its files forever and crops, flips and
recolours every image at random. Compared as they are, the two pipelines
cannot agree: neither ends, and no two runs draw the same numbers (the legacy
side's 16 threads even decide which record gets which draw). What the
migration must prove is narrower: that the tf.data version does to each
record what the legacy code did, for every draw. So the proof builds both
sides under the same two conditions, and says so in its verdict:

- *Bounded repeats*: a producer with ``num_epochs=None`` on the legacy side
  runs ``epochs`` epochs, and so does every ``Dataset.repeat()`` without a
  count on the migrated side; both then end, and their multisets compare.
  The legacy side is built under :func:`queue_pipeline.install` then, so that
  ``tf.compat.v1.train``'s producers are queue_pipeline's, where the bound is
  applied (TF's own input layer is never patched).
  NOTE [ limit_epochs is no producer ]: a bare ``tf.train.limit_epochs(x)``
  counts evaluations of `x`, not passes over the data: bounded to one, the
  legacy side would end after one element while the data it reads is
  endless. It is left as written (``None``: `x` itself), and so is the
  Dataset, which the twin does not repeat for it.
- *Pinned draws*: every stateful random op (uniform, uniform int, normal,
  truncated normal) returns one fixed value inside its range, a quarter of
  the way up, so ``random_flip_left_right`` flips (0.25 < 0.5), brightness
  and contrast change by a nonzero amount and the crop has an offset. Each
  augmentation line then runs with its own arguments on both sides; a wrong
  ``max_delta`` or a lost flip shows as a difference. Other random ops
  (``tf.random.shuffle`` of the file names, gamma, multinomial) keep their
  randomness; the multiset comparison does not depend on them.

A draw pinned to one value takes one way of every test on it: at 0.25,
``tf.cond(do_flip > 0.5, flip, keep)`` only ever keeps, and the flipped
branch (monodepth's, with its augmentation) is never compared. So where a
pinned draw reaches a comparison (:func:`tested_draws`), the proof runs
again with the draws pinned to 0.75 (:data:`SECOND_FRACTION`): every test of
a draw against a threshold then runs both ways, each time on both sides.
Why not a value that changes from call to call, the same sequence on both
sides? Which record gets the k-th draw depends on the legacy side's enqueue
threads and on the order the map's parallel calls start in, so such a
sequence pairs other records with other draws on the two sides and a
faithful migration would differ.

NOTE [ A draw captured by the map ]
A constant pin cannot tell a draw per record from one draw per Dataset: a
draw moved out of the mapped function (NOTE [ A draw that reads no record ]
in :mod:`queue_pipeline._migrate.record_draws`) returns the same pinned
value to every record. That mistake is seen on the migrated side's graph
instead: every legacy draw of a queue pipeline runs once per record (or
per batch), so the migrated side must make each one inside a Dataset
function. :func:`captured_draw` builds it once more in a graph of its own and
names any draw (a pinned one, or another stateful random op) made outside
the functions and captured by a Dataset op that runs a function (a map,
filter, interleave): the verdict is then DIFFER, naming the op. A random
op feeding ``from_tensor_slices`` (file names shuffled once) is not such a
capture and does not count.

Both conditions patch TensorFlow's Python layer for the proof's build only
(the graph and the Dataset functions are built inside them; the run uses
what was built) and are undone on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import tensorflow as tf

from queue_pipeline import producers
from queue_pipeline._core import graph as graph_facts

__all__ = [
    "PINNED_FRACTION",
    "SECOND_FRACTION",
    "bounded_repeats",
    "captured_draw",
    "captured_in_build",
    "pinned_random_draws",
    "random_op_types",
    "tested_draws",
]

PINNED_FRACTION = 0.25
SECOND_FRACTION = 0.75
_PINNED_OPS = frozenset(
    {"RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal"}
)
_UNPINNED_OPS = frozenset(
    {
        "RandomShuffle",
        "Multinomial",
        "RandomGamma",
        "RandomPoissonV2",
        "ParameterizedTruncatedNormal",
    }
)


def random_op_types(graph: tf.Graph) -> tuple[set[str], set[str]]:
    """(pinnable, other) stateful random op types in `graph` and its functions."""
    types = graph_facts.op_types(graph, graph.get_operations(), list(graph._functions))  # noqa: SLF001
    return types & _PINNED_OPS, types & _UNPINNED_OPS


@contextlib.contextmanager
def bounded_repeats(epochs: int) -> Iterator[None]:
    """Producers with ``num_epochs=None`` and ``Dataset.repeat()`` run `epochs` epochs."""
    limit = producers._limit_epochs  # noqa: SLF001 - the one place every producer counts epochs
    repeat = tf.data.Dataset.repeat

    def bounded_limit(tensor, num_epochs, name, api="limit_epochs"):
        if api == "limit_epochs":  # NOTE [ limit_epochs is no producer ]
            return limit(tensor, num_epochs, name, api)
        return limit(tensor, epochs if num_epochs is None else num_epochs, name, api)

    def bounded_repeat(self, count=None, name=None):
        if count is None or (isinstance(count, int) and count < 0):
            count = epochs
        return repeat(self, count, name=name)

    producers._limit_epochs = bounded_limit  # noqa: SLF001
    tf.data.Dataset.repeat = bounded_repeat
    try:
        yield
    finally:
        producers._limit_epochs = limit  # noqa: SLF001
        tf.data.Dataset.repeat = repeat


@contextlib.contextmanager
def pinned_random_draws(fraction: float = PINNED_FRACTION) -> Iterator[list[tf.Operation]]:
    """Stateful uniform / normal draws return one value, `fraction` into their range.

    Yields the list of the graph ops the pins make (NOTE [ A draw captured by the map ]).
    """
    from tensorflow.python.ops import gen_random_ops  # noqa: PLC0415

    made: list[tf.Operation] = []
    quarters = round(fraction * 4)

    def kept(tensor):
        if not tf.executing_eagerly():
            made.append(tensor.op)
        return tensor

    def real(shape, dtype, seed=0, seed2=0, name=None):
        return kept(tf.fill(shape, tf.constant(fraction, dtype), name=name))

    def integer(shape, minval, maxval, seed=0, seed2=0, name=None):
        minval = tf.convert_to_tensor(minval)
        span = tf.convert_to_tensor(maxval, minval.dtype) - minval
        return kept(tf.fill(shape, minval + span * quarters // 4, name=name))

    pins = {
        "random_uniform": real,
        "random_uniform_int": integer,
        "random_standard_normal": real,
        "truncated_normal": real,
    }
    originals = {name: getattr(gen_random_ops, name) for name in pins}
    for name, pin in pins.items():
        setattr(gen_random_ops, name, pin)
    try:
        yield made
    finally:
        for name, original in originals.items():
            setattr(gen_random_ops, name, original)


_COMPARISONS = frozenset({"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"})


def tested_draws(graph: tf.Graph) -> bool:
    """Whether a pinnable draw of `graph` (the traced legacy graph) reaches a comparison."""
    draws = [t for op in graph.get_operations() if op.type in _PINNED_OPS for t in op.outputs]
    return any(
        consumer.type in _COMPARISONS
        for t in graph_facts.walk_forward(draws)
        for consumer in t.consumers()
    )


def captured_draw(graph: tf.Graph, pinned: list[tf.Operation]) -> str:
    """The draw made outside `graph`'s Dataset functions that one of them captures, or "".

    NOTE [ A draw captured by the map ]. `pinned`: the ops the pins made.
    """
    pins = {op.name for op in pinned if op.graph is graph}
    for op in graph.get_operations():
        if "Dataset" not in op.type or not any(a in op.node_def.attr for a in _FUNCTION_ATTRS):
            continue
        walk = graph_facts.walk_back(
            [t.op for t in _values(op)],
            inputs=_values,
            stop=lambda inner: inner.name in pins or _is_random(inner),
        )
        for inner in walk:
            if inner.name in pins or _is_random(inner):
                kind = "a pinned draw" if inner.name in pins else f"{inner.type}"
                return (
                    f"the migrated Dataset's {op.type} captures a random draw ({kind}, op "
                    f"{inner.name!r}) made once where the Dataset is built, where the legacy "
                    "code draws it for every record: every record then gets the same value "
                    "(and a one-shot iterator cannot be made); the draw belongs inside the "
                    "mapped function"
                )
    return ""


def _values(op: tf.Operation) -> list[tf.Tensor]:
    """`op`'s inputs but Datasets (variants): the values a Dataset op captures."""
    return [t for t in op.inputs if t.dtype != tf.variant]


_FUNCTION_ATTRS = ("f", "predicate", "key_func", "reduce_func", "init_func", "finalize_func")


def _is_random(op: tf.Operation) -> bool:
    if op.type.startswith("Stateless") or "Queue" in op.type or not op.op_def.is_stateful:
        return False
    return "Random" in op.type or op.type in _PINNED_OPS | _UNPINNED_OPS | _OTHER_RANDOM_OPS


_OTHER_RANDOM_OPS = frozenset(
    {"SampleDistortedBoundingBox", "SampleDistortedBoundingBoxV2", "RandomCrop"}
)


def captured_in_build(build: Callable[[], object], pinned: list[tf.Operation]) -> str:
    """:func:`captured_draw` of `build` run in a graph of its own ("" if it fails there)."""
    graph = tf.Graph()
    try:
        with graph.as_default():
            build()
    except Exception:  # noqa: BLE001 - the proof's own builds report their errors
        return ""
    return captured_draw(graph, pinned)
