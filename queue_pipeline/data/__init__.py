"""tf.data twins of queue_pipeline's legacy API: same names, same arguments, Datasets out.

Each legacy function or reader ``queue_pipeline.X`` has a twin
``queue_pipeline.data.X`` that builds a ``tf.data.Dataset`` with the same
meaning. The mapping rule: a producer becomes a Dataset of its elements
(``num_epochs`` as ``repeat``, reshuffled every epoch); a reader's ``read``
takes a Dataset of file names and yields ``(key, value)`` with TF 1.x's keys; a
batching function takes a Dataset (a list of Datasets for the joins) and
batches, shuffles, pads or filters it as the legacy queue did. Arguments with
no tf.data meaning (``shared_name``, ``cancel_op``, ``name``) are accepted
with a warning. Twins work eagerly and in graph mode (through a one-shot
iterator). ``queue_pipeline.data.migration`` holds the table of legacy
symbols, twins, argument mappings and semantic differences;
``queue_pipeline.data.distribute`` reads any Dataset (a twin, or a legacy
pipeline rebuilt by ``queue_pipeline.to_dataset``) through tf.data service.
"""

# ruff: noqa: E402 - the TensorFlow check runs before the twins import TensorFlow.
from queue_pipeline._core.tf_required import require_tensorflow

require_tensorflow()  # no or too old TensorFlow: one clear error

from queue_pipeline.data import batching, migration, producers, readers, service
from queue_pipeline.data.batching import (
    batch,
    batch_join,
    maybe_batch,
    maybe_batch_join,
    maybe_shuffle_batch,
    maybe_shuffle_batch_join,
    shuffle_batch,
    shuffle_batch_join,
)
from queue_pipeline.data.producers import (
    input_producer,
    limit_epochs,
    match_filenames_once,
    range_input_producer,
    slice_input_producer,
    string_input_producer,
)
from queue_pipeline.data.readers import (
    FixedLengthRecordReader,
    IdentityReader,
    ReaderBase,
    TextLineReader,
    TFRecordReader,
    WholeFileReader,
)
from queue_pipeline.data.service import distribute

__all__ = [
    "FixedLengthRecordReader",
    "IdentityReader",
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "WholeFileReader",
    "batch",
    "batch_join",
    "batching",
    "distribute",
    "input_producer",
    "limit_epochs",
    "match_filenames_once",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "migration",
    "producers",
    "range_input_producer",
    "readers",
    "service",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "string_input_producer",
]
