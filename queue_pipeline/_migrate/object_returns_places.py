"""Where a function's returned structure holds its batches: paths through objects, dicts, sequences.

NOTE [ Pipelines returned in objects ]
An input function may return its batches inside an object it builds (the
peer-CNN reader's local ``class DataSet`` with ``data_sets.train.images``,
``data_sets.test.labels``; a ``SimpleNamespace``; a namedtuple or a dict,
nested), beside plain attributes (``num_classes``, ``size``). A place is a
path of steps from the returned value to a value: an attribute, a key or an
index (:func:`walk`). The tf.data version returns the same structure with each
pipeline's Dataset at every place that held one of its batches (NOTE [ Several
pipelines in one returned object ] in :mod:`queue_pipeline._migrate.object_returns`);
the proof (:class:`Places`) compares each Dataset with the legacy batches at
its places (one compare per Dataset, its elements the batches of those places
in order), and the plain values at the other places for equality.
"""

from __future__ import annotations

import types
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from queue_pipeline._migrate.constructor_pipelines import _dequeues

__all__ = [
    "Places",
    "get",
    "holds_objects",
    "is_leaf",
    "is_queue",
    "leaf_tensors",
    "pipeline_groups",
    "places",
    "plain_leaves",
    "spelled",
    "walk",
]

Path = tuple[tuple[str, Any], ...]  # ("attr", name) | ("key", key) | ("index", i)

_PLAIN = (bool, int, float, complex, str, bytes, type(None), np.generic)


def is_leaf(value: Any) -> bool:
    return isinstance(value, (tf.Tensor, tf.SparseTensor, tf.data.Dataset, tf.Variable)) or (
        hasattr(value, "op") and hasattr(value, "graph")
    )


def is_queue(value: Any) -> bool:
    """A queue or a reader (what a Dataset replaces, never stored in its place)."""
    return hasattr(value, "queue_ref") or hasattr(value, "reader_ref")


def _is_object(value: Any) -> bool:
    """An instance whose attributes hold values (a local class's, a SimpleNamespace)."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType)):
        return False
    return isinstance(getattr(value, "__dict__", None), dict) and not is_leaf(value)


def _parts(value: Any) -> list[tuple[tuple[str, Any], Any]] | None:
    fields = getattr(value, "_asdict", None)
    if fields is not None and isinstance(value, tuple):  # a namedtuple
        return [(("attr", k), v) for k, v in fields().items()]
    if isinstance(value, (tuple, list)):
        return [(("index", i), v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return [(("key", k), v) for k, v in value.items()]
    if _is_object(value):
        return [(("attr", k), v) for k, v in vars(value).items() if not k.startswith("__")]
    return None


def walk(value: Any) -> list[tuple[Path, Any]]:
    """Every (place, value) of the structure `value` that is a tensor, a Dataset or a plain
    value, in attribute, key and index order (each object once)."""
    found: list[tuple[Path, Any]] = []
    seen: set[int] = set()

    def visit(v: Any, path: Path) -> None:
        if is_leaf(v) or isinstance(v, _PLAIN) or is_queue(v):
            found.append((path, v))
            return
        if id(v) in seen:
            return
        parts = _parts(v)
        if parts is None:
            return
        seen.add(id(v))
        for step, part in parts:
            visit(part, (*path, step))

    visit(value, ())
    return found


def get(value: Any, path: Path) -> Any:
    """The value at `path` of `value`."""
    for kind, step in path:
        value = getattr(value, step) if kind == "attr" else value[step]
    return value


def spelled(path: Path) -> str:
    """`path` as Python after the returned value (``.train.images``, ``['train'][0]``)."""
    return "".join(f".{s}" if k == "attr" else f"[{s!r}]" for k, s in path)


def holds_objects(outputs: Any) -> bool:
    """Whether a tensor of `outputs` sits in an attribute of an object (not a namedtuple)."""

    def through_object(v: Any, depth: int) -> bool:
        if depth > 8 or is_leaf(v) or isinstance(v, _PLAIN):
            return False
        if _is_object(v) and not (hasattr(v, "_asdict") and isinstance(v, tuple)):
            return any(is_leaf(p) for _, p in walk(v))
        parts = _parts(v)
        return parts is not None and any(through_object(p, depth + 1) for _, p in parts)

    return through_object(outputs, 0)


def leaf_tensors(outputs: Any) -> Any:
    """`outputs` as the proof reads its graph: the list of its tensors when they sit in
    objects; else `outputs` itself."""
    if not holds_objects(outputs):
        return outputs
    return [v for _, v in walk(outputs) if is_leaf(v)]


def plain_leaves(outputs: Any) -> list:
    """The plain values of `outputs` (numbers, strings), in place order."""
    return [v for _, v in walk(outputs) if isinstance(v, _PLAIN)]


def pipeline_groups(outputs: Any) -> list[list[Path]]:
    """The places of `outputs`' tensors grouped by the dequeue ops they are computed from."""
    groups: dict[frozenset, list[Path]] = {}
    for path, v in walk(outputs):
        if is_leaf(v) and not isinstance(v, tf.data.Dataset):
            key = frozenset(_dequeues(v))
            if key:  # a tensor read from no queue (a constant) is no pipeline's
                groups.setdefault(key, []).append(path)
    return list(groups.values())


class Places:
    """The Datasets a migrated function returned, each with the places that hold it."""

    def __init__(self, returned: Any):
        by_id: dict[int, list[Path]] = {}
        for path, v in walk(returned):
            if isinstance(v, tf.data.Dataset):
                by_id.setdefault(id(v), []).append(path)
        self.groups = list(by_id.values())
        self.count = len(self.groups)

    def legacy(self, outputs: Any, i: int) -> Any:
        """The legacy batches at the places of the `i`-th Dataset (each tensor once)."""
        leaves: list = []
        for path in self.groups[i]:
            value = get(outputs, path)
            if not any(value is seen for seen in leaves):
                leaves.append(value)
        return leaves[0] if len(leaves) == 1 else tuple(leaves)

    def twin(self, outputs: Any, i: int) -> Any:
        """The `i`-th Dataset of the migrated function's `outputs`."""
        return get(outputs, self.groups[i][0])

    def described(self, reports: list) -> str:
        """Each Dataset's places and how its compare went (`reports`, one per Dataset)."""
        return "; ".join(
            f"{', '.join(spelled(p) for p in group)}: {r.mode}"
            for group, r in zip(self.groups, reports)
        )


def places(outputs: Any, build_twin: Callable[[], Any]) -> Places | None:
    """The twin's Datasets and their places, when the legacy `outputs` hold batches in
    objects, or when the twin puts one Dataset at several places of a tuple, list or
    dict (the twin is built once more, in a graph of its own); else None."""
    objects = holds_objects(outputs)
    if not objects and (
        not isinstance(outputs, (tuple, list, dict)) or len(pipeline_groups(outputs)) < 2
    ):
        return None
    with tf.Graph().as_default():
        found = Places(build_twin())
    if objects or any(len(group) > 1 for group in found.groups):
        return found if found.count else None
    return None
