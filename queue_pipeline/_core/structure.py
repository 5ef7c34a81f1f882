"""Tensor structures of the batching functions: list, tuple or dict in, TF 1.x's types out."""

from __future__ import annotations

import itertools
from typing import Any, Mapping, Sequence, Union

import tensorflow as tf

TensorLike = Union[tf.Tensor, tf.SparseTensor]
TensorStructure = Union[Sequence[TensorLike], Mapping[Any, TensorLike]]


def as_tensor_list(tensors) -> list:
    """A dict's values ordered by ``str(key)``; a list or tuple as a list.

    A bare tensor is taken as a one-element list (TF 1.x fails on it while
    iterating it; see the README's table of differences).

    >>> as_tensor_list({"b": 2, 1: 1, "a": 3})
    [1, 3, 2]
    """
    if isinstance(tensors, Mapping):
        return [tensors[key] for key in sorted(tensors, key=str)]
    if is_bare_tensor(tensors):
        return [tensors]
    return list(tensors)


def as_tensor_list_list(api: str, tensors_list) -> list[list]:
    """The lists of a join, each as :func:`as_tensor_list`, checked for consistency.

    Raises:
      ValueError: no list at all, dicts with different keys, or lists of
        different lengths.
    """
    if is_bare_tensor(tensors_list) or not tensors_list:
        raise ValueError(
            f"{api}: Expected at least one set of tensors in `tensors_list`; got {tensors_list!r}."
        )
    first = tensors_list[0]
    if isinstance(first, Mapping):
        keys = set(first)
        for tensors in tensors_list[1:]:
            if not isinstance(tensors, Mapping) or set(tensors) != keys:
                raise ValueError(
                    f"{api}: All dictionaries in tensors_list must have the same "
                    f"keys; got {sorted(map(str, keys))} and "
                    f"{sorted(map(str, tensors)) if isinstance(tensors, Mapping) else tensors!r}."
                )
    lists = [as_tensor_list(tensors) for tensors in tensors_list]
    for i, tensors in enumerate(lists[1:], start=1):
        if len(tensors) != len(lists[0]):
            raise ValueError(
                f"{api}: every list in `tensors_list` must have the same number of "
                f"tensors; list 0 has {len(lists[0])} and list {i} has "
                f"{len(tensors)}."
            )
    return lists


def as_original_type(original, dequeued):
    """Shapes dequeued outputs like the input: a dict for a dict, else as dequeued.

    A queue's dequeue returns a bare tensor for one component and a list
    otherwise, which is what TF 1.x returns for list and tuple inputs alike.
    """
    if isinstance(original, Mapping):
        values = [dequeued] if len(original) == 1 else dequeued
        return {key: values[i] for i, key in enumerate(sorted(original, key=str))}
    return dequeued


def flatten(tensor_list_list) -> list:
    """The tensors of all lists, in order."""
    return list(itertools.chain.from_iterable(tensor_list_list))


def is_bare_tensor(value) -> bool:
    return isinstance(value, (tf.Tensor, tf.SparseTensor, tf.Variable))
