"""Bad input through whole pipelines (producer -> reader -> decoder -> batch).

The catalogue (issue 7, item 5): a CSV row with the wrong number of columns,
a non-numeric field, an empty file, a header-only file, a truncated
fixed-length file, a TFRecord with a bad CRC, a truncated TFRecord, the wrong
compression both ways, an unreadable file (and a directory), a glob that
matches nothing, and a file removed between epochs. For each:

* under ``qp.tf_faithful()`` queue_pipeline behaves as TF does (same records,
  same error types at the consumer and at ``Coordinator.join``; through a
  runner the consumer sees a plain end of data);
* by default the runner's error reaches the consumer's ``sess.run`` and
  ``Coordinator.join`` with its original type, with and without a
  Coordinator, never as ``OutOfRangeError``, and its message names the file
  and, where it is known, the record;
* no record of a good file is lost or delivered twice.
"""

from __future__ import annotations

import dataclasses
import gzip
import logging
import os
import types
from typing import Callable

import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import new_session, py, TF
from queue_pipeline._diagnostics import locate as _locate
from queue_pipeline._diagnostics import tails as _tails


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
            return (
                str(tmp_path / "*.nothing"),
                lambda m: m.TextLineReader(),
                [],
                tf.errors.InvalidArgumentError,
            )
        return (
            [str(good1), str(tmp_path / "missing.txt"), str(good2)],
            lambda m: m.TextLineReader(),
            [b"a", b"b", b"c"],
            tf.errors.NotFoundError,
        )
    if kind == "truncated_fixed_length":
        good1.write_bytes(b"0123456789")  # 2 full records of 4, 2 bytes dropped
        good2.write_bytes(b"abcd")
        return (
            [str(good1), str(good2)],
            lambda m: m.FixedLengthRecordReader(4),
            [b"0123", b"4567", b"abcd"],
            None,
        )
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
    return (
        [str(good1), str(bad), str(good2)],
        lambda m: m.TFRecordReader(),
        [b"r1", b"r2"],
        tf.errors.DataLossError,
    )


KINDS = [
    "missing_file",
    "glob_matches_nothing",
    "truncated_fixed_length",
    "tfrecord_bad_crc",
    "gzip_read_uncompressed",
]


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
    """TF's contract, kept exactly by queue_pipeline under ``tf_faithful()``."""
    files, make_reader, good, error = _files(tmp_path, kind)
    results = {TF: _run(TF, files, make_reader, via_runner)}
    with qp.tf_faithful():
        results[qp] = _run(qp, files, make_reader, via_runner)
    for m, (values, consumer_error, join_error) in results.items():
        # No record lost or duplicated: what arrived is an in-order prefix of
        # the good records (all of them when reading directly).
        assert values == good[: len(values)], m
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


# --------------------------------------------------------------------------- the catalogue


@dataclasses.dataclass
class Case:
    """One bad (or valid but unusual) input through string_input_producer -> reader -> batch."""

    files: list | str  # file names, or a glob for match_filenames_once
    reader: Callable  # m -> reader
    decode: Callable  # value -> the one tensor batched
    good: list  # every record delivered, in order (before the error, if any)
    error: type | None = None  # the error's type (TF's)
    names: tuple = ()  # substrings of the default-mode message (file, record)
    num_epochs: int = 1
    remove: tuple | None = None  # (after this many records, path to remove)


def _csv_row(value):
    return tf.stack(tf.io.decode_csv(value, [[0], [0], [0]]))


def _raw(value):
    return value


def _text(path, text):
    path.write_text(text)
    return str(path)


def _csv_files(d, bad_text):
    good1 = _text(d / "good1.csv", "1,2,3\n4,5,6\n")
    bad = _text(d / "bad.csv", bad_text)
    good2 = _text(d / "good2.csv", "15,16,17\n")
    return [good1, bad, good2], bad


def _csv_wrong_columns(d):
    files, bad = _csv_files(d, "7,8,9\n10,11\n12,13,14\n")
    return Case(
        files,
        lambda m: m.TextLineReader(),
        _csv_row,
        [(1, 2, 3), (4, 5, 6), (7, 8, 9)],
        tf.errors.InvalidArgumentError,
        (f"file {bad}", f"record {bad}:2", "Expect 3 fields but have 2"),
    )


