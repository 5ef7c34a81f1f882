"""Names for the argument types of the legacy API, for annotations and readers.

TensorFlow ships no type information, so to a type checker its objects are
``Any``; these aliases say what each argument accepts. They are used only in
annotations (every module that uses them has ``from __future__ import
annotations``), so importing them costs nothing at run time.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

__all__ = [
    "Batch",
    "BoolLike",
    "IntLike",
    "OperationLike",
    "QueueLike",
    "SessionLike",
    "ShapeLike",
    "ShapesLike",
    "StringsLike",
    "TensorLike",
    "TensorStructure",
]

TensorLike = Any
"""A ``tf.Tensor``, ``tf.SparseTensor``, numpy array or Python value."""

TensorStructure = Union[Sequence[Any], Mapping[str, Any]]
"""A list/tuple or dict of TensorLike: one example (or a batch with ``enqueue_many``)."""

Batch = Any
"""What a batching function returns: the structure of `tensors`, batched."""

IntLike = Any
"""A Python int or a scalar int32/int64 tensor."""

BoolLike = Any
"""A Python bool or a bool tensor (scalar, or a vector with ``enqueue_many``)."""

StringsLike = Any
"""A 1-D string tensor, or a list of Python strings."""

ShapeLike = Any
"""A ``tf.TensorShape``, or a list of ints and None."""

ShapesLike = Sequence[Any]
"""One ShapeLike per component of `tensors`."""

OperationLike = Any
"""A ``tf.Operation`` (or a tensor whose op is meant)."""

QueueLike = Any
"""A queue: ``tf.queue.QueueBase`` or what the producers return."""

SessionLike = Any
"""A ``tf.compat.v1.Session`` (or a session wrapper such as ``MonitoredSession``)."""
