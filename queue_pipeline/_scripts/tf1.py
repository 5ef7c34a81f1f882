"""``queue-pipeline run --tf1``: TF 1.x scripts on TF 2.x, ``tensorflow`` aliased to ``compat.v1``.

:func:`tf1_mode` is what ``--tf1`` (or ``QUEUE_PIPELINE_TF1=1``) wraps around
the run: ``tf.compat.v1.disable_v2_behavior()``, ``QUEUE_PIPELINE_TF1=1`` for
the script's subprocesses, and :func:`alias`, under which ``import tensorflow``
in the script and in the modules it imports gives ``tensorflow.compat.v1``
(see NOTE [ The tensorflow alias of --tf1 ]). :func:`explain` turns the error
a script gets for something TensorFlow 2.x removed (``tf.contrib``,
``tf.estimator``, the Keras 2 layers, ...) into one that names it and its
replacement (see NOTE [ Removed APIs ] in :mod:`queue_pipeline._scripts.removed`).
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import site
import sys
import sysconfig
import threading
import types
from typing import Iterator

import tensorflow as tf

from queue_pipeline._core.quiet import tf_logs_hidden
from queue_pipeline._scripts.removed import (
    KERAS2,
    RemovedAttributeError,
    RemovedModuleError,
    attribute_chain,
    attribute_error,
    module_error,
    removed_message,
)

__all__ = ["ENV", "alias", "explain", "from_environment", "tf1_mode"]

ENV = "QUEUE_PIPELINE_TF1"

# NOTE [ The tensorflow alias of --tf1 ]
# A TF 1.x script says `import tensorflow as tf` and means TF 1.x's API, which
# TF 2.x keeps as `tensorflow.compat.v1`. TensorFlow itself (it imports its own
# package as `tensorflow.python...`), Keras, tf-slim and queue_pipeline must
# keep the real package, so the answer to `import tensorflow` depends on who
# asks. The import system cannot tell: `sys.modules` holds one "tensorflow"
# for every importer, and once it is there (queue_pipeline imported it before
# the script starts) no `sys.meta_path` finder is consulted for the name, so a
# finder/loader cannot hand the script another module; replacing the entry
# would break TensorFlow, whose `import tensorflow.python.x as y` walks
# attributes from sys.modules["tensorflow"]. The one hook that sees the
# importer is `builtins.__import__`, which every `import` statement calls with
# the importing module's globals. alias() wraps it for the run:
#
# * Only a level-0 import of `tensorflow` or `tensorflow.<x>` by *script code*
#   is answered differently; every other call goes straight to the original
#   after one string test. Script code is anything loaded from outside the
#   installed locations (the standard library, site-packages, the user site),
#   except the packages `tensorflow` and `queue_pipeline` wherever they live:
#   the script, the modules beside it and the project's own packages, never
#   TensorFlow, Keras, tf-slim or queue_pipeline. It is decided once per
#   (module name, file).
# * The original import runs first, so what the statement imports is exactly
#   what it would import anyway. Then `import tensorflow` (with or without
#   `as`, and `from tensorflow import x`) gets `_TENSORFLOW`, one module object
#   named "tensorflow" that looks every attribute up in `tensorflow.compat.v1`
#   at access time (so it sees the bindings install() routes to queue_pipeline
#   and, after uninstall(), TF's again), except `compat`, which is the real
#   `tensorflow.compat`, and with the real loaded submodules (`tf.python`, as
#   TF 1.x had them) as a fallback. A dotted `import tensorflow.compat.v1 as
#   tf` walks `.compat.v1` from that object, so it yields the real
#   `tensorflow.compat.v1`; `from tensorflow.compat import v1` and every
#   `from tensorflow.x import y` get the real module the original returned.
#   `_TENSORFLOW` is never put into sys.modules.
# * `importlib.import_module("tensorflow")` does not call `__import__`, so it
#   gets the real package, as does `sys.modules["tensorflow"]`.
# * alias() nests and is thread-safe; on exit it restores the original
#   `__import__`. If something wrapped it meanwhile, that wrapper stays (it is
#   not ours to remove), `_import` below it passes everything through, and
#   the next alias() reactivates it there instead of wrapping the wrapper.
#   Modules the script imported keep the `_TENSORFLOW` they bound, which
#   keeps working.

_MISSING = object()
_V1 = tf.compat.v1
_V1_MODULE_NAMES = ("tensorflow._api.v2.compat.v1", "tensorflow.compat.v1")
_NEVER_ALIASED = ("tensorflow", "queue_pipeline")


class _TF1Module(types.ModuleType):
    """``tensorflow`` as script code sees it under ``--tf1``: ``tensorflow.compat.v1``.

    See NOTE [ The tensorflow alias of --tf1 ].
    """

    def __getattr__(self, name: str):
        if name == "compat":
            return tf.compat
        value = getattr(_V1, name, _MISSING)
        if value is _MISSING:
            value = sys.modules.get(f"tensorflow.{name}") or _MISSING
        if value is not _MISSING:
            return value
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module 'tensorflow' has no attribute {name!r}")
        caller = sys._getframe(1)  # noqa: SLF001 - names `tf.contrib.slim`, not `tf.contrib`
        chain = [name, *attribute_chain(caller.f_code, caller.f_lasti, name)]
        raise attribute_error(removed_message("tf", chain, 1), name, self)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(_V1)) | {"compat"})

    def __repr__(self) -> str:
        return "<module 'tensorflow' (tensorflow.compat.v1, queue-pipeline run --tf1)>"


_TENSORFLOW = _TF1Module(
    "tensorflow",
    "TensorFlow 2.x's `tensorflow.compat.v1`, as `import tensorflow` "
    "gives it to a script run by `queue-pipeline run --tf1`.",
)


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update(getattr(site, "getsitepackages", list)())
    roots.add(getattr(site, "getusersitepackages", lambda: None)())
    roots.update(p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages"))
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


_ROOTS: tuple[str, ...] | None = None
_VERDICTS: dict[tuple[object, object], bool] = {}


def _is_script_code(namespace) -> bool:
    """Whether the module with globals `namespace` gets the alias (see the NOTE)."""
    global _ROOTS
    if not isinstance(namespace, dict):
        return False
    name, file = namespace.get("__name__"), namespace.get("__file__")
    key = (name, file)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        if isinstance(name, str) and name.split(".")[0] in _NEVER_ALIASED:
            verdict = False
        elif not isinstance(file, str):
            verdict = name == "__main__"
        else:
            if _ROOTS is None:
                _ROOTS = _installed_roots()
            verdict = not os.path.realpath(file).startswith(_ROOTS)
        _VERDICTS[key] = verdict
    return verdict


_LOCK = threading.Lock()
_DEPTH = 0  # active alias() blocks
_ORIGINAL_IMPORT = builtins.__import__  # what _import wraps
_CHAINED = False  # whether _import is (still) in builtins.__import__'s chain


def _import(name, globals=None, locals=None, fromlist=(), level=0):  # noqa: A002
    """``builtins.__import__`` while :func:`alias` is active (see the NOTE)."""
    if (
        level
        or not _DEPTH
        or not name.startswith("tensorflow")
        or (len(name) > 10 and name[10] != ".")
    ):
        return _ORIGINAL_IMPORT(name, globals, locals, fromlist, level)
    if globals is None:
        globals = sys._getframe(1).f_globals  # noqa: SLF001 - a bare __import__("tensorflow")
    if not _is_script_code(globals):
        return _ORIGINAL_IMPORT(name, globals, locals, fromlist, level)
    try:
        module = _ORIGINAL_IMPORT(name, globals, locals, fromlist, level)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing != name and not name.startswith(missing + "."):
            raise
        chain = name.split(".")[1:] + [item for item in (fromlist or ())[:1] if item != "*"]
        raise module_error(removed_message("tensorflow", chain), missing) from None
    if name != "tensorflow":
        return _TENSORFLOW if not fromlist else module
    for item in fromlist or ():
        if item != "*" and getattr(_TENSORFLOW, item, _MISSING) is _MISSING:
            raise module_error(removed_message("tensorflow", [item]), f"tensorflow.{item}")
    return _TENSORFLOW


@contextlib.contextmanager
def alias() -> Iterator[None]:
    """Context manager: ``import tensorflow`` in script code gives ``tensorflow.compat.v1``.

    Changes nothing else: no TF behaviour, no ``sys.modules`` entry, and
    TensorFlow, installed libraries and queue_pipeline import the real package
    as before. See NOTE [ The tensorflow alias of --tf1 ].
    """
    global _CHAINED, _DEPTH, _ORIGINAL_IMPORT
    with _LOCK:
        current = builtins.__import__
        # Left under a wrapper made while active (see the NOTE): it still calls us.
        chained = _CHAINED and current is not _ORIGINAL_IMPORT
        if _DEPTH == 0 and current is not _import and not chained:
            _ORIGINAL_IMPORT, builtins.__import__, _CHAINED = current, _import, True
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0 and builtins.__import__ is _import:
                builtins.__import__, _CHAINED = _ORIGINAL_IMPORT, False


def from_environment() -> bool:
    """Whether ``QUEUE_PIPELINE_TF1`` asks for TF1 mode (unset, ``0`` or empty: no).

    Raises:
      ValueError: the variable is set to something other than 1/0, true/false,
        yes/no or on/off.
    """
    raw = os.environ.get(ENV, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{ENV}={os.environ[ENV]!r} is not a switch; use 1 (TF1 mode) or 0.")


@contextlib.contextmanager
def tf1_mode() -> Iterator[None]:
    """Context manager: the block runs a TF 1.x script, as ``queue-pipeline run --tf1`` does.

    Applies ``tf.compat.v1.disable_v2_behavior()`` (for good: TensorFlow
    cannot switch back once a graph was built), sets ``QUEUE_PIPELINE_TF1=1``
    for subprocesses and activates :func:`alias` for the block; the routing of
    the queue API is ``run_script``'s ``install()``.
    """
    if tf.__internal__.tf2.enabled():
        with tf_logs_hidden():  # TF's notice that ref variables are deprecated: not the script's
            _V1.disable_v2_behavior()
    saved = os.environ.get(ENV)
    os.environ[ENV] = "1"
    try:
        with alias():
            yield
    finally:
        if saved is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = saved


def _v1_path(obj: object) -> str | None:
    """``tf.train`` for the module behind ``tf.compat.v1.train`` (``tf`` for v1 itself)."""
    if isinstance(obj, _TF1Module):
        return "tf"
    if not isinstance(obj, types.ModuleType):
        return None
    name = vars(obj).get("__name__")
    for prefix in _V1_MODULE_NAMES:
        if isinstance(name, str) and (name == prefix or name.startswith(prefix + ".")):
            return "tf" + name[len(prefix) :]
    return None


_KERAS3 = re.compile(r"^`(\w+)` is not available with Keras 3\.$")
_KERAS_LEGACY = {"layers": "tf.layers", "rnn_cell": "tf.nn.rnn_cell"}
_CANNOT_IMPORT = re.compile(r"^cannot import name '(\w+)' from '([\w.]+)'")


def _script_frame(error: BaseException):
    """The innermost traceback entry in script code, or None."""
    found, tb = None, error.__traceback__
    while tb is not None:
        if _is_script_code(tb.tb_frame.f_globals):
            found = tb
        tb = tb.tb_next
    return found


def explain(error: BaseException) -> BaseException | None:
    """The error a ``--tf1`` script's `error` stands for, naming what was removed and the fix.

    Args:
      error: what the script raised.

    Returns:
      `error` itself if it already is a :class:`RemovedAttributeError` or
      :class:`RemovedModuleError`; a new one of those for an AttributeError on
      a ``tf.compat.v1`` module, Keras 3's refusal of a Keras 2 API
      (``tf.layers``, ``tf.nn.rnn_cell``) or a failed import of a
      ``tensorflow`` module or name; None for any other error. See
      NOTE [ Removed APIs ].
    """
    if isinstance(error, (RemovedAttributeError, RemovedModuleError)):
        return error
    if isinstance(error, ModuleNotFoundError):
        name = error.name or ""
        if not name.startswith("tensorflow."):
            return None
        return module_error(removed_message("tensorflow", name.split(".")[1:]), name)
    if isinstance(error, ImportError):
        match = _CANNOT_IMPORT.match(str(error))
        if match is None:
            return None
        owner = "tensorflow" if match[2] == "tensorflow" else _v1_path(sys.modules.get(match[2]))
        if owner is None:
            return None
        chain = owner.split(".")[1:] + [match[1]]
        return module_error(removed_message(owner.split(".")[0], chain), match[2])
    if not isinstance(error, AttributeError) or not getattr(error, "name", None):
        return None
    obj, name = getattr(error, "obj", None), error.name or ""
    if _KERAS3.match(str(error)):
        submodule = str(vars(obj).get("_tfll_submodule") or "") if hasattr(obj, "__dict__") else ""
        legacy = submodule.partition("__internal__.legacy.")[2]
        where = _KERAS_LEGACY.get(legacy, f"tf.{legacy}") + "." if legacy else ""
        return attribute_error(
            f"`{where}{name}` is a Keras 2 API, and TensorFlow 2.x ships Keras 3, which "
            f"has none of TensorFlow 1.x's layers; {KERAS2}.",
            name,
            obj,
        )
    owner = _v1_path(obj)
    if owner is None:
        return None
    entry = _script_frame(error)
    after = [] if entry is None else attribute_chain(entry.tb_frame.f_code, entry.tb_lasti, name)
    chain = owner.split(".")[1:] + [name]
    return attribute_error(removed_message("tf", chain + after, len(chain)), name, obj)