def _csv_non_numeric(d):
    files, bad = _csv_files(d, "7,8,9\n10,eleven,12\n12,13,14\n")
    return Case(
        files,
        lambda m: m.TextLineReader(),
        _csv_row,
        [(1, 2, 3), (4, 5, 6), (7, 8, 9)],
        tf.errors.InvalidArgumentError,
        (f"file {bad}", f"record {bad}:2", "not a valid int32: eleven"),
    )


def _empty_file(d):
    files, _ = _csv_files(d, "")
    return Case(files, lambda m: m.TextLineReader(), _csv_row, [(1, 2, 3), (4, 5, 6), (15, 16, 17)])


def _header_only_file(d):
    files = [
        _text(d / "a.csv", "x,y,z\n1,2,3\n"),
        _text(d / "header_only.csv", "x,y,z\n"),
        _text(d / "b.csv", "x,y,z\n4,5,6\n7,8,9"),
    ]  # last line without newline
    return Case(
        files,
        lambda m: m.TextLineReader(skip_header_lines=1),
        _csv_row,
        [(1, 2, 3), (4, 5, 6), (7, 8, 9)],
    )


def _truncated_fixed_length(d):
    (d / "a.bin").write_bytes(b"0123456789")  # 2 records of 4; 2 bytes dropped
    (d / "b.bin").write_bytes(b"abcdefgh")
    return Case(
        [str(d / "a.bin"), str(d / "b.bin")],
        lambda m: m.FixedLengthRecordReader(4),
        _raw,
        [b"0123", b"4567", b"abcd", b"efgh"],
    )


def _tfrecord_files(d, write_bad, options=None):
    good1, bad, good2 = d / "good1.tfrecord", d / "bad.tfrecord", d / "good2.tfrecord"
    _write_tfrecords(good1, [b"r1", b"r2"], options)
    write_bad(bad)
    _write_tfrecords(good2, [b"r3"], options)
    return [str(good1), str(bad), str(good2)], str(bad)


def _tfrecord_bad_crc(d):
    def write(path):
        _write_tfrecords(path, [b"b1", b"b2", b"b3"])  # frames of 18 bytes
        data = bytearray(path.read_bytes())
        data[18 + 12] ^= 0xFF  # the payload of the second record, at offset 18
        path.write_bytes(bytes(data))

    files, bad = _tfrecord_files(d, write)
    return Case(
        files,
        lambda m: m.TFRecordReader(),
        _raw,
        [b"r1", b"r2", b"b1"],
        tf.errors.DataLossError,
        (f"file {bad}", f"record {bad}:18"),
    )


def _tfrecord_truncated(d):
    def write(path):
        _write_tfrecords(path, [b"b1", b"payload2"])
        path.write_bytes(path.read_bytes()[:-5])  # cut inside the second record

    files, bad = _tfrecord_files(d, write)
    return Case(
        files,
        lambda m: m.TFRecordReader(),
        _raw,
        [b"r1", b"r2", b"b1"],
        tf.errors.DataLossError,
        (f"file {bad}", f"record {bad}:18"),
    )


def _gzip_read_as_plain(d):
    def write(path):
        _write_tfrecords(path, [b"zipped"], tf.io.TFRecordOptions("GZIP"))
        assert gzip.decompress(path.read_bytes())  # really a GZIP file

    files, bad = _tfrecord_files(d, write)
    return Case(
        files,
        lambda m: m.TFRecordReader(),
        _raw,
        [b"r1", b"r2"],
        tf.errors.DataLossError,
        (f"file {bad}", f"record {bad}:0", "GZIP"),
    )


def _plain_read_as_gzip(d):
    files, bad = _tfrecord_files(
        d, lambda path: _write_tfrecords(path, [b"plain"]), tf.io.TFRecordOptions("GZIP")
    )
    return Case(
        files,
        lambda m: m.TFRecordReader(options="GZIP"),
        _raw,
        [b"r1", b"r2"],
        tf.errors.DataLossError,
        (f"file {bad}", "not GZIP-compressed"),
    )


