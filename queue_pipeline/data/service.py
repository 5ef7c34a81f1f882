"""tf.data service for twins and rebuilt pipelines: :func:`distribute`.

When one machine cannot feed the model, tf.data service runs the input
pipeline on a pool of worker processes and streams the elements to the
trainer. Any ``tf.data.Dataset`` works, in particular the result of
:func:`queue_pipeline.to_dataset`: a legacy queue pipeline, rebuilt, is
distributed in one more call::

    dataset = queue_pipeline.to_dataset(legacy_batches)
    dataset = queue_pipeline.data.distribute(dataset, "grpc://dispatcher:5050")
    model.fit(dataset, epochs=1)

Requirements of the service itself (nothing queue_pipeline adds): the
Dataset is serialized and rebuilt on the workers, so it must contain no
Python function (``tf.py_function``, ``Dataset.from_generator``) and the
files it reads must be reachable from every worker.
"""

from __future__ import annotations

import warnings

import tensorflow as tf

from queue_pipeline._core.quiet import TF_DATA_OPTIONS_WARNING

__all__ = ["distribute"]

_API = "queue_pipeline.data.distribute"
PROCESSING_MODES = ("distributed_epoch", "parallel_epochs")


def distribute(
    dataset: tf.data.Dataset,
    service,
    *,
    processing_mode="distributed_epoch",
    job_name: str | None = None,
) -> tf.data.Dataset:
    """Reads `dataset` through tf.data service: its workers run the pipeline.

    A thin wrapper around ``dataset.apply(tf.data.experimental.service.
    distribute(processing_mode, service, job_name=job_name))`` that checks its
    arguments and takes a ``DispatchServer`` as well as its address.

    Args:
      dataset: the pipeline, e.g. from :func:`queue_pipeline.to_dataset` or a
        twin of :mod:`queue_pipeline.data`.
      service: the dispatcher: its address (``"grpc://host:port"``; the
        protocol may be omitted) or an in-process
        ``tf.data.experimental.service.DispatchServer``.
      processing_mode: ``"distributed_epoch"`` (default): the workers split
        the pipeline's source (its files, or the rows of a preloaded
        tensor) between them, so each element of an epoch is produced once,
        by one worker, as the legacy queue delivered each record once.
        ``"parallel_epochs"``: every worker runs the whole pipeline (each
        element once per worker, e.g. for pipelines that shuffle and repeat
        forever). A ``tf.data.experimental.service.ShardingPolicy`` is
        passed through.
      job_name: name of a shared job: consumers that pass the same name read
        one stream between them instead of one each.

    Returns:
      The Dataset that reads from the service. Order across workers is not
      kept. Each worker batches its own part: with ``"distributed_epoch"``
      every worker may end with a smaller batch (or, if the pipeline drops
      the remainder, drop up to ``batch_size - 1`` examples of its part).

    Raises:
      TypeError: `dataset` is not a ``tf.data.Dataset``.
      ValueError: `processing_mode` is unknown, or `service` is empty.

    Example::

        dispatcher = tf.data.experimental.service.DispatchServer()
        # ... WorkerServers started with dispatcher_address=...
        ds = distribute(queue_pipeline.to_dataset(batches), dispatcher)
    """
    if not isinstance(dataset, tf.data.Dataset):
        raise TypeError(
            f"{_API}: `dataset` must be a tf.data.Dataset; got "
            f"{type(dataset).__name__}. Fix: pass queue_pipeline.to_dataset"
            "(...) or a twin from queue_pipeline.data."
        )
    sharding = tf.data.experimental.service.ShardingPolicy
    if not isinstance(processing_mode, sharding) and processing_mode not in PROCESSING_MODES:
        raise ValueError(
            f"{_API}: `processing_mode` must be one of {PROCESSING_MODES} or a "
            "tf.data.experimental.service.ShardingPolicy; got "
            f"{processing_mode!r}."
        )
    address = getattr(service, "target", service)
    if not isinstance(address, str) or not address:
        raise ValueError(
            f"{_API}: `service` must be the dispatcher's address "
            "('grpc://host:port') or a DispatchServer; got "
            f"{service!r}."
        )
    # In graph mode TF's distribute() calls Dataset.options(), which warns about
    # itself (UserWarning): TensorFlow's internals, not the caller's.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=TF_DATA_OPTIONS_WARNING)
        return dataset.apply(
            tf.data.experimental.service.distribute(
                processing_mode=processing_mode, service=address, job_name=job_name
            )
        )
