"""queue_pipeline: TF 1.x queue-runner input pipelines, faithful on TensorFlow 2.x.

Every public name here mirrors its ``tf.compat.v1.train`` (or
``tf.compat.v1``) namesake: same arguments, defaults, return types, graph
names, collections, summaries and errors, built only on TensorFlow 2.x's stable
layer (queues, raw reader ops, variables). So ``import queue_pipeline as train``
stands in for ``tf.compat.v1.train`` in a legacy script.
"""

from queue_pipeline import compare, data, plan, testing
from queue_pipeline._install import install, uninstall
from queue_pipeline._settings import diagnostics, engine, tf_faithful
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

__version__ = "0.1.0"

__all__ = [
    "Coordinator",
    "FixedLengthRecordReader",
    "GraphModeRequiredError",
    "IdentityReader",
    "LooperThread",
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
