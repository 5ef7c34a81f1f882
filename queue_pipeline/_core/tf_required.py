"""The one check that a supported TensorFlow is installed, made at first use.

queue_pipeline does not depend on one TensorFlow distribution (setup.py: the
user's ``tensorflow``, ``tensorflow-cpu``, ``tf-nightly`` or a vendor's build
is theirs, and pip must not install a second one over it). So the first name
that needs TensorFlow (``qp.batch``, ``from queue_pipeline import X``,
``queue_pipeline.data``, any command of the CLI) asks here, and a missing or too
old TensorFlow is one error that names the supported range and the command that
installs it, instead of a ``ModuleNotFoundError`` or an ``AttributeError`` deep
inside TensorFlow. This module itself imports no TensorFlow until called.
"""

from __future__ import annotations

import re
import sys
from types import ModuleType

__all__ = ["MINIMUM", "TESTED", "TensorFlowRequiredError", "require_tensorflow"]

# The floor is setup.py's (extras "tensorflow" and "tensorflow-cpu"); CI runs
# the suite on both ends of the tested range (.ci/run and .ci/oldest-tf).
MINIMUM = (2, 16)
TESTED = ("2.16.2", "2.21.0")

_checked: ModuleType | None = None


class TensorFlowRequiredError(ImportError):
    """No TensorFlow, or one older than :data:`MINIMUM`, is importable.

    An :class:`ImportError`, so code that guards an optional import of
    queue_pipeline keeps working.
    """


def _supported() -> str:
    floor = ".".join(map(str, MINIMUM))
    return f"TensorFlow >= {floor} (tested on {TESTED[0]} and {TESTED[-1]})"


def _installed_distribution() -> str:
    """The installed distribution that provides ``tensorflow`` (for the fix), or 'tensorflow'."""
    try:
        from importlib.metadata import packages_distributions

        names = packages_distributions().get("tensorflow", [])
    except Exception:  # pragma: no cover - a broken metadata directory
        names = []
    return names[0] if names else "tensorflow"


def require_tensorflow() -> ModuleType:
    """Imports TensorFlow and checks its version; returns the ``tensorflow`` module.

    Returns:
        The imported ``tensorflow`` module (the check runs once per process).

    Raises:
        TensorFlowRequiredError: no ``tensorflow`` package is importable, or
            its ``__version__`` is older than :data:`MINIMUM`. The message
            names the supported range, what was found, and the pip command.

    Side effects: imports TensorFlow (seconds, the first time).
    """
    global _checked
    if _checked is not None:
        return _checked
    floor = ".".join(map(str, MINIMUM))
    try:
        import tensorflow as tf
    except ModuleNotFoundError as err:
        if err.name != "tensorflow":
            raise
        raise TensorFlowRequiredError(
            f"queue_pipeline needs {_supported()}, and this Python ({sys.executable}) has no "
            "TensorFlow. Install one, e.g. pip install 'queue_pipeline[tensorflow]' (or "
            f"'queue_pipeline[tensorflow-cpu]' for the CPU-only build; pip install "
            f"'tensorflow>={floor}' works too)"
        ) from None
    version = str(getattr(tf, "__version__", ""))
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None or (int(found.group(1)), int(found.group(2))) < MINIMUM:
        dist = _installed_distribution()
        raise TensorFlowRequiredError(
            f"queue_pipeline needs {_supported()}, and this Python ({sys.executable}) has "
            f"TensorFlow {version or '(no __version__)'} from {getattr(tf, '__file__', '?')}. "
            f"Upgrade it: pip install --upgrade '{dist}>={floor}'"
        )
    _checked = tf
    return tf
