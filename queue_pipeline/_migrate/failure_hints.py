"""The fix to suggest when the user's function fails under the arguments migrate called it with.

NOTE [ A function that fails under its arguments ]
Migrate calls the function once (``--call``) to learn what it builds. When
that call raises, the cause is one of two: the arguments do not suit the
function (they do not fit its signature, name a file that is not there, lack
an attribute the function reads), and ``--call`` is the fix; or the function
itself fails at one of its own lines under any such arguments (Python 2
code under Python 3: ``dict.items() + dict.items()``; a float where
TensorFlow wants an int), and the fix is in that line, which the hint names.
``--call`` is suggested only for the first kind.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable

import tensorflow as tf

from queue_pipeline._migrate import loading
from queue_pipeline._migrate.arguments import graph_defaults
from queue_pipeline._migrate.known_names import WRAPPER
from queue_pipeline._migrate.loading import MigrateError

__all__ = ["called", "failed_call", "failure_fix"]

_API = "queue-pipeline migrate"
_CALL = "pass arguments that run (--call)"
# Python 2 names and methods gone in Python 3, and its lists that are views or iterators now.
_PY2_NAMES = re.compile(
    r"name '(xrange|unicode|basestring|long|raw_input|unichr|cmp|execfile|file|reduce)' "
    r"is not defined"
)
_PY2_METHODS = re.compile(r"has no attribute '(iteritems|itervalues|iterkeys|has_key)'")
_FLOAT_FOR_INT = re.compile(r"Expected u?int\d+.*of type 'float'", re.S)
_PY2_VIEWS = re.compile(r"'(dict_items|dict_keys|dict_values|map|filter|zip|range)'( object)?")


# TensorFlow's error for an op whose inputs belong to two graphs
_FOREIGN_GRAPH = re.compile(r"must be from the same graph")


def failure_fix(
    fn: Callable[..., Any], args: tuple, kwargs: dict | None, error: BaseException, path: str
) -> str:
    """The fix for `fn(*args, **kwargs)` raising `error` (`path`: the user's file).

    NOTE [ A function that fails under its arguments ].
    """
    defaults = graph_defaults(fn, args, kwargs)
    if defaults:
        return defaults
    if not _fits(fn, args, kwargs):
        return "pass arguments that fit its signature (--call)"
    if (args or kwargs) and _FOREIGN_GRAPH.search(str(error)):
        return (
            "a `--call` argument holds a tensor made in another graph (deeper in its attributes "
            "than migrate looks); migrate makes the arguments again in each graph only when it "
            "sees one: build that object inside the function (or a wrapper function that "
            "builds it and calls this one, migrated instead), then migrate"
        )
    frame = loading.raised_frame(error, path)
    if frame is None or _about_arguments(error, args, kwargs):
        return _CALL
    filename, line, _ = frame
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", "the function"))
    own = f"{name}() itself fails at {filename}:{line} under these arguments"
    if name == WRAPPER:
        own = f"the script itself fails at {filename}:{line}"
    if _python2(error):
        return (
            f"{own}: that line is Python 2 code; make it Python 3 (e.g. "
            "`list(d.items())`, `range`, `str`), then migrate"
        )
    if isinstance(error, TypeError) and _FLOAT_FOR_INT.search(str(error)):
        return (
            f"{own}: a float reaches a value TensorFlow wants as an integer there; make it "
            "an int (`int(x)`, `a // b`), then migrate"
        )
    return f"{own}: make that line run (run the function on its own to see why), then migrate"


def failed_call(what: str, error: BaseException, path: str, usual: str) -> MigrateError:
    """The refusal for `what` (``calling f(ARGS)``) raising `error`: the innermost line of
    the user's files it went through (`path`: the user's file), the error, and the fix
    (`usual`, unless the error names a better one: :func:`loading.fix_for`)."""
    return MigrateError(
        f"{_API}: {what} failed{loading.raised_at(error, path)}: {type(error).__name__}: "
        f"{str(error).rstrip('.')}. Fix: {loading.fix_for(error, usual)}."
    )


def called(function: str, arguments: str) -> str:
    """How a failed call is named in a message: "calling f(ARGS)", or "running the
    script's pipeline lines" for the function migrate wraps a script's lines in (a name
    of migrate's, never shown)."""
    if function == WRAPPER:
        return "running the script's pipeline lines"
    return f"calling {function}({arguments})"


def _fits(fn: Callable[..., Any], args: tuple, kwargs: dict | None) -> bool:
    """Whether the arguments bind to `fn`'s signature (True when it has none to read)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(*args, **(kwargs or {}))
    except TypeError:
        return False
    return True


def _about_arguments(error: BaseException, args: tuple, kwargs: dict | None) -> bool:
    """Whether `error` plausibly comes from the arguments' values: a file they name is
    missing, or an object passed lacks an attribute the function reads."""
    if isinstance(error, (OSError, tf.errors.NotFoundError)):
        return True
    if isinstance(error, AttributeError):
        target = getattr(error, "obj", None)
        given = list(args) + list((kwargs or {}).values())
        return target is not None and any(target is g or type(target) is g for g in given)
    return False


def _python2(error: BaseException) -> bool:
    text = str(error)
    if isinstance(error, NameError):
        return bool(_PY2_NAMES.search(text))
    if isinstance(error, AttributeError):
        return bool(_PY2_METHODS.search(text))
    if isinstance(error, TypeError):
        return bool(_PY2_VIEWS.search(text)) and (
            "unsupported operand" in text or "not subscriptable" in text or "has no len" in text
        )
    return False
