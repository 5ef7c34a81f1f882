"""Runs unmodified TF 1.x scripts on queue_pipeline: ``install``, ``uninstall``, ``run_script``.

``install()`` rebinds TensorFlow's legacy queue-pipeline symbols (the
``tf.compat.v1.train`` producers, batchers and runner API, ``Coordinator``,
``LooperThread`` and the ``tf.compat.v1`` reader classes) to queue_pipeline's
implementations wherever TensorFlow binds them, so code written against
``tf.compat.v1`` builds queue_pipeline's pipelines without a change.
``uninstall()`` puts every binding back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import runpy
import sys
import threading
import traceback
import types
from typing import Iterator, Sequence

__all__ = ["Installed", "ScriptError", "install", "run_script", "uninstall"]

# NOTE [ What install() patches ]
# TensorFlow defines each legacy symbol once, in a "home" module below, and
# binds the same object under other names when its modules are imported:
# the public API modules (``tf.compat.v1.train``, ``tf.compat.v1``,
# ``tf.compat.v1.io``, ``tf.compat.v1.train.queue_runner``, ``tf.train``'s
# ``Coordinator``, ``tf.io.match_filenames_once``, and their copies under
# ``tf.compat.v2`` ...), TensorFlow's ``TFModuleWrapper`` objects around those
# modules (each keeps its own copy of the attributes), and internal modules
# such as ``tensorflow.python.training.training``, ``...queue_runner`` and
# ``tensorflow.python.ops.standard_ops``. Rather than listing those places
# (they change between TF versions), install() walks every loaded
# ``tensorflow`` module, and every module object reachable from one, and
# rebinds each attribute that *is* (identity) one of the home originals.
# Code that looks a symbol up through a module at call time -- legacy
# scripts (``tf.compat.v1.train.batch``, ``import tensorflow.compat.v1 as
# tf``), tf-slim (``from tensorflow.python.training import input``),
# ``MonitoredTrainingSession`` and ``Supervisor`` (``coordinator.Coordinator``,
# ``queue_runner.start_queue_runners``) -- then reaches queue_pipeline, whose
# classes and functions have TF's interface (DESIGN.md, principle 3).
# Names bound *before* install() by ``from ... import X`` outside TensorFlow,
# and classes that TF subclassed at import time (Supervisor's LooperThread
# subclasses, LMDBReader's ReaderBase), keep TF's objects.
#
# Every rebinding is recorded as (module, name, original, replacement) and
# uninstall() restores them in reverse order, only where the binding still
# holds queue_pipeline's object (a later assignment by the user is left
# alone). TensorFlow modules first imported *while* installed bind
# queue_pipeline's objects; uninstall() sweeps those too, back to TF's
# originals, so the TF oracle is whole again after uninstall().

# The home of each symbol install() routes, and the names routed from it.
_HOMES: dict[str, tuple[str, ...]] = {
    "tensorflow.python.training.input": (
        "batch", "batch_join", "input_producer", "limit_epochs", "match_filenames_once",
        "maybe_batch", "maybe_batch_join", "maybe_shuffle_batch",
        "maybe_shuffle_batch_join", "range_input_producer", "shuffle_batch",
        "shuffle_batch_join", "slice_input_producer", "string_input_producer"),
    "tensorflow.python.training.queue_runner_impl": (
        "QueueRunner", "add_queue_runner", "start_queue_runners"),
    "tensorflow.python.training.coordinator": ("Coordinator", "LooperThread"),
    "tensorflow.python.ops.io_ops": (
        "FixedLengthRecordReader", "IdentityReader", "ReaderBase", "TFRecordReader",
        "TextLineReader", "WholeFileReader"),
}
# Modules that re-bind the symbols, imported first so that the walk sees them.
_ALIAS_MODULES = (
    "tensorflow.python.training.queue_runner",
    "tensorflow.python.training.training",
    "tensorflow.python.ops.standard_ops",
)


@dataclasses.dataclass(frozen=True)
class _Patch:
    module: types.ModuleType
    name: str
    original: object
    replacement: object

    def describe(self) -> str:
        return f"{_module_name(self.module)}.{self.name}"


def _module_name(module: types.ModuleType) -> str:
    return str(vars(module).get("__name__", "?"))


def _is_tf_module(value: object) -> bool:
    if not isinstance(value, types.ModuleType):
        return False
    # vars() only: attribute access on TF's lazy loaders would import modules.
    name = vars(value).get("__name__")
    return isinstance(name, str) and (name == "tensorflow" or name.startswith("tensorflow."))


def _tf_modules() -> list[types.ModuleType]:
    """Every loaded TensorFlow module and module wrapper, each once, in a stable order."""
    seen: dict[int, types.ModuleType] = {}
    stack = [m for m in list(sys.modules.values()) if _is_tf_module(m)]
    while stack:
        module = stack.pop()
        if id(module) in seen:
            continue
        seen[id(module)] = module
        stack.extend(v for v in list(vars(module).values())
                     if _is_tf_module(v) and id(v) not in seen)
    return sorted(seen.values(), key=lambda m: (_module_name(m), type(m).__name__))


def _routes() -> dict[int, tuple[object, object]]:
    """id(TF original) -> (original, queue_pipeline's replacement)."""
    import queue_pipeline

    for name in (*_HOMES, *_ALIAS_MODULES):
        importlib.import_module(name)
    routes = {}
    for home, names in _HOMES.items():
        namespace = vars(sys.modules[home])
        for name in names:
            original, replacement = namespace[name], getattr(queue_pipeline, name)
            if original is not replacement:
                routes[id(original)] = (original, replacement)
    return routes


class _Installation:
    """One install(): its routes and the patches made, to be undone by restore()."""

    def __init__(self) -> None:
        self.routes = _routes()
        self.patches: list[_Patch] = []
        replacements = {id(rep) for _, rep in self.routes.values()}
        # Bindings of queue_pipeline objects that predate install(): not ours to undo.
        self.preexisting = {
            (id(module), name) for module in _tf_modules()
            for name, value in list(vars(module).items()) if id(value) in replacements}

    def patch(self) -> None:
        """Rebinds every TF binding of an original; records each rebinding."""
        for module in _tf_modules():
            for name, value in list(vars(module).items()):
                route = self.routes.get(id(value))
                if name.startswith("__") or route is None or route[0] is not value:
                    continue
                setattr(module, name, route[1])
                self.patches.append(_Patch(module, name, route[0], route[1]))

    def restore(self) -> None:
        """Undoes the patches (newest first), then sweeps bindings made while installed."""
        for patch in reversed(self.patches):
            if vars(patch.module).get(patch.name) is patch.replacement:
                setattr(patch.module, patch.name, patch.original)
        originals = {id(rep): orig for orig, rep in self.routes.values()}
        for module in _tf_modules():
            for name, value in list(vars(module).items()):
                if (id(value) in originals and not name.startswith("__")
                        and (id(module), name) not in self.preexisting):
                    setattr(module, name, originals[id(value)])
        self.patches.clear()


_LOCK = threading.RLock()
_ACTIVE: _Installation | None = None


class Installed:
    """What :func:`install` returns; a context manager that uninstalls on exit.

    Leaving the ``with`` block uninstalls only if this call of ``install()``
    did the installing: ``with install():`` inside an installed program leaves
    it installed.
    """

    def __init__(self, installation: _Installation | None) -> None:
        self._installation = installation

    @property
    def patched(self) -> list[str]:
        """``module.attribute`` of every binding currently routed to queue_pipeline."""
        with _LOCK:
            return [] if _ACTIVE is None else [p.describe() for p in _ACTIVE.patches]

    def __enter__(self) -> "Installed":
        return self

    def __exit__(self, *exc_info) -> None:
        with _LOCK:
            if self._installation is not None and _ACTIVE is self._installation:
                uninstall()


def install() -> Installed:
    """Routes TensorFlow's legacy queue-pipeline API to queue_pipeline.

    Afterwards ``tf.compat.v1.train.string_input_producer`` (and every other
    producer, batcher, ``maybe_*`` variant, ``QueueRunner``,
    ``add_queue_runner``, ``start_queue_runners``, ``Coordinator``,
    ``LooperThread``, the ``tf.compat.v1.train.queue_runner`` names, the
    ``tf.compat.v1`` readers except ``LMDBReader``, and the same objects in
    TensorFlow's internal modules ``tensorflow.python.training.input``,
    ``queue_runner_impl``, ``coordinator`` and ``tensorflow.python.ops.io_ops``)
    *is* queue_pipeline's, so an unmodified legacy script, tf-slim,
    ``MonitoredTrainingSession`` and ``Supervisor`` build and run
    queue_pipeline's pipelines. See NOTE [ What install() patches ].

    Idempotent and thread-safe: a second call only routes bindings TensorFlow
    made since. Importing queue_pipeline patches nothing; only this does.

    Returns:
      A handle; ``with queue_pipeline.install():`` uninstalls on leaving the
      block (if this call installed). ``handle.patched`` lists the bindings.

    Example::

        with queue_pipeline.install():
            legacy_main()          # uses tf.compat.v1.train.* unchanged
    """
    global _ACTIVE
    with _LOCK:
        created = _ACTIVE is None
        installation = _Installation() if created else _ACTIVE
        try:
            installation.patch()
        except BaseException:
            installation.restore()  # all or nothing
            _ACTIVE = None
            raise
        _ACTIVE = installation
        return Installed(installation if created else None)


def uninstall() -> None:
    """Restores every binding :func:`install` changed; a no-op if not installed."""
    global _ACTIVE
    with _LOCK:
        installation, _ACTIVE = _ACTIVE, None
        if installation is not None:
            installation.restore()


# --- running a script --------------------------------------------------------

class ScriptError(Exception):
    """A script run by :func:`run_script` raised `error`; `traceback` is its text."""

    def __init__(self, error: BaseException, text: str) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error
        self.traceback = text


def _script_traceback(error: BaseException, script: str) -> str:
    """The traceback of `error` from the script's first frame on (the runner's frames cut)."""
    tb, target = error.__traceback__, os.path.realpath(script)
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename) != target:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb))


