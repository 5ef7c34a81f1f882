"""Error types raised by queue_pipeline.

End of input stays :class:`tf.errors.OutOfRangeError` (re-exported here), as in
TF 1.x: the Coordinator's clean-stop default and every legacy training loop rely
on it.
"""

from __future__ import annotations

from queue_pipeline._core.tf_required import require_tensorflow

# Every module of the package imports this one: a too old TensorFlow fails here, clearly.
tf = require_tensorflow()

__all__ = ["GraphModeRequiredError", "NotRebuildableError", "OutOfRangeError", "QueuePipelineError"]

OutOfRangeError = tf.errors.OutOfRangeError


class QueuePipelineError(Exception):
    """Base class of the errors that queue_pipeline itself defines."""


class GraphModeRequiredError(QueuePipelineError, RuntimeError, ValueError):
    """A queue-based builder was called while eager execution is active.

    It subclasses both :class:`RuntimeError` (what TF 1.x raises from the
    producers, readers and runners) and :class:`ValueError` (what TF 1.x
    raises from the batching functions), so ``except`` clauses written for
    either keep working.
    """


class NotRebuildableError(QueuePipelineError, ValueError):
    """A legacy pipeline, or one op of it, cannot be rebuilt as a tf.data.Dataset.

    Raised by :func:`queue_pipeline.to_dataset` when the pipeline holds
    something a Dataset cannot reproduce: a Python function (``py_func``), a
    placeholder, a per-record read of a variable that changes, or a queue or
    reader that no queue_pipeline builder recorded. The message names the op,
    its type, why, and the fix.

    Attributes:
      op_name: the name of the op at fault, or None.
      op_type: its type, or None.
      reason: why it cannot be rebuilt, in a few words.
    """

    def __init__(
        self,
        message: str,
        *,
        op_name: str | None = None,
        op_type: str | None = None,
        reason: str = "",
    ) -> None:
        super().__init__(message)
        self.op_name = op_name
        self.op_type = op_type
        self.reason = reason
