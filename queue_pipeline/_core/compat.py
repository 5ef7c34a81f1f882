"""The few places where queue_pipeline touches TensorFlow's graph machinery.

Everything here is TensorFlow's stable layer (graphs, collections, sessions,
variables); nothing here calls TF's Python input layer (``tf.compat.v1.train``
queue functions, readers, QueueRunner, Coordinator).
"""

from __future__ import annotations

import logging

import numpy as np
import tensorflow as tf

from queue_pipeline.errors import GraphModeRequiredError

GraphKeys = tf.compat.v1.GraphKeys
QUEUE_RUNNERS = GraphKeys.QUEUE_RUNNERS
LOCAL_VARIABLES = GraphKeys.LOCAL_VARIABLES
SUMMARIES = GraphKeys.SUMMARIES

logger = logging.getLogger("queue_pipeline")

try:  # The base class every TF session (Session, InteractiveSession) derives from.
    from tensorflow.python.client.session import SessionInterface
except ImportError:  # pragma: no cover - a TF that moves it (2.16 to 2.21 all have it).
    SessionInterface = tf.compat.v1.Session.__mro__[-2]


class PrivateKey:
    """A graph-collection key that no string equals.

    ``Graph.get_all_collection_keys()`` lists string keys only, so a
    collection under such a key is invisible to collection listings and to
    meta-graph export, and its contents live (and die) with the graph. Use it
    for per-graph state that holds tensors or ops: a dictionary keyed by graph
    would keep every graph alive, since tensors hold their graph.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"<queue_pipeline {self._name}>"


# NOTE [ TF1 mode ]
# Legacy scripts run after `tf.compat.v1.disable_v2_behavior()`: no eager
# execution anywhere, v1 `TensorShape`s whose items are `Dimension` objects
# (`shape[0]` is `Dimension(5)`, not `5`; `Dimension(None)` is not None and
# is unhashable), ref variables, and int32 where TF 2.x gives int64 (a
# `tf.maximum(Dimension, 1)` is int32). Each of these is normalized in one
# place: static dimensions by `static_dim`, scalar sizes that tf.data wants as
# int64 by `as_int64`, variable kinds by `is_ref_variable`, `is_ref_tensor`
# and `variable_op_read_by`. Code never indexes a TensorShape directly.


def static_dim(shape, index: int) -> int | None:
    """Dimension `index` of `shape` (a TensorShape or a Tensor) as an int, or None.

    The same in both TF modes (a v1 shape's items are ``Dimension`` objects);
    None for an unknown dimension or an unknown rank. See NOTE [ TF1 mode ].
    """
    shape = tf.TensorShape(getattr(shape, "shape", shape))
    if shape.rank is None:
        return None
    return tf.compat.dimension_value(shape[index])


def as_int64(value):
    """A scalar size (Python/numpy int or integer tensor) as tf.data wants it.

    Python and numpy integers become Python ints; integer tensors (int32 in
    TF1 mode, where shapes and `tf.maximum` of Python ints are int32) are
    cast to int64. See NOTE [ TF1 mode ].
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    value = tf.convert_to_tensor(value)
    return value if value.dtype == tf.int64 else tf.cast(value, tf.int64)


def is_ref_tensor(tensor) -> bool:
    """True for a TF1 ref tensor (a ref variable's own output), False otherwise."""
    return bool(tensor.dtype._is_ref_dtype)  # noqa: SLF001 - TF has no public spelling


def is_ref_variable(variable) -> bool:
    """True for a TF1 ref variable (``disable_resource_variables()``), False otherwise."""
    return variable.dtype.base_dtype != variable.dtype or not hasattr(variable, "handle")


VARIABLE_OP_TYPES = frozenset({"VarHandleOp", "VariableV2", "Variable"})


def variable_op_read_by(tensor) -> tf.Operation | None:
    """The variable op whose value `tensor` is, or None.

    Covers both variable kinds (NOTE [ TF1 mode ]): a resource variable's
    ``ReadVariableOp`` of its ``VarHandleOp``, and a ref variable's own
    output or an ``Identity`` of it (its ``read`` snapshot, or what
    ``convert_to_tensor`` gives).
    """
    op = tensor.op
    if op.type == "ReadVariableOp":
        handle = op.inputs[0].op
        return handle if handle.type == "VarHandleOp" else None
    while op.type == "Identity" and op.inputs and is_ref_tensor(op.inputs[0]):
        op = op.inputs[0].op
    return op if op.type in VARIABLE_OP_TYPES else None


def require_graph(api: str) -> None:
    """Raises GraphModeRequiredError when `api` is called under eager execution.

    Args:
      api: the public name of the builder, used in the message.

    Raises:
      GraphModeRequiredError: eager execution is active in this context.
    """
    if tf.executing_eagerly():
        raise GraphModeRequiredError(
            f"{api}: queue-based input pipelines need graph mode, but eager "
            "execution is active. Build the pipeline under "
            "`with tf.Graph().as_default():` and run it in a "
            "`tf.compat.v1.Session`; in eager code read data with tf.data "
            "instead (the tf.data twin of each queue_pipeline function lives "
            "in `queue_pipeline.data` under the same name)."
        )


def local_variable(initial_value, *, name: str, validate_shape: bool = True):
    """Creates a non-trainable variable in LOCAL_VARIABLES only, as TF 1.x does.

    It is a resource variable under TF 2.x behaviour and a ref variable after
    ``tf.compat.v1.disable_resource_variables()``, exactly like TF 1.x's
    ``VariableV1``.
    """
    return tf.compat.v1.Variable(
        initial_value,
        name=name,
        trainable=False,
        collections=[LOCAL_VARIABLES],
        validate_shape=validate_shape,
    )


def count_up_to(variable, limit: int):
    """Increments `variable` each run; raises OutOfRangeError after `limit`.

    Uses the raw ops directly, ``ResourceCountUpTo`` for resource variables
    and ``CountUpTo`` for ref variables (TF1 mode): the same nodes as TF's,
    without the deprecation warning ``Variable.count_up_to`` logs.
    """
    if is_ref_variable(variable):
        return tf.raw_ops.CountUpTo(ref=variable._ref(), limit=limit)  # noqa: SLF001
    return tf.raw_ops.ResourceCountUpTo(
        resource=variable.handle, limit=limit, T=variable.dtype.base_dtype
    )


def readable_error(error: BaseException) -> BaseException:
    """`error`, or for TF's undecodable message, an OpError in its place.

    An op that quotes its input in its message (``decode_csv``: "... is not a
    valid int32: <the field>") can quote bytes that are not UTF-8; TF's Python
    binding then raises UnicodeDecodeError in place of the op's error, and the
    error's type is lost with it. For such an error this returns a
    ``tf.errors.UnknownError`` with the bytes escaped, so a training loop's
    ``except tf.errors.OpError`` sees it and the diagnostics can name the file
    and record. Any other error is returned as it is.
    """
    if not isinstance(error, UnicodeDecodeError):
        return error
    raw = error.object
    if not isinstance(raw, bytes) or b"{{node " not in raw:
        return error  # not a TensorFlow status message
    text = raw.decode("utf-8", "backslashreplace")
    return tf.errors.UnknownError(
        None,
        None,
        f"{text}\n(TensorFlow's message held bytes that are not UTF-8, shown escaped; its "
        "Python binding could not decode it and lost the error's type: UnknownError "
        "stands in)",
    )


def _load_smart_cond():
    """TF's smart_cond: a cond only when the predicate is not statically known.

    It folds constant expressions (``tf.less(1, 2)``) as TF 1.x's batching
    does; the fallback (for a TF without ``tf.__internal__.smart_cond``: none
    of the supported 2.16 to 2.21 lacks it) folds what ``tf.get_static_value``
    can.
    """
    internal = getattr(getattr(tf, "__internal__", None), "smart_cond", None)
    if internal is not None:
        return internal.smart_cond

    def smart_cond(pred, true_fn, false_fn, name=None):  # pragma: no cover
        value = tf.get_static_value(pred)
        if value is None:
            return tf.compat.v1.cond(pred, true_fn, false_fn, name=name)
        return true_fn() if value else false_fn()

    return smart_cond


smart_cond = _load_smart_cond()
