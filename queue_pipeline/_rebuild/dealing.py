"""Lists that take turns at one shared source: its records dealt to their regions in turn.

NOTE [ Records dealt to lists sharing a source ]
In TF, the lists of a ``batch_join`` (or the enqueue ops of one queue) that
compute from one shared stage output -- tensorflow/models inception's
``batch_inputs``: N copies of ``image_preprocessing(image_buffer,
thread_id=i)`` over ONE ``examples_queue.dequeue()`` -- each run that stage
once per enqueue: every record goes through exactly one list's ops, and
which list is whichever thread is free, so over an epoch every list (and
whatever it does differently: inception's resize method ``thread_id % 4``,
its colour ordering ``thread_id % 2``) gets its share of the records.

The rebuilder builds the shared stages once (one stream, zipped when there
are several), numbers its records (``Dataset.enumerate``) and runs record
``k`` through list ``k mod N``'s lifted region (:class:`DealtRegion`: a
``tf.switch_case`` on the position; only the chosen branch runs). The
records come out in the source's order, each once, each list getting every
N-th: the deterministic round robin of N free threads. The map is the
rebuilder's own :meth:`~queue_pipeline._rebuild.rebuilder.Rebuilder.apply_region`,
so the dataset engine's paths hold: parallel when unseeded; in a seeded
pipeline each list's random ops are made stateless and keyed by the same
position (NOTE [ Stateless randomness keyed by the record ] in
``_engine/stateless.py``), or the map runs sequentially when a list holds a
stateful op with no stateless form.

This applies when every list reads the same stages (the same reader or
dequeue value, the same ``slice_input_producer`` row). Lists with stages of
their own (a reader each over one filename queue: CIFAR-10's and the
"Reading data" guide's multiple readers) are rebuilt each on its own, and
the producer's files are split between the readers: there TF deals *files*
(a reader reads the whole file it dequeued), so with fewer files than
readers some readers read nothing in TF too. Lists that share some stages
and read others of their own keep the older split of the shared producers'
rows between the lists (:meth:`Sources.split_sources`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import tensorflow as tf

from queue_pipeline._rebuild.lift import LiftedRegion

__all__ = ["DealtRegion"]


@dataclasses.dataclass(frozen=True)
class DealtRegion:
    """N lifted regions over the same sources; the record at position ``k`` runs part ``k mod N``.

    It answers what :meth:`Rebuilder.apply_region` and the dataset engine ask
    of a :class:`LiftedRegion` (:attr:`ops`, :attr:`captured`,
    :attr:`sources`, :attr:`sinks`), and is always called with the record's
    position. See NOTE [ Records dealt to lists sharing a source ].

    Attributes:
      parts: one region per list, each taking the same sources, in order.
    """

    parts: tuple[LiftedRegion, ...]

    @property
    def sources(self) -> tuple[tf.Tensor, ...]:
        return self.parts[0].sources

    @property
    def sinks(self) -> tuple[tf.Tensor, ...]:
        return self.parts[0].sinks

    @property
    def ops(self) -> tuple[tf.Operation, ...]:
        return tuple(op for part in self.parts for op in part.ops)

    @property
    def captured(self) -> dict[str, tf.Tensor]:
        return {k: v for part in self.parts for k, v in part.captured.items()}

    @property
    def is_identity(self) -> bool:
        return False

    def with_parts(self, parts) -> DealtRegion:
        """The same dealing over other regions (e.g. the parts made stateless)."""
        return DealtRegion(tuple(parts))

    def __call__(self, *args, position: tf.Tensor | None = None) -> list[tf.Tensor]:
        """Runs part ``position mod N`` on `args`; returns its sinks."""
        if position is None:
            raise TypeError("DealtRegion: the record's `position` is required.")
        if len(self.parts) == 1:
            return self.parts[0](*args, position=position)
        count = tf.constant(len(self.parts), position.dtype)
        index = tf.cast(tf.math.floormod(position, count), tf.int32)
        return list(tf.switch_case(index, [self._branch(p, args, position) for p in self.parts]))

    @staticmethod
    def _branch(part: LiftedRegion, args: tuple, position: tf.Tensor) -> Callable:
        def run():
            # The branch is a function of its own: the import maps its inputs
            # to tensors of this function, captured from the map's.
            local = [tf.identity(a) for a in args]
            return part(*local, position=tf.identity(position))

        return run
