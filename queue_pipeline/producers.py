"""Producers: limit_epochs, input_producer, string/range/slice_input_producer, match_filenames_once.

The implementation of TF 1.x's ``tf.compat.v1.train`` producer functions. A
producer puts a whole (optionally shuffled) epoch of elements into a FIFO queue
with one ``enqueue_many`` op, run by a :class:`~queue_pipeline.QueueRunner`;
``num_epochs`` is counted by a local variable, and the epoch after the last
ends in ``OutOfRangeError``, which closes the queue (see NOTE [ Queue close vs
cancel ] in runner.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from queue_pipeline._core import validation
from queue_pipeline import plan
from queue_pipeline._core import compat as _compat
from queue_pipeline._diagnostics import traps as _diagnostics
from queue_pipeline.runner import QueueRunner, add_queue_runner

if TYPE_CHECKING:
    from typing import Sequence

    from queue_pipeline._core.types import (
        IntLike,
        OperationLike,
        QueueLike,
        ShapeLike,
        StringsLike,
        TensorLike,
    )

__all__ = [
    "input_producer",
    "limit_epochs",
    "match_filenames_once",
    "range_input_producer",
    "slice_input_producer",
    "string_input_producer",
]

_NON_NULL = "string_input_producer requires a non-null input tensor"


def match_filenames_once(pattern: StringsLike, name: str | None = None) -> TensorLike:
    """Returns a local variable holding the file names that match `pattern`.

    The glob is evaluated once, when ``tf.compat.v1.local_variables_initializer()``
    runs; the result (sorted as ``tf.io.matching_files`` returns it, empty if
    nothing matches) is then reused.

    Args:
      pattern: a file pattern (glob) or 1-D tensor of patterns.
      name: name of the variable (default ``"matching_filenames"``).

    Returns:
      A non-trainable variable of strings with static shape ``[None]``.

    Side effects:
      Creates the variable in LOCAL_VARIABLES (not in the global collection)
      and records a plan node.

    tf.data equivalent:
      ``tf.data.Dataset.list_files(pattern, shuffle=False)``; twin
      ``queue_pipeline.data.match_filenames_once``.
    """
    _compat.require_graph("match_filenames_once")
    with tf.compat.v1.name_scope(name, "matching_filenames", [pattern]) as scope:
        files = _compat.local_variable(
            tf.io.matching_files(pattern), name=scope, validate_shape=False
        )
    plan.record("match_filenames_once", {"pattern": pattern, "name": name}, [pattern], [files])
    return files


def limit_epochs(
    tensor: TensorLike, num_epochs: int | None = None, name: str | None = None
) -> TensorLike:
    """Returns `tensor` while it has been evaluated at most `num_epochs` times.

    Args:
      tensor: any tensor.
      num_epochs: a positive int, or None for no limit.
      name: name scope (default ``"limit_epochs"``).

    Returns:
      `tensor` itself when `num_epochs` is None; otherwise an identity of it
      (named after the scope, ``limit_epochs:0``) whose evaluation number
      ``num_epochs + 1`` raises ``tf.errors.OutOfRangeError``.

    Raises:
      ValueError: `num_epochs` is not positive.

    Side effects:
      Creates the local int64 variable ``<scope>/epochs`` (LOCAL_VARIABLES
      only), which ``local_variables_initializer()`` must initialize and
      re-initializing resets; records a plan node.

    tf.data equivalent:
      ``tf.data.Dataset.from_tensors(tensor).repeat(num_epochs)``; twin
      ``queue_pipeline.data.limit_epochs``.

    Differences from TF 1.x:
      Raises GraphModeRequiredError under eager execution (TF creates a
      fresh counter on every call there, so nothing is limited).
    """
    _compat.require_graph("limit_epochs")
    limited = _limit_epochs(tensor, num_epochs, name)
    if num_epochs is not None:
        plan.record("limit_epochs", {"num_epochs": num_epochs, "name": name}, [tensor], [limited])
    return limited


def _limit_epochs(tensor, num_epochs, name, api="limit_epochs"):
    if num_epochs is None:
        return tensor
    validation.check_num_epochs(api, num_epochs)
    with tf.compat.v1.name_scope(name, "limit_epochs", [tensor]) as scope:
        zero = tf.constant(0, dtype=tf.int64)
        epochs = _compat.local_variable(zero, name="epochs")
        counter = _compat.count_up_to(epochs, num_epochs)
        with tf.control_dependencies([counter]):
            return tf.identity(tensor, name=scope)


def input_producer(
    input_tensor: TensorLike,
    element_shape: ShapeLike | None = None,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: IntLike = 32,
    shared_name: str | None = None,
    summary_name: str | None = None,
    name: str | None = None,
    cancel_op: OperationLike | None = None,
) -> QueueLike:
    """Puts the rows of `input_tensor`, one epoch per run, into a FIFO queue.

    Args:
      input_tensor: a tensor of rank >= 1; its rows are the elements.
      element_shape: the shape of one row, merged with ``input_tensor.shape[1:]``;
        needed if that is not fully defined.
      num_epochs: number of passes, or None to repeat forever.
      shuffle: shuffle the rows, with a fresh permutation each epoch.
      seed: op seed for the shuffle.
      capacity: capacity of the queue.
      shared_name: share the queue under this name across sessions.
      summary_name: if set, add the scalar summary ``<scope>/<summary_name>``
        with the fraction of the queue that is full.
      name: name of the scope and queue.
      cancel_op: the runner's cancel op (default: close with cancel).

    Returns:
      The FIFO queue: dequeue from it, or hand it to a reader. Elements have
      shape `element_shape` and the dtype of `input_tensor`.

    Raises:
      ValueError: the element shape is incompatible or not fully defined, or
        `input_tensor` is a scalar.
      GraphModeRequiredError: under eager execution (a RuntimeError).

    Side effects:
      Adds a QueueRunner to ``"queue_runners"``; with `num_epochs`, creates the
      local variable ``<scope>/limit_epochs/epochs``; with `summary_name`,
      adds a summary to ``"summaries"``; records a plan node.

    tf.data equivalent:
      ``Dataset.from_tensor_slices(t).shuffle(len(t)).repeat(num_epochs)``;
      twin ``queue_pipeline.data.input_producer``.
    """
    _compat.require_graph("input_producer")
    queue, source = _input_producer(
        input_tensor,
        element_shape,
        num_epochs,
        shuffle,
        seed,
        capacity,
        shared_name,
        summary_name,
        name,
        cancel_op,
    )
    plan.record(
        "input_producer",
        dict(
            element_shape=element_shape,
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
            summary_name=summary_name,
            name=name,
            cancel_op=cancel_op,
        ),
        [source],
        [queue],
        fills=queue,
    )
    return queue


def _input_producer(
    input_tensor,
    element_shape,
    num_epochs,
    shuffle,
    seed,
    capacity,
    shared_name,
    summary_name,
    name,
    cancel_op,
    api="input_producer",
):
    """The engine behind every producer (`api`: which); returns (queue, converted input)."""
    with tf.compat.v1.name_scope(name, "input_producer", [input_tensor]):
        input_tensor = tf.convert_to_tensor(input_tensor, name="input_tensor")
        source = input_tensor
        element_shape = input_tensor.shape[1:].merge_with(element_shape)
        if not element_shape.is_fully_defined():
            raise ValueError(
                "input_producer: Either `input_tensor` must have a fully defined "
                "shape or `element_shape` must be specified; got input shape "
                f"{input_tensor.shape} and element_shape {element_shape}."
            )
        if shuffle:
            input_tensor = tf.random.shuffle(input_tensor, seed=seed)
        input_tensor = _limit_epochs(input_tensor, num_epochs, None, api)
        queue = tf.queue.FIFOQueue(
            capacity=capacity,
            dtypes=[input_tensor.dtype.base_dtype],
            shapes=[element_shape],
            shared_name=shared_name,
            name=name,
        )
        enqueue = queue.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        if summary_name is not None:
            fraction = tf.cast(queue.size(), tf.float32) * (1.0 / capacity)
            tf.compat.v1.summary.scalar(summary_name, fraction)
        return queue, source


def _is_null(value) -> bool:
    """TF 1.x's "non-null" check, made safe for arrays and variables."""
    if isinstance(value, np.ndarray):
        return value.size == 0
    if hasattr(value, "dtype"):  # a Tensor, Variable or other tensor-like
        return False
    return not value


