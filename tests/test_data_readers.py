"""Tests of the reader twins in queue_pipeline.data.readers, against the legacy readers and TF's."""

from __future__ import annotations

import collections
import gzip
import inspect
import warnings
import zlib

import pytest
import tensorflow as tf

import queue_pipeline as qp
from queue_pipeline import data
from queue_pipeline.data import producers, readers
from helpers import assert_produces, build, drain, drain_dataset, elements, new_session, py, TF

NAMES = [
    "FixedLengthRecordReader",
    "IdentityReader",
    "ReaderBase",
    "TFRecordReader",
    "TextLineReader",
    "WholeFileReader",
]
STATE_METHODS = [
    "num_records_produced",
    "num_work_units_completed",
    "serialize_state",
    "restore_state",
    "reset",
]


# --------------------------------------------------------------------------- helpers


def in_graph(make):
    """make() built in a fresh graph, drained through a one-shot iterator in a Session."""
    return [py(value) for value in drain_dataset(make)]


def legacy(impl, make_reader, work, up_to=None):
    """Reads `work` with a legacy reader (qp or TF) from a filled, closed queue."""
    g = tf.Graph()
    with g.as_default():
        reader = make_reader(impl)
        q = tf.queue.FIFOQueue(len(work), tf.string, shapes=[[]])
        fill, close = q.enqueue_many([work]), q.close()
        fetch = reader.read(q) if up_to is None else reader.read_up_to(q, up_to)
    out = []
    with new_session(g) as sess:
        sess.run(fill)
        sess.run(close)
        try:
            for _ in range(10_000):
                out.append(py(tuple(sess.run(fetch))))
        except tf.errors.OutOfRangeError:
            pass
    return out


def assert_parity(make_reader, work, up_to=None, *, oracle=True, graph=False):
    """The twin (eager, optionally graph) equals the legacy qp reader (and TF's)."""
    want = legacy(qp, make_reader, work, up_to)
    if oracle:
        assert legacy(TF, make_reader, work, up_to) == want
    twin = make_reader(readers)

    def read(units):
        return twin.read(units) if up_to is None else twin.read_up_to(units, up_to)

    assert_produces(read(work), want)
    if graph:
        assert in_graph(lambda: read(tf.data.Dataset.from_tensor_slices(work))) == want
    return want


