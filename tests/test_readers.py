"""Differential tests of queue_pipeline.readers against tf.compat.v1's readers."""

from __future__ import annotations

import gzip
import inspect
import zlib

import pytest
import tensorflow as tf

import queue_pipeline as qp
from queue_pipeline import readers
from queue_pipeline.errors import GraphModeRequiredError
from queue_pipeline.plan import plan_for
from helpers import new_session, py, session_config

OURS = readers
TF = tf.compat.v1
READER_NAMES = [
    "ReaderBase",
    "TextLineReader",
    "FixedLengthRecordReader",
    "TFRecordReader",
    "WholeFileReader",
    "IdentityReader",
]


# --------------------------------------------------------------------------- helpers


def _kernel_message(error: tf.errors.OpError) -> str:
    """The error message without the Python frames where the op was defined,
    and without the "Recent warning and error logs" TF appends (they depend on
    what ran earlier in the process)."""
    message = error.message.split("\nRecent warning and error logs:")[0]
    return "\n".join(line for line in message.splitlines() if not line.startswith("    File "))


def drain(make_reader, work, *, up_to=None, max_steps=40, as_handle=False, dtype=tf.string):
    """Reads `work` through a fresh reader until OutOfRangeError (or max_steps).

    Returns the list of (key, value) pairs, error (type, message) entries and
    "EOF", followed by the final (num_records_produced, num_work_units_completed).
    """
    g = tf.Graph()
    with g.as_default():
        reader = make_reader()
        q = tf.queue.FIFOQueue(max(len(work), 1), dtype, shapes=[[]])
        fill = q.enqueue_many([work]) if work else tf.no_op()
        close = q.close()
        source = q.queue_ref if as_handle else q
        fetch = reader.read(source) if up_to is None else reader.read_up_to(source, up_to)
        counters = (reader.num_records_produced(), reader.num_work_units_completed())
    out = []
    with new_session(g) as sess:
        sess.run(fill)
        sess.run(close)
        for _ in range(max_steps):
            try:
                key, value = sess.run(fetch)
                out.append((py(key), py(value)))
            except tf.errors.OutOfRangeError:
                out.append("EOF")
                break
            except tf.errors.OpError as e:
                out.append((type(e), _kernel_message(e)))
        try:
            out.append(tuple(int(c) for c in sess.run(counters)))
        except tf.errors.OpError as e:
            out.append((type(e), _kernel_message(e)))
    return out


def assert_same(build, work, **kwargs):
    """Drains `work` with build(OURS) and build(TF); asserts equal outputs; returns them."""
    ours = drain(lambda: build(OURS), work, **kwargs)
    theirs = drain(lambda: build(TF), work, **kwargs)
    assert ours == theirs
    return ours


def records(out):
    """The (key, value) entries of a drain() result."""
    return [x for x in out[:-1] if isinstance(x, tuple) and isinstance(x[0], (bytes, tuple))]


def errors(out):
    return [x for x in out[:-1] if isinstance(x, tuple) and isinstance(x[0], type)]


