"""TensorFlow's own chatter kept out of what queue_pipeline's commands print.

A command prints what its user needs (its report, its errors); TensorFlow's
deprecation notices for the legacy API a proof runs on purpose, the notice
that ``disable_v2_behavior()`` logs about ref variables, and tf.data's
graph-mode ``Dataset.options()`` UserWarning are TensorFlow's internals, not
the user's business. :func:`tf_logs_hidden` hides them for a block, unless
``QUEUE_PIPELINE_TF_LOGS=1`` (the CLI's ``--tf-logs`` sets it). TensorFlow's
C++ log lines are the CLI's (``queue_pipeline._cli_support``). TensorFlow-free.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from typing import Iterator

__all__ = ["TF_DATA_OPTIONS_WARNING", "TF_LOGS_ENV", "tf_logs_hidden", "tf_logs_requested"]

TF_LOGS_ENV = "QUEUE_PIPELINE_TF_LOGS"

# tf.data's UserWarning when Dataset.options() runs in graph mode (TF 2.16 to
# 2.21 word it so); TensorFlow's own distribute() makes that call.
TF_DATA_OPTIONS_WARNING = r"To make it possible to preserve tf\.data options"


def tf_logs_requested(flag: bool = False) -> bool:
    """True when TensorFlow's logs are wanted: `flag` (``--tf-logs``) or QUEUE_PIPELINE_TF_LOGS."""
    value = os.environ.get(TF_LOGS_ENV, "").strip().lower()
    return flag or value in ("1", "true", "yes", "on")


@contextlib.contextmanager
def tf_logs_hidden() -> Iterator[None]:
    """Hides TensorFlow's Python-side notices inside the block (none if TF logs are requested).

    Side effects, for the block only: the ``tensorflow`` logger (TensorFlow's
    ``tf.get_logger()``, through which its deprecation notices go) passes
    ERROR and above only, and tf.data's graph-mode options UserWarning is
    ignored. Both are process-wide, so this is for a command's whole run or
    for one call of queue_pipeline's own, not for a user's script.
    """
    if tf_logs_requested():
        yield
        return
    logger = logging.getLogger("tensorflow")
    saved = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=TF_DATA_OPTIONS_WARNING)
            yield
    finally:
        logger.setLevel(saved)
