"""Batch-vectorized decoding: a lifted per-record region rewritten to run on whole batches.

:func:`vectorize` takes a :class:`~queue_pipeline._rebuild.lift.LiftedRegion` (the
user's per-record ops between two pipeline stages) and returns either a
:class:`VectorizedRegion`, which computes the same values for a whole batch of
records at once, or a :class:`NotVectorizable` naming the first op that has no
batch form and why. The engine then shuffles and batches the raw records
first and decodes once per batch (``ParseExample`` instead of one
``ParseSingleExample`` per record), which is where tf.data gets its speed.

NOTE [ Vectorizing a region ]
The region's GraphDef is walked in topological order (data and control
inputs first) and rewritten node by node into a new GraphDef. Every tensor is either *batched*
(it depends on a source and has a leading batch dimension ``B``; its
per-example shape is the one the per-record region infers) or *unbatched*
(it does not depend on a source: constants, shapes, variable reads). A node
whose inputs are all unbatched is copied unchanged and stays unbatched. A
node with a batched input needs a *rule* (``_RULES`` in ``rules.py``): most rules copy
the node unchanged (element-wise ops, ``DecodeCSV``, ``ParseExampleV2`` on a
scalar), others copy it with rewritten axis, shape, slice or permutation
inputs (an extra leading entry for the batch axis) or attributes, built by
small helper subgraphs. A node without a rule, or whose rule cannot prove the
batched result equal to the per-record one, makes the whole region
:class:`NotVectorizable` (all or nothing).

A rule is accepted only where, for every example ``i``, row ``i`` of the
batched result is bitwise the per-record result for record ``i``, or both
raise. Three facts keep that true:

* *Same kernels, same rounding.* Integer, string and boolean ops are exact.
  Floating-point ops are exact only when each element is one correctly
  rounded IEEE operation (add, multiply, divide, sqrt, min/max, casts,
  comparisons, floor/round ...). Transcendental functions (``Exp``, ``Log``,
  ``Sigmoid``, ``Rsqrt``, float ``Pow``, ...) and ``Reciprocal`` use a
  vectorized approximation on whole SIMD packets and a scalar libm call or
  division on the tail, so an element may
  round differently depending on where it lands in the batch (measured: up to
  1 ulp on a few percent of elements); float reductions sum in another order.
  Both are refused unless ``exact=False``. Grappler adds a last trap, see
  NOTE [ Grappler and float arithmetic ].
* *Dense batches.* A batched tensor is dense, so every example has the same
  per-example shape. Only ``DecodeRaw`` makes a per-record shape depend on the
  data (the byte length of each string). It is vectorized only when that
  length is provably the same for every record that does not raise: the
  string comes from a source the caller declares fixed-length
  (``fixed_lengths``, e.g. a ``FixedLengthRecordReader``'s value), or its
  result reaches, through element-wise ops that keep its size, a ``Reshape``
  to a fully known shape or a sink with a fully known static shape (which the
  per-record region checks with ``ensure_shape``). Then a batch whose strings
  differ in length has a record that fails per record too, and the batched
  ``DecodeRaw`` fails. Reshapes take the batch size from the tensor
  (``[B] + shape``, never ``[-1] + shape``), so a batch of same-length but wrong
  strings fails instead of silently regrouping.
* *No per-example state.* Stateful ops other than random draws are
  refused, as are stateless random ops seeded from the record (with
  constant seeds every record gets the same values, so one computation per
  batch is exact). ``Assert`` is kept: the batch fails iff a record fails.

Random draws are the one place where "bitwise per record" becomes
"distributed as per record". An unseeded stateful draw (``RandomUniform``,
``RandomUniformInt``, ``RandomStandardNormal``, ``TruncatedNormal`` with
``seed = seed2 = 0``, as ``random_crop``, ``random_flip_*``,
``random_brightness`` and ``random_contrast`` build them without a seed) of an
unbatched shape gives each record fresh i.i.d. values that no run can
reproduce. With ``random_draws=True`` it becomes one draw of ``[B] + shape``
(``B`` from the first source): row ``i`` is distributed exactly as record
``i``'s own draw, and rows are independent, as records' draws are; so every
value computed from the draws has, per record, the distribution it has per
record, though not the values of any per-record run (there are none to
match). Downstream of a draw, the checks that keep floating-point results
bitwise (``exact``) are therefore not applied: a last-bit difference in a
value that was drawn at random is no observable change of its distribution.
Everything not downstream of a draw keeps the bitwise contract. A seeded
draw must repeat itself on every run, so it is refused unless
``keyed_draws``, which draws every draw of the region, seeded or not, from
its stateless form keyed by the batch's position (NOTE [ Seeded draws keyed
by the batch ] in ``rules_random.py``: the engine's choice for a seeded
pipeline); every draw is refused when ``random_draws`` is False. Conditionals on a per-record
predicate (``random_flip_left_right``'s ``cond``) are first rewritten to
selects where that is exact: see NOTE [ Conditionals as selects ] in
``lower.py``. A slice at per-record offsets (``random_crop``) is a gather,
and ``random_contrast``'s kernel with a factor per record has an exact batch
form (NOTE [ Contrast with a factor per record ] in ``rules_image.py``).

Errors still raise, with the batched op's message (it may name the batch
rather than the record). Outputs that do not depend on any source are
broadcast to ``[B, ...]``. Sparse or ragged outputs of the parse ops are
refused when used (a batch of per-record SparseTensors has no dense form);
unused ones are parsed and dropped, as per record.

NOTE [ Grappler and float arithmetic ]
The per-record and the batched functions are optimized by Grappler
separately, and some of its rewrites of float arithmetic depend on static
shapes, which differ between the two (``[4]`` against ``[None, 4]``): the
arithmetic optimizer regroups trees of additions (``(x + c) + d`` became
``x + (c + d)`` on one side only: 62 of 256 elements differed in the last
bit, measured in ``Dataset.map`` on TF 2.21), minimizes broadcasts in chains
of multiplications, hoists common factors out of sums of products and turns
``x / sqrt(y)`` into ``x * rsqrt(y)``; constant folding pushes constants
through chains and drops ``x + 0`` (which turns ``-0.0`` into ``+0.0`` where it
is not dropped). With ``exact=True`` those shapes of float arithmetic are
refused: an addition fed by an addition, a multiplication or division fed
by one, a sum of two products, a division by a square root, an addition or
multiplication with a constant zero, and ``AddN``. Single operations and
chains that alternate (``x * (1 / 255) - 0.5``, ``(x - mean) / std``) are
not rewritten and stay exact. Integer arithmetic is exact in any grouping.
"""