def write(tmp_path, name, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def write_tfrecords(tmp_path, name, payloads, compression=None) -> str:
    path = str(tmp_path / name)
    with tf.io.TFRecordWriter(path, options=compression) as writer:
        for payload in payloads:
            writer.write(payload)
    return path


# --------------------------------------------------------------------------- TextLineReader

TEXT_FILES = {
    "a.txt": b"h1\nh2\nh3\nx1\nx2\n",
    "short.txt": b"only\n",
    "empty.txt": b"",
    "crlf.txt": b"c1\r\nc2\r\n\r\nc4\r\n",
    "nonl.txt": b"n1\n\nn3",
}


@pytest.mark.parametrize("skip", [None, 0, 1, 3], ids=lambda s: f"skip={s}")
def test_text_line_reader_matches_tf(tmp_path, skip):
    work = [write(tmp_path, n, d) for n, d in TEXT_FILES.items()]
    out = assert_same(lambda ns: ns.TextLineReader(skip_header_lines=skip), work)
    assert out[-2] == "EOF"
    assert out[-1][1] == len(work)  # every file is a completed work unit
    if skip == 1:
        assert records(out)[0] == (f"{work[0]}:2".encode(), b"h2")


def test_text_line_reader_negative_skip_fails_like_tf(tmp_path):
    work = [write(tmp_path, "a.txt", b"x\n")]
    out = assert_same(lambda ns: ns.TextLineReader(skip_header_lines=-1), work, max_steps=1)
    assert errors(out)[0][0] is tf.errors.InvalidArgumentError
    assert "skip_header_lines must be >= 0 not -1" in errors(out)[0][1]


def test_queue_handle_tensor_is_accepted(tmp_path):
    work = [write(tmp_path, "a.txt", b"x\ny\n")]
    out = assert_same(lambda ns: ns.TextLineReader(), work, as_handle=True)
    assert [v for _, v in records(out)] == [b"x", b"y"]


def test_non_string_work_queue_fails_like_tf():
    out = assert_same(lambda ns: ns.IdentityReader(), [1, 2], dtype=tf.int64, max_steps=1)
    assert errors(out)[0][0] is tf.errors.InvalidArgumentError
    assert "Expected queue with single string component" in errors(out)[0][1]


# ------------------------------------------------------------------- FixedLengthRecordReader


@pytest.mark.parametrize(
    "record,header,footer,hop",
    [
        (4, None, None, None),
        (4, 0, 0, 0),
        (4, None, None, 3),  # overlapping: 0123 3456 6789
        (3, 2, 1, None),  # header and footer, partial tail dropped
        (2, 1, 2, 3),
        (5, 7, 7, None),  # header + footer swallow the file
        (20, None, None, None),  # no complete record at all
    ],
    ids=lambda v: str(v),
)
def test_fixed_length_reader_matches_tf(tmp_path, record, header, footer, hop):
    work = [
        write(tmp_path, "d1.bin", b"0123456789"),
        write(tmp_path, "d2.bin", b"abcdefghijklm"),
        write(tmp_path, "d3.bin", b""),
    ]
    out = assert_same(
        lambda ns: ns.FixedLengthRecordReader(
            record, header_bytes=header, footer_bytes=footer, hop_bytes=hop
        ),
        work,
    )
    assert out[-2] == "EOF"
    if (record, hop) == (4, 3):
        assert [v for _, v in records(out)][:3] == [b"0123", b"3456", b"6789"]
        assert records(out)[0][0] == f"{work[0]}:0".encode()


@pytest.mark.parametrize("encoding", [None, "", "GZIP", "ZLIB", "BOGUS"])
def test_fixed_length_reader_encoding_matches_tf(tmp_path, encoding):
    raw = b"0123456789abcdefg"  # 17 bytes: partial tail after 4 records of 4
    data = {"GZIP": gzip.compress, "ZLIB": zlib.compress}.get(encoding, bytes)(raw)
    work = [write(tmp_path, "a.bin", data), write(tmp_path, "b.bin", data)]
    out = assert_same(
        lambda ns: ns.FixedLengthRecordReader(4, header_bytes=1, hop_bytes=3, encoding=encoding),
        work,
    )
    assert [v for _, v in records(out)][:4] == [b"1234", b"4567", b"789a", b"abcd"]
    assert out[-1] == (10, 2)


def test_fixed_length_reader_truncated_file_drops_tail_like_tf(tmp_path):
    work = [
        write(tmp_path, "full.bin", b"AAAABBBB"),
        write(tmp_path, "trunc.bin", b"CCCCDD"),
        write(tmp_path, "after.bin", b"EEEE"),
    ]
    out = assert_same(lambda ns: ns.FixedLengthRecordReader(4), work)
    assert [v for _, v in records(out)] == [b"AAAA", b"BBBB", b"CCCC", b"EEEE"]


def test_fixed_length_reader_zero_record_bytes_is_endless_like_tf(tmp_path):
    work = [write(tmp_path, "a.bin", b"abc")]
    out = assert_same(lambda ns: ns.FixedLengthRecordReader(0), work, max_steps=5)
    assert len(records(out)) == 5 and records(out)[4] == (f"{work[0]}:4".encode(), b"")


# --------------------------------------------------------------------------- TFRecordReader

C = tf.compat.v1.python_io.TFRecordCompressionType


@pytest.mark.parametrize(
    "options,written",
    [
        (None, None),
        ("", None),
        ("ZLIB", "ZLIB"),
        ("GZIP", "GZIP"),
        (tf.io.TFRecordOptions("GZIP"), "GZIP"),
        (tf.io.TFRecordOptions(), None),
        (C.ZLIB, "ZLIB"),
        (C.NONE, None),
    ],
    ids=["None", "empty", "ZLIB", "GZIP", "options-GZIP", "options-none", "type-ZLIB", "type-NONE"],
)
def test_tfrecord_reader_matches_tf(tmp_path, options, written):
    work = [
        write_tfrecords(tmp_path, "a.tfr", [b"a1", b"a2", b"a3"], written),
        write_tfrecords(tmp_path, "b.tfr", [], written),
        write_tfrecords(tmp_path, "c.tfr", [b"c1", b""], written),
    ]
    out = assert_same(lambda ns: ns.TFRecordReader(options=options), work)
    assert [v for _, v in records(out)] == [b"a1", b"a2", b"a3", b"c1", b""]
    assert records(out)[1][0] == f"{work[0]}:18".encode()


def test_tfrecord_reader_invalid_options_raise_like_tf():
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as ours:
            readers.TFRecordReader(options="BOGUS")
        with pytest.raises(ValueError) as theirs:
            tf.compat.v1.TFRecordReader(options="BOGUS")
    assert str(ours.value) == str(theirs.value) == 'Not a valid compression_type: "BOGUS"'


# --------------------------------------------------------------------------- WholeFile / Identity


def test_whole_file_reader_matches_tf(tmp_path):
    work = [
        write(tmp_path, "a", b"alpha\nbeta"),
        write(tmp_path, "e", b""),
        write(tmp_path, "b", bytes(range(256))),
    ]
    out = assert_same(lambda ns: ns.WholeFileReader(), work)
    assert records(out) == [(w.encode(), open(w, "rb").read()) for w in work]


def test_identity_reader_matches_tf():
    work = [b"w1", b"", b"w3"]
    out = assert_same(lambda ns: ns.IdentityReader(), work)
    assert records(out) == [(w, w) for w in work]
    assert out[-1] == (3, 3)


# --------------------------------------------------------------------------- read_up_to


@pytest.mark.parametrize("reader", ["TextLineReader", "TFRecordReader", "FixedLengthRecordReader"])
def test_read_up_to_never_spans_work_units_like_tf(tmp_path, reader):
    payloads = [f"r{i}".encode() for i in range(5)]
    if reader == "TFRecordReader":
        work = [write_tfrecords(tmp_path, f"{n}.tfr", payloads) for n in "ab"]
    elif reader == "TextLineReader":
        work = [write(tmp_path, f"{n}.txt", b"\n".join(payloads)) for n in "ab"]
    else:
        work = [write(tmp_path, f"{n}.bin", b"".join(payloads)) for n in "ab"]
    args = (2,) if reader == "FixedLengthRecordReader" else ()
    out = assert_same(lambda ns: getattr(ns, reader)(*args), work, up_to=3)
    assert [len(k) for k, _ in records(out)] == [3, 2, 3, 2]
    assert out[-1] == (10, 2)


def test_read_up_to_one_record_per_unit_for_identity_like_tf():
    out = assert_same(lambda ns: ns.IdentityReader(), [b"x", b"y"], up_to=3)
    assert records(out) == [((b"x",), (b"x",)), ((b"y",), (b"y",))]


# --------------------------------------------------------------------------- state


def _state_trace(build, work, corrupt=b"\xff garbage"):
    """Reads 2 units, then serializes, resets, restores, restores garbage; traces all."""
    g = tf.Graph()
    with g.as_default():
        reader = build()
        q = tf.queue.FIFOQueue(10, tf.string, shapes=[[]])
        fill, close = q.enqueue_many([work]), q.close()
        key, _ = reader.read(q)
        state = reader.serialize_state()
        placeholder = tf.compat.v1.placeholder(tf.string, [])
        restore = reader.restore_state(placeholder)
        reset = reader.reset()
        counters = (reader.num_records_produced(), reader.num_work_units_completed())
    trace = [reader.supports_serialize]

    def step(fetch, feed=None):
        try:
            trace.append(py(sess.run(fetch, feed)))
        except tf.errors.OpError as e:
            trace.append((type(e), _kernel_message(e)))

    with new_session(g) as sess:
        sess.run(fill)
        sess.run(close)
        step(key)
        step(key)
        step(state)
        saved = trace[-1]
        step(counters)
        step(reset)
        step(counters)
        if isinstance(saved, bytes):
            step(restore, {placeholder: saved})
        step(counters)
        step(restore, {placeholder: corrupt})
        step(counters)
    return trace


@pytest.mark.parametrize("reader", ["WholeFileReader", "IdentityReader", "TextLineReader"])
def test_serialize_restore_reset_match_tf(tmp_path, reader):
    work = [write(tmp_path, f"f{i}", b"line\n") for i in range(3)]
    build = lambda ns: getattr(ns, reader)()  # noqa: E731
    ours, theirs = _state_trace(lambda: build(OURS), work), _state_trace(lambda: build(TF), work)
    assert ours == theirs
    if reader == "TextLineReader":
        assert ours[0] is False
        assert ours[3][0] is tf.errors.UnimplementedError
    else:
        assert ours[0] is True
        # work_started 2, work_finished 2, produced 2, current_work = 2nd unit.
        assert ours[3] == b'\x08\x02\x10\x02\x18\x02"' + bytes([len(work[1])]) + work[1].encode()
        assert ours[5:8] == [None, (0, 0), None]  # reset, then restore
        assert ours[8] == (2, 2)
        assert ours[9][0] is tf.errors.InvalidArgumentError
        assert f"Could not parse state for {reader} '{reader}V2'" in ours[9][1]
        assert ours[10] == (0, 0)  # a failed restore resets the reader


@pytest.mark.parametrize("reader", ["IdentityReader", "TextLineReader"])
def test_restore_state_rejects_non_scalar_like_tf(reader):
    messages = []
    for ns in (OURS, TF):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match="Shape must be rank 0 but is rank 1") as err:
                getattr(ns, reader)().restore_state([b"a"])
            messages.append(str(err.value))
    assert messages[0] == messages[1]


