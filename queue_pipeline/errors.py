"""Error types raised by queue_pipeline.

End of input stays :class:`tf.errors.OutOfRangeError` (re-exported here), as in
TF 1.x: the Coordinator's clean-stop default and every legacy training loop rely
on it.
"""

from __future__ import annotations

import tensorflow as tf

__all__ = ["GraphModeRequiredError", "OutOfRangeError", "QueuePipelineError"]

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
