"""Argument checks shared by the legacy functions and their tf.data twins.

One check and one message per argument, so that ``queue_pipeline.batch`` and
``queue_pipeline.data.batch`` accept the same values and say the same thing
about the rest. Messages follow the template ``<api>: `arg` must ...; got
<value>. <fix>``; where TF 1.x raises for the same value, its own words are
kept at the start (the differential tests compare them with TF's).
"""

from __future__ import annotations

import numbers

__all__ = ["check_capacity", "check_num_epochs", "check_num_threads"]


def check_num_threads(api: str, num_threads) -> int:
    """`num_threads` as an int >= 1 (TF 1.x accepts any Python integral, True too).

    Raises:
      ValueError: `num_threads` is not an integral number, or is < 1.
    """
    if not isinstance(num_threads, numbers.Integral) or num_threads < 1:
        raise ValueError(
            f"{api}: `num_threads` must be a positive int; got {num_threads!r}. "
            "Fix: pass the number of enqueue threads, 1 or more."
        )
    return int(num_threads)


def check_capacity(api: str, capacity, min_after_dequeue) -> None:
    """Raises TF 1.x's ValueError when a shuffle's `capacity` <= `min_after_dequeue`.

    The comparison is TF 1.x's own (``capacity <= min_after_dequeue``, for
    whatever types it is given).
    """
    if capacity <= min_after_dequeue:
        raise ValueError(
            f"{api}: capacity {capacity} must be bigger than min_after_dequeue "
            f"{min_after_dequeue}: `capacity` must be greater than `min_after_dequeue`; "
            f"got {capacity!r} and {min_after_dequeue!r}. Fix: raise `capacity` (typically "
            "min_after_dequeue + (num_threads + a small safety margin) * batch_size)."
        )


def check_num_epochs(api: str, num_epochs) -> None:
    """Raises TF 1.x's ValueError for a `num_epochs` <= 0 (None: repeat forever).

    The comparison is TF 1.x's own (``num_epochs <= 0``); the twins skip it
    for tensors, whose value is checked when the Dataset runs.
    """
    if num_epochs is None:
        return
    if num_epochs <= 0:
        raise ValueError(
            f"{api}: num_epochs must be > 0 not {'%d' % num_epochs}: `num_epochs` must be "
            f"> 0, or None to repeat forever; got {num_epochs!r}. Fix: pass the number of "
            "passes over the input, or None."
        )