# --------------------------------------------------------------------------- bad input


def test_missing_file_not_found_then_continues_like_tf(tmp_path):
    work = [
        write(tmp_path, "a.txt", b"a1\na2\n"),
        str(tmp_path / "missing.txt"),
        write(tmp_path, "b.txt", b"b1\n"),
    ]
    out = assert_same(lambda ns: ns.TextLineReader(), work)
    assert [v for _, v in records(out)] == [b"a1", b"a2", b"b1"]  # each exactly once
    [(kind, message)] = errors(out)
    assert kind is tf.errors.NotFoundError and work[1] in message


def test_missing_file_whole_file_reader_stays_stuck_like_tf(tmp_path):
    work = [str(tmp_path / "missing"), write(tmp_path, "b", b"B")]
    out = assert_same(lambda ns: ns.WholeFileReader(), work, max_steps=4)
    # WholeFileReader opens the file inside the read itself, so the kernel
    # retries the missing file on every run and never reaches the next one.
    assert records(out) == [] and len(errors(out)) == 4
    kind, message = errors(out)[0]
    assert kind is tf.errors.NotFoundError and work[0] in message


def test_corrupt_tfrecord_crc_data_loss_like_tf(tmp_path):
    bad = write_tfrecords(tmp_path, "bad.tfr", [b"b1", b"b2", b"b3"])
    data = bytearray(open(bad, "rb").read())
    data[18 + 8] ^= 0xFF  # the length CRC of the second record
    open(bad, "wb").write(bytes(data))
    work = [
        write_tfrecords(tmp_path, "a.tfr", [b"a1"]),
        bad,
        write_tfrecords(tmp_path, "c.tfr", [b"c1"]),
    ]
    out = assert_same(lambda ns: ns.TFRecordReader(), work, max_steps=6)
    # Records before the corruption come once; the kernel then stays stuck on
    # the bad record, so later files are never reached (TF's behaviour too).
    assert [v for _, v in records(out)] == [b"a1", b"b1"]
    assert {kind for kind, _ in errors(out)} == {tf.errors.DataLossError}
    assert "corrupted record at 18" in errors(out)[0][1]


