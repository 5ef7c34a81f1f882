"""Bad input whose error is raised in the consumer's own step: named, with TF's type.

A reader's value decoded in the main thread (README's first example), raw
records batched and the batch decoded after the dequeue, a reader's own
corrupt-data errors: by default the error keeps its type and its message
names the file and the record (line for text, byte offset for TFRecord,
record index for fixed-length files), through ``sess.run``, a
``make_callable`` callable and ``MonitoredSession.run``, on both engines and
in both TF modes; under ``tf_faithful()`` the message is TF's own.
"""

from __future__ import annotations

import gzip
import logging

import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import new_session, session_config


def _write_tfrecords(path, records, compression=None):
    with tf.io.TFRecordWriter(str(path), compression) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def _example(**features) -> bytes:
    feature = {
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in features.items()
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


# Each case: (files, reader, decode(value) -> fetched tensors, error type, text in message).
def _short_csv_row(d):
    good = d / "good.csv"
    good.write_text("1,2\n3,4\n")
    bad = d / "bad.csv"
    bad.write_text("5,6\n7\n8,9\n")
    return (
        [str(good), str(bad)],
        qp.TextLineReader,
        lambda value: tf.io.decode_csv(value, [[0], [0]]),
        tf.errors.InvalidArgumentError,
        f"file {bad}, line 2 (record {bad}:2)",
    )


def _missing_feature(d):
    path = _write_tfrecords(d / "x.tfrecord", [_example(x=[1]), _example(y=[2])])
    offset = 16 + len(_example(x=[1]))
    return (
        [path],
        qp.TFRecordReader,
        lambda value: [
            tf.io.parse_single_example(value, {"x": tf.io.FixedLenFeature([], tf.int64)})["x"]
        ],
        tf.errors.InvalidArgumentError,
        f"file {path}, byte offset {offset} (record {path}:{offset})",
    )


def _bad_crc(d):
    path = _write_tfrecords(d / "crc.tfrecord", [b"r1", b"r2", b"r3"])
    data = bytearray(open(path, "rb").read())
    data[18 + 8] ^= 0xFF  # the length CRC of the second record
    open(path, "wb").write(bytes(data))
    return (
        [path],
        qp.TFRecordReader,
        lambda value: [value],
        tf.errors.DataLossError,
        f"file {path}, record {path}:18",
    )


def _truncated_tfrecord(d):
    path = _write_tfrecords(d / "cut.tfrecord", [b"r1", b"r2"])
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-5])
    return (
        [path],
        qp.TFRecordReader,
        lambda value: [value],
        tf.errors.DataLossError,
        f"file {path}",
    )


def _wrong_compression(d):
    path = _write_tfrecords(d / "z.tfrecord", [b"r1"], "GZIP")
    return (
        [path],
        qp.TFRecordReader,
        lambda value: [value],
        tf.errors.DataLossError,
        "GZIP-compressed",
    )


def _corrupt_jpeg(d):
    good = d / "good.jpg"
    good.write_bytes(
        tf.io.encode_jpeg(tf.zeros([4, 4, 3], tf.uint8)).numpy()
        if tf.executing_eagerly()
        else _jpeg_bytes()
    )
    bad = d / "bad.jpg"
    bad.write_bytes(b"\xff\xd8 not really a jpeg")
    return (
        [str(good), str(bad)],
        qp.WholeFileReader,
        lambda value: [tf.io.decode_jpeg(value, channels=3)],
        tf.errors.InvalidArgumentError,
        f"file {bad}",
    )


def _jpeg_bytes() -> bytes:
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        return sess.run(tf.io.encode_jpeg(tf.zeros([4, 4, 3], tf.uint8)))


def _bad_fixed_length_record(d):
    path = d / "raw.bin"
    path.write_bytes(b"000100x20003")  # three records of 4 bytes; the second is no number
    return (
        [str(path)],
        lambda: qp.FixedLengthRecordReader(4),
        lambda value: [tf.strings.to_number(value, tf.int32)],
        tf.errors.InvalidArgumentError,
        f"file {path}, record 1 (record {path}:1)",
    )


def _non_utf8_field(d):
    # TF quotes the field in its message, and its Python binding cannot decode the
    # message: with TF's own API the step raises UnicodeDecodeError, its type lost.
    path = d / "bytes.csv"
    path.write_bytes(b"1,2\n\x1f\x8b,2\n3,4\n")
    return (
        [str(path)],
        qp.TextLineReader,
        lambda value: tf.io.decode_csv(value, [[0], [0]]),
        tf.errors.UnknownError,
        f"file {path}, line 2 (record {path}:2)",
    )


