"""A function that returns a function building the pipeline (an Estimator's ``input_fn`` factory).

NOTE [ A factory of input functions ]
Estimator programs write ``def get_input_fn(filenames, batch_size,
num_epochs): def _input_fn(): ...queue pipeline...; return features,
labels`` and return ``_input_fn``. Calling the factory builds nothing: the
pipeline is built when the returned function is called. Migrate rewrites a
function that returns the pipeline's tensors, and a nested function can be
neither named (``FILE:get_input_fn._input_fn``) nor rewritten in place. So
when the traced function returns a callable and built no pipeline, the
callable is called once (with no arguments, in a graph of its own); if that
builds a producer, reader or batching call, the refusal says so, names the
nested function's line and the fix: its body as a module-level function that
returns the tensors, which ``_input_fn`` calls and migrate rewrites. A
callable that needs arguments (``params``, ``mode``) is not called; the
refusal names them.
"""

from __future__ import annotations

import inspect
import os

import tensorflow as tf

from queue_pipeline import plan

__all__ = ["returned_builder"]

_API = "queue-pipeline migrate"


def returned_builder(function: str, returned: object, real: str, spelled: str) -> str:
    """The refusal for `function` returning `returned`, a callable that builds the pipeline, or "".

    Args:
      function: the traced function's name.
      returned: what it returned.
      real: the user's file.
      spelled: how it was called (``get_input_fn(['a.tfrecords'], 4, 1)``).
    """
    from queue_pipeline._scripts.install import install  # noqa: PLC0415 - no cycle at import

    if not callable(returned) or isinstance(returned, type) or not hasattr(returned, "__code__"):
        return ""
    code = returned.__code__
    name = getattr(returned, "__name__", "the returned function")
    where = (
        f"{real}:{code.co_firstlineno}"
        if _same_file(code.co_filename, real)
        else (f"{code.co_filename}:{code.co_firstlineno}")
    )
    head = (
        f"{_API}: {spelled} builds no queue pipeline itself: it returns the function "
        f"`{name}` ({where}), which builds it when called (an Estimator's input_fn); "
        "migrate rewrites a function that returns the pipeline's tensors, and a nested "
        f"function cannot be named (FILE.py:{function}.{name}). "
    )
    fix = (
        f"Fix: move the body of `{name}` into a module-level function of the file that takes "
        f"what it reads of {function}'s arguments and returns the tensors (features, labels), "
        f"make `{name}` return its call, and migrate that function (FILE.py:NEW_FUNCTION "
        "--call ...)."
    )
    try:
        signature = inspect.signature(returned)
    except (TypeError, ValueError):
        return ""
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if required:
        return (
            head.replace("which builds it when called", "which may build it when called")
            + f"`{name}` takes {', '.join(required)} (Estimator-style), so it was not called. "
            + fix.replace(".)", f", passing {', '.join(required)} in --call).")
        )
    graph = tf.Graph()
    try:
        with graph.as_default(), install():
            returned()
    except Exception:  # noqa: BLE001 - the user's function failed: the usual refusal stands
        return ""
    if not plan.plan_nodes(graph):
        return ""
    return head + fix


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b) or os.path.samefile(a, b)
    except OSError:
        return False
