"""The one engine behind the eight batching twins (queue_pipeline.data.batching).

:func:`build` assembles a twin's Dataset: join inputs round-robin ->
``unbatch`` (`enqueue_many`) -> filter (`keep_input`) -> shape check
(`shapes`) -> ``shuffle(capacity)`` -> ``batch``/``padded_batch`` -> `decode`
-> ``prefetch``; the helpers below check and shape each step.
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from typing import Any, Callable, Mapping

import numpy as np
import tensorflow as tf

from queue_pipeline._core import validation
from queue_pipeline._core.compat import as_int64
from queue_pipeline.data import _common

__all__ = ["Kind", "build"]

_Decoder = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class Kind:
    """Which of the eight twins is being built."""

    name: str
    join: bool  # a list of Datasets, interleaved round-robin
    shuffle: bool  # shuffle(capacity), min_after_dequeue validated

    @property
    def api(self) -> str:
        return f"queue_pipeline.data.{self.name}"


@dataclasses.dataclass(frozen=True)
class PositionedDecode:
    """A twin's `decode` that takes the batch's position in the epoch first.

    ``fn(position, batch)``: position is an int64 scalar counting the epoch's
    batches from 0. The dataset engine's decoder of a seeded pipeline is one
    (NOTE [ Seeded draws keyed by the batch ] in
    _engine/vectorize/rules_random.py): :func:`build` enumerates the batches
    before it maps them, so the position is part of the iterator's state.
    """

    fn: Callable[..., Any]


def build(
    kind: Kind,
    tensors,
    *,
    batch_size,
    capacity,
    keep_input=True,
    num_threads=1,
    min_after_dequeue=None,
    seed=None,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    decode: Callable[..., Any] | PositionedDecode | None = None,
) -> tf.data.Dataset:
    """Builds one twin: inputs -> examples -> shuffle -> batch -> decode -> prefetch."""
    api = kind.api
    if kind.shuffle:
        validation.check_capacity(api, capacity, min_after_dequeue)
    if kind.join:
        datasets = _join_inputs(api, tensors)
        threads = len(datasets)
    else:
        datasets = [_require_dataset(api, "tensors", tensors)]
        threads = validation.check_num_threads(api, num_threads)
    parallel = threads if threads > 1 else None
    ds = datasets[0] if len(datasets) == 1 else _common.round_robin(datasets)
    ds, keep_key = _select_examples(api, ds, keep_input, enqueue_many)
    ds = _finish_examples(api, ds, keep_key, shapes, parallel)
    if kind.shuffle:
        ds = ds.shuffle(capacity, seed=seed, reshuffle_each_iteration=True)
    ds = _batched(api, ds, batch_size, dynamic_pad, allow_smaller_final_batch)
    if decode is not None:
        # A map keeps its input order, so decoding batches in parallel changes
        # nothing but the speed.
        if isinstance(decode, PositionedDecode):
            ds = ds.enumerate().map(decode.fn, num_parallel_calls=tf.data.AUTOTUNE)
        else:
            ds = ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    if not kind.join and threads > 1:
        options = tf.data.Options()
        options.deterministic = False
        ds = ds.with_options(options)
    return ds


def _require_dataset(api: str, arg: str, value) -> tf.data.Dataset:
    if isinstance(value, tf.data.Dataset):
        return value
    raise TypeError(
        f"{api}: `{arg}` must be a tf.data.Dataset of examples; got "
        f"{type(value).__name__}. Build one with tf.data.Dataset.from_tensor_slices"
        "(...) or a producer twin from queue_pipeline.data (legacy lists of tensors "
        "have no per-example meaning in tf.data)."
    )


def _join_inputs(api: str, tensors_list) -> list[tf.data.Dataset]:
    """The joins' Datasets, checked like legacy's lists: same structure and dtypes."""
    if isinstance(tensors_list, tf.data.Dataset) or not isinstance(tensors_list, (list, tuple)):
        raise TypeError(
            f"{api}: `tensors_list` must be a list of tf.data.Datasets; got "
            f"{type(tensors_list).__name__}."
        )
    if not tensors_list:
        raise ValueError(
            f"{api}: Expected at least one set of tensors in `tensors_list`; got an empty list."
        )
    datasets = [
        _require_dataset(api, f"tensors_list[{i}]", ds) for i, ds in enumerate(tensors_list)
    ]
    first = datasets[0].element_spec
    for i, ds in enumerate(datasets[1:], start=1):
        _check_same_spec(api, first, ds.element_spec, i)
    return datasets


def _check_same_spec(api: str, first, other, index: int) -> None:
    try:
        tf.nest.assert_same_structure(first, other)
    except (ValueError, TypeError) as e:
        raise ValueError(
            f"{api}: every Dataset in `tensors_list` must have the same element "
            f"structure; Dataset 0 has {first} and Dataset {index} has {other}."
        ) from e
    specs, others = tf.nest.flatten(first), tf.nest.flatten(other)
    if [s.dtype for s in specs] != [s.dtype for s in others]:
        raise TypeError(
            f"{api}: Expected types to be consistent: "
            f"{', '.join(s.dtype.name for s in specs)} vs. "
            f"{', '.join(s.dtype.name for s in others)} (Dataset 0 vs. Dataset {index})."
        )
    for a, b in zip(specs, others):
        if type(a) is not type(b):
            raise ValueError(
                f"{api}: Inconsistent SparseTensors list: Dataset 0 has {first} and "
                f"Dataset {index} has {other}."
            )
        if not a.shape.is_compatible_with(b.shape):
            raise ValueError(
                f"{api}: Shapes {a.shape} and {b.shape} are not compatible "
                f"(Dataset 0 vs. Dataset {index})."
            )


def _static_bool(value):
    """`value` as a Python bool if it is a constant scalar bool, else None."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (tf.Tensor, np.ndarray)) and value.dtype == tf.bool:
        static = tf.get_static_value(value)
        if static is not None and np.ndim(static) == 0:
            return bool(static)
    return None


