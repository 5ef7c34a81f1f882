"""The engine's edits around a served call: fill summaries, the saveable, quiet tf.data.

The faithful queues' fill summaries become a constant 1.0 under the same
tags (the served queue is never starved), the iterator's state joins
``SAVEABLE_OBJECTS`` so ``tf.compat.v1.train.Saver`` checkpoints the input
position, and the notes tf.data logs on purpose-made choices are silenced.
"""

from __future__ import annotations

import contextlib
import logging
import warnings

import tensorflow as tf

from queue_pipeline._core.compat import SUMMARIES
from queue_pipeline._engine import input_position as _input_position

__all__ = ["add_saveable", "quiet_tf_data", "replace_fill_summaries"]


def replace_fill_summaries(graph: tf.Graph, queue_names: set, scope: str) -> None:
    """Swaps the fill summaries of the retired queues for a constant 1.0 under the same tags."""
    collection = graph.get_collection_ref(SUMMARIES)
    for summary in list(collection):
        op = getattr(summary, "op", None)
        if op is None or op.type != "ScalarSummary" or not _reads_size_of(op, queue_names):
            continue
        tag = tf.get_static_value(op.inputs[0])
        collection.remove(summary)
        with tf.compat.v1.name_scope(f"{scope.rstrip('/')}_dataset/"):
            replacement = tf.raw_ops.ScalarSummary(
                tags=tf.constant(tag), values=tf.constant(1.0), name="fill"
            )
        collection.append(replacement)


def _reads_size_of(op: tf.Operation, queue_names: set, depth: int = 8) -> bool:
    stack, seen = [(op, 0)], set()
    while stack:
        current, d = stack.pop()
        if current.name in seen or d > depth:
            continue
        seen.add(current.name)
        if (
            current.type in ("QueueSizeV2", "QueueSize")
            and current.inputs[0].op.name in queue_names
        ):
            return True
        stack.extend((t.op, d + 1) for t in current.inputs)
    return False


class _DeprecationFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "make_saveable_from_iterator" not in record.getMessage()


def add_saveable(iterator, pipeline: str) -> None:
    """Puts the iterator's state in ``SAVEABLE_OBJECTS`` for ``tf.compat.v1.train.Saver``.

    Its checkpoint key names the `pipeline` fingerprint (NOTE [ Which
    pipeline an input position belongs to ] in ``_engine/input_position.py``).
    """
    tf_logger = tf.get_logger()
    quiet = _DeprecationFilter()
    tf_logger.addFilter(quiet)
    try:
        saveable = tf.compat.v1.data.experimental.make_saveable_from_iterator(
            iterator, external_state_policy="ignore"
        )
    finally:
        tf_logger.removeFilter(quiet)
    _input_position.key_of(saveable, pipeline)
    _input_position.mark(saveable)  # see NOTE [ Checkpoints without an input position ]
    tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS, saveable)


class _AbslFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "Changing the value of option deterministic" not in record.getMessage()


@contextlib.contextmanager
def quiet_tf_data():
    """Silences tf.data's construction-time notes the engine makes on purpose.

    Overriding a twin's ``deterministic=False`` (absl log), the graph seed
    reaching lifted random ops (a UserWarning), the deprecation of
    ``make_saveable_from_iterator`` and, reading through tf.data service,
    TensorFlow's own ``Dataset.options()`` call in graph mode (a UserWarning
    from its ``distribute``, not actionable by the script) are all expected here.
    """
    absl = logging.getLogger("absl")
    quiet = _AbslFilter()
    absl.addFilter(quiet)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Seed .* from outer graph")
            warnings.filterwarnings("ignore", message=r"To make it possible to preserve tf\.data")
            yield
    finally:
        absl.removeFilter(quiet)
