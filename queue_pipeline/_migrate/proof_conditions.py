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
- *Pinned draws*: every stateful random op (uniform, uniform int, normal,
  truncated normal) returns one fixed value inside its range, a quarter of
  the way up, so ``random_flip_left_right`` flips (0.25 < 0.5), brightness
  and contrast change by a nonzero amount and the crop has an offset. Each
  augmentation line then runs with its own arguments on both sides; a wrong
  ``max_delta`` or a lost flip shows as a difference. Other random ops
  (``tf.random.shuffle`` of the file names, gamma, multinomial) keep their
  randomness; the multiset comparison does not depend on them.

Both conditions patch TensorFlow's Python layer for the proof's build only
(the graph and the Dataset functions are built inside them; the run uses
what was built) and are undone on exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import tensorflow as tf

from queue_pipeline import producers
from queue_pipeline._core import graph as graph_facts

__all__ = ["PINNED_FRACTION", "bounded_repeats", "pinned_random_draws", "random_op_types"]

PINNED_FRACTION = 0.25
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
def pinned_random_draws() -> Iterator[None]:
    """Stateful uniform / normal draws return one value, `PINNED_FRACTION` into their range."""
    from tensorflow.python.ops import gen_random_ops  # noqa: PLC0415

    def fraction(shape, dtype, seed=0, seed2=0, name=None):
        return tf.fill(shape, tf.constant(PINNED_FRACTION, dtype), name=name)

    def integer(shape, minval, maxval, seed=0, seed2=0, name=None):
        minval = tf.convert_to_tensor(minval)
        span = tf.convert_to_tensor(maxval, minval.dtype) - minval
        return tf.fill(shape, minval + span // int(1 / PINNED_FRACTION), name=name)

    pins = {
        "random_uniform": fraction,
        "random_uniform_int": integer,
        "random_standard_normal": fraction,
        "truncated_normal": fraction,
    }
    originals = {name: getattr(gen_random_ops, name) for name in pins}
    for name, pin in pins.items():
        setattr(gen_random_ops, name, pin)
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(gen_random_ops, name, original)