def _select_examples(api: str, ds: tf.data.Dataset, keep_input, enqueue_many: bool):
    """``unbatch`` (`enqueue_many`) and filter by `keep_input`.

    Returns:
      (dataset, the key or index of the keep component to drop, or None).
    """
    unbatch = (lambda d: d.unbatch()) if enqueue_many else (lambda d: d)
    keep = _static_bool(keep_input)
    if keep is True:
        return unbatch(ds), None
    if keep is False:
        warnings.warn(
            f"{api}: `keep_input` is False, so the result is empty (the legacy "
            "pipeline would block forever on its first batch).",
            UserWarning,
            stacklevel=4,
        )
        return unbatch(ds.take(0)), None
    if callable(keep_input):
        return unbatch(ds).filter(keep_input), None
    if isinstance(keep_input, (str, numbers.Integral)) and not isinstance(keep_input, bool):
        key, spec = _keep_component(api, ds.element_spec, keep_input)
        get_keep = _component_getter(ds.element_spec, key)
        if enqueue_many and spec.shape.rank == 0:
            # A scalar keeps or drops a whole input batch; it cannot be unbatched.
            ds = _finish_examples(api, ds.filter(get_keep), key, None, None)
            return ds.unbatch(), None
        ds = unbatch(ds)
        return ds.filter(_component_getter(ds.element_spec, key)), key
    raise TypeError(
        f"{api}: `keep_input` must be a Python bool, a predicate on one example, or "
        f"the key or index of a bool component of each element; got {keep_input!r}. "
        "A tensor computed outside the Dataset cannot select its examples: add it "
        "to each element and pass its key."
    )


def _keep_component(api: str, spec, key):
    """(normalized key, spec) of the bool component that `key` names."""
    if isinstance(spec, Mapping):
        if key not in spec:
            raise ValueError(
                f"{api}: `keep_input` {key!r} is not a key of the elements; "
                f"keys are {sorted(spec, key=str)}."
            )
    elif isinstance(spec, tuple) and isinstance(key, numbers.Integral):
        if not -len(spec) <= int(key) < len(spec):
            raise ValueError(
                f"{api}: `keep_input` index {key} is out of range for "
                f"elements of {len(spec)} components."
            )
        key = int(key) % len(spec)
    else:
        raise ValueError(
            f"{api}: `keep_input` {key!r} names a component, but the elements are {spec}."
        )
    if len(spec) < 2:
        raise ValueError(
            f"{api}: `keep_input` {key!r} names the only component; nothing would be left to batch."
        )
    if not isinstance(spec[key], tf.TensorSpec) or spec[key].dtype != tf.bool:
        raise TypeError(
            f"{api}: the `keep_input` component {key!r} must be a bool tensor; got {spec[key]}."
        )
    return key, spec[key]


