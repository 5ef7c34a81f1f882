"""What vectorizing a region returns: a VectorizedRegion, or NotVectorizable and why."""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from queue_pipeline._core.compat import static_dim
from queue_pipeline._core.graph_def import import_graph
from queue_pipeline._rebuild.lift import POSITION, LiftedRegion
from queue_pipeline._engine.vectorize.base import (
    _UNBATCHED,
    _with_shape,
)

__all__ = ["NotVectorizable", "VectorizedRegion"]


@dataclasses.dataclass(frozen=True)
class NotVectorizable:
    """Why a region cannot run on whole batches: the first op without a batch form.

    Attributes:
      op_name: the op's name in the legacy graph ("" when no single op is at fault).
      op_type: its type.
      reason: why it has no batch form, in a few words.
    """

    op_name: str
    op_type: str
    reason: str

    def describe(self) -> str:
        """One line for a fallback message."""
        if not self.op_name:
            return f"the region is not vectorizable: {self.reason}; it runs per record."
        return (
            f"op {self.op_name!r} (type {self.op_type}) has no batch form: "
            f"{self.reason}; the region runs per record."
        )

    __str__ = describe


@dataclasses.dataclass(frozen=True)
class VectorizedRegion:
    """A lifted region rewritten to compute a whole batch of records at once.

    Called with one batched tensor per source of :attr:`region` (a leading
    batch dimension ``B``, then the source's per-record shape), it returns
    one tensor per sink, ``[B] + sink shape``, whose row ``i`` is what
    :attr:`region` returns for record ``i``. Like the region, each call
    imports a GraphDef into the current graph or function.

    Attributes:
      region: the per-record region.
      graph_def: the batched GraphDef; it reads the sources and variable
        reads under their legacy tensor names, like ``region.graph_def``.
      outputs: per sink, the tensor name in :attr:`graph_def` (or the source
        or variable-read name) that holds it.
      batched: per sink, whether it has the batch dimension (False: it does
        not depend on the sources and is broadcast to the batch).
      rules: ``(op name, op type, rule)`` for every op of the region, in order.
      keyed: its random draws are stateless, keyed by the batch's position:
        call it with ``position=`` (NOTE [ Seeded draws keyed by the batch ]
        in ``rules_random.py``).
    """

    region: LiftedRegion
    graph_def: tf.compat.v1.GraphDef
    outputs: tuple[str, ...]
    batched: tuple[bool, ...]
    rules: tuple[tuple[str, str, str], ...]
    keyed: bool = False

    def describe(self) -> str:
        """A readable summary: how each op of the region runs on a batch."""
        batched = [r for r in self.rules if r[2] != _UNBATCHED]
        lines = [
            f"vectorized region: {len(self.rules)} op(s), "
            f"{len(self.region.sources)} source(s), {len(self.outputs)} sink(s); "
            f"{len(self.rules) - len(batched)} op(s) that no source reaches copied "
            "as they are"
        ]
        lines += [f"  {name} ({op_type}): {rule}" for name, op_type, rule in batched]
        return "\n".join(lines)

    def __call__(self, *args, position: tf.Tensor | None = None) -> list[tf.Tensor]:
        """Imports the batched region with `args` as its sources; returns its sinks.

        Args:
          *args: one batched tensor per source, in the order of
            ``region.sources``; all with the same leading dimension ``B``.
          position: the batch's position since the input started (an int64
            scalar); required when :attr:`keyed`, ignored otherwise.

        Returns:
          One tensor per sink, each ``[B] + `` the sink's static shape
          (checked with ``tf.ensure_shape`` where the imported shape is less
          specific, as the per-record region does).

        Raises:
          TypeError: the number of arguments differs from the sources', or
            a keyed region is called without `position`.
          ValueError: an argument's shape is not ``[B] +`` its source's shape.
        """
        sources = self.region.sources
        if len(args) != len(sources):
            raise TypeError(
                f"VectorizedRegion: expected {len(sources)} argument(s) (one "
                f"batch per source {[s.name for s in sources]}); got "
                f"{len(args)}."
            )
        by_name = {}
        for source, arg in zip(sources, args):
            value = tf.convert_to_tensor(arg, dtype=source.dtype.base_dtype)
            expected = tf.TensorShape([None]).concatenate(source.shape)
            if not value.shape.is_compatible_with(expected):
                raise ValueError(
                    f"VectorizedRegion: the batch for source {source.name!r} "
                    f"must have shape {expected}; got {value.shape}."
                )
            if expected.rank is not None and value.shape.merge_with(expected) != value.shape:
                # The rules rely on the per-record shapes of the sources; check them.
                value = tf.ensure_shape(value, expected)
            by_name[source.name] = value
        by_name.update(self.region.variable_values())
        if self.keyed:
            if position is None:
                raise TypeError(
                    "VectorizedRegion: its random draws are keyed by the batch's "
                    "position; call it with position= (the batch's int64 index, "
                    "e.g. from Dataset.enumerate())."
                )
            by_name[POSITION] = tf.cast(position, tf.int64)
        imported = {}
        if self.graph_def.node:
            wanted = sorted({n for n in self.outputs if n not in by_name})
            results = import_graph(self.graph_def, by_name, wanted, name="vectorized")
            imported = dict(zip(wanted, results))
        first = by_name[sources[0].name]
        size = tf.shape(first)[0]
        static_size = static_dim(first, 0)
        outputs = []
        for sink, name, batched in zip(self.region.sinks, self.outputs, self.batched):
            value = by_name[name] if name in by_name else imported[name]
            if not batched:
                value = tf.broadcast_to(value[tf.newaxis], tf.concat([[size], tf.shape(value)], 0))
            outputs.append(_with_shape(value, sink.shape, static_size))
        return outputs
