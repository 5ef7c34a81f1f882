"""The twin variants: each workload's legacy pipeline written with queue_pipeline.data.

``twin`` decodes per record, as the legacy pipeline does; ``twin_batch_decode``
shuffles/batches the raw records and decodes once per batch (the twins'
keyword-only ``decode`` option).
"""

from __future__ import annotations

import warnings

import tensorflow as tf

import workloads
from queue_pipeline import data


def twin_dataset(workload, files, batch_then_decode=False) -> tf.data.Dataset:
    """The queue_pipeline.data twin of workloads.queue_pipeline_fetches."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if workload == "W4":
            images, labels = files
            examples = data.slice_input_producer([images, labels], num_epochs=1, shuffle=False)
            return data.batch(
                examples,
                workloads.BATCH,
                capacity=workloads.BATCH * 4,
                allow_smaller_final_batch=True,
            )
        names = data.string_input_producer(files, num_epochs=1, shuffle=False)
        reader = {
            "W1": data.TextLineReader,
            "W2": data.TFRecordReader,
            "W3": lambda: data.FixedLengthRecordReader(3073),
        }[workload]()
        values = reader.read(names, keys=False)  # the legacy pipelines ignore the key
        if batch_then_decode:
            return data.batch(
                values,
                workloads.BATCH,
                capacity=workloads.BATCH * 4,
                allow_smaller_final_batch=True,
                decode=workloads.PER_BATCH[workload],
            )
        examples = values.map(workloads.PER_RECORD[workload], num_parallel_calls=tf.data.AUTOTUNE)
        return data.batch(
            examples, workloads.BATCH, capacity=workloads.BATCH * 4, allow_smaller_final_batch=True
        )
