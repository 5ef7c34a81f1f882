"""The dataset engine serves reader values the program fetches directly.

See NOTE [ Reader values fetched directly ] in ``_engine/direct_reads.py``.
Producer -> reader -> decode, fetched once per step with no batching call,
is run natively (TF's own API, the oracle) and on the dataset engine, in
both TF modes (the suite runs this file with ``--tf1`` too): the steps must
see the same records in the same order, one record per step, and end with
``OutOfRangeError``.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import TF, build, drain, new_session, running, run_script_both_ways

RECORDS = 24
v1 = tf.compat.v1
SERVED = "fetched directly, is read from tf.data"


@pytest.fixture(scope="module")
def record_files(tmp_path_factory):
    """Two files of 5-byte records: a label byte (the record's number) + 4 image bytes."""
    d = tmp_path_factory.mktemp("direct_reads")
    rng = np.random.default_rng(7)
    paths = []
    for f in range(2):
        path = str(d / f"part_{f}.bin")
        rows = rng.integers(0, 256, size=(RECORDS // 2, 5), dtype=np.uint8)
        rows[:, 0] = np.arange(RECORDS // 2) + (RECORDS // 2) * f
        rows.tofile(path)
        paths.append(path)
    return paths


def decoded(files, *, num_epochs=2):
    """(key, image, label) of one record: the tutorial's reader, no batching call."""
    queue = v1.train.string_input_producer(files, num_epochs=num_epochs, shuffle=False)
    key, value = v1.FixedLengthRecordReader(record_bytes=5).read(queue)
    record = v1.decode_raw(value, tf.uint8)
    label = tf.cast(record[0], tf.int32)
    image = tf.cast(tf.reshape(record[1:], [2, 2]), tf.float32) * (1.0 / 255)
    return key, image, label


def _native_and_served(make, steps, caplog) -> tuple[list, list]:
    """`steps` of every fetch of `make()`'s tensors, natively and on the dataset engine."""
    out = []
    for way in ("native", "dataset"):
        with caplog.at_level(logging.INFO, logger="queue_pipeline"), running(way):
            graph, fetch = build(TF, lambda _: make())
            out.append(steps(drain(TF, graph, fetch)))
    return out[0], out[1]


def _basename(key) -> str:
    return os.path.basename(key.decode())


@pytest.mark.parametrize("form", ["list", "dict", "names"])
def test_values_fetched_directly_are_read_from_tf_data(record_files, form, caplog):
    def make():
        key, image, label = decoded(record_files)
        if form == "list":
            return [key, image, label]
        if form == "dict":
            return {"key": key, "image": image, "label": label}
        return [key.name, image.name, label.name]

    def steps(values):
        values = [[v["key"], v["image"], v["label"]] if form == "dict" else v for v in values]
        return [(_basename(k), i.tolist(), int(lab)) for k, i, lab in values]

    native, served = _native_and_served(make, steps, caplog)
    assert len(native) == 2 * RECORDS
    assert served == native
    assert SERVED in caplog.text


def test_a_training_op_on_the_value_gets_the_steps_record(record_files, caplog):
    """A fetch needing the value through the model's ops: the value is fed, one record a step."""

    def make():
        _, image, label = decoded(record_files, num_epochs=1)
        weight = v1.Variable(2.0)  # trainable: the model's op is not part of the record's decoding
        return [tf.reduce_sum(image) * weight, label, image]

    def steps(values):
        return [
            (round(float(s), 5), int(lab), round(float(i.sum()) * 2, 5)) for s, lab, i in values
        ]

    native, served = _native_and_served(make, steps, caplog)
    assert served == native
    assert [lab for _, lab, _ in served] == list(range(RECORDS))
    assert all(s == twice for s, _, twice in served)
    assert SERVED in caplog.text


def test_a_callable_made_on_the_values_reads_tf_data(record_files):
    def labels(way):
        with running(way):
            graph, (_, _, label) = build(TF, lambda _: decoded(record_files, num_epochs=1))
            with graph.as_default(), new_session(graph) as sess:
                sess.run(v1.local_variables_initializer())
                coord = TF.Coordinator()
                threads = TF.start_queue_runners(sess=sess, coord=coord)
                step = sess.make_callable(label)
                out = []
                try:
                    while True:
                        out.append(int(step()))
                except tf.errors.OutOfRangeError:
                    pass
                finally:
                    coord.request_stop()
                    coord.join(threads, stop_grace_period_secs=5)
        return out

    assert labels("dataset") == labels("native") == list(range(RECORDS))


def test_a_work_queue_no_producer_fills_stays_on_its_reader(record_files, caplog):
    """The program's own runner enqueues one file name at a time: not a producer's queue."""

    def make():
        names = v1.FIFOQueue(4, tf.string, shapes=[])
        v1.train.add_queue_runner(
            v1.train.QueueRunner(names, [names.enqueue(tf.constant(record_files[0]))])
        )
        _, value = v1.FixedLengthRecordReader(record_bytes=5).read(names)
        return tf.cast(v1.decode_raw(value, tf.uint8)[0], tf.int32)

    def first_labels(way):
        with running(way):
            graph, label = build(TF, lambda _: make())
            return [int(v) for v in drain(TF, graph, label, max_steps=RECORDS + 3)]

    native = first_labels("native")
    with caplog.at_level(logging.WARNING, logger="queue_pipeline"):
        served = first_labels("dataset")
    assert served == native == [*range(RECORDS // 2), *range(RECORDS // 2), 0, 1, 2]
    assert "stays on its reader" in caplog.text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["inspect", "train"])
def test_record_inspector_runs_unmodified_on_the_dataset_engine(tmp_path, mode):
    """tests/scripts/direct_read_records.py natively and through `queue-pipeline run`."""
    flags = ["--train"] if mode == "train" else []
    native, runs = run_script_both_ways(
        "direct_read_records.py",
        lambda way: ["--data_dir", str(tmp_path / way), *flags],
        engines=("queue", "dataset"),
    )
    assert "steps=80 " in native.stdout
    assert SERVED in runs["dataset"].stderr and "stays on" not in runs["dataset"].stderr
    assert SERVED not in runs["queue"].stderr
