"""Canonical structures and values for comparing pipeline outputs (compare, testing).

Both sides of a comparison are brought to one canonical form:

* **Structure**: a dict's keys sorted by ``str``; a list equals a tuple; a
  one-element list or tuple equals its element (TF 1.x's ``batch([x])``
  returns a bare tensor). Components are named by paths such as ``[0]``,
  ``['image']`` or ``''`` for a bare tensor.
* **Leaves**: dense values as numpy arrays (a scalar string as a 0-d object
  array), SparseTensors as :class:`Sparse`.
* **Examples**: a batched element is split along its first dimension.
* **Keys**: hashable, dtype-agnostic within a kind (``int32 3 == int64 3``,
  ``float32 0.5 == float64 0.5``), so value equality is separate from the
  dtype check, which the signature does.

>>> paths, leaves = flatten({"b": 2, "a": (1,)})
>>> paths
['[a]', '[b]']
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np
import tensorflow as tf

_SPARSE_VALUE_TYPES = (tf.compat.v1.SparseTensorValue,)


@dataclasses.dataclass(frozen=True)
class Sparse:
    """A SparseTensor's value: indices [n, rank], values [n], dense_shape [rank]."""

    indices: np.ndarray
    values: np.ndarray
    dense_shape: np.ndarray


@dataclasses.dataclass(frozen=True)
class ComponentSpec:
    """The static signature of one component: dtype, shape, dense or sparse."""

    path: str
    dtype: str
    shape: tf.TensorShape
    sparse: bool = False

    def describe(self) -> str:
        kind = "sparse " if self.sparse else ""
        return f"{kind}{self.dtype}{shape_str(self.shape)}"


def shape_str(shape) -> str:
    """``[4, None]`` style; ``[?]`` for an unknown rank."""
    shape = tf.TensorShape(shape)
    if shape.rank is None:
        return "[?]"
    return "[" + ", ".join("None" if d is None else str(d) for d in shape.as_list()) + "]"


def _is_leaf(value) -> bool:
    return not isinstance(value, (Mapping, list, tuple)) or isinstance(value, _SPARSE_VALUE_TYPES)


def flatten(value, prefix: str = "") -> tuple[list[str], list]:
    """Flattens a (nested) structure into component paths and leaves.

    Args:
      value: a leaf, or a dict, list or tuple of them (nested).
      prefix: the path of `value` itself.

    Returns:
      ``(paths, leaves)`` in canonical order.
    """
    if _is_leaf(value):
        return [prefix], [value]
    if isinstance(value, Mapping):
        items = [(f"{prefix}[{key}]", value[key]) for key in sorted(value, key=str)]
    elif len(value) == 1:
        return flatten(value[0], prefix)
    else:
        items = [(f"{prefix}[{i}]", item) for i, item in enumerate(value)]
    paths: list[str] = []
    leaves: list = []
    for path, item in items:
        p, leaf = flatten(item, path)
        paths += p
        leaves += leaf
    return paths, leaves


def structure_str(paths: list[str], specs: list[ComponentSpec] | None = None) -> str:
    """A one-line rendering, e.g. ``([0]: int64[4], [1]: string[4])``."""
    if paths == [""]:
        return specs[0].describe() if specs else "tensor"
    if not specs:
        return "(" + ", ".join(paths) + ")"
    parts = [f"{p}: {s.describe()}" for p, s in zip(paths, specs)]
    return "(" + ", ".join(parts) + ")"


def specs_of(structure) -> tuple[list[str], list[ComponentSpec]]:
    """Component specs of graph tensors or of a Dataset's ``element_spec``.

    Raises:
      TypeError: a leaf is neither a tensor nor a tensor spec.
    """
    paths, leaves = flatten(structure)
    specs = []
    for path, leaf in zip(paths, leaves):
        sparse = isinstance(leaf, (tf.SparseTensor, tf.SparseTensorSpec))
        if not (sparse or isinstance(leaf, (tf.Tensor, tf.TensorSpec, tf.Variable))):
            raise TypeError(
                f"component {path or '(bare)'} is a {type(leaf).__name__}, not a tensor: {leaf!r}"
            )
        specs.append(ComponentSpec(path, leaf.dtype.name, tf.TensorShape(leaf.shape), sparse))
    return paths, specs


def to_leaf(value):
    """A fetched or eager value as a canonical leaf (numpy array or Sparse)."""
    if isinstance(value, tf.SparseTensor):
        return Sparse(value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy())
    if isinstance(value, _SPARSE_VALUE_TYPES):
        return Sparse(
            np.asarray(value.indices), np.asarray(value.values), np.asarray(value.dense_shape)
        )
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, (bytes, str)):
        return np.array(value, dtype=object)
    return np.asarray(value)


def leaves_of(value) -> list:
    """The canonical leaves of one fetched batch or dataset element."""
    return [to_leaf(leaf) for leaf in flatten(value)[1]]