def _fixed_length_plain_read_as_gzip(d):
    (d / "a.bin.gz").write_bytes(gzip.compress(b"01234567"))
    (d / "bad.bin").write_bytes(b"abcdefgh")  # not compressed
    (d / "c.bin.gz").write_bytes(gzip.compress(b"ABCD"))
    bad = str(d / "bad.bin")
    return Case(
        [str(d / "a.bin.gz"), bad, str(d / "c.bin.gz")],
        lambda m: m.FixedLengthRecordReader(4, encoding="GZIP"),
        _raw,
        [b"0123", b"4567"],
        tf.errors.DataLossError,
        (f"file {bad}", "not GZIP-compressed"),
    )


def _missing_file(d):
    files, _ = _csv_files(d, "7,8,9\n")
    missing = str(d / "missing.csv")
    files[1] = missing
    return Case(
        files,
        lambda m: m.TextLineReader(),
        _csv_row,
        [(1, 2, 3), (4, 5, 6)],
        tf.errors.NotFoundError,
        (f"file {missing}",),
    )


def _unreadable_file(d):
    files, bad = _csv_files(d, "7,8,9\n")
    os.chmod(bad, 0)
    return Case(
        files,
        lambda m: m.TextLineReader(),
        _csv_row,
        [(1, 2, 3), (4, 5, 6)],
        tf.errors.PermissionDeniedError,
        (f"file {bad}",),
    )


def _directory_as_file(d):
    files, _ = _csv_files(d, "7,8,9\n")
    directory = d / "a_directory.csv"
    directory.mkdir()
    files[1] = str(directory)
    return Case(
        files,
        lambda m: m.TextLineReader(),
        _csv_row,
        [(1, 2, 3), (4, 5, 6)],
        tf.errors.FailedPreconditionError,
        (f"file {directory}",),
    )


def _glob_matches_nothing(d):
    _csv_files(d, "7,8,9\n")
    pattern = str(d / "*.nothing")
    return Case(
        pattern,
        lambda m: m.TextLineReader(),
        _csv_row,
        [],
        tf.errors.InvalidArgumentError,
        (f"no file matches the pattern {pattern}",),
    )


def _file_removed_between_epochs(d):
    files = [_text(d / "a.csv", "1,2,3\n4,5,6\n"), _text(d / "b.csv", "7,8,9\n10,11,12\n")]
    # The batch queue holds 1 record, so when the consumer has the first
    # epoch's 4 records, the reader has at most reached a.csv again.
    return Case(
        files,
        lambda m: m.TextLineReader(),
        _csv_row,
        [(1, 2, 3), (4, 5, 6), (7, 8, 9), (10, 11, 12), (1, 2, 3), (4, 5, 6)],
        tf.errors.NotFoundError,
        (f"file {files[1]}",),
        num_epochs=2,
        remove=(4, files[1]),
    )


CATALOGUE = {
    "csv_wrong_columns": _csv_wrong_columns,
    "csv_non_numeric": _csv_non_numeric,
    "empty_file": _empty_file,
    "header_only_file": _header_only_file,
    "truncated_fixed_length": _truncated_fixed_length,
    "tfrecord_bad_crc": _tfrecord_bad_crc,
    "tfrecord_truncated": _tfrecord_truncated,
    "gzip_read_as_plain": _gzip_read_as_plain,
    "plain_read_as_gzip": _plain_read_as_gzip,
    "fixed_length_plain_read_as_gzip": _fixed_length_plain_read_as_gzip,
    "missing_file": _missing_file,
    "unreadable_file": _unreadable_file,
    "directory_as_file": _directory_as_file,
    "glob_matches_nothing": _glob_matches_nothing,
    "file_removed_between_epochs": _file_removed_between_epochs,
}


def _make_case(tmp_path, kind, label) -> Case:
    if kind == "unreadable_file" and os.geteuid() == 0:
        pytest.skip(
            "running as root: chmod 000 does not block reads (directory_as_file "
            "covers an unopenable path)"
        )
    d = tmp_path / label
    d.mkdir()
    return CATALOGUE[kind](d)


