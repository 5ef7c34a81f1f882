"""tf.data twins of the eight batching functions: batch, shuffle_batch, their joins, maybe_*.

``queue_pipeline.data.batching.X`` mirrors ``queue_pipeline.batching.X`` with
the same parameters (names, order, defaults) except that `tensors` is a
``tf.data.Dataset`` of examples (for the joins, `tensors_list` is a list of
Datasets), and it returns a ``tf.data.Dataset`` of batches. One engine
(:func:`queue_pipeline.data._batch_engine.build`) builds all eight: join
inputs round-robin -> ``unbatch`` (`enqueue_many`) -> filter (`keep_input`)
-> shape check (`shapes`) -> ``shuffle(capacity)`` -> ``batch`` /
``padded_batch`` -> `decode` -> ``prefetch``.
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

from typing import Any, Callable

import tensorflow as tf

from queue_pipeline.data import _batch_engine, _common

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

_Decoder = Callable[..., Any] | _batch_engine.PositionedDecode


_BATCH = _batch_engine.Kind("batch", join=False, shuffle=False)
_MAYBE_BATCH = _batch_engine.Kind("maybe_batch", join=False, shuffle=False)
_BATCH_JOIN = _batch_engine.Kind("batch_join", join=True, shuffle=False)
_MAYBE_BATCH_JOIN = _batch_engine.Kind("maybe_batch_join", join=True, shuffle=False)
_SHUFFLE = _batch_engine.Kind("shuffle_batch", join=False, shuffle=True)
_MAYBE_SHUFFLE = _batch_engine.Kind("maybe_shuffle_batch", join=False, shuffle=True)
_SHUFFLE_JOIN = _batch_engine.Kind("shuffle_batch_join", join=True, shuffle=True)
_MAYBE_SHUFFLE_JOIN = _batch_engine.Kind("maybe_shuffle_batch_join", join=True, shuffle=True)

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
    return _batch_engine.build(
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
    return _batch_engine.build(
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
    return _batch_engine.build(
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
    return _batch_engine.build(
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
    return _batch_engine.build(
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
    return _batch_engine.build(
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
    return _batch_engine.build(
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
    return _batch_engine.build(
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
