"""Plain values a pipeline function returns beside its batches (counts, steps, names).

A function may return ``x_batch, y_batch, num_batches``, or a namedtuple or
dict with plain fields beside its batch fields: the proof compares those
values for equality, and the callers are rewritten to match
(NOTE [ A namedtuple with plain values beside the batches ]).
"""

from __future__ import annotations

import numpy as np

from queue_pipeline._migrate import object_returns_places as _places
from queue_pipeline._migrate.trace import loader_count

# Values a pipeline function may return beside its batches (counts, steps per epoch, names).
PLAIN_TYPES = (bool, int, float, complex, str, bytes, type(None), np.generic)


def split_plain(outputs) -> tuple[object, list]:
    """(the pipeline's part of `outputs`, the plain values returned beside it, in order).

    A function may return ``x_batch, y_batch, num_batches``: the plain values
    are not part of what compare reads; the proof checks them for equality
    instead. Outputs that are not a tuple or list, or hold no plain value,
    come back as they are.
    """
    if _places.holds_objects(outputs):  # NOTE [ Pipelines returned in objects ]
        return outputs, _places.plain_leaves(outputs)
    fields = _fields(outputs)
    if fields is not None:
        # NOTE [ A namedtuple with plain values beside the batches ]
        values = {k: v for k, v in fields.items() if _is_plain(v)}
        if not values:
            return outputs, []
        return {k: v for k, v in fields.items() if k not in values}, [values]
    if not isinstance(outputs, (tuple, list)):
        return outputs, []
    plain = [v for v in outputs if _is_plain(v)]
    if not plain:
        return outputs, []
    rest = [v for v in outputs if not _is_plain(v)]
    if nones_dropped(outputs):  # NOTE [ No labels: a None beside the batches ]
        plain = []
    if len(rest) == 1 and not loader_count(tuple(rest)):
        return rest[0], plain
    return (tuple(rest) if isinstance(outputs, tuple) else rest), plain


def nones_dropped(outputs) -> int:
    """How many ``None`` the written function leaves out of `outputs` (0: none).

    NOTE [ No labels: a None beside the batches ]
    An Estimator input_fn of a model without labels (a GAN, an autoencoder)
    returns ``{"image": images}, None`` or ``images, None``. Estimator calls an
    input_fn and takes a ``tf.data.Dataset`` (of ``(features, labels)`` or of
    the features alone) or a ``(features, labels)`` tuple of tensors:
    ``(dataset, None)`` would make the Dataset itself the features. A None
    carries no data, so where every plain value a tuple returns beside its
    batches is None (labels absent), the written function returns the Dataset
    alone, its element the batches (or the structure built from them); the
    proof compares the legacy batches without the Nones, and ``--callers``
    rewrites ``features, labels = f(...)`` as the iterator's next element and
    ``labels = None``. Any other plain value (a count, a name, a loader) keeps
    the Nones beside it: ``(dataset, None, count)``.
    """
    if not isinstance(outputs, (tuple, list)) or _fields(outputs) is not None:
        return 0
    plain = [v for v in outputs if _is_plain(v)]
    if not plain or len(plain) == len(outputs) or any(v is not None for v in plain):
        return 0
    return len(plain)


def plain_beside(outputs) -> int | str:
    """How a function returns plain values beside its batches, for its callers.

    Returns:
      0 for none; for a tuple, how many plain values follow the batches; for a
      namedtuple or dict with plain fields, its type's name (``"dict"``).
    """
    pipeline, plain = split_plain(outputs)
    if not plain:
        return 0
    return type(outputs).__name__ if _fields(outputs) is not None else len(plain)


def plain_among(outputs) -> bool:
    """Whether a tuple or list of `outputs` has a plain value before one of its batches."""
    if not isinstance(outputs, (tuple, list)) or _fields(outputs) is not None:
        return False
    flags = [_is_plain(v) for v in outputs]
    return any(flags) and flags != sorted(flags)


def _fields(outputs) -> dict | None:
    """A namedtuple's or dict's fields by name; None for anything else."""
    if hasattr(outputs, "_asdict"):
        return dict(outputs._asdict())
    return dict(outputs) if isinstance(outputs, dict) else None


def _is_plain(value) -> bool:
    """A value returned beside the batches: a number or string, or a list or dict of them."""
    if isinstance(value, dict):
        return bool(value) and all(_is_plain(v) for v in value.values())
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return all(isinstance(v, PLAIN_TYPES) for v in value)
    return isinstance(value, PLAIN_TYPES)


def shown(values) -> str:
    return ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in values or ())
