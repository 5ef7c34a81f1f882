"""An Estimator's ``input_fn`` factory migrated: its nested function rewritten as tf.data.

NOTE [ Migrating an input_fn factory ]
``queue-pipeline migrate input_fn.py:get_input_fn --call "['a.tfrecords'],
4, 1"`` on a factory that returns a nested ``_input_fn`` (NOTE [ A factory
of input functions ] in returned_builders.py):

* **The rewrite.** The nested function is lifted to a module-level function
  of a copy of the file, its free variables (the factory's parameters and
  locals) as parameters (NOTE [ Lifting an input_fn out of its factory ] in
  input_fn_lifts.py), and migrated as any function (helpers of the file and
  of the program's other modules included), called with the values
  ``get_input_fn(ARGS)``'s function holds.
* **Written back.** ``get_input_fn_dataset``, with the factory's signature,
  right after the factory: the factory's own lines, its nested function's
  body the tf.data version's. ``get_input_fn_dataset(ARGS)()`` returns a
  ``tf.data.Dataset`` of what the legacy function returned, ``(features,
  labels)``, which is what Estimator takes from an ``input_fn``.
* **The proof** runs ``get_input_fn(ARGS)()`` against
  ``get_input_fn_dataset(ARGS)()``, the code written, through compare, as
  for any function (batch-then-decode first where allowed, the per-record
  decode if that does not MATCH).
* ``--callers`` is refused: Estimator, not a session loop, calls an input_fn
  (pass ``get_input_fn_dataset(ARGS)`` where ``get_input_fn(ARGS)`` was).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Callable

from queue_pipeline._migrate import arguments as _arguments
from queue_pipeline._migrate import codegen
from queue_pipeline._migrate import input_fn_lifts as _lifts
from queue_pipeline._migrate import script as _script
from queue_pipeline._migrate import trace as _trace
from queue_pipeline._migrate.loading import MigrateError
from queue_pipeline._migrate.proven import MigrationResult, _prove, finish
from queue_pipeline._migrate.returned_builders import ReturnedBuilder

__all__ = ["migrate_factory"]

_API = "queue-pipeline migrate"
# the proof's own entry points: factory(ARGS)() on each side (never written)
_SHIM = "__qp_input_fn__"
_UNPROVEN_BATCHED = "batch-then-decode was not verified (verify=False)"
_BATCHED = "decodes whole batches (batch-then-decode)"


def migrate_factory(
    refused: ReturnedBuilder,
    path: str,
    function: str,
    given: tuple,
    options: tuple,
    argv,
    target: str | None,
    in_place: bool,
    callers: bool,
    plain: Callable[..., MigrationResult],
) -> MigrationResult:
    """NOTE [ Migrating an input_fn factory ]: `function` of the file at `path` returned
    the function `refused.returned`, which builds the pipeline.

    Args:
      given: ``(call, args, kwargs)`` as :func:`~queue_pipeline._migrate.api.migrate` got them.
      options: ``(verify, epochs, max_batches, batch_decode)``.
      plain: migrates a module-level function (api's ``_plain``), passed in (no import circle).
    """
    call, args, kwargs = given
    verify, epochs, max_batches, batch_decode = options
    real, original = _trace.read_source(path)
    head = str(refused).split("; migrate rewrites")[0].split(" (an Estimator's input_fn)")[0]
    if callers:
        raise MigrateError(
            f"{_API}: {function} returns an input_fn (an Estimator's), which Estimator calls, "
            f"not a session loop, so --callers has no caller to rewrite. Fix: migrate without "
            f"--callers, then pass {function}_dataset(...) where {function}(...) was."
        )
    lifted = _lifts.lift(original, real, function, refused.returned, head)
    copy = _script.copy_path_for(real, kind="input_fn")
    with open(copy, "w", encoding="utf-8") as f:
        f.write(lifted.source)
    inner_given: tuple
    if args is None and kwargs is None:
        helper = f"__import__({_lifts.__name__!r}, fromlist=['_']).inner_arguments"
        inner_given = (f"*{helper}({function}({call or ''}))", None, None)
    else:  # values: those the returned function holds
        inner_given = (None, tuple(_lifts.inner_arguments(refused.returned)), {})
    first = verify if batch_decode is None else bool(batch_decode)  # as rewrite_and_prove
    attempts = [first, False] if verify and first else [first]
    notes: list[str] = []
    try:
        for batched in attempts:
            inner = plain(
                copy, lifted.function, inner_given, (False, epochs, max_batches, batched), argv,
                None, False, False,
            )  # fmt: skip
            source, added = _lifts.write_back(lifted, inner.source, inner.function)
            decodes = [d.split(": ", 1)[-1] for d in inner.differences if d.startswith(_BATCHED)]
            decodes_batches = bool(decodes)
            verdict = None
            if verify:
                verdict = _proof(real, function, given, argv, source, added, decodes_batches,
                                 epochs, max_batches)  # fmt: skip
            if verdict is None or verdict.status == "MATCH" or not decodes_batches:
                break
            notes.append(
                f"batch-then-decode ({', '.join(decodes)}) did not verify "
                f"({verdict.status}); the per-record decode is written instead"
            )
    except MigrateError as e:
        raise MigrateError(lifted.map_lines(str(e), copy, real)) from e
    finally:
        with contextlib.suppress(OSError):
            os.remove(copy)
    fix = lambda text: lifted.map_lines(text, copy, real)  # noqa: E731
    steps = [
        dataclasses.replace(s, line=lifted.file_line(s.line)) if s.line and not s.file else s
        for s in inner.steps
    ]
    differences = [fix(d) for d in inner.differences if not (verify and d == _UNPROVEN_BATCHED)]
    rewrite = codegen.Rewrite(source, added, f"{function}_dataset", [], [], [])
    module, _ = _trace.load_module(path, function, argv, call)
    return finish(
        path, original, source, target, in_place, rewrite, steps,
        [fix(d) for d in inner.dropped], differences + notes, verdict, module,
        not_run=[fix(n) for n in inner.not_run],
    )  # fmt: skip


def _proof(real, function, given, argv, source, added, batched, epochs, max_batches):
    """The verdict of ``function(ARGS)()`` against ``function_dataset(ARGS)()`` in `source`."""
    call, args, kwargs = given
    module, _ = _trace.load_module(real, function, argv, call)
    graph_call = None
    if call is not None or (args is None and kwargs is None):
        args, kwargs, graph_call = _arguments.call_arguments(module, call)
    args, kwargs = tuple(args or ()), dict(kwargs or {})
    factory = getattr(module, function)
    if graph_call is None:  # NOTE [ A default made at import ]
        kwargs.update(_arguments.import_constants(factory, args, kwargs))

    def legacy(*a, **k):
        return factory(*a, **k)()

    shim = f"\n\ndef {_SHIM}(*args, **kwargs):\n    return {function}_dataset(*args, **kwargs)()\n"
    rewrite = codegen.Rewrite(
        source + shim, added, _SHIM, [], [], [], batched=[function] if batched else []
    )
    module.__dict__[_SHIM] = legacy
    try:
        traced = _trace.trace(
            real, _SHIM, args, kwargs, module=module, argv=argv, graph_call=graph_call
        )
        return _prove(traced, rewrite, args, kwargs, epochs, max_batches, argv, graph_call)
    finally:
        del module.__dict__[_SHIM]