def _glob_hint(string_tensor) -> list:
    """Extra Assert data naming the globs when the strings come from
    :func:`match_filenames_once`, so "no file matched" names the pattern."""
    globs = [
        node.args["pattern"]
        for node in plan.plan_for(string_tensor)
        if node.kind == "match_filenames_once"
    ]
    return ["no file matches the pattern"] + globs if globs else []


def string_input_producer(
    string_tensor: StringsLike,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: IntLike = 32,
    shared_name: str | None = None,
    name: str | None = None,
    cancel_op: OperationLike | None = None,
) -> QueueLike:
    """Puts strings (typically file names) into a FIFO queue, an epoch at a time.

    Args:
      string_tensor: a 1-D string tensor, list or array, non-empty.
      num_epochs: number of passes, or None to repeat forever.
      shuffle: shuffle the strings, with a fresh permutation each epoch.
      seed: op seed for the shuffle.
      capacity: capacity of the queue.
      shared_name: share the queue under this name across sessions.
      name: name scope (default ``"input_producer"``); the queue op is named
        after the scope.
      cancel_op: the runner's cancel op (default: close with cancel).

    Returns:
      The FIFO queue of scalar strings; hand it to a reader's ``read``.

    Raises:
      ValueError: `string_tensor` is empty (a Python or NumPy empty value),
        not 1-D, or a scalar.
      TypeError: `string_tensor` does not hold strings.
      GraphModeRequiredError: under eager execution (a RuntimeError).
      tf.errors.InvalidArgumentError: at run time, in the runner, if a
        tensor-valued `string_tensor` is empty.

    Side effects:
      Adds a QueueRunner to ``"queue_runners"``, the summary
      ``<scope>/fraction_of_<capacity>_full`` to ``"summaries"``, with
      `num_epochs` the local variable ``<scope>/limit_epochs/epochs``; records
      a plan node.

    tf.data equivalent:
      ``Dataset.from_tensor_slices(files).shuffle(len(files)).repeat(num_epochs)``;
      twin ``queue_pipeline.data.string_input_producer``.

    Differences from TF 1.x:
      A NumPy array of several strings is accepted (TF raises NumPy's
      "truth value of an array ... is ambiguous" ValueError). When the strings
      come from :func:`match_filenames_once`, the run-time "non-null" error
      also names the glob that matched nothing (one more input of the Assert).
    """
    if _is_null(string_tensor):
        raise ValueError(f"{_NON_NULL}; got {string_tensor!r}.")
    _compat.require_graph("string_input_producer")
    with tf.compat.v1.name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = tf.convert_to_tensor(string_tensor, dtype=tf.string)
        source = string_tensor
        not_null = tf.debugging.Assert(
            tf.greater(tf.size(string_tensor), 0), [_NON_NULL] + _glob_hint(string_tensor)
        )
        with tf.control_dependencies([not_null]):
            string_tensor = tf.identity(string_tensor)
        queue, _ = _input_producer(
            string_tensor,
            [],
            num_epochs,
            shuffle,
            seed,
            capacity,
            shared_name,
            f"fraction_of_{capacity}_full",
            scope,
            cancel_op,
            "string_input_producer",
        )
    plan.record(
        "string_input_producer",
        dict(
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
            name=name,
            cancel_op=cancel_op,
        ),
        [source],
        [queue],
        fills=queue,
    )
    return queue


