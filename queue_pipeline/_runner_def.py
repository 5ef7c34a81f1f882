"""What defines a QueueRunner: its arguments, or its ``QueueRunnerDef`` proto, and back.

The five fields of :class:`queue_pipeline.runner.QueueRunner` (queue, enqueue
ops, close op, cancel op, the error types that end its threads cleanly),
checked and defaulted from the constructor's arguments as TF 1.x does, read
from a ``QueueRunnerDef`` under an import scope, and written back to one
(``to_proto``, which meta graphs use). Nothing here knows the runner class:
runner.py hands over the values and keeps the threads.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf
from tensorflow.core.protobuf import queue_runner_pb2

from queue_pipeline._core.compat import QUEUE_RUNNERS

__all__ = ["fields_from_args", "fields_from_proto", "register_proto_functions", "to_proto"]


def _error_codes() -> dict[int, type]:
    """Maps TF error codes to their tf.errors exception classes."""
    table = {}
    for attr in dir(tf.errors):
        cls = getattr(tf.errors, attr)
        if (
            isinstance(cls, type)
            and issubclass(cls, tf.errors.OpError)
            and cls is not tf.errors.OpError
        ):
            table[cls(None, None, "").error_code] = cls
    return table


_CODE_TO_ERROR = _error_codes()


def _strip_scope(name: str, scope: str | None) -> str:
    if not scope:
        return name
    prefix = scope.rstrip("/") + "/"
    return name[len(prefix) :] if name.startswith(prefix) else name


def _prepend_scope(name: str, scope: str | None) -> str:
    return f"{scope.rstrip('/')}/{name}" if scope else name


def _missing(value) -> bool:
    return value is None or (isinstance(value, (list, tuple)) and not value)


def fields_from_args(queue, enqueue_ops, close_op, cancel_op, closed_types) -> tuple:
    """(queue, enqueue ops, close op, cancel op, closed types) from QueueRunner's arguments.

    A missing close or cancel op is made now on `queue` (TF's defaults).

    Raises:
      ValueError: no `queue` or no `enqueue_ops`.
      TypeError: `closed_types` is not a non-empty tuple of ``tf.errors`` types.
    """
    if _missing(queue) or _missing(enqueue_ops):
        raise ValueError(
            "QueueRunner: Must provide queue and enqueue_ops; got "
            f"queue={queue!r}, enqueue_ops={enqueue_ops!r}."
        )
    if closed_types is not None:
        valid = (
            isinstance(closed_types, tuple)
            and closed_types
            and all(isinstance(t, type) and issubclass(t, tf.errors.OpError) for t in closed_types)
        )
        if not valid:
            raise TypeError(
                "QueueRunner: `queue_closed_exception_types`, when provided, "
                "must be a non-empty tuple of tf.error types (subclasses of "
                f"tf.errors.OpError), but saw: {closed_types!r}. Example: "
                "(tf.errors.OutOfRangeError, tf.errors.CancelledError)."
            )
    return (
        queue,
        enqueue_ops,
        close_op if close_op is not None else queue.close(),
        cancel_op if cancel_op is not None else queue.close(cancel_pending_enqueues=True),
        tuple(closed_types) if closed_types else (tf.errors.OutOfRangeError,),
    )


def fields_from_proto(proto: Any, import_scope: str | None, queue=None, enqueue_ops=None) -> tuple:
    """(queue, enqueue ops, close op, cancel op, closed types) of a ``QueueRunnerDef``.

    The elements are looked up in the default graph, under `import_scope`.
    `queue` and `enqueue_ops` are the constructor's, which must be left out.

    Raises:
      ValueError: `queue` or `enqueue_ops` given beside the proto.
      TypeError: `proto` is not a ``QueueRunnerDef``.
    """
    if not _missing(queue) or not _missing(enqueue_ops):
        raise ValueError(
            "QueueRunner: queue_runner_def and queue are mutually "
            "exclusive; pass either a QueueRunnerDef or `queue` and "
            "`enqueue_ops`."
        )
    if not isinstance(proto, queue_runner_pb2.QueueRunnerDef):
        raise TypeError(
            "QueueRunner: `queue_runner_def` must be a QueueRunnerDef proto; "
            f"got {type(proto).__name__}."
        )
    graph = tf.compat.v1.get_default_graph()

    def element(name):
        return graph.as_graph_element(_prepend_scope(name, import_scope))

    closed_types = tuple(_CODE_TO_ERROR[code] for code in proto.queue_closed_exception_types)
    return (
        element(proto.queue_name),
        [element(name) for name in proto.enqueue_op_name],
        element(proto.close_op_name),
        element(proto.cancel_op_name),
        closed_types or (tf.errors.OutOfRangeError,),
    )


def to_proto(
    name: str,
    enqueue_ops: list,
    close_op: Any,
    cancel_op: Any,
    closed_types: tuple,
    export_scope: str | None = None,
):
    """The ``QueueRunnerDef`` of a runner of queue `name`, or None outside `export_scope`."""
    if export_scope is not None and not name.startswith(export_scope):
        return None
    proto = queue_runner_pb2.QueueRunnerDef(
        queue_name=_strip_scope(name, export_scope),
        enqueue_op_name=[_strip_scope(op.name, export_scope) for op in enqueue_ops],
        close_op_name=_strip_scope(close_op.name, export_scope),
        cancel_op_name=_strip_scope(cancel_op.name, export_scope),
    )
    proto.queue_closed_exception_types.extend(
        cls(None, None, "").error_code for cls in closed_types
    )
    return proto


def register_proto_functions(to_proto: Callable, from_proto: Callable) -> None:
    """Lets meta graphs carry runners if TF itself no longer registers them.

    TensorFlow registers its own (duck-typed) exporter for ``"queue_runners"``
    (every supported version, 2.16 to 2.21), which serialises our runners too;
    registering twice is an error, so ours is only a fallback for a TF
    without it.
    """
    from tensorflow.python.framework import ops  # graph machinery, not input layer

    if ops.get_to_proto_function(QUEUE_RUNNERS) is None:  # pragma: no cover
        ops.register_proto_function(
            QUEUE_RUNNERS,
            proto_type=queue_runner_pb2.QueueRunnerDef,
            to_proto=to_proto,
            from_proto=from_proto,
        )