def _run_case(m, case, *, coord=True):
    """Runs `case` through ``m``'s batch; returns (records, consumer error, join error).

    Every thread is stopped and joined; the test fails if one outlives this.
    """
    g = tf.Graph()
    with g.as_default():
        files = case.files
        if isinstance(files, str):
            files = m.match_filenames_once(files)
            if m is TF:  # TF 2.21 rejects the variable itself (see test_producers)
                files = tf.convert_to_tensor(files)
        queue = m.string_input_producer(files, num_epochs=case.num_epochs, shuffle=False)
        _, value = case.reader(m).read(queue)
        batch = m.batch([case.decode(value)], 1, capacity=1)
        records, consumer_error, join_error = [], None, None
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            c = m.Coordinator() if coord else None
            threads = m.start_queue_runners(sess, c)
            try:
                for _ in range(100):
                    try:
                        records.append(py(sess.run(batch)[0]))
                    except tf.errors.OpError as e:
                        consumer_error = e
                        break
                    if case.remove and len(records) == case.remove[0]:
                        os.remove(case.remove[1])
            finally:
                if c is not None:
                    c.request_stop()
                    try:
                        c.join(threads, stop_grace_period_secs=5)
                    except tf.errors.OpError as e:
                        join_error = e
                for thread in threads:
                    thread.join(5)
            assert not [t.name for t in threads if t.is_alive()]
    return records, consumer_error, join_error


@pytest.mark.parametrize("kind", list(CATALOGUE))
def test_catalogue_like_tf_when_faithful(tmp_path, kind):
    """Under tf_faithful() a runner's error is TF's: the consumer sees the end of
    data, Coordinator.join raises the error; the records are TF's."""
    case = _make_case(tmp_path, kind, "tf")
    theirs = _run_case(TF, case)
    with qp.tf_faithful():
        ours = _run_case(qp, _make_case(tmp_path, kind, "qp"))
    for records, consumer_error, join_error in (theirs, ours):
        assert records == case.good
        assert type(consumer_error) is tf.errors.OutOfRangeError
        assert type(join_error) is (case.error or type(None))
    assert [type(e) for e in ours[1:]] == [type(e) for e in theirs[1:]]


# Without a Coordinator a failing runner thread re-raises its error (TF's
# contract, spec 1.14), which pytest reports as an unhandled thread exception.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("coord", [True, False], ids=["coord", "no-coord"])
@pytest.mark.parametrize("kind", list(CATALOGUE))
@pytest.mark.slow
def test_catalogue_error_reaches_the_consumer_naming_file_and_record(tmp_path, kind, coord):
    """By default the consumer's sess.run raises the runner's error with its
    original type (never OutOfRangeError), naming the file and record."""
    case = _make_case(tmp_path, kind, "qp")
    records, consumer_error, join_error = _run_case(qp, case, coord=coord)
    assert records == case.good  # nothing lost or repeated before the error
    if case.error is None:
        assert type(consumer_error) is tf.errors.OutOfRangeError
        assert join_error is None
        return
    assert type(consumer_error) is case.error, consumer_error
    message = consumer_error.message
    assert message.startswith("queue_pipeline:")
    for name in case.names:
        assert name in message, (name, message)
    if coord:
        assert type(join_error) is case.error
        assert all(name in join_error.message for name in case.names)


def test_truncated_fixed_length_warns_once_per_file(tmp_path, caplog):
    case = _make_case(tmp_path, "truncated_fixed_length", "qp")
    truncated, whole = case.files
    with caplog.at_level(logging.WARNING, logger="queue_pipeline"):
        for _ in range(2):  # a second pipeline over the same file: no new warning
            assert _run_case(qp, case)[0] == case.good
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.name == "queue_pipeline" and "partial record" in r.getMessage()
    ]
    assert len(warnings) == 1, warnings
    (warning,) = warnings
    assert f"file {truncated} has 10 bytes" in warning
    assert "partial record at offset 8, which is dropped: 2 bytes" in warning
    assert "TF 1.x drops them silently" in warning
    assert whole not in warning