CASES = {
    "short_csv_row": _short_csv_row,
    "missing_feature": _missing_feature,
    "bad_crc": _bad_crc,
    "truncated_tfrecord": _truncated_tfrecord,
    "wrong_compression": _wrong_compression,
    "corrupt_jpeg": _corrupt_jpeg,
    "bad_fixed_length_record": _bad_fixed_length_record,
    "non_utf8_field": _non_utf8_field,
}


def _direct(case, d):
    """The README's first example: read -> decode -> sess.run([key, decoded...])."""
    files, reader, decode, error, text = CASES[case](d)
    queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
    key, value = reader().read(queue)
    return [key] + list(decode(value)), error, text


def _run_until_error(fetch, how):
    """Runs `fetch` the `how` way (with runners) until an error; returns it (or None)."""
    graph = tf.compat.v1.get_default_graph()
    if how == "monitored":
        with pytest.raises(tf.errors.OpError) as info:
            with tf.compat.v1.train.MonitoredSession(
                session_creator=tf.compat.v1.train.ChiefSessionCreator(config=session_config())
            ) as sess:
                for _ in range(50):
                    sess.run(fetch)
        return info.value
    with new_session(graph) as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        step = sess.make_callable(fetch) if how == "make_callable" else (lambda: sess.run(fetch))
        try:
            with pytest.raises(tf.errors.OpError) as info:
                for _ in range(50):
                    step()
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5, ignore_live_threads=True)
    return info.value


@pytest.mark.parametrize("how", ["run", "make_callable", "monitored"])
@pytest.mark.parametrize("case", list(CASES))
def test_an_error_in_the_main_thread_names_file_and_record(case, how, tmp_path):
    with tf.Graph().as_default():
        fetch, error_type, text = _direct(case, tmp_path)
        error = _run_until_error(fetch, how)
    assert type(error) is error_type, error
    assert text in error.message, error.message
    assert error.message.startswith("queue_pipeline:") or "queue_pipeline:" in error.message


@pytest.mark.parametrize("case", ["short_csv_row", "missing_feature", "bad_crc"])
def test_tf_faithful_keeps_tfs_message(case, tmp_path):
    with tf.Graph().as_default(), qp.tf_faithful():
        fetch, error_type, _ = _direct(case, tmp_path)
        error = _run_until_error(fetch, "run")
    assert type(error) is error_type
    assert not error.message.startswith("queue_pipeline:") and "Input: " not in error.message


@pytest.mark.parametrize("engine", ["queue", "dataset"])
def test_a_batch_of_raw_records_decoded_after_the_dequeue_names_the_record(
    engine, tmp_path, caplog
):
    """Raw lines batched, the batch decoded in the main thread (both engines)."""
    files, _, _, _, text = _short_csv_row(tmp_path)
    with (
        caplog.at_level(logging.INFO, logger="queue_pipeline"),
        tf.Graph().as_default(),
        qp.engine(engine),
    ):
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader().read(queue)
        lines = qp.batch([line], 3, allow_smaller_final_batch=True)
        fetch = tf.io.decode_csv(lines, [[0], [0]])
        error = _run_until_error(fetch, "run")
    assert type(error) is tf.errors.InvalidArgumentError
    assert text in error.message and "in record 0" in error.message
    served = [r for r in caplog.records if "runs on tf.data" in r.getMessage()]
    assert bool(served) == (engine == "dataset")


@pytest.mark.parametrize("vectorized", [True, False], ids=["vectorized", "per_record"])
@pytest.mark.parametrize("case", ["short_csv_row", "missing_feature"])
@pytest.mark.slow
def test_a_decode_error_inside_the_dataset_engine_names_the_record(
    case, vectorized, tmp_path, caplog
):
    """The engine decodes inside tf.data: the iterator's error names the legacy op,
    and the record is found as on the queue engine. The vectorized ParseExampleV2
    words its message differently from the per-record one ("Name: <unknown>, "
    first); the record is still found."""
    files, reader, decode, error_type, text = CASES[case](tmp_path)
    with (
        caplog.at_level(logging.INFO, logger="queue_pipeline"),
        tf.Graph().as_default(),
        qp.engine("dataset"),
    ):
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        _, value = reader().read(queue)
        outputs = decode(value)
        if not vectorized:  # a seeded per-record random op keeps the region per record
            noise = tf.cast(tf.compat.v1.random_uniform([], maxval=1, seed=1), outputs[0].dtype)
            outputs = [outputs[0] + noise, *outputs[1:]]
        fetch = qp.batch(list(outputs), 2)
        error = _run_until_error(fetch, "run")
    path = "vectorized" if vectorized else "per-record map"
    assert any(path in r.getMessage() for r in caplog.records)
    assert type(error) is error_type
    assert text in error.message, error.message


