"""Bad input through whole pipelines (producer -> reader, with and without a runner).

For each bad file the error has TF's type, reaches the user both when the
consumer runs the read itself and through a runner (consumer sees the end,
``Coordinator.join`` re-raises), and no record of a good file is lost or
delivered twice.
"""

from __future__ import annotations

import gzip

import pytest
import tensorflow as tf

import queue_pipeline as qp
from conftest import TF, new_session


def _write_tfrecords(path, records, options=None):
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for record in records:
            writer.write(record)


def _files(tmp_path, kind):
    """(file list or glob, reader factory, expected good records in order, error)."""
    good1, good2 = tmp_path / "good1", tmp_path / "good2"
    if kind in ("missing_file", "glob_matches_nothing"):
        good1.write_text("a\nb\n")
        good2.write_text("c\n")
        if kind == "glob_matches_nothing":
            return (str(tmp_path / "*.nothing"), lambda m: m.TextLineReader(), [],
                    tf.errors.InvalidArgumentError)
        return ([str(good1), str(tmp_path / "missing.txt"), str(good2)],
                lambda m: m.TextLineReader(), [b"a", b"b", b"c"], tf.errors.NotFoundError)
    if kind == "truncated_fixed_length":
        good1.write_bytes(b"0123456789")  # 2 full records of 4, 2 bytes dropped
        good2.write_bytes(b"abcd")
        return ([str(good1), str(good2)], lambda m: m.FixedLengthRecordReader(4),
                [b"0123", b"4567", b"abcd"], None)
    _write_tfrecords(good1, [b"r1", b"r2"])
    bad = tmp_path / "bad.tfrecord"
    if kind == "tfrecord_bad_crc":
        _write_tfrecords(bad, [b"payload"])
        data = bytearray(bad.read_bytes())
        data[-1] ^= 0xFF  # corrupt the data CRC
        bad.write_bytes(bytes(data))
    else:  # gzip_read_uncompressed
        _write_tfrecords(bad, [b"zipped"], tf.io.TFRecordOptions("GZIP"))
        assert gzip.decompress(bad.read_bytes())  # really a GZIP file
    _write_tfrecords(good2, [b"r3"])
    return ([str(good1), str(bad), str(good2)], lambda m: m.TFRecordReader(),
            [b"r1", b"r2"], tf.errors.DataLossError)


KINDS = ["missing_file", "glob_matches_nothing", "truncated_fixed_length",
         "tfrecord_bad_crc", "gzip_read_uncompressed"]


def _build(m, files, make_reader, via_runner):
    if isinstance(files, str):
        files = m.match_filenames_once(files)
        if m is TF:  # TF 2.21 rejects the variable itself (see test_producers)
            files = tf.convert_to_tensor(files)
    queue = m.string_input_producer(files, num_epochs=1, shuffle=False)
    key, value = make_reader(m).read(queue)
    if not via_runner:
        return value
    # A record queue fed by its own runner: the shape of every batching stage.
    records = tf.queue.FIFOQueue(100, [tf.string], shapes=[[]])
    m.add_queue_runner(m.QueueRunner(records, [records.enqueue([value])]))
    return records.dequeue()


def _run(m, files, make_reader, via_runner):
    """Returns (values delivered, error seen by the consumer, error from join)."""
    g = tf.Graph()
    with g.as_default():
        fetch = _build(m, files, make_reader, via_runner)
        values, consumer_error, join_error = [], None, None
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = m.Coordinator()
            threads = m.start_queue_runners(sess, coord)
            for _ in range(100):
                try:
                    values.append(sess.run(fetch))
                except tf.errors.OutOfRangeError as e:
                    consumer_error = consumer_error or e
                    break
                except tf.errors.OpError as e:
                    consumer_error = consumer_error or e  # keep the first
                    if via_runner or isinstance(e, tf.errors.InvalidArgumentError):
                        break
                    # Reading directly, TF's readers go on with the next file
                    # after a missing one; a corrupt file repeats its error.
                    if isinstance(e, tf.errors.DataLossError):
                        break
            coord.request_stop()
            try:
                coord.join(threads, stop_grace_period_secs=5)
            except tf.errors.OpError as e:
                join_error = e
    return values, consumer_error, join_error


@pytest.mark.parametrize("via_runner", [False, True], ids=["direct", "runner"])
@pytest.mark.parametrize("kind", KINDS)
def test_bad_input_like_tf(tmp_path, kind, via_runner):
    files, make_reader, good, error = _files(tmp_path, kind)
    results = {m: _run(m, files, make_reader, via_runner) for m in (TF, qp)}
    for m, (values, consumer_error, join_error) in results.items():
        # No record lost or duplicated: what arrived is an in-order prefix of
        # the good records (all of them when reading directly).
        assert values == good[:len(values)], m
        if error is None:
            assert values == good and join_error is None
            assert isinstance(consumer_error, tf.errors.OutOfRangeError)
            continue
        if kind == "glob_matches_nothing" or via_runner:
            # The error surfaced in a runner: the consumer sees the end of
            # data, the Coordinator re-raises the cause.
            assert isinstance(consumer_error, tf.errors.OutOfRangeError), m
            assert isinstance(join_error, error), (m, join_error)
            reported = join_error
        else:
            assert isinstance(consumer_error, error), (m, consumer_error)
            reported = consumer_error
        if kind == "missing_file":
            assert "missing.txt" in reported.message
            if not via_runner:
                assert values == good  # the next file is still read
    ours, theirs = results[qp], results[TF]
    if not via_runner:
        assert ours[0] == theirs[0]
    assert type(ours[1]) is type(theirs[1]) and type(ours[2]) is type(theirs[2])


def test_glob_that_matches_nothing_names_the_pattern(tmp_path):
    """Deliberate difference: TF's error does not say which glob matched nothing."""
    pattern = str(tmp_path / "*.nothing")
    _, _, join_error = _run(qp, pattern, lambda m: m.TextLineReader(), False)
    assert "non-null input tensor" in join_error.message
    assert "no file matches the pattern" in join_error.message
    assert pattern in join_error.message
    _, _, tf_error = _run(TF, pattern, lambda m: m.TextLineReader(), False)
    assert pattern not in tf_error.message
