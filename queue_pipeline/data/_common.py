"""Helpers shared by the tf.data twins: inert-argument warnings, input conversion, interleaving."""

from __future__ import annotations

import warnings

import tensorflow as tf


def warn_inert(api: str, **args) -> None:
    """Warns once per call for each legacy argument that has no tf.data meaning.

    Only arguments set to something other than None warn: passing the legacy
    default is silent.

    Args:
      api: the twin's public name, e.g. ``"queue_pipeline.data.batch"``.
      **args: argument name -> value, e.g. ``shared_name=shared_name``.
    """
    for arg, value in args.items():
        if value is not None:
            warnings.warn(
                f"{api}: the `{arg}` argument ({value!r}) has no effect on tf.data "
                "pipelines; it is accepted so that legacy calls keep working.",
                UserWarning,
                stacklevel=3,
            )


def as_dataset(api: str, arg: str, value) -> tf.data.Dataset:
    """`value` as a Dataset: a Dataset as is, a list/array/tensor sliced into one.

    Raises:
      TypeError: `value` cannot be sliced into a Dataset.
    """
    if isinstance(value, tf.data.Dataset):
        return value
    try:
        return tf.data.Dataset.from_tensor_slices(value)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"{api}: `{arg}` must be a tf.data.Dataset (or a list, array or tensor "
            f"to slice into one); got {type(value).__name__}: {e}"
        ) from e


def round_robin(datasets: list[tf.data.Dataset]) -> tf.data.Dataset:
    """One element from each Dataset in turn, skipping the exhausted ones.

    The interleaving of the join twins and of rebuilt gathering queues
    (several enqueue threads into one queue).
    """
    choice = tf.data.Dataset.range(len(datasets)).repeat()
    return tf.data.Dataset.choose_from_datasets(datasets, choice, stop_on_empty_dataset=False)