def test_gzip_tfrecord_read_uncompressed_data_loss_like_tf(tmp_path):
    work = [
        write_tfrecords(tmp_path, "a.tfr", [b"a1"]),
        write_tfrecords(tmp_path, "z.tfr", [b"z1"], "GZIP"),
    ]
    out = assert_same(lambda ns: ns.TFRecordReader(), work, max_steps=3)
    assert records(out) == [(f"{work[0]}:0".encode(), b"a1")]
    assert errors(out)[0][0] is tf.errors.DataLossError
    assert "corrupted record at 0 (Is this even a TFRecord file?)" in errors(out)[0][1]


# --------------------------------------------------------------------------- graph shape and API


def _graph_nodes(build):
    g = tf.Graph()
    with g.as_default():
        build()
    return [
        (n.name, n.op, list(n.input), sorted((k, str(v)) for k, v in n.attr.items()))
        for n in g.as_graph_def().node
    ]


def _all_ops(ns):
    q = tf.queue.FIFOQueue(4, tf.string, shapes=[[]], name="work")
    made = [
        ns.TextLineReader(),
        ns.TextLineReader(2, name="csv"),
        ns.FixedLengthRecordReader(4, 1, 2, 3, encoding="GZIP"),
        ns.TFRecordReader(options="ZLIB"),
        ns.TFRecordReader(name="rec"),
        ns.WholeFileReader(),
        ns.IdentityReader(name="ident"),
    ]
    for r in made:
        r.read(q)
        r.read(q.queue_ref, name="named_read")
        r.read_up_to(q, 5)
        r.read_up_to(q, tf.constant(2, tf.int64), name="up")
        r.num_records_produced()
        r.num_work_units_completed(name="done")
        r.serialize_state()
        r.restore_state(b"")
        r.reset(name="rst")
    base = ns.ReaderBase(made[0].reader_ref)
    base.read(q)