def range_input_producer(
    limit: IntLike,
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: IntLike = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> QueueLike:
    """Puts the integers ``0 .. limit-1`` into a FIFO queue, an epoch at a time.

    Args:
      limit: an int scalar (Python int or tensor); its dtype sets the elements'.
      num_epochs: number of passes, or None to repeat forever.
      shuffle: shuffle each epoch with a fresh permutation.
      seed: op seed for the shuffle.
      capacity: capacity of the queue.
      shared_name: share the queue under this name across sessions.
      name: name scope (default ``"input_producer"``).

    Returns:
      The FIFO queue of scalar integers.

    Side effects:
      As :func:`string_input_producer`.

    tf.data equivalent:
      ``tf.data.Dataset.range(limit).shuffle(limit).repeat(num_epochs)``; twin
      ``queue_pipeline.data.range_input_producer``.
    """
    _compat.require_graph("range_input_producer")
    queue, source = _range_input_producer(
        limit, num_epochs, shuffle, seed, capacity, shared_name, name
    )
    plan.record(
        "range_input_producer",
        dict(
            limit=limit,
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
            name=name,
        ),
        [source],
        [queue],
        fills=queue,
    )
    return queue


def _range_input_producer(
    limit, num_epochs, shuffle, seed, capacity, shared_name, name, api="range_input_producer"
):
    with tf.compat.v1.name_scope(name, "input_producer", [limit]) as scope:
        numbers = tf.range(limit)
        queue, _ = _input_producer(
            numbers,
            [],
            num_epochs,
            shuffle,
            seed,
            capacity,
            shared_name,
            f"fraction_of_{capacity}_full",
            scope,
            None,
            api,
        )
        return queue, numbers


def slice_input_producer(
    tensor_list: Sequence[TensorLike],
    num_epochs: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    capacity: IntLike = 32,
    shared_name: str | None = None,
    name: str | None = None,
) -> list[TensorLike]:
    """Yields matching slices (rows) of every tensor in `tensor_list`.

    An index queue (as :func:`range_input_producer` over the first tensor's
    rows) feeds one dequeue; each output gathers that row. Every ``sess.run``
    that touches any output dequeues one index, so fetch all the outputs of
    one example in the same run.

    Args:
      tensor_list: tensors with equal first dimensions (not checked: a shorter
        tensor fails at run time in its gather).
      num_epochs, shuffle, seed, capacity, shared_name: as
        :func:`range_input_producer`.
      name: name scope (default ``"input_producer"``).

    Returns:
      A list with one tensor per input (even for one input): row ``i`` of
      each, shape ``t.shape[1:]``.

    Raises:
      ValueError: `tensor_list` is empty.

    Side effects:
      As :func:`range_input_producer` (the index queue is
      ``<scope>/input_producer``); records a plan node.

    tf.data equivalent:
      ``Dataset.from_tensor_slices(tuple(tensor_list)).shuffle(n).repeat(num_epochs)``;
      twin ``queue_pipeline.data.slice_input_producer``.
    """
    with tf.compat.v1.name_scope(name, "input_producer", tensor_list):
        tensors = [
            t if isinstance(t, tf.IndexedSlices) else tf.convert_to_tensor(t) for t in tensor_list
        ]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        _compat.require_graph("slice_input_producer")
        rows = tf.shape(tensors[0])[0]
        queue, _ = _range_input_producer(
            rows, num_epochs, shuffle, seed, capacity, shared_name, None, "slice_input_producer"
        )
        _diagnostics.guard(queue, "slice_input_producer")
        index = queue.dequeue()
        outputs = [tf.gather(t, index) for t in tensors]
    plan.record(
        "slice_input_producer",
        dict(
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
            capacity=capacity,
            shared_name=shared_name,
            name=name,
        ),
        tensors,
        outputs,
        reads=queue,
        fills=queue,
    )
    return outputs