@contextlib.contextmanager
def _environ(name: str, value: str | None) -> Iterator[None]:
    """Sets environment variable `name` to `value` (unless None) for the block."""
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if value is None:
            pass
        elif old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def run_script(script: str, args: Sequence[str] = (), *, engine: str | None = None) -> int:
    """Runs a legacy script as ``python SCRIPT args...`` would, under :func:`install`.

    ``__name__`` is ``"__main__"``, ``sys.argv`` is ``[script, *args]`` and
    ``sys.path[0]`` the script's directory, all restored afterwards. With
    `engine`, the script builds under ``queue_pipeline.engine(engine)`` and
    ``QUEUE_PIPELINE_ENGINE`` is set for its subprocesses.

    Returns:
      The exit status: the script's ``SystemExit`` code (a non-integer code is
      printed to stderr and gives 1, as Python does), 0 when it ends normally.

    Raises:
      FileNotFoundError: `script` does not exist.
      ValueError: `engine` is not an engine.
      ScriptError: the script raised an exception (``.error``, ``.traceback``).
    """
    from queue_pipeline import _settings

    if not os.path.isfile(script):
        raise FileNotFoundError(f"run: no such script {script!r}.")
    if engine is not None and engine not in _settings.ENGINES:
        raise ValueError(f"run: `engine` must be one of {_settings.ENGINES}; got {engine!r}.")
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [script, *args]
    script_dir = os.path.dirname(os.path.realpath(script))
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_environ("QUEUE_PIPELINE_ENGINE", engine))
            if engine is not None:
                stack.enter_context(_settings.engine(engine))
            stack.enter_context(install())
            runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            return code or 0
        sys.stderr.write(f"{code}\n")
        return 1
    except Exception as error:  # noqa: BLE001 - reported with the script's traceback
        raise ScriptError(error, _script_traceback(error, script)) from error
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
