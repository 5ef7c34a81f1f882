"""queue_pipeline: TF 1.x queue-runner input pipelines, faithful on TensorFlow 2.x.

Every public name here mirrors its ``tf.compat.v1.train`` (or
``tf.compat.v1``) namesake: same arguments, defaults, return types, graph
names, collections, summaries and errors, built only on TensorFlow 2.x's stable
layer (queues, raw reader ops, variables). So ``import queue_pipeline as train``
stands in for ``tf.compat.v1.train`` in a legacy script.
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from queue_pipeline._version import __version__ as __version__

# NOTE [ A package that imports nothing until used ]
# ``import queue_pipeline`` imports neither TensorFlow nor pytest: each public
# name is imported on first use (PEP 562), so the pytest plugin
# (queue_pipeline.pytest_plugin) and ``queue-pipeline --help`` cost nothing at
# start-up. ``qp.batch`` and ``from queue_pipeline import batch`` resolve
# through ``__getattr__`` below, which caches the value in the module globals;
# submodules (``compare``, ``data``, ``plan``, ``testing``, ...) resolve the
# same way.
_LAZY = {
    "add_queue_runner": "queue_pipeline.runner",
    "batch": "queue_pipeline.batching",
    "batch_join": "queue_pipeline.batching",
    "convert": "queue_pipeline._convert.api",
    "ConvertError": "queue_pipeline._convert.api",
    "ConvertResult": "queue_pipeline._convert.api",
    "Coordinator": "queue_pipeline.coordinator",
    "diagnostics": "queue_pipeline._core.settings",
    "engine": "queue_pipeline._core.settings",
    "FixedLengthRecordReader": "queue_pipeline.readers",
    "GraphModeRequiredError": "queue_pipeline.errors",
    "IdentityReader": "queue_pipeline.readers",
    "input_producer": "queue_pipeline.producers",
    "install": "queue_pipeline._scripts.install",
    "limit_epochs": "queue_pipeline.producers",
    "LooperThread": "queue_pipeline.coordinator",
    "match_filenames_once": "queue_pipeline.producers",
    "maybe_batch": "queue_pipeline.batching",
    "maybe_batch_join": "queue_pipeline.batching",
    "maybe_shuffle_batch": "queue_pipeline.batching",
    "maybe_shuffle_batch_join": "queue_pipeline.batching",
    "migrate": "queue_pipeline._migrate.api",
    "MigrateError": "queue_pipeline._migrate.api",
    "MigrationResult": "queue_pipeline._migrate.api",
    "NotRebuildableError": "queue_pipeline.errors",
    "Plan": "queue_pipeline.plan",
    "plan_for": "queue_pipeline.plan",
    "PlanNode": "queue_pipeline.plan",
    "QueuePipelineError": "queue_pipeline.errors",
    "QueueRunner": "queue_pipeline.runner",
    "range_input_producer": "queue_pipeline.producers",
    "ReaderBase": "queue_pipeline.readers",
    "shuffle_batch": "queue_pipeline.batching",
    "shuffle_batch_join": "queue_pipeline.batching",
    "slice_input_producer": "queue_pipeline.producers",
    "start_queue_runners": "queue_pipeline.runner",
    "string_input_producer": "queue_pipeline.producers",
    "TextLineReader": "queue_pipeline.readers",
    "tf_faithful": "queue_pipeline._core.settings",
    "TFRecordReader": "queue_pipeline.readers",
    "to_dataset": "queue_pipeline.rebuild",
    "uninstall": "queue_pipeline._scripts.install",
    "WholeFileReader": "queue_pipeline.readers",
}


# Submodules that import no TensorFlow: reached without the TensorFlow check.
_TF_FREE = frozenset({"cli", "pytest_plugin"})


def _require_tensorflow() -> None:
    # A missing or too old TensorFlow is one clear error here, at the first
    # name that needs it (queue_pipeline._core.tf_required).
    from queue_pipeline._core.tf_required import require_tensorflow

    require_tensorflow()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        _require_tensorflow()
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif not name.startswith("__"):
        if not (name.startswith("_") or name in _TF_FREE) and importlib.util.find_spec(
            f"{__name__}.{name}"
        ):
            _require_tensorflow()
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from queue_pipeline import compare, data, plan, testing
    from queue_pipeline._convert.api import ConvertError, ConvertResult, convert
    from queue_pipeline._migrate.api import MigrateError, MigrationResult, migrate
    from queue_pipeline._scripts.install import install, uninstall
    from queue_pipeline._core.settings import diagnostics, engine, tf_faithful
    from queue_pipeline.batching import (
        batch,
        batch_join,
        maybe_batch,
        maybe_batch_join,
        maybe_shuffle_batch,
        maybe_shuffle_batch_join,
        shuffle_batch,
        shuffle_batch_join,
    )
    from queue_pipeline.coordinator import Coordinator, LooperThread
    from queue_pipeline.errors import (
        GraphModeRequiredError,
        NotRebuildableError,
        QueuePipelineError,
    )
    from queue_pipeline.plan import Plan, PlanNode, plan_for
    from queue_pipeline.producers import (
        input_producer,
        limit_epochs,
        match_filenames_once,
        range_input_producer,
        slice_input_producer,
        string_input_producer,
    )
    from queue_pipeline.readers import (
        FixedLengthRecordReader,
        IdentityReader,
        ReaderBase,
        TextLineReader,
        TFRecordReader,
        WholeFileReader,
    )
    from queue_pipeline.rebuild import to_dataset
    from queue_pipeline.runner import QueueRunner, add_queue_runner, start_queue_runners

__all__ = [
    "ConvertError",
    "ConvertResult",
    "Coordinator",
    "FixedLengthRecordReader",
    "GraphModeRequiredError",
    "IdentityReader",
    "LooperThread",
    "MigrateError",
    "MigrationResult",
    "NotRebuildableError",
    "Plan",
    "PlanNode",
    "QueuePipelineError",
    "QueueRunner",
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "WholeFileReader",
    "add_queue_runner",
    "batch",
    "batch_join",
    "compare",
    "convert",
    "data",
    "diagnostics",
    "engine",
    "input_producer",
    "install",
    "limit_epochs",
    "match_filenames_once",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "migrate",
    "plan",
    "plan_for",
    "range_input_producer",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "start_queue_runners",
    "string_input_producer",
    "testing",
    "tf_faithful",
    "to_dataset",
    "uninstall",
]