@pytest.mark.parametrize("switch", ["tf_faithful", "tail_warning_off"])
def test_truncated_fixed_length_is_silent_when_switched_off(tmp_path, caplog, switch):
    case = _make_case(tmp_path, "truncated_fixed_length", "qp")
    settings = qp.tf_faithful() if switch == "tf_faithful" else qp.diagnostics(tail_warning=False)
    with caplog.at_level(logging.WARNING, logger="queue_pipeline"), settings:
        assert _run_case(qp, case)[0] == case.good
    assert not [r for r in caplog.records if "partial record" in r.getMessage()]


@pytest.mark.parametrize(
    "size, record, header, footer, hop",
    [
        (10, 4, 0, 0, 0),
        (12, 4, 0, 0, 0),
        (3, 4, 0, 0, 0),
        (11, 4, 1, 1, 0),
        (13, 4, 2, 3, 0),
        (10, 4, 0, 0, 3),
        (11, 4, 0, 0, 3),
        (11, 2, 0, 0, 4),
        (9, 3, 0, 0, 5),
        (5, 4, 2, 2, 0),
        (0, 1, 0, 0, 0),
        (9, 3, 1, 0, 2),
    ],
)
def test_partial_tail_matches_the_kernel(tmp_path, size, record, header, footer, hop):
    """partial_tail against what the kernel reads: every byte of the file is its
    own offset, so the records show where the last one ended."""
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(size)))
    g = tf.Graph()
    with g.as_default(), qp.tf_faithful():
        queue = tf.queue.FIFOQueue(1, tf.string, shapes=[[]])
        fill = queue.enqueue([str(path)])
        close = queue.close()
        _, value = qp.FixedLengthRecordReader(record, header, footer, hop).read(queue)
    records = []
    with new_session(g) as sess:
        sess.run(fill)
        sess.run(close)
        for _ in range(50):
            try:
                records.append(sess.run(value))
            except tf.errors.OutOfRangeError:
                break
    start, end = header + len(records) * (hop or record), size - footer
    last_end = records[-1][-1] + 1 if records else header
    unread = end - max(start, last_end)
    expected = (start, unread) if start < end and unread > 0 else None
    assert _tails.partial_tail(size, record, header, footer, hop) == expected


# --------------------------------------------------------------------------- describe_origin


def _fake_runner(*ops):
    """The attributes describe_origin uses from a QueueRunner."""
    return type("FakeRunner", (), {"enqueue_ops": list(ops), "queue": None})()


@pytest.mark.parametrize(
    "error, runner, sess",
    [
        (ValueError("boom"), None, None),
        (tf.errors.DataLossError(None, None, "corrupted record at 3"), object(), object()),
        (tf.errors.InvalidArgumentError(None, None, "{{node nowhere}}"), _fake_runner(), None),
    ],
)
def test_describe_origin_never_raises(error, runner, sess):
    assert _locate.describe_origin(error, runner, sess) == ""


def test_describe_origin_after_the_session_closed_is_empty_not_an_error(tmp_path):
    path = _text(tmp_path / "a.csv", "1,2\n")
    g = tf.Graph()
    with g.as_default(), qp.diagnostics(unstarted_guard=False):
        queue = tf.queue.FIFOQueue(2, tf.string, shapes=[[]])
        _, value = qp.TextLineReader().read(queue)
        row = _csv_row(value)
        sess = new_session(g)
        sess.run(queue.enqueue([path]))
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(row)
        sess.close()
    assert _locate.describe_origin(info.value, _fake_runner(row.op), sess) == ""


