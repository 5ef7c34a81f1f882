"""The four benchmark workloads: their data on disk and every variant's pipeline.

W1 CSV: 8 files x 25,000 lines of 5 integer columns, ``decode_csv``.
W2 TFRecord: 60,000 MNIST-like examples (784-byte ``image_raw``, int64
``label``), ``parse_single_example``.
W3 CIFAR: 5 files x 10,000 fixed-length records of 1 + 3072 bytes,
``decode_raw``.
W4 preloaded: 60,000 x 784 float32 + int64 labels, ``slice_input_producer``.

A variant builds, in the current graph, either fetches for a Session (the
queue APIs) or a ``tf.data.Dataset`` (the tf.data variants). Every variant
delivers one epoch in batches of ``BATCH`` with the same meaning, so their
examples/s compare directly.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf

BATCH = 128
CSV_DEFAULTS = [[0]] * 5
FEATURES = {
    "image_raw": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much data each workload gets (full or quick)."""

    csv_files: int = 8
    csv_lines: int = 25_000
    tfrecords: int = 60_000
    cifar_files: int = 5
    cifar_records: int = 10_000
    preloaded: int = 60_000


FULL = Sizes()
QUICK = Sizes(
    csv_files=4, csv_lines=1_000, tfrecords=2_000, cifar_files=2, cifar_records=300, preloaded=2_000
)


def write_data(directory: str, sizes: Sizes) -> dict:
    """Writes W1-W3's files (W4 is in memory); returns {workload: files or arrays}."""
    rng = np.random.default_rng(0)
    data = {}
    csv = []
    for i in range(sizes.csv_files):
        path = os.path.join(directory, f"w1_{i}.csv")
        rows = rng.integers(0, 1000, size=(sizes.csv_lines, 5))
        np.savetxt(path, rows, fmt="%d", delimiter=",")
        csv.append(path)
    data["W1"] = csv
    path = os.path.join(directory, "w2.tfrecord")
    images = rng.integers(0, 256, size=(sizes.tfrecords, 784), dtype=np.uint8)
    with tf.io.TFRecordWriter(path) as writer:
        for image, label in zip(images, rng.integers(0, 10, sizes.tfrecords)):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "image_raw": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[image.tobytes()])
                        ),
                        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                    }
                )
            )
            writer.write(example.SerializeToString())
    data["W2"] = [path]
    cifar = []
    for i in range(sizes.cifar_files):
        path = os.path.join(directory, f"w3_{i}.bin")
        rng.integers(0, 256, size=sizes.cifar_records * 3073, dtype=np.uint8).tofile(path)
        cifar.append(path)
    data["W3"] = cifar
    data["W4"] = (
        rng.random((sizes.preloaded, 784), dtype=np.float32),
        rng.integers(0, 10, sizes.preloaded),
    )
    return data


# --- per-record decoders (the same in every variant) ---------------------------


def decode_csv(line):
    cols = tf.io.decode_csv(line, CSV_DEFAULTS)
    return tf.stack(cols[:4], axis=-1), cols[4]


def decode_example(serialized):
    parsed = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.cast(tf.io.decode_raw(parsed["image_raw"], tf.uint8), tf.float32) / 255.0
    return tf.reshape(image, [784]), parsed["label"]


def decode_examples(serialized):  # batch form
    parsed = tf.io.parse_example(serialized, FEATURES)
    image = tf.cast(tf.io.decode_raw(parsed["image_raw"], tf.uint8), tf.float32) / 255.0
    return tf.reshape(image, [-1, 784]), parsed["label"]


def decode_cifar(record):
    raw = tf.io.decode_raw(record, tf.uint8)
    label = tf.cast(raw[0], tf.int32)
    image = tf.transpose(tf.reshape(raw[1:], [3, 32, 32]), [1, 2, 0])
    return tf.cast(image, tf.float32), label


def decode_cifars(records):  # batch form
    raw = tf.io.decode_raw(records, tf.uint8)
    label = tf.cast(raw[:, 0], tf.int32)
    image = tf.transpose(tf.reshape(raw[:, 1:], [-1, 3, 32, 32]), [0, 2, 3, 1])
    return tf.cast(image, tf.float32), label


# --- queue API variants (TF's own or queue_pipeline, same code) ----------------


def queue_pipeline_fetches(api, readers, workload, data, threads):
    """The legacy pipeline on `api` (tf.compat.v1.train or queue_pipeline)."""
    if workload == "W4":
        images, labels = data
        image, label = api.slice_input_producer(
            [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
        )
        return api.batch(
            [image, label],
            BATCH,
            num_threads=threads,
            capacity=BATCH * 4,
            allow_smaller_final_batch=True,
        )
    files = api.string_input_producer(data, num_epochs=1, shuffle=False)
    if workload == "W1":
        _, value = readers.TextLineReader().read(files)
        example = decode_csv(value)
    elif workload == "W2":
        _, value = readers.TFRecordReader().read(files)
        example = decode_example(value)
    else:
        _, value = readers.FixedLengthRecordReader(3073).read(files)
        example = decode_cifar(value)
    return api.batch(
        list(example),
        BATCH,
        num_threads=threads,
        capacity=BATCH * 4,
        allow_smaller_final_batch=True,
    )


# --- hand-written tf.data -------------------------------------------------------


def raw_dataset(workload, data):
    if workload == "W1":
        return tf.data.TextLineDataset(data)
    if workload == "W2":
        return tf.data.TFRecordDataset(data)
    if workload == "W3":
        return tf.data.FixedLengthRecordDataset(data, 3073)
    return tf.data.Dataset.from_tensor_slices(data)


def raw_read(workload, data):
    """The raw-read floor: the records (lines, serialized examples, fixed-length
    records) in batches, with no decoding; W4's rows already in whole batches.

    What the machine reads with nothing done to the data: every variant that
    decodes pays this and its decoding. W4 has no records: its arrays are
    split into batch-sized blocks before the Dataset is built, so no row is
    moved alone (the floor of copying the rows out).
    """
    if workload != "W4":
        return raw_dataset(workload, data).batch(BATCH).prefetch(tf.data.AUTOTUNE)
    images, labels = data
    whole = len(labels) // BATCH * BATCH
    blocks = tf.data.Dataset.from_tensor_slices(
        (
            images[:whole].reshape((-1, BATCH) + images.shape[1:]),
            labels[:whole].reshape(-1, BATCH),
        )
    )
    if whole < len(labels):
        blocks = blocks.concatenate(tf.data.Dataset.from_tensors((images[whole:], labels[whole:])))
    return blocks.prefetch(tf.data.AUTOTUNE)


PER_RECORD = {"W1": decode_csv, "W2": decode_example, "W3": decode_cifar}
PER_BATCH = {"W1": decode_csv, "W2": decode_examples, "W3": decode_cifars}


def handwritten(workload, data, batch_then_decode=False):
    """The idiomatic tf.data pipeline of the same meaning (one epoch, in order)."""
    ds = raw_dataset(workload, data)
    autotune = tf.data.AUTOTUNE
    if workload == "W4":
        return ds.batch(BATCH).prefetch(autotune)
    if batch_then_decode:
        return (
            ds.batch(BATCH).map(PER_BATCH[workload], num_parallel_calls=autotune).prefetch(autotune)
        )
    return ds.map(PER_RECORD[workload], num_parallel_calls=autotune).batch(BATCH).prefetch(autotune)
