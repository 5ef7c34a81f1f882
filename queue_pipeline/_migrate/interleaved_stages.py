"""Which of a function's local names hold its pipelines' stages, for cutting one pipeline out.

A function building several pipelines side by side (interleaved statement by
statement, NOTE [ Several pipelines a function returns ] and NOTE [ Several
pipelines in one returned object ]) starts them from plain values it computes
for all of them: a shuffled file list split into training and test parts, the
sizes it keeps (``test_size = len(test_labels)``). Cutting one pipeline out
blanks the other pipelines' stages (their queues, readers, records, batches
and the tensors made for them), never those plain values, which the
statements kept may read too.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import tensorflow as tf

from queue_pipeline._migrate.held_random import HeldRandomState
from queue_pipeline._migrate.loading import own_argv

__all__ = ["draws_at_random", "stage_names"]


def stage_names(traced, function: str, first_line: int | None = None) -> set[str]:
    """The local names of `function`'s traced call whose values are part of a pipeline
    or graph values (a queue, a reader, a record or batch tensor, any tensor)."""
    calls = [c for (name, _), c in traced.calls.items() if name == function]
    call = next(
        (c for c in calls if first_line is None or c.first_line == first_line),
        calls[0] if calls else None,
    )
    if call is None:
        return set()
    return {n for n, v in call.local_values.items() if _is_stage(traced, v)}


def _is_stage(traced, value: Any) -> bool:
    if isinstance(value, (tf.Tensor, tf.SparseTensor, tf.Operation)):
        return True
    return traced.kind_of(value) != "plain"


def draws_at_random(module, function: str, args, kwargs, argv, graph_call) -> bool:
    """Whether a build of `function` draws from NumPy's or Python's global random state
    (a file list shuffled with ``random`` before it is split between the pipelines).

    Such pipelines come from one run of the function: a tf.data version per
    pipeline, each running the function's statements again, would split other
    draws (NOTE [ Several pipelines in one returned object ] builds them once).
    The function is built once more in a graph of its own; its printing goes to
    stderr; a build that fails says no.
    """
    from queue_pipeline._scripts.install import install  # noqa: PLC0415 - no cycle at import

    fn = getattr(module, function, None)
    if fn is None:
        return False
    held = HeldRandomState()
    try:
        with (
            tf.Graph().as_default(),
            install(),
            own_argv(module.__file__ or "", argv),
            contextlib.redirect_stdout(sys.stderr),
            held.build(),
        ):
            if graph_call is not None:
                args, kwargs = graph_call.arguments()
            fn(*args, **(kwargs or {}))
    except Exception:  # noqa: BLE001 - the user's function: the trace ran it already
        return False
    finally:
        held.restore()
    return bool(held.drew)
