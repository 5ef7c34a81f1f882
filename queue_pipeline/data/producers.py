"""tf.data twins of limit_epochs, input/string/range/slice_input_producer, match_filenames_once.

Each ``queue_pipeline.data.X`` takes the parameters of ``queue_pipeline.X``
(names, order, defaults) and returns a ``tf.data.Dataset`` of the elements the
legacy queue would deliver, epoch after epoch. See NOTE [ Epochs as a
Dataset ] for the chain they share.

Differences every producer twin shares (each docstring adds its own):

* There is no queue, runner, summary, local variable or plan node; the end of
  input is ``StopIteration`` eagerly and ``OutOfRangeError`` from a one-shot
  iterator's ``get_next()`` in a Session.
* `capacity` is a buffering knob with no effect on the content; it is
  accepted silently. `shared_name`, `name`, `cancel_op` and `summary_name`
  have no tf.data meaning: a value other than None warns.
* With the same `seed` (and global/graph seed) the twin is reproducible, but
  its order differs from the legacy queue's (another shuffle algorithm).
  Iterating the same Dataset object again continues the random stream (a new
  order), as running the legacy pipeline further would; building it again
  with the same seeds repeats it.
* An input with no rows ends the Dataset at once; the legacy queue (without
  `num_epochs`) spins forever (`string_input_producer` raises in both).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from queue_pipeline._core import validation
from queue_pipeline._core.compat import as_int64, static_dim
from queue_pipeline.data._common import warn_inert

__all__ = [
    "input_producer",
    "limit_epochs",
    "match_filenames_once",
    "range_input_producer",
    "slice_input_producer",
    "string_input_producer",
]

_API = "queue_pipeline.data."
_NON_NULL = "requires a non-null input tensor"
# Larger than any epoch: batching a Dataset with it collects one whole epoch.
_WHOLE_EPOCH = np.iinfo(np.int64).max

# NOTE [ Epochs as a Dataset ]
# A legacy producer enqueues a whole epoch at a time: a fresh permutation of
# all rows when shuffling, and epochs never mix. The twin is the chain TF's
# deprecation messages suggest, `rows.shuffle(n, seed,
# reshuffle_each_iteration=True).repeat(num_epochs)`: a shuffle buffer as
# large as the epoch gives a uniform permutation, and because the shuffle
# sits before the repeat every epoch is drawn afresh and ends before the next
# starts. n is the number of rows (at least 1: tf.data rejects a zero
# buffer). When the rows come from a Dataset whose length is not known up
# front (e.g. `match_filenames_once`), a shuffle buffer cannot be sized (it
# is allocated in full), so each epoch is collected into one vector
# (`batch(int64 max)`), permuted with a stateless shuffle keyed by
# `Dataset.random(seed)` (one key per epoch, re-drawn on each eager
# iteration) and unbatched; that path also checks each epoch's size when run.


def _check_num_epochs(api: str, num_epochs: Any) -> None:
    """The legacy check of a Python `num_epochs`; a tensor is checked when the Dataset runs."""
    if not isinstance(num_epochs, (tf.Tensor, tf.Variable)):
        validation.check_num_epochs(api, num_epochs)


def _epochs(rows: tf.data.Dataset, count, num_epochs, shuffle: bool, seed):
    """`rows` as ``num_epochs`` epochs, each a fresh permutation if `shuffle`.

    See NOTE [ Epochs as a Dataset ]. `count` is the number of rows (an int or
    an int64 scalar tensor).
    """
    if shuffle:
        buffer = max(count, 1) if isinstance(count, int) else tf.maximum(as_int64(count), 1)
        rows = rows.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    return rows.repeat(num_epochs)


def _collected_epochs(
    api: str, rows: tf.data.Dataset, num_epochs, shuffle: bool, seed, require_rows: bool
) -> tf.data.Dataset:
    """`rows` of unknown length as epochs, each collected and permuted whole.

    See NOTE [ Epochs as a Dataset ].
    """
    spec = rows.element_spec
    empty = tf.data.Dataset.from_tensors(tf.zeros([0] + spec.shape.as_list(), spec.dtype))
    epoch = rows.batch(_WHOLE_EPOCH).concatenate(empty).take(1)
    if require_rows:

        def check(vector):
            not_null = tf.debugging.Assert(tf.size(vector) > 0, [f"{api} {_NON_NULL}"])
            with tf.control_dependencies([not_null]):
                return tf.identity(vector)

        epoch = epoch.map(check)
    epochs = epoch.repeat(num_epochs)
    if shuffle:
        # A re-drawn key stream needs a seed-generator resource, which a graph
        # one-shot iterator cannot capture: there the keys repeat per iterator.
        keys = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=tf.executing_eagerly())
        epochs = tf.data.Dataset.zip((epochs, keys)).map(
            lambda vector, key: tf.random.experimental.stateless_shuffle(
                vector, seed=tf.stack([key, tf.constant(0, tf.int64)])
            )
        )
    return epochs.unbatch()


def _rows(api: str, arg: str, value):
    """Converts `value` to (Dataset of rows, row count or None, row shape).

    The count is an int or tensor for tensor input and for a Dataset of known
    length, None for a Dataset of unknown length.
    """
    if isinstance(value, tf.data.Dataset):
        spec = value.element_spec
        if not isinstance(spec, tf.TensorSpec):
            raise TypeError(
                f"{api}: `{arg}` must be a Dataset of single tensors; got elements {spec}."
            )
        shape = spec.shape
        count = tf.get_static_value(value.cardinality())
        if count == tf.data.INFINITE_CARDINALITY:
            raise ValueError(
                f"{api}: `{arg}` must be a finite Dataset (one pass is one "
                "epoch); got an infinite one. Remove its repeat()."
            )
        if count is None or count == tf.data.UNKNOWN_CARDINALITY:
            return _checked_finite(api, arg, value), None, shape
        return value, int(count), shape
    tensor = tf.convert_to_tensor(value)
    if tensor.shape.rank == 0:
        raise ValueError(
            f"{api}: `{arg}` must have rank at least 1 (its rows are the "
            f"elements); got a scalar {value!r}."
        )
    count = static_dim(tensor, 0)
    if count is None:
        count = tf.shape(tensor, out_type=tf.int64)[0]
    return tf.data.Dataset.from_tensor_slices(tensor), count, tensor.shape[1:]


def _checked_finite(api: str, arg: str, rows: tf.data.Dataset) -> tf.data.Dataset:
    """`rows`, failing when iterated if it turns out infinite.

    A Dataset's length is not static in a graph (TF1 mode, or under
    ``Graph.as_default()``) nor after a ``filter``; an infinite one would
    make the collected epoch (NOTE [ Epochs as a Dataset ]) wait forever, so
    its cardinality is checked first, inside the Dataset (a one-shot iterator
    drops control dependencies on ops outside its functions). A Dataset
    whose infinity tf.data cannot tell (``repeat().filter(...)``: unknown
    cardinality) still collects forever.
    """
    message = (
        f"{api}: `{arg}` must be a finite Dataset (one pass is one epoch); got "
        "an infinite one. Remove its repeat()."
    )

    def check(_):
        cardinality = rows.cardinality()
        finite = tf.debugging.Assert(
            tf.not_equal(cardinality, tf.data.INFINITE_CARDINALITY), [message]
        )
        with tf.control_dependencies([finite]):
            return tf.identity(cardinality)

    return tf.data.Dataset.from_tensors(np.int64(0)).map(check).flat_map(lambda _: rows)


def _produce(api: str, rows, count, num_epochs, shuffle, seed, *, require_rows=False):
    """The chain shared by all producers; chooses the path by what is known."""
    if count is None:
        return _collected_epochs(api, rows, num_epochs, shuffle, seed, require_rows)
    return _epochs(rows, count, num_epochs, shuffle, seed)


def _is_null(value) -> bool:
    """The legacy "non-null" check, made safe for arrays, tensors and Datasets."""
    if isinstance(value, np.ndarray):
        return value.size == 0
    if isinstance(value, tf.data.Dataset) or hasattr(value, "dtype"):
        return False
    return not value


def string_input_producer(
    string_tensor,
    num_epochs=None,
    shuffle=True,
    seed=None,
    capacity=32,
    shared_name=None,
    name=None,
    cancel_op=None,
):
    """Returns a Dataset of the strings (typically file names), an epoch at a time.

    Mirrors `queue_pipeline.string_input_producer`. Each epoch is every string
    once, in a fresh permutation when `shuffle`; epochs never mix.

    Args:
      string_tensor: a non-empty 1-D string tensor, list or array, or a
        finite Dataset of scalar strings (e.g. :func:`match_filenames_once`),
        which is read again for every epoch.
      num_epochs: number of passes, or None to repeat forever.
      shuffle: shuffle the strings, with a fresh permutation each epoch.
      seed: op seed for the shuffle (combined with the global/graph seed).
      capacity: accepted for parity; no effect (a buffering knob).
      shared_name: no effect; warns if set.
      name: no effect; warns if set.
      cancel_op: no effect; warns if set.

    Returns:
      A ``tf.data.Dataset`` of scalar ``tf.string``; hand it to a twin
      reader's ``read``.

    Raises:
      ValueError: `string_tensor` is empty (checked here when its size is
        static), not 1-D, or `num_epochs` is not positive.
      TypeError: `string_tensor` does not hold strings.
      tf.errors.InvalidArgumentError: when iterated, if a tensor or Dataset
        whose size was not static turns out empty.

    Differences from the legacy function:
      See the module docstring. An empty Dataset input or an empty graph
      tensor fails when iterated (legacy: in the runner thread).
    """
    api = _API + "string_input_producer"
    if _is_null(string_tensor):
        raise ValueError(
            f"{api} {_NON_NULL}: `string_tensor` must hold at least one "
            f"string; got {string_tensor!r}."
        )
    warn_inert(api, shared_name=shared_name, name=name, cancel_op=cancel_op)
    _check_num_epochs(api, num_epochs)
    if isinstance(string_tensor, tf.data.Dataset):
        spec = string_tensor.element_spec
        if not (
            isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string and spec.shape.rank == 0
        ):
            raise TypeError(
                f"{api}: `string_tensor` must be a Dataset of scalar strings; got elements {spec}."
            )
        rows, count, _ = _rows(api, "string_tensor", string_tensor)
        if count == 0:
            raise ValueError(f"{api} {_NON_NULL}: `string_tensor` is an empty Dataset.")
        return _produce(api, rows, count, num_epochs, shuffle, seed, require_rows=True)
    strings = tf.convert_to_tensor(string_tensor, dtype=tf.string)
    if strings.shape.rank == 0:
        raise ValueError(
            f"{api}: `string_tensor` must have rank at least 1 (a 1-D "
            f"list of strings); got the scalar {string_tensor!r}."
        )
    if strings.shape.rank is not None and strings.shape.rank != 1:
        raise ValueError(
            f"{api}: `string_tensor` must be 1-D; its shape {strings.shape} "
            "is not compatible with [None]."
        )
    size = strings.shape.num_elements()
    if size == 0:
        raise ValueError(
            f"{api} {_NON_NULL}: `string_tensor` has no elements (shape {strings.shape})."
        )
    if size is None:
        not_null = tf.debugging.Assert(tf.size(strings) > 0, [f"{api} {_NON_NULL}"])
        with tf.control_dependencies([not_null]):
            strings = tf.identity(strings)
    rows, count, _ = _rows(api, "string_tensor", strings)
    return _produce(api, rows, count, num_epochs, shuffle, seed)


def input_producer(
    input_tensor,
    element_shape=None,
    num_epochs=None,
    shuffle=True,
    seed=None,
    capacity=32,
    shared_name=None,
    summary_name=None,
    name=None,
    cancel_op=None,
):
    """Returns a Dataset of the rows of `input_tensor`, an epoch at a time.

    Mirrors `queue_pipeline.input_producer`.

    Args:
      input_tensor: a tensor (list, array) of rank >= 1 whose rows are the
        elements, or a finite Dataset of rows (read again for every epoch).
      element_shape: the shape of one row, merged with the rows' shape; needed
        if that is not fully defined.
      num_epochs: number of passes, or None to repeat forever.
      shuffle: shuffle the rows, with a fresh permutation each epoch.
      seed: op seed for the shuffle (combined with the global/graph seed).
      capacity: accepted for parity; no effect (a buffering knob).
      shared_name: no effect; warns if set.
      summary_name: no effect (tf.data has no queue-fill summary); warns if set.
      name: no effect; warns if set.
      cancel_op: no effect; warns if set.

    Returns:
      A ``tf.data.Dataset`` of rows with shape `element_shape` and the
      input's dtype.

    Raises:
      ValueError: `element_shape` is incompatible with the rows or the merged
        shape is not fully defined, `input_tensor` is a scalar, or
        `num_epochs` is not positive.

    Differences from the legacy function:
      See the module docstring (an input with no rows gives an empty Dataset).
    """
    api = _API + "input_producer"
    warn_inert(
        api, shared_name=shared_name, summary_name=summary_name, name=name, cancel_op=cancel_op
    )
    _check_num_epochs(api, num_epochs)
    rows, count, row_shape = _rows(api, "input_tensor", input_tensor)
    try:
        shape = row_shape.merge_with(tf.TensorShape(element_shape))
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"{api}: `element_shape` {element_shape!r} is not compatible "
            f"with the rows' shape {row_shape}: {e}"
        ) from e
    if not shape.is_fully_defined():
        raise ValueError(
            f"{api}: Either `input_tensor` must have a fully defined shape or "
            f"`element_shape` must be specified; got rows of shape {row_shape} and "
            f"element_shape {element_shape!r}."
        )
    if shape != row_shape:
        rows = rows.map(lambda row: tf.ensure_shape(row, shape))
    return _produce(api, rows, count, num_epochs, shuffle, seed)


def range_input_producer(
    limit, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None
):
    """Returns a Dataset of the integers ``0 .. limit-1``, an epoch at a time.

    Mirrors `queue_pipeline.range_input_producer`.

    Args:
      limit: an int scalar (Python int or tensor); its dtype sets the
        elements' (int32 for a Python int), as in the legacy function.
      num_epochs: number of passes, or None to repeat forever.
      shuffle: shuffle each epoch with a fresh permutation.
      seed: op seed for the shuffle (combined with the global/graph seed).
      capacity: accepted for parity; no effect (a buffering knob).
      shared_name: no effect; warns if set.
      name: no effect; warns if set.

    Returns:
      A ``tf.data.Dataset`` of scalar integers.

    Raises:
      ValueError: `num_epochs` is not positive.

    Differences from the legacy function:
      See the module docstring (``limit=0`` gives an empty Dataset).
    """
    api = _API + "range_input_producer"
    warn_inert(api, shared_name=shared_name, name=name)
    _check_num_epochs(api, num_epochs)
    limit = tf.convert_to_tensor(limit)
    if not limit.dtype.is_integer or limit.shape.rank != 0:
        raise TypeError(f"{api}: `limit` must be an integer scalar; got {limit!r}.")
    static = tf.get_static_value(limit)
    count = max(int(static), 0) if static is not None else tf.maximum(as_int64(limit), 0)
    rows = tf.data.Dataset.range(as_int64(limit), output_type=limit.dtype)
    return _produce(api, rows, count, num_epochs, shuffle, seed)


def slice_input_producer(
    tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32, shared_name=None, name=None
):
    """Returns a Dataset of tuples of matching rows of every tensor in `tensor_list`.

    Mirrors `queue_pipeline.slice_input_producer`. Element ``i`` of an epoch
    is ``(t0[j], t1[j], ...)`` for the epoch's ``i``-th row index ``j``.

    Args:
      tensor_list: tensors (lists, arrays) with equal first dimensions.
      num_epochs: number of passes, or None to repeat forever.
      shuffle: shuffle the rows, with a fresh permutation each epoch.
      seed: op seed for the shuffle (combined with the global/graph seed).
      capacity: accepted for parity; no effect (a buffering knob).
      shared_name: no effect; warns if set.
      name: no effect; warns if set.

    Returns:
      A ``tf.data.Dataset`` whose elements are tuples with one component per
      tensor (a 1-tuple for one tensor), each of shape ``t.shape[1:]``.

    Raises:
      ValueError: `tensor_list` is empty, its static first dimensions differ,
        or `num_epochs` is not positive.

    Differences from the legacy function:
      See the module docstring. Elements are tuples (legacy: a list of
      tensors that dequeue one index per ``sess.run``). Unequal first
      dimensions are an error here (legacy: only a shorter tensor fails, in
      its gather, when run).
    """
    api = _API + "slice_input_producer"
    tensors = tuple(tf.convert_to_tensor(t) for t in tensor_list)
    if not tensors:
        raise ValueError(
            f"{api}: Expected at least one tensor in `tensor_list`; got {tensor_list!r}."
        )
    warn_inert(api, shared_name=shared_name, name=name)
    _check_num_epochs(api, num_epochs)
    for i, t in enumerate(tensors):
        if t.shape.rank == 0:
            raise ValueError(f"{api}: `tensor_list[{i}]` must have rank at least 1; got a scalar.")
    firsts = [static_dim(t, 0) for t in tensors]
    known = {n for n in firsts if n is not None}
    if len(known) > 1:
        raise ValueError(
            f"{api}: the tensors in `tensor_list` must have equal first dimensions; got {firsts}."
        )
    count = known.pop() if known else tf.shape(tensors[0], out_type=tf.int64)[0]
    rows = tf.data.Dataset.from_tensor_slices(tensors)
    return _produce(api, rows, count, num_epochs, shuffle, seed)


def limit_epochs(tensor, num_epochs=None, name=None):
    """Returns a Dataset that yields `tensor` `num_epochs` times (forever if None).

    Mirrors `queue_pipeline.limit_epochs`. The chain is
    ``Dataset.from_tensors(tensor).repeat(num_epochs)``.

    Args:
      tensor: any tensor (list, array).
      num_epochs: a positive int, or None for no limit.
      name: no effect; warns if set.

    Returns:
      A ``tf.data.Dataset`` whose every element is `tensor`.

    Raises:
      ValueError: `num_epochs` is not positive.

    Differences from the legacy function:
      The end is the end of the Dataset, not ``OutOfRangeError`` from a local
      counter variable; a new iterator starts again from zero (legacy:
      re-running the local initializer does).
    """
    api = _API + "limit_epochs"
    warn_inert(api, name=name)
    _check_num_epochs(api, num_epochs)
    return tf.data.Dataset.from_tensors(tensor).repeat(num_epochs)


def match_filenames_once(pattern, name=None):
    """Returns a Dataset of the file names matching `pattern`, globbed when iterated.

    Mirrors `queue_pipeline.match_filenames_once`. The names come in
    ``tf.io.matching_files`` order (sorted), as the legacy variable holds them.

    Args:
      pattern: a file pattern (glob) or 1-D tensor of patterns.
      name: no effect; warns if set.

    Returns:
      A ``tf.data.Dataset`` of scalar ``tf.string`` file names.

    Raises:
      tf.errors.InvalidArgumentError: when iterated, if no file matches; the
        message names the pattern.

    Differences from the legacy function:
      The glob runs each time the Dataset is iterated (and, through
      :func:`string_input_producer`, once per epoch); legacy runs it once,
      when the local variables are initialized. No match is an error here;
      legacy yields an empty vector (and its string_input_producer then fails
      with "requires a non-null input tensor").
    """
    api = _API + "match_filenames_once"
    warn_inert(api, name=name)
    pattern = tf.convert_to_tensor(pattern, dtype=tf.string)

    def glob(patterns):
        files = tf.io.matching_files(patterns)
        found = tf.debugging.Assert(
            tf.size(files) > 0, [f"{api}: no file matches the pattern", patterns], summarize=10
        )
        with tf.control_dependencies([found]):
            return tf.identity(files)

    files = tf.data.Dataset.from_tensors(pattern).map(glob).unbatch()
    return files
