"""A function that returns a function building the pipeline (an Estimator's ``input_fn`` factory).

NOTE [ A factory of input functions ]
Estimator programs write ``def get_input_fn(filenames, batch_size,
num_epochs): def _input_fn(): ...queue pipeline...; return features,
labels`` and return ``_input_fn``. Calling the factory builds nothing: the
pipeline is built when the returned function is called. So when the traced
function returns a Python function and built no pipeline, that function is
called once (with no arguments, in a graph of its own); if that builds a
producer, reader or batching call, the trace ends in a
:class:`ReturnedBuilder`, and migrate migrates the factory
(:mod:`queue_pipeline._migrate.input_fn_factories`): the nested function's
body is rewritten as tf.data and ``get_input_fn_dataset`` returns an
``_input_fn`` returning the Dataset. A returned function that needs
arguments (``params``, ``mode``: what Estimator passes, which migrate cannot
know) is not called; the refusal names its line, its parameters and the fix.
Where calling it raises (a ``tf.contrib`` reader removed in TensorFlow 2.x),
the refusal is that error at the innermost line of the user's files it went
through, with its fix: not "builds no queue pipeline", which would send the
user looking for another function.
"""

from __future__ import annotations

import inspect
import os

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._migrate.failure_hints import failed_call, failure_fix
from queue_pipeline._migrate.loading import MigrateError

__all__ = ["ReturnedBuilder", "returned_builder"]

_API = "queue-pipeline migrate"


class ReturnedBuilder(MigrateError):
    """The traced function returned `returned`, a function that builds the pipeline when
    called with no arguments: NOTE [ A factory of input functions ].

    Its message is the refusal where that function cannot be migrated in its place.
    """

    def __init__(self, message: str, returned: object) -> None:
        super().__init__(message)
        self.returned = returned


def returned_builder(
    function: str, returned: object, real: str, spelled: str
) -> MigrateError | None:
    """What the trace of `function`, which returned `returned` and built no pipeline, ends in.

    A :class:`ReturnedBuilder` when `returned` builds the pipeline; a refusal
    when it would need arguments to be called; None otherwise (the usual
    "builds no queue pipeline" refusal stands).

    Args:
      function: the traced function's name.
      returned: what it returned.
      real: the user's file.
      spelled: how it was called (``get_input_fn(['a.tfrecords'], 4, 1)``).
    """
    from queue_pipeline._scripts.install import install  # noqa: PLC0415 - no cycle at import

    if not callable(returned) or isinstance(returned, type) or not hasattr(returned, "__code__"):
        return None
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
        return None
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if required:
        return MigrateError(
            head.replace("which builds it when called", "which may build it when called")
            + f"`{name}` takes {', '.join(required)} (Estimator-style: what Estimator passes "
            "cannot be known here), so it was not called. "
            + fix.replace(".)", f", passing {', '.join(required)} in --call).")
        )
    graph = tf.Graph()
    try:
        with graph.as_default(), install():
            returned()
    except Exception as e:  # noqa: BLE001 - the user's function failed: said where and why
        usual = failure_fix(returned, (), {}, e, real)
        return failed_call(
            f"{spelled} builds no queue pipeline itself but returns the function `{name}` "
            f"({where}), which migrate calls to build it (an Estimator's input_fn); "
            f"calling `{name}()`",
            e,
            real,
            usual,
        )
    if not plan.plan_nodes(graph):
        return None
    return ReturnedBuilder(head + fix, returned)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b) or os.path.samefile(a, b)
    except OSError:
        return False
