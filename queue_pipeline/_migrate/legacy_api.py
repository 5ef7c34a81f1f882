"""The legacy API functions and classes by name, from the modules that define them.

Migrate binds a legacy call's arguments to the signature of queue_pipeline's
own function of that name (``bind_arguments(legacy_api("shuffle_batch"), ...)``).
They are looked up in the modules of the TF 1.x surface, not through the
package's facade, so no module of ``_migrate`` imports the package it is part
of (no import circle).
"""

from __future__ import annotations

from typing import Any

from queue_pipeline import batching, producers, readers

__all__ = ["legacy_api"]

_MODULES = (producers, readers, batching)


def legacy_api(kind: str) -> Any:
    """queue_pipeline's function or class `kind` (``"string_input_producer"``,
    ``"TFRecordReader"``, ``"shuffle_batch"``).

    Raises:
      AttributeError: no producer, reader or batching function has that name.
    """
    for module in _MODULES:
        found = getattr(module, kind, None)
        if found is not None:
            return found
    raise AttributeError(f"queue_pipeline has no legacy producer, reader or batching {kind!r}")
