"""What TensorFlow 2.x removed from TF 1.x's API, and what a ``--tf1`` script should use instead.

:func:`removed_message` words the error for ``tf.<chain>`` that does not
exist (``tf.contrib.slim``, ``tf.estimator``, ...), from :data:`REMOVED` and
TensorFlow's own rename table; :mod:`queue_pipeline._scripts.tf1` raises the
two error classes here for a script's failed attribute or import (see NOTE
[ Removed APIs ]).
"""

from __future__ import annotations

import dis
import types

import tensorflow as tf

__all__ = [
    "KERAS2",
    "REMOVED",
    "RemovedAttributeError",
    "RemovedModuleError",
    "attribute_chain",
    "attribute_error",
    "module_error",
    "removed_message",
]

_V1 = tf.compat.v1

# NOTE [ Removed APIs ]
# A TF 1.x script fails on TF 2.x where it touches what TF 2.x removed. Under
# --tf1 those failures are one of: an attribute `_TENSORFLOW` cannot find
# (raised there as RemovedAttributeError), an `import tensorflow.x` or `from
# tensorflow import x` the alias cannot satisfy (RemovedModuleError), an
# AttributeError on a module of `tensorflow.compat.v1` (`tf.train.X`, or
# `tf.contrib` after `import tensorflow.compat.v1 as tf`), or Keras 3's
# "`dense` is not available with Keras 3" from `tf.layers` / `tf.nn.rnn_cell`.
# explain() maps each to a message that names the API as the script spelled it
# (the attributes the script chained after the missing one are read from the
# bytecode at the failing instruction, so `tf.contrib.slim` is named, not
# `tf.contrib`) and the replacement from REMOVED, longest prefix first. The
# two error classes subclass AttributeError and ModuleNotFoundError, so a
# script's `except ImportError` / `hasattr` probes behave as on TF 2.x.

KERAS2 = (
    "install the `tf_keras` package (`pip install tf_keras`) and set "
    "`TF_USE_LEGACY_KERAS=1` in the environment of `queue-pipeline run`"
)
_SLIM = "the `tf-slim` package (`import tf_slim as slim`)"

# Path under `tf.` -> what to do instead, as the rest of the sentence after
# "... was removed in TensorFlow 2.x; ". Checked against TF 2.21 and PyPI.
# TF 0.x names TF 1.0 renamed (tf_upgrade_v2 does not know them): "... was removed
# in TensorFlow 2.x; it was renamed ..." names the replacement
_RENAMED_IN_1_0 = {
    "pack": "tf.stack",
    "unpack": "tf.unstack",
    "mul": "tf.multiply",
    "sub": "tf.subtract",
    "neg": "tf.negative",
    "select": "tf.where (tf.compat.v1.where keeps select's semantics)",
    "batch_matmul": "tf.matmul",
    "listdiff": "tf.compat.v1.setdiff1d",
    "scalar_summary": "tf.compat.v1.summary.scalar",
    "image_summary": "tf.compat.v1.summary.image",
    "histogram_summary": "tf.compat.v1.summary.histogram",
    "audio_summary": "tf.compat.v1.summary.audio",
    "merge_summary": "tf.compat.v1.summary.merge",
    "merge_all_summaries": "tf.compat.v1.summary.merge_all",
    "initialize_all_variables": "tf.compat.v1.global_variables_initializer",
    "initialize_local_variables": "tf.compat.v1.local_variables_initializer",
    "train.SummaryWriter": "tf.compat.v1.summary.FileWriter",
}
_CONCAT = (
    "; TensorFlow 1.0 also swapped tf.concat's arguments: `tf.concat(values, axis)`, "
    "not `tf.concat(axis, values)`"
)


def _renamed_in_1_0(old: str, new: str) -> str:
    name, _, note = new.partition(" ")
    tail = _CONCAT if old in ("pack", "unpack") else ""
    return f"it was renamed `{name}` in TensorFlow 1.0{' ' + note if note else ''}{tail}"