from __future__ import annotations

from typing import Mapping


from queue_pipeline._rebuild.lift import LiftedRegion
from queue_pipeline._engine.vectorize.builder import _Builder
from queue_pipeline._engine.vectorize.lower import lower_conditionals
from queue_pipeline._engine.vectorize.base import (
    _Refused,
)
from queue_pipeline._engine.vectorize.results import (
    NotVectorizable,
    VectorizedRegion,
)

__all__ = ["vectorize"]


def vectorize(
    region: LiftedRegion,
    *,
    fixed_lengths: Mapping[str | int, int] | None = None,
    exact: bool = True,
    random_draws: bool = False,
    keyed_draws: bool = False,
) -> VectorizedRegion | NotVectorizable:
    """Rewrites `region` to run on whole batches, if every op has a batch form.

    See NOTE [ Vectorizing a region ] for the rules and why each gives, for
    every example, exactly the per-record result.

    Args:
      region: a lifted per-record region.
      fixed_lengths: string sources whose every value has a known byte
        length, by source name or position (e.g. ``{0: 3073}`` for a
        ``FixedLengthRecordReader(3073)``'s value). It lets ``DecodeRaw`` of
        such a source run on the batch. The caller vouches for it.
      exact: refuse floating-point ops whose batched form may round
        differently (transcendental functions, float reductions, and the
        float arithmetic Grappler may regroup per shape, see NOTE [ Grappler
        and float arithmetic ]). With False they are vectorized and may
        differ in the last bit.
      random_draws: draw each unseeded stateful random op once per batch,
        ``[B] + shape``: every record's values are distributed as its own
        draw's, not equal to any (see NOTE). False refuses every random draw.
        Pass False when the pipeline must repeat itself (a seed is set),
        unless `keyed_draws`.
      keyed_draws: with `random_draws`, every stateful draw, seeded or not,
        draws ``[B] + shape`` from its stateless form keyed by the op and the
        batch's position, so a run repeats itself at any parallelism; the
        result is :attr:`~VectorizedRegion.keyed` and takes ``position=``
        (NOTE [ Seeded draws keyed by the batch ] in ``rules_random.py``).

    Returns:
      A :class:`VectorizedRegion`, or a :class:`NotVectorizable` naming the
      first op without a batch form and why.

    Raises:
      ValueError: `fixed_lengths` names something that is not a source.

    Example::

        vectorized = vectorize(region)
        if isinstance(vectorized, NotVectorizable):
            logging.info(vectorized.describe())     # once; map `region` per record
        else:
            dataset = records.batch(32).map(lambda r: tuple(vectorized(r)))
    """
    if not region.sources:
        return NotVectorizable("", "", "it reads no source, so there is no batch to map")
    lengths = {}
    for key, length in (fixed_lengths or {}).items():
        if isinstance(key, int):
            source = region.sources[key] if 0 <= key < len(region.sources) else None
        else:
            source = next((s for s in region.sources if s.name == key), None)
        if source is None:
            raise ValueError(
                f"vectorize: `fixed_lengths` names {key!r}, which is not a "
                f"source of the region {[s.name for s in region.sources]}."
            )
        lengths[source.name] = int(length)
    graph_def, lowered = lower_conditionals(region.graph_def)
    try:
        builder = _Builder(
            region,
            lengths,
            exact,
            graph_def=graph_def,
            lowered=lowered,
            draws=random_draws,
            keyed=random_draws and keyed_draws,
        )
    except ValueError:
        if not lowered:
            raise
        # A lowered conditional whose branches' shapes do not even broadcast:
        # walk the region as it is (its conditional is then refused).
        builder = _Builder(
            region, lengths, exact, draws=random_draws, keyed=random_draws and keyed_draws
        )
    try:
        builder.run()
    except _Refused as refused:
        node = refused.node
        name, op_type = (node.name, node.op) if node is not None else ("", "")
        for cond, cond_type in lowered.values():  # an op inlined from a branch: its conditional
            if name.startswith(f"{cond}/_lowered_"):
                name, op_type = cond, cond_type
        return NotVectorizable(name, op_type, refused.reason)
    return builder.result()