def write(tmp_path, name, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def compress(data: bytes, encoding) -> bytes:
    if encoding == "GZIP":
        return gzip.compress(data)
    if encoding == "ZLIB":
        return zlib.compress(data)
    return data


def write_tfrecords(tmp_path, name, payloads, compression=None) -> str:
    path = str(tmp_path / name)
    with tf.io.TFRecordWriter(path, options=compression) as writer:
        for payload in payloads:
            writer.write(payload)
    return path


# --------------------------------------------------------------------------- surface


def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", NAMES)
def test_constructor_signature_equals_legacy(name):
    assert _params(getattr(readers, name).__init__) == _params(getattr(qp, name).__init__)


@pytest.mark.parametrize("method", STATE_METHODS)
def test_state_method_signatures_equal_legacy(method):
    assert _params(getattr(readers.ReaderBase, method)) == _params(getattr(qp.ReaderBase, method))


def test_read_signatures():
    """Legacy positional parameters (the queue becomes `filenames`), then the
    twin's keyword-only `keys`."""
    assert [p[0] for p in _params(readers.ReaderBase.read)] == ["self", "filenames", "name", "keys"]
    assert [p[0] for p in _params(readers.ReaderBase.read_up_to)] == [
        "self",
        "filenames",
        "num_records",
        "name",
        "keys",
    ]
    for method in (readers.ReaderBase.read, readers.ReaderBase.read_up_to):
        keys = inspect.signature(method).parameters["keys"]
        assert keys.kind is inspect.Parameter.KEYWORD_ONLY and keys.default is True


READERS_FOR_KEYS = {
    "TextLineReader": lambda: readers.TextLineReader(skip_header_lines=1),
    "FixedLengthRecordReader": lambda: readers.FixedLengthRecordReader(2),
    "FixedLengthRecordReader_hop": lambda: readers.FixedLengthRecordReader(2, hop_bytes=1),
    "TFRecordReader": lambda: readers.TFRecordReader(),
    "WholeFileReader": lambda: readers.WholeFileReader(),
    "IdentityReader": lambda: readers.IdentityReader(),
}


@pytest.mark.parametrize("reader", list(READERS_FOR_KEYS))
def test_keys_false_gives_the_same_values(tmp_path, reader):
    """keys=False drops the keys and nothing else, for read and read_up_to."""
    paths = []
    for i in range(2):
        path = tmp_path / f"f{i}"
        if reader == "TFRecordReader":
            with tf.io.TFRecordWriter(str(path)) as writer:
                for j in range(3 + i):
                    writer.write(f"r{i}{j}".encode())
        else:
            path.write_text("".join(f"l{i}{j}\n" for j in range(3 + i)))
        paths.append(str(path))
    make = READERS_FOR_KEYS[reader]
    with_keys = [value for _, value in elements(make().read(paths))]
    assert [v for v in elements(make().read(paths, keys=False))] == with_keys
    batches = [tuple(values) for _, values in elements(make().read_up_to(paths, 2))]
    assert [tuple(v) for v in elements(make().read_up_to(paths, 2, keys=False))] == batches


@pytest.mark.parametrize("name", NAMES)
def test_docstring_names_legacy_twin(name):
    assert f"Mirrors `queue_pipeline.{name}`." in inspect.getdoc(getattr(readers, name))


def test_all_sorted_and_exported():
    assert readers.__all__ == sorted(readers.__all__) == NAMES
    for name in NAMES[:2] + NAMES[3:]:
        assert issubclass(getattr(readers, name), readers.ReaderBase)


# --------------------------------------------------------------------------- TextLineReader

TEXT_FILES = {
    "a.txt": b"h1\nh2\nh3\nx1\nx2\n",
    "short.txt": b"only\n",
    "empty.txt": b"",
    "crlf.txt": b"c1\r\nc2\r\n\r\nc4\r\n",
    "nonl.txt": b"n1\n\nn3",
}


@pytest.fixture
def text_work(tmp_path):
    return [write(tmp_path, n, d) for n, d in TEXT_FILES.items()]


@pytest.mark.parametrize("up_to", [None, 1, 2, 4], ids=lambda n: f"up_to={n}")
@pytest.mark.parametrize("skip", [None, 0, 1, 3], ids=lambda s: f"skip={s}")
def test_text_line_reader_matches_legacy(text_work, skip, up_to):
    out = assert_parity(
        lambda m: m.TextLineReader(skip_header_lines=skip),
        text_work,
        up_to,
        graph=up_to in (None, 2) and skip in (None, 1),
    )
    if up_to is None and skip == 1:
        assert out[0] == (text_work[0].encode() + b":2", b"h2")  # keys count the header


# ------------------------------------------------------------------ FixedLengthRecordReader

BODY = b"0123456789abcdefghijklmnopqrstuvwx"  # 34 bytes


def _fixed_file(tmp_path, name, header, footer, body, encoding):
    return write(tmp_path, name, compress(b"H" * header + body + b"F" * footer, encoding))


FIXED = {  # record_bytes, header, footer, hop, body length
    "plain": (4, None, None, None, 32),
    "header_footer": (5, 3, 2, None, 30),
    "hop_overlap": (4, None, None, 3, 34),
    "hop_header_footer_tail": (6, 2, 5, 4, 33),
    "hop_wider": (3, 1, 1, 5, 34),
    "hop_equals_record_tail": (5, 1, 1, 5, 34),
}


@pytest.mark.parametrize("encoding", [None, "GZIP", "ZLIB", "BOGUS"])
@pytest.mark.parametrize("case", list(FIXED))
def test_fixed_length_record_reader_matches_legacy(tmp_path, case, encoding):
    record, header, footer, hop, body = FIXED[case]
    work = [
        _fixed_file(
            tmp_path,
            f"f{i}.bin",
            header or 0,
            footer or 0,
            BODY[i : i + body],
            encoding if encoding != "BOGUS" else None,
        )
        for i in range(2)
    ]

    def make(m):
        return m.FixedLengthRecordReader(
            record, header_bytes=header, footer_bytes=footer, hop_bytes=hop, encoding=encoding
        )

    quick = encoding is None or case == "hop_overlap"  # TF's oracle on a subset
    out = assert_parity(make, work, oracle=quick, graph=quick and case == "hop_overlap")
    assert out and all(len(value) == record for _, value in out)
    assert_parity(make, work, up_to=3, oracle=False)


@pytest.mark.parametrize("encoding", [None, "GZIP"])
def test_fixed_length_partial_tail_fails_without_hop(tmp_path, encoding):
    """Deliberate difference: legacy drops a partial tail, tf.data reports it."""
    work = [_fixed_file(tmp_path, "tail.bin", 2, 1, BODY[:10], encoding)]
    want = assert_parity(
        lambda m: m.FixedLengthRecordReader(4, 2, 1, hop_bytes=4, encoding=encoding), work
    )
    assert [v for _, v in want] == [b"0123", b"4567"]  # hop_bytes=record_bytes: dropped
    error = tf.errors.DataLossError if encoding else tf.errors.InvalidArgumentError
    with pytest.raises(error, match="not an exact multiple of the record length"):
        elements(readers.FixedLengthRecordReader(4, 2, 1, encoding=encoding).read(work))


# --------------------------------------------------------------------------- TFRecordReader

PAYLOADS = [[b"abcd", b"", b"x" * 300, b"q"], [b"1234", b"56", b"7"], []]
OPTIONS = {
    "none": (None, None),
    "empty_string": ("", None),
    "gzip": ("GZIP", "GZIP"),
    "zlib": ("ZLIB", "ZLIB"),
    "options_gzip": (tf.io.TFRecordOptions(compression_type="GZIP"), "GZIP"),
    "compression_type_zlib": (tf.compat.v1.io.TFRecordCompressionType.ZLIB, "ZLIB"),
}


@pytest.mark.parametrize("up_to", [None, 2], ids=lambda n: f"up_to={n}")
@pytest.mark.parametrize("case", list(OPTIONS))
@pytest.mark.slow
def test_tfrecord_reader_matches_legacy(tmp_path, case, up_to):
    options, compression = OPTIONS[case]
    work = [write_tfrecords(tmp_path, f"r{i}.tfr", p, compression) for i, p in enumerate(PAYLOADS)]
    out = assert_parity(
        lambda m: m.TFRecordReader(options=options),
        work,
        up_to,
        oracle=case in ("none", "gzip", "zlib"),
        graph=case == "gzip" and up_to is None,
    )
    if up_to is None:  # frame offsets: 16 bytes of framing per record
        assert [k.rsplit(b":", 1)[1] for k, _ in out[:4]] == [b"0", b"20", b"36", b"352"]


def test_tfrecord_compressed_file_without_options_is_data_loss(tmp_path):
    work = [write_tfrecords(tmp_path, "z.tfr", [b"abc"], "ZLIB")]
    with pytest.raises(tf.errors.DataLossError):
        elements(readers.TFRecordReader().read(work))


@pytest.mark.parametrize("options", ["BOGUS", 7])
def test_tfrecord_invalid_options_raise_like_legacy(options):
    with tf.Graph().as_default(), pytest.raises(ValueError):
        qp.TFRecordReader(options=options)
    with pytest.raises(ValueError, match="`options`") as info:
        readers.TFRecordReader(options=options)
    assert "TFRecordReader" in str(info.value) and repr(options) in str(info.value)


# --------------------------------------------------------------------------- WholeFile / Identity


@pytest.mark.parametrize("up_to", [None, 1, 3], ids=lambda n: f"up_to={n}")
def test_whole_file_reader_matches_legacy(text_work, up_to):
    out = assert_parity(lambda m: m.WholeFileReader(), text_work, up_to, graph=up_to == 3)
    assert len(out) == len(text_work)  # one record per file, also with read_up_to


@pytest.mark.parametrize("up_to", [None, 1, 3], ids=lambda n: f"up_to={n}")
def test_identity_reader_matches_legacy(up_to):
    work = ["alpha", "", "beta", "alpha"]
    out = assert_parity(lambda m: m.IdentityReader(), work, up_to, graph=up_to is None)
    assert len(out) == len(work)


# --------------------------------------------------------------------------- read_up_to contract


def test_read_up_to_never_spans_two_files(tmp_path):
    """The legacy kernel contract: 5-record files with n=3 give 3, 2, 3, 2."""
    work = [write(tmp_path, f"{i}.txt", b"".join(b"l%d\n" % j for j in range(5))) for i in range(2)]
    sizes = [len(keys) for keys, _ in elements(readers.TextLineReader().read_up_to(work, 3))]
    assert sizes == [3, 2, 3, 2]
    n = tf.constant(3, tf.int64)  # a tensor num_records, as legacy accepts
    sizes = [len(k) for k, _ in elements(readers.TextLineReader().read_up_to(work, n))]
    assert sizes == [3, 2, 3, 2]


# --------------------------------------------------------------------------- with the producers


@pytest.mark.parametrize("num_epochs", [1, 2])
def test_pipeline_matches_legacy_pipeline(text_work, num_epochs):
    """string_input_producer -> TextLineReader(skip 1).read, both in order."""

    def build_legacy(m):
        files = m.string_input_producer(text_work, num_epochs=num_epochs, shuffle=False)
        return m.TextLineReader(skip_header_lines=1).read(files)

    g, fetch = build(qp, build_legacy)
    want = [py(tuple(x)) for x in drain(qp, g, fetch)]

    def twin():
        files = producers.string_input_producer(text_work, num_epochs=num_epochs, shuffle=False)
        return readers.TextLineReader(skip_header_lines=1).read(files)

    assert_produces(twin(), want)
    assert in_graph(twin) == want


def test_shuffled_pipeline_reads_every_record_once_per_epoch(text_work):
    per_epoch = legacy(qp, lambda m: m.TextLineReader(), text_work)
    files = producers.string_input_producer(text_work, num_epochs=3, seed=2)
    got = elements(readers.TextLineReader().read(files))
    assert collections.Counter(got) == collections.Counter(per_epoch * 3)
    # Files are read whole, one after another: each run of one file's records
    # is that whole file, in order.
    by_file = collections.defaultdict(list)
    for record in per_epoch:
        by_file[record[0].rsplit(b":", 1)[0]].append(record)
    runs = []
    for record in got:
        name = record[0].rsplit(b":", 1)[0]
        if not runs or runs[-1][0] != name or len(runs[-1][1]) == len(by_file[name]):
            runs.append((name, []))
        runs[-1][1].append(record)
    assert all(records == by_file[name] for name, records in runs)
    assert len(runs) == 3 * len(by_file)


def test_read_accepts_match_filenames_once(text_work, tmp_path):
    files = producers.match_filenames_once(str(tmp_path / "*.txt"))
    got = elements(readers.WholeFileReader().read(files))
    assert [k for k, _ in got] == sorted(f.encode() for f in text_work)


@pytest.mark.v2_only(
    "tf.train.Checkpoint of an eager iterator; TF1 mode: "
    "test_saver_over_the_iterator_replaces_serialize_state"
)
def test_iterator_checkpoint_replaces_serialize_state(text_work, tmp_path):
    ds = readers.TextLineReader().read(text_work)
    iterator = iter(ds)
    first = [py((k.numpy(), v.numpy())) for k, v in (next(iterator) for _ in range(4))]
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    rest = eager_rest(iterator)
    fresh = iter(ds)
    tf.train.Checkpoint(iterator=fresh).restore(path)
    assert eager_rest(fresh) == rest
    assert first + rest == elements(ds)


@pytest.mark.slow
def test_saver_over_the_iterator_replaces_serialize_state(text_work, tmp_path):
    """The Session way of saving a reader's position: a Saver over the iterator."""
    g = tf.Graph()
    with g.as_default():
        iterator = tf.compat.v1.data.make_initializable_iterator(
            readers.TextLineReader().read(text_work)
        )
        next_record = iterator.get_next()
        saveable = tf.compat.v1.data.experimental.make_saveable_from_iterator(iterator)
        saver = tf.compat.v1.train.Saver([saveable])

    def rest(sess):
        out = []
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                out.append(py(sess.run(next_record)))
        return out

    with new_session(g) as sess:
        sess.run(iterator.initializer)
        first = [py(sess.run(next_record)) for _ in range(4)]
        path = saver.save(sess, str(tmp_path / "ckpt"))
        after_save = rest(sess)
    with new_session(g) as sess:
        sess.run(iterator.initializer)
        saver.restore(sess, path)
        assert rest(sess) == after_save
    assert first + after_save == elements(readers.TextLineReader().read(text_work))


def eager_rest(iterator):
    return [py((k.numpy(), v.numpy())) for k, v in iterator]


def test_custom_reader_ref():
    reader = readers.ReaderBase(
        lambda work: tf.data.Dataset.from_tensor_slices(
            (tf.strings.join([work, ":", ["a", "b", "c"]]), ["1", "2", "3"])
        )
    )
    assert reader.supports_serialize is False and callable(reader.reader_ref)
    assert_produces(reader.read(["w"]), [(b"w:a", b"1"), (b"w:b", b"2"), (b"w:c", b"3")])
    assert [len(k) for k, _ in elements(reader.read_up_to(["v", "w"], 2))] == [2, 1, 2, 1]


def test_supports_serialize_as_legacy():
    with tf.Graph().as_default():
        for name, args in [
            ("TextLineReader", ()),
            ("FixedLengthRecordReader", (4,)),
            ("TFRecordReader", ()),
            ("WholeFileReader", ()),
            ("IdentityReader", ()),
        ]:
            assert (
                getattr(readers, name)(*args).supports_serialize
                == getattr(qp, name)(*args).supports_serialize
            ), name


# --------------------------------------------------------------------------- errors and warnings


@pytest.mark.parametrize("method", STATE_METHODS)
def test_state_methods_raise_naming_the_alternative(method):
    reader = readers.IdentityReader()
    args = ("state",) if method == "restore_state" else ()
    with pytest.raises(NotImplementedError, match=f"IdentityReader.{method}") as info:
        getattr(reader, method)(*args)
    assert "tf.train.Checkpoint" in str(info.value) or "iter(dataset)" in str(info.value)


ERRORS = {
    "negative_skip": (
        lambda: readers.TextLineReader(skip_header_lines=-1),
        ValueError,
        "skip_header_lines",
    ),
    "zero_record_bytes": (lambda: readers.FixedLengthRecordReader(0), ValueError, "record_bytes"),
    "negative_header": (
        lambda: readers.FixedLengthRecordReader(4, header_bytes=-1),
        ValueError,
        "header_bytes",
    ),
    "negative_footer": (
        lambda: readers.FixedLengthRecordReader(4, footer_bytes=-2),
        ValueError,
        "footer_bytes",
    ),
    "negative_hop": (
        lambda: readers.FixedLengthRecordReader(4, hop_bytes=-3),
        ValueError,
        "hop_bytes",
    ),
    "encoding_not_string": (
        lambda: readers.FixedLengthRecordReader(4, encoding=1),
        TypeError,
        "encoding",
    ),
    "zero_num_records": (
        lambda: readers.TextLineReader().read_up_to(["f"], 0),
        ValueError,
        "num_records",
    ),
    "int_filenames": (lambda: readers.TextLineReader().read([1, 2]), TypeError, "filenames"),
    "matrix_filenames": (
        lambda: readers.TFRecordReader().read(tf.data.Dataset.from_tensors(["a", "b"])),
        TypeError,
        "filenames",
    ),
    "object_filenames": (lambda: readers.WholeFileReader().read(object()), TypeError, "filenames"),
    "reader_ref_not_callable": (
        lambda: readers.ReaderBase(tf.constant(1)),
        TypeError,
        "reader_ref",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_name_api_and_argument(case):
    make, error, text = ERRORS[case]
    with pytest.raises(error, match=text) as info:
        make()
    assert "queue_pipeline.data." in str(info.value)


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError):
        elements(readers.TextLineReader().read([str(tmp_path / "missing.txt")]))


INERT = {
    "TextLineReader": lambda **kw: readers.TextLineReader(**kw),
    "FixedLengthRecordReader": lambda **kw: readers.FixedLengthRecordReader(4, **kw),
    "TFRecordReader": lambda **kw: readers.TFRecordReader(**kw),
    "WholeFileReader": lambda **kw: readers.WholeFileReader(**kw),
    "IdentityReader": lambda **kw: readers.IdentityReader(**kw),
}


@pytest.mark.parametrize("name", list(INERT))
def test_name_arguments_warn(name):
    with pytest.warns(UserWarning, match=f"{name}: the `name` argument"):
        INERT[name](name="r")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader = INERT[name]()
        reader.read(["w"])
        reader.read_up_to(["w"], 2)
    with pytest.warns(UserWarning, match=rf"{name}\.read: the `name` argument"):
        reader.read(["w"], name="x")
    with pytest.warns(UserWarning, match=rf"{name}\.read_up_to: the `name` argument"):
        reader.read_up_to(["w"], 2, name="x")


# --------------------------------------------------------------------------- the TF1 way


def test_files_fed_to_an_initializable_iterator(tmp_path):
    """The TF1 tf.data idiom: file names fed through a placeholder at initialization.

    One graph serves two file lists, each read to its end after its own
    ``initializer`` run, as TF 1.x training/validation scripts switch inputs.
    """
    first = [
        write_tfrecords(tmp_path, "a.tfr", [b"a1", b"a2"]),
        write_tfrecords(tmp_path, "b.tfr", [b"b1"]),
    ]
    second = [write_tfrecords(tmp_path, "c.tfr", [b"c1", b"c2", b"c3"])]
    g = tf.Graph()
    with g.as_default():
        names = tf.compat.v1.placeholder(tf.string, [None], name="filenames")
        queue = producers.string_input_producer(names, num_epochs=1, shuffle=False)
        records = readers.TFRecordReader().read(queue, keys=False)
        ds = data.batch(records, 2, allow_smaller_final_batch=True)
        iterator = tf.compat.v1.data.make_initializable_iterator(ds)
        next_batch = iterator.get_next()

    def read_all(sess, files):
        sess.run(iterator.initializer, feed_dict={names: files})
        out = []
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                out.append(sess.run(next_batch).tolist())
        return out

    with new_session(g) as sess:
        assert read_all(sess, first) == [[b"a1", b"a2"], [b"b1"]]
        assert read_all(sess, second) == [[b"c1", b"c2"], [b"c3"]]
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-null input tensor"):
            sess.run(iterator.initializer, feed_dict={names: []})  # no file: refused