# tf.contrib.layers' feature columns -> TensorFlow 2.x's (tf.feature_column)
_CONTRIB_COLUMNS = {
    "create_feature_spec_for_parsing": "tf.compat.v1.feature_column.make_parse_example_spec",
    "real_valued_column": "tf.feature_column.numeric_column",
    "sparse_column_with_keys": "tf.feature_column.categorical_column_with_vocabulary_list",
    "sparse_column_with_hash_bucket": "tf.feature_column.categorical_column_with_hash_bucket",
    "sparse_column_with_integerized_feature": (
        "tf.feature_column.categorical_column_with_identity"
    ),
    "embedding_column": "tf.feature_column.embedding_column",
    "one_hot_column": "tf.feature_column.indicator_column",
    "bucketized_column": "tf.feature_column.bucketized_column",
    "crossed_column": "tf.feature_column.crossed_column",
    "input_from_feature_columns": "tf.compat.v1.feature_column.input_layer",
    "parse_feature_columns_from_examples": (
        "tf.io.parse_example(serialized, tf.feature_column.make_parse_example_spec(columns))"
    ),
}
_QUEUE_READER = (
    "or read with the core queue API (tf.train.string_input_producer + a reader + "
    "tf.train.batch), which migrate rewrites and proves"
)
# tf.contrib.learn's input readers -> tf.data (also under tf.contrib.learn.io)
_READERS = {
    "read_batch_features": (
        f"use `tf.data.experimental.make_batched_features_dataset`, {_QUEUE_READER}"
    ),
    "read_batch_record_features": (
        f"use `tf.data.experimental.make_batched_features_dataset`, {_QUEUE_READER}"
    ),
    "read_keyed_batch_features": (
        f"use `tf.data.experimental.make_batched_features_dataset`, {_QUEUE_READER}"
    ),
    "read_batch_examples": (
        f"use `tf.data.TFRecordDataset(files).batch(batch_size)`, {_QUEUE_READER}"
    ),
    "read_keyed_batch_examples": (
        f"use `tf.data.TFRecordDataset(files).batch(batch_size)`, {_QUEUE_READER}"
    ),
}

REMOVED: dict[str, str] = {
    **{old: _renamed_in_1_0(old, new) for old, new in _RENAMED_IN_1_0.items()},
    "contrib": (
        "its modules moved into TensorFlow (`tf.contrib.data` -> `tf.data`, "
        "`tf.contrib.lookup` -> `tf.lookup`), to other packages (`tf.contrib.slim` -> "
        "`tf-slim`, `tf.contrib.distributions` -> `tensorflow-probability`) or were dropped"
    ),
    "contrib.data": "use `tf.data` and `tf.data.experimental`",
    "contrib.distribute": "use `tf.distribute` (`tf.distribute.MirroredStrategy`, ...)",
    "contrib.distributions": (
        "use the `tensorflow-probability` package (`import "
        "tensorflow_probability as tfp`; `tfp.distributions`)"
    ),
    "contrib.framework": (
        f"use {_SLIM}: `slim.arg_scope`, `slim.get_variables_to_restore`, `slim.add_arg_scope`, ..."
    ),
    # cifar10_train.py and many TF 1.x trainers: these moved to tf.train.
    "contrib.framework.get_or_create_global_step": "use `tf.train.get_or_create_global_step()`",
    "contrib.framework.get_global_step": "use `tf.train.get_global_step()`",
    "contrib.layers": (
        f"use `tf_slim.layers` from {_SLIM}: `slim.fully_connected`, "
        "`slim.conv2d`, ...; or rewrite with `tf.keras.layers`"
    ),
    # NOTE [ A tf.contrib name's own replacement ]: the feature-column and input-reader
    # names of tf.contrib.layers / tf.contrib.learn have core replacements, each named
    # (a module's advice, such as tf_slim.layers, does not hold them)
    **{f"contrib.layers.{old}": f"use `{new}`" for old, new in _CONTRIB_COLUMNS.items()},
    **{
        f"contrib.{kind}.{old}": fix
        for kind in ("learn", "learn.io")
        for old, fix in _READERS.items()
    },
    "contrib.learn.ModeKeys": (
        "use its values, plain strings: `'train'`, `'eval'`, `'infer'` (TRAIN, EVAL, INFER)"
    ),
    "contrib.layers.l2_regularizer": (
        f"use `slim.l2_regularizer` from {_SLIM}, or `tf.keras.regularizers.l2`"
    ),
    "contrib.layers.variance_scaling_initializer": "use `tf.variance_scaling_initializer()`",
    "contrib.layers.xavier_initializer": "use `tf.glorot_uniform_initializer()`",
    "contrib.learn": (
        "rewrite the model with Keras (`tf.keras`): TensorFlow has no "
        "replacement (its successor `tf.estimator` is gone too)"
    ),
    "contrib.lookup": "use `tf.lookup`",
    "contrib.losses": "use `tf.losses`",
    "contrib.metrics": "use `tf.metrics`",
    "contrib.rnn": (
        "use `tf.nn.rnn_cell` (it needs Keras 2: " + KERAS2 + ") or the "
        "Keras RNN layers (`tf.keras.layers.LSTM`, ...)"
    ),
    "contrib.slim": f"use {_SLIM}",
    "contrib.summary": "use `tf.compat.v2.summary`",
    "contrib.tpu": "use `tf.distribute.experimental.TPUStrategy`",
    "contrib.training.batch_sequences_with_states": (
        "there is no replacement; batch the sequences with tf.data (`padded_batch`) and "
        "carry the RNN state from batch to batch yourself"
    ),
    "estimator": (
        "rewrite the model with Keras (`tf.keras`): TensorFlow has no replacement since 2.16"
    ),
    "examples": "TensorFlow 1.x's example code is not part of TensorFlow 2.x",
    "examples.tutorials.mnist": (
        "load the arrays with `tf.keras.datasets.mnist.load_data()`, "
        "or read the MNIST files yourself"
    ),
}


