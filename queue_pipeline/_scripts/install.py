"""Runs unmodified TF 1.x scripts on queue_pipeline: ``install`` and ``uninstall``.

``install()`` rebinds TensorFlow's legacy queue-pipeline symbols (the
``tf.compat.v1.train`` producers, batchers and runner API, ``Coordinator``,
``LooperThread`` and the ``tf.compat.v1`` reader classes) to queue_pipeline's
implementations wherever TensorFlow binds them, so code written against
``tf.compat.v1`` builds queue_pipeline's pipelines without a change.
``uninstall()`` puts every binding back. ``run_script`` (``queue-pipeline run``)
runs a script under ``install()`` through :mod:`queue_pipeline._scripts.running`
(whose ``ScriptError`` is re-exported here).
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import threading
import types
from typing import Any, Sequence

# Running a script (under install(): run_script below): its own module.
from queue_pipeline._scripts import running as _running
from queue_pipeline._scripts.running import ScriptError as ScriptError

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
#
# The home modules themselves are never changed: TF's own code resolves
# names in its module's globals when it runs (``super(LooperThread, self)``
# in ``LooperThread.__init__``, which Supervisor's ``SVSummaryThread`` and
# the other classes TF derived at import time call), and rebinding those
# names would hand TF's methods queue_pipeline's classes. Instead every
# *reference* to a home module outside it -- ``sys.modules``, its package's
# attribute, and any module's global that holds the module object
# (``coordinator`` in ``supervisor.py`` and ``monitored_session.py``,
# ``tf_input`` in tf-slim, in any loaded module) -- is pointed at a
# :class:`_HomeView`: a module object that answers the routed names with
# queue_pipeline's objects and everything else (private helpers such as
# ``_as_tensor_list``, constants, other classes) from the real module, so
# code that reaches TF through ``from tensorflow.python.training import
# input`` gets queue_pipeline's API and TF's own helpers.
#
# Code that looks a symbol up through a module at call time -- legacy
# scripts (``tf.compat.v1.train.batch``, ``import tensorflow.compat.v1 as
# tf``), tf-slim (``from tensorflow.python.training import input``),
# ``MonitoredTrainingSession`` and ``Supervisor`` (``coordinator.Coordinator``,
# ``queue_runner.start_queue_runners``) -- then reaches queue_pipeline, whose
# classes and functions have TF's interface (DESIGN.md, principle 3).
# Names bound *before* install() by ``from ... import X`` outside TensorFlow,
# and classes that TF subclassed at import time (Supervisor's LooperThread
# subclasses, LMDBReader's ReaderBase), keep TF's objects, and keep working.
#
# Every rebinding is recorded as (module, name, original, replacement) and
# uninstall() restores them in reverse order, only where the binding still
# holds queue_pipeline's object (a later assignment by the user is left
# alone). TensorFlow modules first imported *while* installed bind
# queue_pipeline's objects (or a view); uninstall() sweeps those too, back
# to TF's originals, so the TF oracle is whole again after uninstall().

# The home of each symbol install() routes, and the names routed from it.
_HOMES: dict[str, tuple[str, ...]] = {
    "tensorflow.python.training.input": (
        "batch",
        "batch_join",
        "input_producer",
        "limit_epochs",
        "match_filenames_once",
        "maybe_batch",
        "maybe_batch_join",
        "maybe_shuffle_batch",
        "maybe_shuffle_batch_join",
        "range_input_producer",
        "shuffle_batch",
        "shuffle_batch_join",
        "slice_input_producer",
        "string_input_producer",
    ),
    "tensorflow.python.training.queue_runner_impl": (
        "QueueRunner",
        "add_queue_runner",
        "start_queue_runners",
    ),
    "tensorflow.python.training.coordinator": ("Coordinator", "LooperThread"),
    "tensorflow.python.ops.io_ops": (
        "FixedLengthRecordReader",
        "IdentityReader",
        "ReaderBase",
        "TFRecordReader",
        "TextLineReader",
        "WholeFileReader",
    ),
}
# Modules that re-bind the symbols, imported first so that the walk sees them.
_ALIAS_MODULES = (
    "tensorflow.python.training.queue_runner",
    "tensorflow.python.training.training",
    "tensorflow.python.ops.standard_ops",
)


@dataclasses.dataclass(frozen=True)
class _Patch:
    module: Any  # a module, a _HomeView, or sys.modules
    name: str
    original: object
    replacement: object

    def describe(self) -> str:
        if self.module is sys.modules:
            return f"sys.modules[{self.name!r}]"
        return f"{_module_name(self.module)}.{self.name}"


def _module_name(module: types.ModuleType) -> str:
    return str(vars(module).get("__name__", "?"))


class _HomeView(types.ModuleType):
    """A home module as code outside it sees it while installed.

    See NOTE [ What install() patches ]. The routed names are the view's own
    attributes (queue_pipeline's objects); every other attribute is read
    from, and written to, the real module.
    """

    def __init__(self, real: types.ModuleType, routed: dict[str, object]) -> None:
        super().__init__(real.__name__, real.__doc__)
        namespace = vars(real)
        for key in ("__file__", "__spec__", "__loader__", "__package__", "__path__"):
            if key in namespace:
                vars(self)[key] = namespace[key]
        vars(self).update(routed)
        vars(self)["_qp_real"] = real
        vars(self)["_qp_routed"] = frozenset(routed)

    def __getattr__(self, name: str):
        return getattr(vars(self)["_qp_real"], name)

    def __setattr__(self, name: str, value) -> None:
        if name in vars(self)["_qp_routed"]:
            vars(self)[name] = value
        else:
            setattr(vars(self)["_qp_real"], name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(vars(self)["_qp_real"])) | set(vars(self)["_qp_routed"]))

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (queue_pipeline install() view)>"


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
        stack.extend(
            v for v in list(vars(module).values()) if _is_tf_module(v) and id(v) not in seen
        )
    return sorted(seen.values(), key=lambda m: (_module_name(m), type(m).__name__))


def _routes() -> dict[int, tuple[object, object]]:
    """id(TF original) -> (original, queue_pipeline's replacement)."""
    # The modules of queue_pipeline's API (TensorFlow's, so imported on use).
    from queue_pipeline import batching, coordinator, producers, readers, runner

    ours = {
        n: getattr(m, n)
        for m in (batching, coordinator, producers, readers, runner)
        for n in m.__all__
    }
    for name in (*_HOMES, *_ALIAS_MODULES):
        importlib.import_module(name)
    routes = {}
    for home, names in _HOMES.items():
        namespace = vars(sys.modules[home])
        for name in names:
            original, replacement = namespace[name], ours[name]
            if original is not replacement:
                routes[id(original)] = (original, replacement)
    return routes


class _Installation:
    """One install(): its routes and the patches made, to be undone by restore()."""

    def __init__(self) -> None:
        self.routes = _routes()
        self.patches: list[_Patch] = []
        replacements = {id(rep) for _, rep in self.routes.values()}
        self.homes = {name: sys.modules[name] for name in _HOMES}
        self.views = {
            name: _HomeView(
                real,
                {
                    n: self.routes[id(vars(real)[n])][1]
                    for n in _HOMES[name]
                    if id(vars(real)[n]) in self.routes
                },
            )
            for name, real in self.homes.items()
        }
        # Bindings of queue_pipeline objects that predate install(): not ours to undo.
        self.preexisting = {
            (id(module), name)
            for module in _tf_modules()
            for name, value in list(vars(module).items())
            if id(value) in replacements
        }

    def _set(self, module, name: str, original, replacement) -> None:
        setattr(module, name, replacement)
        self.patches.append(_Patch(module, name, original, replacement))

    def patch(self) -> None:
        """Points every outside reference at the views and rebinds every TF binding.

        See NOTE [ What install() patches ]; each change is recorded.
        """
        homes = {id(real): self.views[name] for name, real in self.homes.items()}
        derived = self._derived_homes()
        for name, real in self.homes.items():
            view = self.views[name]
            if sys.modules.get(name) is real:
                sys.modules[name] = view
                self.patches.append(_Patch(sys.modules, name, real, view))
                # The routed names, listed as the bindings they stand for.
                for routed in sorted(vars(view)["_qp_routed"]):
                    self.patches.append(
                        _Patch(view, routed, vars(real)[routed], vars(view)[routed])
                    )
        for module in _all_modules():
            if id(module) in homes or isinstance(module, _HomeView):
                continue  # TF's own code keeps resolving TF's names
            tf_module = _is_tf_module(module)
            for name, value in list(vars(module).items()):
                if name.startswith("__"):
                    continue
                home_view = homes.get(id(value))
                if home_view is not None:
                    if id(value) not in derived.get(id(module), ()):
                        self._set(module, name, value, home_view)
                    continue
                route = self.routes.get(id(value)) if tf_module else None
                if route is not None and route[0] is value:
                    self._set(module, name, route[0], route[1])

    def _derived_homes(self) -> dict[int, set[int]]:
        """id(module) -> ids of the home modules whose routed classes it subclasses.

        Such a module (``supervisor.py``: its ``SVSummaryThread`` and the
        others derive from TF's ``LooperThread``; tf-slim's
        ``parallel_reader``: ``ParallelReader(io_ops.ReaderBase)``) keeps the
        real home module: its classes were built on TF's, whose methods
        check for TF's own types (``LooperThread`` wants TF's
        ``Coordinator``), so the objects it makes from that home must stay
        TF's. See NOTE [ What install() patches ].
        """
        originals = {
            id(orig): home
            for home, names in _HOMES.items()
            for orig in (vars(self.homes[home])[n] for n in names)
            if isinstance(orig, type)
        }
        derived: dict[int, set[int]] = {}
        for module in _all_modules():
            name = vars(module).get("__name__")
            for value in list(vars(module).values()):
                if not (isinstance(value, type) and value.__module__ == name):
                    continue
                for base in value.__mro__[1:]:
                    home = originals.get(id(base))
                    if home is not None:
                        derived.setdefault(id(module), set()).add(id(self.homes[home]))
        return derived

    def restore(self) -> None:
        """Undoes the patches (newest first), then sweeps bindings made while installed."""
        for patch in reversed(self.patches):
            if isinstance(patch.module, _HomeView):
                continue  # a view's own names: the view goes away with its references
            if patch.module is sys.modules:
                if sys.modules.get(patch.name) is patch.replacement:
                    sys.modules[patch.name] = patch.original
            elif vars(patch.module).get(patch.name) is patch.replacement:
                setattr(patch.module, patch.name, patch.original)
        originals = {id(rep): orig for orig, rep in self.routes.values()}
        reals = {id(view): self.homes[name] for name, view in self.views.items()}
        for name, view in self.views.items():
            if sys.modules.get(name) is view:
                sys.modules[name] = self.homes[name]
        for module in _all_modules():
            if isinstance(module, _HomeView):
                continue
            tf_module = _is_tf_module(module)
            for name, value in list(vars(module).items()):
                if name.startswith("__"):
                    continue
                if id(value) in reals:
                    setattr(module, name, reals[id(value)])
                elif (
                    tf_module
                    and id(value) in originals
                    and (id(module), name) not in self.preexisting
                ):
                    setattr(module, name, originals[id(value)])
        self.patches.clear()


def _all_modules() -> list[types.ModuleType]:
    """Every loaded module: TensorFlow's (with the ones reachable from them) and the rest.

    The rest (tf-slim, user code) is searched only for references to home
    modules; names in it are never rebound.
    """
    tf_modules = _tf_modules()
    seen = {id(m) for m in tf_modules}
    others = [
        m
        for m in list(sys.modules.values())
        if isinstance(m, types.ModuleType) and id(m) not in seen
    ]
    return tf_modules + others


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
        installation = _Installation() if _ACTIVE is None else _ACTIVE
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


def run_script(
    script: str,
    args: Sequence[str] = (),
    *,
    engine: str | None = None,
    service: str | None = None,
    job_name: str | None = None,
) -> int:
    """Runs a legacy script as ``python SCRIPT args...`` would, under :func:`install`.

    ``__name__`` is ``"__main__"``, ``sys.argv`` is ``[script, *args]`` and
    ``sys.path[0]`` the script's directory, all restored afterwards. With
    `engine`, the script builds under ``queue_pipeline.engine(engine)`` and
    ``QUEUE_PIPELINE_ENGINE`` is set for its subprocesses. With `service` (a
    tf.data service dispatcher's address; the engine is then ``"dataset"``)
    and `job_name`, the same for ``engine("dataset", service=...,
    job_name=...)``, ``QUEUE_PIPELINE_SERVICE`` and
    ``QUEUE_PIPELINE_SERVICE_JOB``.

    Returns:
      The exit status: the script's ``SystemExit`` code (a non-integer code is
      printed to stderr and gives 1, as Python does), 0 when it ends normally.

    Raises:
      FileNotFoundError: `script` does not exist.
      ValueError: `engine` is not an engine.
      ScriptError: the script raised an exception (``.error``, ``.traceback``).
    """
    return _running.run_under(
        install, script, args, engine=engine, service=service, job_name=job_name
    )