def test_graph_ops_and_names_equal_tf():
    with qp.tf_faithful():
        ours = _graph_nodes(lambda: _all_ops(OURS))
    assert ours == _graph_nodes(lambda: _all_ops(TF))


def test_default_names():
    with tf.Graph().as_default():
        reader = readers.TextLineReader()
        key, value = reader.read(tf.queue.FIFOQueue(1, tf.string, shapes=[[]]))
    assert reader.reader_ref.op.type == reader.reader_ref.op.name == "TextLineReaderV2"
    assert key.op.type == key.op.name == "ReaderReadV2"
    assert (key.dtype, value.dtype) == (tf.string, tf.string)
    assert key.shape.rank == value.shape.rank == 0


def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", READER_NAMES)
def test_signatures_equal_tf(name):
    ours, theirs = getattr(OURS, name), getattr(TF, name)
    assert _params(ours.__init__) == _params(theirs.__init__)
    for method in [
        "read",
        "read_up_to",
        "num_records_produced",
        "num_work_units_completed",
        "serialize_state",
        "restore_state",
        "reset",
    ]:
        assert _params(getattr(ours, method)) == _params(getattr(theirs, method)), method
    for prop in ["reader_ref", "supports_serialize"]:
        assert isinstance(getattr(ours, prop), property)


def test_all_is_sorted_and_complete():
    assert readers.__all__ == sorted(readers.__all__)
    assert set(readers.__all__) == set(READER_NAMES)


@pytest.mark.v2_only(
    "eager execution exists only under TF 2.x defaults; TF1 mode: "
    "test_readers_build_with_no_eager_at_all"
)
@pytest.mark.parametrize(
    "build",
    [
        lambda ns: ns.TextLineReader(),
        lambda ns: ns.FixedLengthRecordReader(4),
        lambda ns: ns.TFRecordReader(),
        lambda ns: ns.WholeFileReader(),
        lambda ns: ns.IdentityReader(),
        lambda ns: ns.ReaderBase(None),
    ],
    ids=READER_NAMES[1:] + READER_NAMES[:1],
)
def test_eager_mode_raises(build):
    assert tf.executing_eagerly()
    with pytest.raises(GraphModeRequiredError, match="graph mode") as err:
        build(OURS)
    assert isinstance(err.value, RuntimeError)
    with pytest.raises(RuntimeError):  # TF's own type, for comparison
        build(TF)


