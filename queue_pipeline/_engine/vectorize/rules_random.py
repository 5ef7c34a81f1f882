"""Vectorize rule for unseeded random draws: one draw of ``[B] + shape`` per batch.

See NOTE [ Vectorizing a region ] (random draws are the one place where
"bitwise per record" becomes "distributed as per record").

NOTE [ Seeded draws keyed by the batch ]
A seeded pipeline must give the same batches on every run, at every
parallelism. Per record, the engine makes its random ops stateless keyed by
the record's position (NOTE [ Stateless randomness keyed by the record ] in
``_engine/stateless.py``), but a region mapped per record costs 1.5x the
CPU of one run on whole batches (W7 of ``benchmarks/own_queue.py``). With
``keyed_draws`` every stateful draw of the region, seeded or unseeded, is
vectorized by the rule below and then becomes its stateless form seeded
``[op key, position of the batch]``: the op key hashes the op's resolved
seeds and name (so two ops never share a stream), the position counts the
batches since the input started (``Dataset.enumerate`` after the batch:
part of the iterator's state, so a run restored from a checkpoint draws for
the next batches what the uninterrupted run drew). The batch's records come
from a seeded shuffle, so which record gets which row is fixed too. Rows of
one stateless draw are i.i.d. with the op's distribution, as in the
unseeded case, and no two batches share a key. The values differ from the
per-record keyed map's (another key), which no contract fixes.
"""

from __future__ import annotations

import tensorflow as tf

from queue_pipeline._engine.vectorize.base import Builder, _In, _Refused, _batch_size

__all__ = ["DRAW_RULE", "DRAWS", "draw"]

# Stateful random ops whose values are i.i.d. over the shape they are asked
# for, and whose only per-draw input is that shape (and scalar bounds).
DRAWS = frozenset({"RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal"})

DRAW_RULE = "one draw of [B] + shape (independent per record, distributed as per record)"


def draw(b: Builder, node, ins: list[_In]) -> None:
    """An unseeded draw of ``shape`` per record becomes one draw of ``[B] + shape``.

    The elements of a draw are independent and identically distributed, so
    row ``i`` of the batched draw is distributed exactly as record ``i``'s
    own draw, and rows are independent of each other, as records' draws are.
    """
    shape, bounds = ins[0], ins[1:]
    if shape.batched or any(i.batched for i in bounds):
        raise _Refused("its shape or bounds depend on the record")
    if any(i.rank != 0 for i in bounds):
        raise _Refused("its bounds are not scalars")
    batched_shape = b.helper(
        f"{node.name}/shape",
        lambda s, like: [tf.concat([_batch_size(like, s.dtype), s], 0)],
        [shape, b.batch_like()],
    )[0]
    b.copy(node, [batched_shape] + [i.new for i in bounds], rule=DRAW_RULE)