@pytest.mark.parametrize("seconds_per_check", [0.0, 0.01, 0.5], ids=["real", "10ms", "500ms"])
def test_describe_origin_is_bounded_with_thousands_of_files(
    tmp_path, monkeypatch, seconds_per_check
):
    """A DataLossError no file reproduces: candidates are checked until the budget
    runs out. The clock is _locate's own, faked: each file check advances it by
    `seconds_per_check`, so the bound is counted in checks, not measured."""
    clock = [0.0]
    checked = []
    check = _locate._file_problem

    def timed_check(reader, path, deadline):
        checked.append(path)
        clock[0] += seconds_per_check
        return check(reader, path, deadline)

    monkeypatch.setattr(_locate, "_file_problem", timed_check)
    monkeypatch.setattr(_locate, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    files = []
    for i in range(3000):
        path = tmp_path / f"f{i:04d}.tfrecord"
        _write_tfrecords(path, [b"x" * 8] * 4)
        files.append(str(path))
    g = tf.Graph()
    with g.as_default():
        queue = qp.string_input_producer(files, shuffle=False)
        key, value = qp.TFRecordReader().read(queue)
    error = tf.errors.DataLossError(None, key.op, "corrupted record at 123456")
    with new_session(g) as sess:
        text = _locate.describe_origin(error, _fake_runner(value.op), sess)
    assert text == ""
    assert len(checked) == len(set(checked))  # each file at most once
    if seconds_per_check:
        budget_checks = int(_locate._BUDGET_SECS / seconds_per_check)
        assert budget_checks <= len(checked) <= budget_checks + 1
    else:
        assert len(checked) == len(files)  # a clock that never moves: all of them, then stop


def _error_through_batch(make_reader, files, *, num_threads=1, up_to=None):
    """Runs files -> reader -> decode_csv -> batch until the runner's error; returns it."""
    g = tf.Graph()
    with g.as_default():
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        reader = make_reader()
        if up_to:
            _, values = reader.read_up_to(queue, up_to)
            rows = tf.stack(tf.io.decode_csv(values, [[0], [0], [0]]), axis=1)
            batch = qp.batch([rows], 1, enqueue_many=True, capacity=up_to)
        else:
            _, value = reader.read(queue)
            batch = qp.batch([_csv_row(value)], 1, num_threads=num_threads, capacity=1)
    return _decode_error_message(g, batch, steps=100)


def _decode_error_message(g, batch, *, steps):
    """Runs `batch` with runners until the decode error; returns its message.

    The consumer and ``Coordinator.join`` must both raise InvalidArgumentError.
    """
    with g.as_default(), new_session(g) as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        try:
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                for _ in range(steps):
                    sess.run(batch)
        finally:
            coord.request_stop()
            with pytest.raises(tf.errors.InvalidArgumentError):
                coord.join(threads, stop_grace_period_secs=5)
    return info.value.message


@pytest.mark.parametrize("attempt", range(4))
@pytest.mark.slow
def test_threads_sharing_a_reader_name_the_failing_record_exactly(tmp_path, attempt):
    """shuffle_batch(num_threads=4) on one reader: the record named is the failing
    one, every time (it is found by decoding the files again, not by a racy last key)."""
    files = [
        _text(tmp_path / f"good{i}.csv", "".join(f"{i},{j},{j}\n" for j in range(20)))
        for i in range(3)
    ]
    bad = _text(tmp_path / "c.csv", "7,8,9\n10,11\n12,13,14\n")
    files.insert(attempt % 4, bad)
    message = _error_through_batch(qp.TextLineReader, files, num_threads=4)
    assert f"Input: file {bad}, line 2 (record {bad}:2)." in message
    for good in files:
        if good != bad:
            assert good not in message


@pytest.mark.slow
def test_several_records_failing_alike_are_named_as_candidates(tmp_path):
    files = [_text(tmp_path / "a.csv", "1,2,3\n4,5\n"), _text(tmp_path / "b.csv", "6,7,8\n9,10\n")]
    message = _error_through_batch(qp.TextLineReader, files, num_threads=2)
    assert "Input: one of the records" in message and "(each fails this way)" in message
    assert f"record {files[0]}:2" in message and f"record {files[1]}:2" in message


def test_read_up_to_names_the_record_within_the_batch(tmp_path):
    files = [_text(tmp_path / "bad.csv", "1,2,3\n4,5,6\n7,8\n10,11,12\n")]
    message = _error_through_batch(qp.TextLineReader, files, up_to=4)
    assert "in record 2" in message
    assert f"file {files[0]}, line 3 (record {files[0]}:3)" in message


def test_join_of_several_readers_names_the_failing_readers_record(tmp_path):
    """One filename queue, one reader and decoder per thread: the failing
    decoder's own reader names the record exactly."""
    files = [_text(tmp_path / f"good{i}.csv", "1,2,3\n4,5,6\n") for i in range(3)]
    files.append(_text(tmp_path / "bad.csv", "7,8,9\n10,11,12\n13,14\n"))
    g = tf.Graph()
    with g.as_default():
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        rows = [[_csv_row(qp.TextLineReader().read(queue).value)] for _ in range(3)]
        batch = qp.shuffle_batch_join(
            rows, 2, capacity=20, min_after_dequeue=2, allow_smaller_final_batch=True
        )
    message = _decode_error_message(g, batch, steps=20)
    assert f"file {files[3]}, line 3 (record {files[3]}:3)" in message


def _example(**features) -> bytes:
    feature = {
        k: tf.train.Feature(int64_list=tf.train.Int64List(value=v)) for k, v in features.items()
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.mark.parametrize("decoder", ["parse_single_example", "string_to_number"])
@pytest.mark.slow
def test_other_decoders_name_the_record(tmp_path, decoder):
    if decoder == "parse_single_example":
        path = tmp_path / "examples.tfrecord"
        _write_tfrecords(path, [_example(x=[1]), _example(x=[2]), _example(y=[3])])
        make_reader, record = qp.TFRecordReader, f"{path}:{2 * (16 + len(_example(x=[1])))}"

        def decode(value):
            return tf.io.parse_single_example(value, {"x": tf.io.FixedLenFeature([], tf.int64)})[
                "x"
            ]
    else:
        path = tmp_path / "numbers.txt"
        path.write_text("1\n2\nthree\n")
        make_reader, record = qp.TextLineReader, f"{path}:3"

        def decode(value):
            return tf.strings.to_number(value, tf.int64)

    g = tf.Graph()
    with g.as_default():
        queue = qp.string_input_producer([str(path)], num_epochs=1, shuffle=False)
        batch = qp.batch([decode(make_reader().read(queue).value)], 1, capacity=1)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            try:
                assert [sess.run(batch).tolist() for _ in range(2)] == [[1], [2]]
                with pytest.raises(tf.errors.InvalidArgumentError) as info:
                    sess.run(batch)
            finally:
                coord.request_stop()
                with pytest.raises(tf.errors.InvalidArgumentError):
                    coord.join(threads, stop_grace_period_secs=5)
    unit = "byte offset" if decoder == "parse_single_example" else "line"
    position = record.rpartition(":")[2]
    assert f"file {path}, {unit} {position} (record {record})" in info.value.message


@pytest.mark.slow
def test_decode_error_names_the_record_in_a_finalized_graph(tmp_path):
    """MonitoredTrainingSession finalizes the graph: the record is found without it."""
    files = [_text(tmp_path / "bad.csv", "1,2,3\n4,5\n")]
    g = tf.Graph()
    with g.as_default():
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        _, value = qp.TextLineReader().read(queue)
        batch = qp.batch([_csv_row(value)], 1)
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            with tf.compat.v1.train.MonitoredTrainingSession(
                config=tf.compat.v1.ConfigProto(operation_timeout_in_ms=20_000)
            ) as sess:
                for _ in range(10):
                    sess.run(batch)
    assert f"record {files[0]}:2" in info.value.message


def test_reads_add_no_op_to_the_data_path():
    """Nothing is stored per record: under every setting a read's value is TF's."""
    for settings in (qp.tf_faithful(), qp.diagnostics(), qp.diagnostics(runner_errors=False)):
        g = tf.Graph()
        with g.as_default(), settings:
            queue = tf.queue.FIFOQueue(1, tf.string, shapes=[[]])
            reader = qp.TextLineReader()
            key, value = reader.read(queue)
            keys, values = reader.read_up_to(queue, 3)
        assert value.op is key.op and values.op is keys.op
        assert not [op.name for op in g.get_operations() if "_qp_guard/" in op.name]