class RemovedAttributeError(AttributeError):
    """A TF 1.x name that TensorFlow 2.x's ``tf.compat.v1`` lacks, reached under ``--tf1``."""


class RemovedModuleError(ModuleNotFoundError):
    """An ``import tensorflow...`` of something TensorFlow 2.x removed, under ``--tf1``."""


def attribute_error(message: str, name: str, obj: object) -> RemovedAttributeError:
    error = RemovedAttributeError(message)
    error.name, error.obj = name, obj  # set after: keyword arguments need Python 3.10
    return error


def module_error(message: str, name: str) -> RemovedModuleError:
    return RemovedModuleError(message, name=name)


def _renamed(path: str) -> str | None:
    """TensorFlow's replacement for ``tf.<path>`` (``tf_upgrade_v2``'s table), if it exists."""
    try:
        from tensorflow.tools.compatibility import all_renames_v2
    except ImportError:
        return None
    target = all_renames_v2.symbol_renames.get(f"tf.{path}")
    if not isinstance(target, str) or not target.startswith("tf."):
        return None
    target = target.replace("tf.compat.v1.", "tf.", 1)
    for namespace, spelling in ((_V1, "tf."), (tf, "tf.compat.v2.")):
        obj = namespace
        try:
            for part in target.split(".")[1:]:
                obj = getattr(obj, part)
        except Exception:  # noqa: BLE001 - missing, or refused by Keras 3
            continue
        return spelling + target[len("tf.") :]
    return None


def removed_message(root: str, chain: list[str], missing: int | None = None) -> str:
    """What to say about ``root.chain...`` (``tf`` or ``tensorflow``), which does not exist.

    The longest prefix of `chain` with a known replacement decides: first
    :data:`REMOVED`, then TensorFlow's own rename table (the one
    ``tf_upgrade_v2`` uses), where its target exists in this TensorFlow.

    Args:
      root: how the script spelled the package: ``"tf"`` for attributes,
        ``"tensorflow"`` for imports.
      chain: the names after it, e.g. ``["contrib", "slim", "arg_scope"]``.
      missing: how many names of `chain` lead to the one that is missing
        (the rest is what the script went on to use); default: all.
    """
    for size in range(len(chain), 0, -1):
        key = ".".join(chain[:size])
        fix = REMOVED.get(key)
        if fix is None:
            renamed = _renamed(key) if size > 1 else None
            fix = None if renamed is None else f"use `{renamed}`"
        if fix is not None:
            shown = min(len(chain), max(size, 2))  # `tf.contrib.foo`, not `tf.contrib`
            owner = f" with `{root}.{key}`" if shown > size else ""
            return (
                f"`{'.'.join([root, *chain[:shown]])}` was removed in TensorFlow 2.x{owner}; {fix}."
            )
    return (
        f"`{'.'.join([root, *chain[:missing]])}` does not exist in TensorFlow 2.x, whose "
        "`tf.compat.v1` is what `import tensorflow` gives under --tf1: TensorFlow 2.x "
        "removed it, or TensorFlow 1.x never had it."
    )


def attribute_chain(code: types.CodeType, lasti: int, first: str) -> list[str]:
    """The attribute names loaded right after ``.first`` at instruction `lasti` of `code`.

    For ``tf.contrib.slim.arg_scope`` failing at ``.contrib``: ``["slim",
    "arg_scope"]``. Empty if the instruction at `lasti` is not the load of
    `first` (a ``getattr``/``hasattr`` call, an unknown bytecode layout).
    """
    loads = ("LOAD_ATTR", "LOAD_METHOD")
    chain: list[str] | None = None
    try:
        for ins in dis.get_instructions(code):
            if chain is None:
                if ins.offset == lasti:
                    if ins.opname not in loads or ins.argval != first:
                        return []
                    chain = []
            elif ins.opname in loads:
                chain.append(str(ins.argval))
            elif ins.opname != "EXTENDED_ARG":
                break
    except Exception:  # noqa: BLE001 - a refinement of a message only
        return []
    return chain or []
