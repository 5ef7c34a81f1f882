"""tf.data twins of the eight batching functions: batch, shuffle_batch, their joins, maybe_*.

``queue_pipeline.data.batching.X`` mirrors ``queue_pipeline.batching.X`` with
the same parameters (names, order, defaults) except that `tensors` is a
``tf.data.Dataset`` of examples (for the joins, `tensors_list` is a list of
Datasets), and it returns a ``tf.data.Dataset`` of batches. One engine
(:func:`_build`) builds all eight: join inputs round-robin -> ``unbatch``
(`enqueue_many`) -> filter (`keep_input`) -> shape check (`shapes`) ->
``shuffle(capacity)`` -> ``batch``/``padded_batch`` -> `decode` -> ``prefetch``.
:func:`batch` documents the arguments they share.

Batch-then-decode (the keyword-only option ``decode``): decoders that accept
a whole batch (``tf.io.decode_csv``, ``tf.io.decode_raw``,
``tf.io.parse_example``) run once per batch instead of once per example::

    lines = tf.data.TextLineDataset(files).skip(1)
    batches = batching.shuffle_batch(
        lines, 128, capacity=10_000, min_after_dequeue=5_000, seed=7,
        decode=lambda line: tf.io.decode_csv(line, [[0.0], [0.0], [0]]))

The shuffle and batch then move scalar strings, and the decoder's per-call
cost (op dispatch, one output tensor per column) is paid once per batch: on a
2-core machine ``map(decode_csv)`` per example gave about 33-48k examples/s
and batch-then-decode 290-790k examples/s (10-15 times as fast). The
legacy pipeline's equivalent is enqueuing the raw line and decoding the
dequeued batch.

Differences from the legacy queues that every twin shares (see each
docstring for its own):

* The end of input is ``StopIteration`` eagerly, ``OutOfRangeError`` from a
  one-shot iterator's ``get_next()`` in a Session; there are no threads,
  queue runners, summaries or plan nodes, and `shared_name` and `name` only
  warn.
* tf.data has no lists: an element with several components is a tuple where
  the legacy function returns a list. A dict stays a dict; one component
  (a bare tensor or a 1-tuple) comes out as a bare tensor, as in TF 1.x.
* Without `dynamic_pad` the legacy queue needs fully defined shapes at graph
  construction; ``Dataset.batch`` accepts unknown dimensions and fails at run
  time only if the examples of one batch differ.
* A twin raises its argument errors at construction, in eager mode as in
  graph mode (``capacity <= min_after_dequeue`` also for the joins).
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

__all__ = [
    "batch",
    "batch_join",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "shuffle_batch",
    "shuffle_batch_join",
]

_Decoder = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class _Kind:
    """Which of the eight twins is being built."""

    name: str
    join: bool  # a list of Datasets, interleaved round-robin
    shuffle: bool  # shuffle(capacity), min_after_dequeue validated

    @property
    def api(self) -> str:
        return f"queue_pipeline.data.{self.name}"


_BATCH = _Kind("batch", join=False, shuffle=False)
_MAYBE_BATCH = _Kind("maybe_batch", join=False, shuffle=False)
_BATCH_JOIN = _Kind("batch_join", join=True, shuffle=False)
_MAYBE_BATCH_JOIN = _Kind("maybe_batch_join", join=True, shuffle=False)
_SHUFFLE = _Kind("shuffle_batch", join=False, shuffle=True)
_MAYBE_SHUFFLE = _Kind("maybe_shuffle_batch", join=False, shuffle=True)
_SHUFFLE_JOIN = _Kind("shuffle_batch_join", join=True, shuffle=True)
_MAYBE_SHUFFLE_JOIN = _Kind("maybe_shuffle_batch_join", join=True, shuffle=True)

# NOTE [ Shuffle buffer is capacity ]
# A RandomShuffleQueue dequeues uniformly at random from everything it holds.
# Its runner threads keep it filled up to `capacity` while the input lasts, and
# a dequeue never leaves fewer than `min_after_dequeue` behind, so in steady
# state each example is drawn from up to `capacity` (never fewer than
# min_after_dequeue + 1) queued examples. `Dataset.shuffle(buffer_size)` draws
# uniformly from a buffer it keeps full, so `buffer_size=capacity` gives the
# same mixing. TF's own deprecation notice suggests
# `shuffle(min_after_dequeue)`, which mixes less than the legacy queue did; a
# twin must not quietly weaken the shuffle. What differs: the legacy queue
# starts dequeuing once min_after_dequeue + batch_size examples are in, the
# twin once `capacity` are (a longer start-up), and the legacy order also
# depends on thread timing (see spec P23), the twin's only on the seed.


def batch(
    tensors: tf.data.Dataset,
    batch_size,
    num_threads=1,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
    *,
    decode: _Decoder | None = None,
) -> tf.data.Dataset:
    """Batches the examples of a Dataset, as the legacy FIFO queue did.

    Mirrors `queue_pipeline.batch`: each element of `tensors` is one example of
    shape ``[x, y, z]`` (with `enqueue_many`, a batch ``[n, x, y, z]`` of
    examples) and each output element is a batch ``[batch_size, x, y, z]``,
    in input order: ``tensors.batch(batch_size, drop_remainder=not
    allow_smaller_final_batch).prefetch(...)``.

    Args:
      tensors: a Dataset whose elements are examples: a tensor or
        SparseTensor, a tuple or a dict of them.
      batch_size: examples per batch (an int, or an integer scalar tensor).
      num_threads: the legacy enqueue threads ran the upstream graph in
        parallel in a nondeterministic order. Here ``num_threads > 1`` sets
        ``tf.data.Options().deterministic = False`` on the result (upstream
        parallel maps may then yield out of order) and runs the per-example
        work this function adds (`shapes`, `keep_input` components) with
        ``num_parallel_calls=num_threads``; `decode` always runs in parallel
        (order kept). Must be a positive int.
      capacity: the legacy queue's capacity in examples, a buffering knob:
        it does not change what is delivered, and the twin's ``prefetch``
        buffer is autotuned (``tf.data.AUTOTUNE``), as in hand-written
        tf.data.
      enqueue_many: each element of `tensors` is a batch of examples:
        ``unbatch()`` first.
      shapes: the shape of one example per component, in the legacy order
        (a dict's components sorted by ``str(key)``; a dict of shapes by key
        is also accepted). Each example is checked with ``tf.ensure_shape``,
        which also sets its static shape; with `dynamic_pad` these are the
        padded shapes. Ignored for SparseTensor components. Default: as
        `tensors` gives them.
      dynamic_pad: ``padded_batch``: dimensions that are None may differ
        between examples and are padded on the right, with 0 (``b""`` for
        strings, False for bools) up to the longest example of the batch,
        as the legacy PaddingFIFOQueue did. SparseTensor components cannot be
        padded by tf.data (TypeError); they batch without `dynamic_pad`.
      allow_smaller_final_batch: keep the last, smaller batch; the static
        batch dimension is then None (else `batch_size`). Legacy default
        inverted: by default the tail is dropped, as in TF 1.x.
      shared_name: no tf.data meaning; warns.
      name: no tf.data meaning; warns.
      decode: a function applied to each *batch* after batching (called as
        ``Dataset.map`` calls its function: a tuple's components as separate
        arguments); its result is the element. See the module docstring.

    Returns:
      A Dataset of batches, structured as the legacy result: a dict for dict
      examples, a bare tensor (or SparseTensor) for one component, otherwise
      a tuple (the legacy function returns a list).

    Raises:
      TypeError: `tensors` is not a Dataset; `dynamic_pad` with a
        SparseTensor component.
      ValueError: `num_threads` < 1; `shapes` of the wrong length.

    Example::

        ds = tf.data.Dataset.range(7)
        list(batching.batch(ds, 3))  # [0 1 2], [3 4 5]: the tail is dropped
    """
    _common.warn_inert(_BATCH.api, shared_name=shared_name, name=name)
    return _build(
        _BATCH,
        tensors,
        batch_size=batch_size,
        num_threads=num_threads,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode,
    )


def maybe_batch(
    tensors: tf.data.Dataset,
    keep_input,
    batch_size,
    num_threads=1,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
    *,
    decode: _Decoder | None = None,
) -> tf.data.Dataset:
    """:func:`batch` of the examples that `keep_input` keeps.

    Mirrors `queue_pipeline.maybe_batch`: ``filter`` before ``batch``. The
    legacy `keep_input` was a tensor computed beside the example; a Dataset
    has no "beside", so here it is one of:

    * a Python bool: True keeps everything; False gives an empty Dataset with
      a warning (the legacy pipeline blocks forever, spec P13);
    * a callable predicate on one (unbatched) example, called as
      ``Dataset.filter`` calls it, returning a scalar bool;
    * the key (dict) or index (tuple) of a bool component of each element:
      it is the filter and is removed from the output. With `enqueue_many`
      a vector component keeps rows (filtered after ``unbatch``) and a scalar
      one keeps or drops the whole input batch, as the legacy vector and
      scalar `keep_input` did. `shapes` then lists the other components.

    Args:
      keep_input: see above.
      others: as :func:`batch`.

    Raises:
      TypeError: `keep_input` is none of the above (e.g. a non-constant
        tensor), or names a component that is not bool.
      ValueError: `keep_input` names no component, or the only one; and as
        :func:`batch`.
    """
    _common.warn_inert(_MAYBE_BATCH.api, shared_name=shared_name, name=name)
    return _build(
        _MAYBE_BATCH,
        tensors,
        keep_input=keep_input,
        batch_size=batch_size,
        num_threads=num_threads,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode,
    )


def batch_join(
    tensors_list,
    batch_size,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
    *,
    decode: _Decoder | None = None,
) -> tf.data.Dataset:
    """Batches the examples of several Datasets, interleaved round-robin.

    Mirrors `queue_pipeline.batch_join`: ``Dataset.choose_from_datasets(
    tensors_list, Dataset.range(n).repeat(), stop_on_empty_dataset=False)``,
    then as :func:`batch`. Each Dataset's order is preserved, an exhausted
    Dataset is skipped and the result ends when all have ended, as with the
    legacy one-thread-per-list queue.

    Gap: the legacy interleaving depended on thread timing; the twin's is
    deterministic (one example from each Dataset in turn), and the Datasets
    are read one after another, not by parallel threads (parallelize inside
    each Dataset instead, e.g. ``map(..., num_parallel_calls=...)``).

    Args:
      tensors_list: a list of Datasets with the same element structure and
        dtypes (shapes must be compatible).
      others: as :func:`batch`; the added per-example work runs with
        ``num_parallel_calls=len(tensors_list)``.

    Raises:
      TypeError: `tensors_list` is not a list of Datasets; dtypes differ
        ("Expected types to be consistent"); and as :func:`batch`.
      ValueError: `tensors_list` is empty; structures differ (keys, number of
        components, SparseTensor vs dense) or shapes are incompatible.
    """
    _common.warn_inert(_BATCH_JOIN.api, shared_name=shared_name, name=name)
    return _build(
        _BATCH_JOIN,
        tensors_list,
        batch_size=batch_size,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode,
    )


def maybe_batch_join(
    tensors_list,
    keep_input,
    batch_size,
    capacity=32,
    enqueue_many=False,
    shapes=None,
    dynamic_pad=False,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
    *,
    decode: _Decoder | None = None,
) -> tf.data.Dataset:
    """:func:`batch_join` of the examples that `keep_input` keeps.

    Mirrors `queue_pipeline.maybe_batch_join`: interleave, then filter as
    :func:`maybe_batch` describes (the same `keep_input` for every Dataset),
    then batch.
    """
    _common.warn_inert(_MAYBE_BATCH_JOIN.api, shared_name=shared_name, name=name)
    return _build(
        _MAYBE_BATCH_JOIN,
        tensors_list,
        keep_input=keep_input,
        batch_size=batch_size,
        capacity=capacity,
        enqueue_many=enqueue_many,
        shapes=shapes,
        dynamic_pad=dynamic_pad,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode,
    )


def shuffle_batch(
    tensors: tf.data.Dataset,
    batch_size,
    capacity,
    min_after_dequeue,
    num_threads=1,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
    *,
    decode: _Decoder | None = None,
) -> tf.data.Dataset:
    """Batches the examples of a Dataset in random order.

    Mirrors `queue_pipeline.shuffle_batch`: ``shuffle(capacity, seed,
    reshuffle_each_iteration=True)`` then ``batch`` (see :func:`batch`). The
    buffer is `capacity`, not `min_after_dequeue` as TF's deprecation notice
    suggests: see NOTE [ Shuffle buffer is capacity ]. After the input ends
    the buffer drains in random order, as the closed queue did.

    Gap: the twin fills its whole buffer before the first batch (the legacy
    queue started at ``min_after_dequeue + batch_size``), and with a seed its
    order is reproducible even with ``num_threads > 1`` unless upstream maps
    reorder (the legacy order also depended on thread timing).

    Args:
      capacity: the shuffle buffer size; must exceed `min_after_dequeue`.
      min_after_dequeue: validated against `capacity` only.
      seed: the shuffle's op seed (combined with the graph or global seed,
        as in TF 1.x).
      others: as :func:`batch` (no `dynamic_pad`, as in TF 1.x).

    Raises:
      ValueError: ``capacity <= min_after_dequeue``; and as :func:`batch`.
    """
    _common.warn_inert(_SHUFFLE.api, shared_name=shared_name, name=name)
    return _build(
        _SHUFFLE,
        tensors,
        batch_size=batch_size,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        num_threads=num_threads,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode,
    )


def maybe_shuffle_batch(
    tensors: tf.data.Dataset,
    batch_size,
    capacity,
    min_after_dequeue,
    keep_input,
    num_threads=1,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
    *,
    decode: _Decoder | None = None,
) -> tf.data.Dataset:
    """:func:`shuffle_batch` of the examples that `keep_input` keeps.

    Mirrors `queue_pipeline.maybe_shuffle_batch`: filter (see
    :func:`maybe_batch` for the forms of `keep_input`), then shuffle, then
    batch.
    """
    _common.warn_inert(_MAYBE_SHUFFLE.api, shared_name=shared_name, name=name)
    return _build(
        _MAYBE_SHUFFLE,
        tensors,
        keep_input=keep_input,
        batch_size=batch_size,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        num_threads=num_threads,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode,
    )


def shuffle_batch_join(
    tensors_list,
    batch_size,
    capacity,
    min_after_dequeue,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
    *,
    decode: _Decoder | None = None,
) -> tf.data.Dataset:
    """Batches several Datasets' examples, interleaved and then shuffled.

    Mirrors `queue_pipeline.shuffle_batch_join`: the round-robin interleave
    of :func:`batch_join`, then the shuffle of :func:`shuffle_batch`; the
    order within one Dataset is not preserved.

    Raises:
      ValueError: ``capacity <= min_after_dequeue`` (TF 1.x raises
        ZeroDivisionError for equal values and fails at run time for less);
        and as :func:`batch_join`.
    """
    _common.warn_inert(_SHUFFLE_JOIN.api, shared_name=shared_name, name=name)
    return _build(
        _SHUFFLE_JOIN,
        tensors_list,
        batch_size=batch_size,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode,
    )


def maybe_shuffle_batch_join(
    tensors_list,
    batch_size,
    capacity,
    min_after_dequeue,
    keep_input,
    seed=None,
    enqueue_many=False,
    shapes=None,
    allow_smaller_final_batch=False,
    shared_name=None,
    name=None,
    *,
    decode: _Decoder | None = None,
) -> tf.data.Dataset:
    """:func:`shuffle_batch_join` of the examples that `keep_input` keeps.

    Mirrors `queue_pipeline.maybe_shuffle_batch_join`: interleave, filter
    (see :func:`maybe_batch`), shuffle, batch.
    """
    _common.warn_inert(_MAYBE_SHUFFLE_JOIN.api, shared_name=shared_name, name=name)
    return _build(
        _MAYBE_SHUFFLE_JOIN,
        tensors_list,
        keep_input=keep_input,
        batch_size=batch_size,
        capacity=capacity,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        enqueue_many=enqueue_many,
        shapes=shapes,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode,
    )


# --- the engine ----------------------------------------------------------------


def _build(
    kind: _Kind,
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
    decode=None,
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