@pytest.mark.tf1_only("TF1 mode has no eager execution; TF 2.x: test_eager_mode_raises")
def test_readers_build_with_no_eager_at_all(tmp_path):
    """A TF1 script creates readers at the top level; they read as TF's do."""
    path = tmp_path / "a.txt"
    path.write_text("x\ny\n")
    out = {}
    for ns in (TF, OURS):
        with tf.Graph().as_default():
            queue = tf.queue.FIFOQueue(2, tf.string, shapes=[[]])
            fill = queue.enqueue_many([[str(path)]])
            close = queue.close()
            key, value = ns.TextLineReader().read(queue)
            assert value.graph is tf.compat.v1.get_default_graph()
            with tf.compat.v1.Session(config=session_config()) as sess:
                sess.run(fill)
                sess.run(close)
                out[ns] = [tuple(sess.run([key, value])) for _ in range(2)]
    assert out[OURS] == out[TF] == [(f"{path}:1".encode(), b"x"), (f"{path}:2".encode(), b"y")]


def test_supports_serialize_and_reader_ref_like_tf():
    with tf.Graph().as_default():
        for name in READER_NAMES[1:]:
            args = (4,) if name == "FixedLengthRecordReader" else ()
            ours, theirs = getattr(OURS, name)(*args), getattr(TF, name)(*args)
            assert ours.supports_serialize == theirs.supports_serialize
            assert ours.reader_ref.dtype == theirs.reader_ref.dtype == tf.resource
        base = readers.ReaderBase(ours.reader_ref, supports_serialize=True)
        assert base.reader_ref is ours.reader_ref and base.supports_serialize is True


# --------------------------------------------------------------------------- plan nodes


def test_read_records_plan_node(graph):
    q = tf.queue.FIFOQueue(4, tf.string, shapes=[[]])
    reader = readers.TextLineReader(skip_header_lines=1, name="csv")
    key, value = reader.read(q, name="rd")
    [node] = plan_for(value).nodes
    assert node.kind == "TextLineReader.read"
    assert node.reads is q and node.inputs == (q,)
    assert node.outputs == (key, value)
    assert node.args == {"skip_header_lines": 1, "reader_name": "csv", "name": "rd"}


def test_read_up_to_records_plan_node(graph):
    q = tf.queue.FIFOQueue(4, tf.string, shapes=[[]])
    reader = readers.FixedLengthRecordReader(8, hop_bytes=2, encoding="GZIP")
    keys, values = reader.read_up_to(q.queue_ref, 3)
    [node] = plan_for(keys).nodes
    assert node.kind == "FixedLengthRecordReader.read_up_to"
    assert node.reads is q.queue_ref and node.outputs == (keys, values)
    assert node.args == {
        "record_bytes": 8,
        "header_bytes": None,
        "footer_bytes": None,
        "hop_bytes": 2,
        "encoding": "GZIP",
        "reader_name": None,
        "num_records": 3,
        "name": None,
    }


def test_plan_node_kind_per_class(graph):
    q = tf.queue.FIFOQueue(4, tf.string, shapes=[[]])
    options = tf.io.TFRecordOptions("ZLIB")
    _, tfr = readers.TFRecordReader(options=options).read(q)
    _, whole = readers.WholeFileReader().read(q)
    _, base = readers.ReaderBase(readers.IdentityReader().reader_ref).read(q)
    assert plan_for(tfr).nodes[0].args == {"options": options, "reader_name": None, "name": None}
    assert plan_for(whole).kinds == ["WholeFileReader.read"]
    assert plan_for(base).kinds == ["ReaderBase.read"]
    assert set(plan_for(base).nodes[0].args) == {"reader_ref", "supports_serialize", "name"}