def batch_size_of(leaves: list) -> int | None:
    """The common first dimension of the leaves, or None if they have none."""
    sizes = set()
    for leaf in leaves:
        if isinstance(leaf, Sparse):
            sizes.add(int(leaf.dense_shape[0]) if leaf.dense_shape.size else None)
        else:
            sizes.add(leaf.shape[0] if leaf.ndim else None)
    return sizes.pop() if len(sizes) == 1 else None


def split_examples(leaves: list) -> list[list]:
    """Splits batched leaves along the first dimension into per-example leaves.

    Raises:
      ValueError: the leaves have no common first dimension.
    """
    n = batch_size_of(leaves)
    if n is None:
        raise ValueError(
            "the components have no common first (batch) dimension: "
            f"{[example_shape(leaf) for leaf in leaves]}"
        )
    columns = []
    for leaf in leaves:
        if isinstance(leaf, Sparse):
            rows = leaf.indices[:, 0] if leaf.indices.size else np.zeros([0], np.int64)
            columns.append(
                [
                    Sparse(
                        leaf.indices[rows == i][:, 1:], leaf.values[rows == i], leaf.dense_shape[1:]
                    )
                    for i in range(n)
                ]
            )
        else:
            columns.append([leaf[i : i + 1].reshape(leaf.shape[1:]) for i in range(n)])
    return [[col[i] for col in columns] for i in range(n)]


def example_shape(leaf) -> tuple:
    """The runtime shape of a leaf (a sparse leaf's dense shape)."""
    if isinstance(leaf, Sparse):
        return tuple(int(d) for d in leaf.dense_shape)
    return tuple(leaf.shape)


def _dense_key(a: np.ndarray) -> tuple:
    kind = a.dtype.kind
    if kind in "OSU":
        return (
            "str",
            a.shape,
            tuple(x if isinstance(x, bytes) else str(x).encode() for x in a.ravel()),
        )
    if kind == "b":
        return ("bool", a.shape, a.tobytes())
    if kind in "iu":
        return ("int", a.shape, a.astype(np.int64).tobytes())
    if kind == "f":
        return ("float", a.shape, a.astype(np.float64).tobytes())
    if kind == "c":
        return ("complex", a.shape, a.astype(np.complex128).tobytes())
    return (kind, a.shape, a.tobytes())


def leaf_key(leaf) -> tuple:
    if isinstance(leaf, Sparse):
        return (
            "sparse",
            tuple(int(d) for d in leaf.dense_shape),
            leaf.indices.astype(np.int64).tobytes(),
            _dense_key(leaf.values),
        )
    return _dense_key(leaf)


def example_key(leaves: list) -> tuple:
    """A hashable key equal for equal examples (see the module docstring)."""
    return tuple(leaf_key(leaf) for leaf in leaves)


def sort_key(leaves: list) -> tuple:
    """A key that sorts numbers numerically and strings as bytes."""
    out = []
    for leaf in leaves:
        values = leaf.values if isinstance(leaf, Sparse) else leaf
        out.append(
            tuple(
                float("-inf") if isinstance(v, float) and v != v else v
                for v in values.ravel().tolist()
            )
        )
    return tuple(out)


def format_leaf(leaf, limit: int = 120) -> str:
    if isinstance(leaf, Sparse):
        text = (
            f"SparseTensor(indices={leaf.indices.tolist()}, "
            f"values={format_leaf(leaf.values)}, dense_shape={leaf.dense_shape.tolist()})"
        )
    elif leaf.ndim == 0:
        text = repr(leaf.item())
    else:
        text = np.array2string(
            leaf, threshold=12, edgeitems=3, separator=", ", max_line_width=10_000
        )
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_example(paths: list[str], leaves: list | None, limit: int = 160) -> str:
    """One example as text, e.g. ``([0]: 3, [1]: b'c')``; ``(ended)`` for None."""
    if leaves is None:
        return "(ended)"
    if paths == [""] or len(paths) != len(leaves):
        text = ", ".join(format_leaf(leaf) for leaf in leaves)
        text = text if len(leaves) == 1 else f"({text})"
    else:
        text = "(" + ", ".join(f"{p}: {format_leaf(leaf)}" for p, leaf in zip(paths, leaves)) + ")"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def to_jsonable(leaf) -> Any:
    """A leaf as JSON-ready data: ``{"dtype", "shape", "values"}`` (+ sparse fields)."""
    if isinstance(leaf, Sparse):
        out = to_jsonable(leaf.values)
        out.update(
            sparse=True,
            indices=leaf.indices.tolist(),
            dense_shape=leaf.dense_shape.tolist(),
            shape=None,
        )
        return out
    if leaf.dtype.kind in "OSU":
        raw = [x if isinstance(x, bytes) else str(x).encode() for x in leaf.ravel()]
        try:
            flat = [x.decode("utf-8") for x in raw]
            encoding = "utf-8"
        except UnicodeDecodeError:
            flat = [x.hex() for x in raw]
            encoding = "hex"
        values = np.array(flat, dtype=object).reshape(leaf.shape).tolist()
        return {
            "dtype": "string",
            "shape": list(leaf.shape),
            "encoding": encoding,
            "values": values,
        }
    return {"dtype": leaf.dtype.name, "shape": list(leaf.shape), "values": leaf.tolist()}