@pytest.mark.parametrize("engine", ["queue", "dataset"])
def test_a_message_of_bytes_tf_cannot_decode_is_an_op_error_naming_the_record(engine, tmp_path):
    """Decoded in a runner thread (or inside tf.data), batched: TF's own API ends
    the step with OutOfRangeError and its join with UnicodeDecodeError; here both
    are an UnknownError with the bytes escaped and the record named."""
    files, reader, decode, error_type, text = _non_utf8_field(tmp_path)
    with tf.Graph().as_default(), qp.engine(engine):
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        _, value = reader().read(queue)
        fetch = qp.batch(list(decode(value)), 2)
        with new_session(tf.compat.v1.get_default_graph()) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            errors = []
            try:
                with pytest.raises(tf.errors.OpError) as step:
                    for _ in range(50):
                        sess.run(fetch)
                errors.append(step.value)
            finally:
                coord.request_stop()
                try:  # the runner's error again, on the queue engine
                    coord.join(threads, stop_grace_period_secs=5)
                except tf.errors.OpError as joined:
                    errors.append(joined)
    assert len(errors) == (1 if engine == "dataset" else 2), errors
    for error in errors:
        assert type(error) is error_type, error
        assert text in error.message, error.message
        assert "valid int32: \x1f\\x8b" in error.message and "not UTF-8" in error.message


def test_a_read_error_in_a_served_pipeline_names_the_file(tmp_path):
    """A bad CRC read by the dataset engine's reader twin: the file is named."""
    files, _, _, _, _ = _bad_crc(tmp_path)
    with tf.Graph().as_default(), qp.engine("dataset"):
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        _, value = qp.TFRecordReader().read(queue)
        fetch = qp.batch([value], 1)
        error = _run_until_error(fetch, "run")
    assert type(error) is tf.errors.DataLossError
    assert f"file {files[0]}" in error.message, error.message


def test_a_partial_fixed_length_tail_read_in_the_main_thread_warns(tmp_path, caplog):
    path = tmp_path / "tail.bin"
    path.write_bytes(b"0123456789")  # records of 4: two, and 2 bytes dropped
    with caplog.at_level(logging.WARNING, logger="queue_pipeline"), tf.Graph().as_default():
        queue = qp.string_input_producer([str(path)], num_epochs=1, shuffle=False)
        _, value = qp.FixedLengthRecordReader(4).read(queue)
        with new_session(tf.compat.v1.get_default_graph()) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            got = [sess.run(value) for _ in range(2)]
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    assert got == [b"0123", b"4567"]
    warnings = [r.getMessage() for r in caplog.records if r.name == "queue_pipeline"]
    assert any("partial record at offset 8" in w and str(path) in w for w in warnings)


@pytest.mark.slow
def test_gzip_text_read_as_plain_names_nothing_wrongly(tmp_path):
    """An error that no record explains keeps TF's message (never a wrong name)."""
    path = tmp_path / "lines.txt.gz"
    # A fixed header (no name, mtime 0): the compressed bytes, and so the "line" TF reads
    # from them, are the same in every run. With the time in the header, a comma or a
    # newline byte in it now and then gave TF a message of raw bytes that its own Python
    # binding cannot decode (UnicodeDecodeError, with TF's own API as with ours).
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        f.write(b"1,2\n3,4\n")
    with tf.Graph().as_default():
        queue = qp.string_input_producer([str(path)], num_epochs=1, shuffle=False)
        _, value = qp.TextLineReader().read(queue)
        fetch = tf.io.decode_csv(value, [[0], [0]])
        error = _run_until_error(fetch, "run")
    assert type(error) is tf.errors.InvalidArgumentError
    assert f"file {path}" in error.message  # every line of the file fails alike
    assert "one of the records" in error.message or "line 1" in error.message