def _component_getter(spec, key):
    """A Dataset.filter predicate returning component `key` of each element."""
    if isinstance(spec, tuple):
        return lambda *components: components[key]
    return lambda element: element[key]


def _finish_examples(api: str, ds: tf.data.Dataset, keep_key, shapes, parallel):
    """Drops the keep component, applies `shapes`, unwraps one-component tuples.

    One ``map``, and none when there is nothing to do.
    """
    spec = ds.element_spec
    is_tuple = isinstance(spec, tuple)
    remaining = _component_keys(spec, keep_key)
    shape_of = _shapes_by_key(api, spec, remaining, shapes)
    unwrap = is_tuple and len(remaining) == 1
    if keep_key is None and not shape_of and not unwrap:
        return ds

    def finish(*args):
        element = args if is_tuple else args[0]
        if not isinstance(spec, (tuple, Mapping)):
            return _ensure_shape(element, shape_of.get(None))
        out = {key: _ensure_shape(element[key], shape_of.get(key)) for key in remaining}
        if isinstance(spec, Mapping):
            return out
        values = tuple(out[i] for i in remaining)
        return values[0] if unwrap else values

    return ds.map(finish, num_parallel_calls=parallel)


def _component_keys(spec, drop) -> list:
    """Component keys in the legacy order (dicts by ``str(key)``), less `drop`."""
    if isinstance(spec, Mapping):
        keys = sorted(spec, key=str)
    elif isinstance(spec, tuple):
        keys = list(range(len(spec)))
    else:
        keys = [None]
    return [k for k in keys if drop is None or k != drop]


def _shapes_by_key(api: str, spec, keys: list, shapes) -> dict:
    """{component key: TensorShape} from the legacy `shapes` argument."""
    if shapes is None:
        return {}
    if isinstance(shapes, Mapping):
        if not isinstance(spec, Mapping) or set(shapes) - set(keys):
            raise ValueError(
                f"{api}: `shapes` as a dict needs dict elements with those "
                f"keys; got keys {sorted(shapes, key=str)} for elements "
                f"{spec}."
            )
        by_key = dict(shapes)
    else:
        shapes = list(shapes)
        if len(shapes) != len(keys):
            raise ValueError(
                f"{api}: `shapes` must give one shape per component "
                f"({len(keys)}); got {len(shapes)}: {shapes!r}."
            )
        by_key = dict(zip(keys, shapes))
    return {key: tf.TensorShape(shape) for key, shape in by_key.items()}


def _ensure_shape(value, shape):
    if shape is None or isinstance(value, tf.SparseTensor):
        return value
    return tf.ensure_shape(value, shape)


def _batched(
    api: str, ds: tf.data.Dataset, batch_size, dynamic_pad: bool, allow_smaller_final_batch: bool
) -> tf.data.Dataset:
    drop_remainder = not allow_smaller_final_batch
    if isinstance(batch_size, (tf.Tensor, tf.Variable)):
        batch_size = as_int64(batch_size)
    if not dynamic_pad:
        return ds.batch(batch_size, drop_remainder=drop_remainder)
    specs = tf.nest.flatten(ds.element_spec)
    if any(not isinstance(s, tf.TensorSpec) for s in specs):
        raise TypeError(
            f"{api}: `dynamic_pad=True` cannot batch {ds.element_spec}: tf.data's "
            "padded_batch takes dense tensors only. SparseTensors of different dense "
            "shapes batch without dynamic_pad; or densify them first "
            "(tf.sparse.to_dense)."
        )
    # The padded shapes are the examples' static shapes, which `shapes` set.
    padded_shapes = tf.nest.map_structure(lambda s: s.shape, ds.element_spec)
    return ds.padded_batch(batch_size, padded_shapes=padded_shapes, drop_remainder=drop_remainder)
