"""A stream: one rebuilt stage output, a Dataset plus the legacy values it stands for.

The :class:`~queue_pipeline._rebuild.rebuilder.Rebuilder` turns each stage
of a legacy pipeline into a :class:`Stream` and zips the streams one example
needs (:func:`combine`); see NOTE [ Rebuilding from the plan ].
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

__all__ = ["SourceSplit", "Stream", "combine", "keeps_static_shapes", "leaf_name"]


@dataclasses.dataclass
class SourceSplit:
    """The share of its producers' rows a stream under a split gathering queue reads.

    Attributes:
      index: which share (0-based).
      count: how many shares.
      used: set when a producer was split (else the split changed nothing).
    """

    index: int
    count: int
    used: bool = False


@dataclasses.dataclass
class Stream:
    """A stage output: a Dataset and the legacy values its components stand for.

    Attributes:
      dataset: the rebuilt Dataset.
      leaves: one legacy Tensor or SparseTensor per component of an element.
      form: ``"bare"`` (the element is the single component), ``"tuple"``
        (a tuple of the components, possibly of one), ``"zip"`` (a tuple of
        the elements of :attr:`parts`), ``"packed"`` (built by a `pack`
        function: the final structure, not for further rebuilding) or
        ``"none"`` (no component; the element is a dummy).
      parts: for ``"zip"``, the zipped streams.
    """

    dataset: tf.data.Dataset
    leaves: list
    form: str = "tuple"
    parts: tuple = ()

    def flatten(self, args: tuple) -> list:
        """The components of one element, given the arguments ``Dataset.map`` passes."""
        if self.form == "none":
            return []
        if self.form != "zip":
            return list(args)
        flat = []
        for part, element in zip(self.parts, args):
            flat += part.flatten(tuple(element) if isinstance(element, tuple) else (element,))
        return flat


def leaf_name(x) -> str:
    return x.indices.name if isinstance(x, tf.SparseTensor) else x.name


def keeps_static_shapes(dataset: tf.data.Dataset, leaves: list) -> bool:
    """False if a leaf's legacy static shape is more specific than the Dataset's."""
    specs = tf.nest.flatten(dataset.element_spec)
    if len(specs) != len(leaves):
        return True
    for spec, leaf in zip(specs, leaves):
        shape = getattr(spec, "shape", None)
        if (
            shape is not None
            and shape.is_compatible_with(leaf.shape)
            and shape.merge_with(leaf.shape) != shape
        ):
            return False
    return True


def combine(streams: list[Stream]) -> Stream:
    if not streams:
        return Stream(tf.data.Dataset.from_tensors(np.int64(0)).repeat(), [], "none")
    if len(streams) == 1:
        return streams[0]
    leaves = [leaf for s in streams for leaf in s.leaves]
    return Stream(
        tf.data.Dataset.zip(tuple(s.dataset for s in streams)), leaves, "zip", tuple(streams)
    )
