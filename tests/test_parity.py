"""Parity over the migration table: every legacy symbol against its tf.data twin.

Each row of ``queue_pipeline.data.migration.MIGRATIONS`` has at least one case
here: the legacy pipeline (queue_pipeline's faithful API) and its twin
(``queue_pipeline.data``, same name, same arguments) over the same data, run
through ``queue_pipeline.compare``: same element structure, dtypes and shapes,
same per-epoch multisets, and the same order where both are deterministic.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from queue_pipeline import compare, data
from queue_pipeline.data import migration

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small files in every on-disk format the readers take."""
    root = tmp_path_factory.mktemp("parity")
    text = []
    for i in range(3):
        path = root / f"lines{i}.csv"
        path.write_text("h1,h2\n" + "".join(f"{i},{j}\n" for j in range(4 + i)))
        text.append(str(path))
    fixed = []
    for i in range(2):
        path = root / f"fixed{i}.bin"
        path.write_bytes(bytes(range(i * 50, i * 50 + 26)))  # 2 + 6*4 bytes: header 2
        fixed.append(str(path))
    records = []
    for i in range(2):
        path = root / f"records{i}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for j in range(3 + i):
                writer.write(f"record-{i}-{j}".encode() * (j + 1))
        records.append(str(path))
    return {"root": root, "text": text, "fixed": fixed, "records": records}


def _legacy_read(reader, filenames):
    def build():
        queue = qp.string_input_producer(filenames, num_epochs=1, shuffle=False)
        return reader().read(queue)

    return build


def _legacy_read_up_to(reader, filenames, n):
    def build():
        queue = qp.string_input_producer(filenames, num_epochs=1, shuffle=False)
        return reader().read_up_to(queue, n)

    return build


def _range_source(n=21, epochs=2):
    return lambda: qp.range_input_producer(n, num_epochs=epochs, shuffle=False).dequeue()


def _range_twin(n=21, epochs=2):
    return data.range_input_producer(n, num_epochs=epochs, shuffle=False)


def _cases(files):
    """{row legacy name: [(case id, legacy callable, twin callable, compare kwargs)]}."""
    rows = np.arange(20, dtype=np.int64).reshape(10, 2)
    labels = np.arange(10, dtype=np.int32)
    text, fixed, records = files["text"], files["fixed"], files["records"]
    glob = str(files["root"] / "lines*.csv")
    return {
        "string_input_producer": [
            (
                "ordered",
                lambda: qp.string_input_producer(text, num_epochs=2, shuffle=False).dequeue(),
                lambda: data.string_input_producer(text, num_epochs=2, shuffle=False),
                {},
            ),
            (
                "shuffled",
                lambda: qp.string_input_producer(text, num_epochs=3, seed=4).dequeue(),
                lambda: data.string_input_producer(text, num_epochs=3, seed=4),
                {},
            ),
        ],
        "input_producer": [
            (
                "rows",
                lambda: qp.input_producer(tf.constant(rows), num_epochs=2, shuffle=False).dequeue(),
                lambda: data.input_producer(tf.constant(rows), num_epochs=2, shuffle=False),
                {},
            ),
        ],
        "range_input_producer": [
            ("ordered", _range_source(), lambda: _range_twin(), {}),
            (
                "shuffled",
                lambda: qp.range_input_producer(9, num_epochs=2, seed=1).dequeue(),
                lambda: data.range_input_producer(9, num_epochs=2, seed=1),
                {},
            ),
        ],
        "slice_input_producer": [
            (
                "pairs",
                lambda: qp.slice_input_producer(
                    [tf.constant(rows), tf.constant(labels)], num_epochs=2, shuffle=False
                ),
                lambda: data.slice_input_producer(
                    [tf.constant(rows), tf.constant(labels)], num_epochs=2, shuffle=False
                ),
                {},
            ),
        ],
        "limit_epochs": [
            (
                "three",
                lambda: qp.limit_epochs(tf.constant([1, 2]), 3),
                lambda: data.limit_epochs(tf.constant([1, 2]), 3),
                {"epochs": 3},
            ),
        ],
        "match_filenames_once": [
            (
                "as_producer_input",
                lambda: qp.string_input_producer(
                    qp.match_filenames_once(glob), num_epochs=1, shuffle=False
                ).dequeue(),
                lambda: data.match_filenames_once(glob),
                {},
            ),
        ],
        "TextLineReader": [
            (
                "header",
                _legacy_read(lambda: qp.TextLineReader(skip_header_lines=1), text),
                lambda: data.TextLineReader(skip_header_lines=1).read(text),
                {},
            ),
            (
                "read_up_to",
                _legacy_read_up_to(lambda: qp.TextLineReader(), text, 3),
                lambda: data.TextLineReader().read_up_to(text, 3),
                {},
            ),
        ],
        "FixedLengthRecordReader": [
            (
                "header",
                _legacy_read(lambda: qp.FixedLengthRecordReader(4, header_bytes=2), fixed),
                lambda: data.FixedLengthRecordReader(4, header_bytes=2).read(fixed),
                {},
            ),
            (
                "hop",
                _legacy_read(lambda: qp.FixedLengthRecordReader(4, hop_bytes=3), fixed),
                lambda: data.FixedLengthRecordReader(4, hop_bytes=3).read(fixed),
                {},
            ),
        ],
        "TFRecordReader": [
            (
                "plain",
                _legacy_read(qp.TFRecordReader, records),
                lambda: data.TFRecordReader().read(records),
                {},
            ),
        ],
        "WholeFileReader": [
            (
                "files",
                _legacy_read(qp.WholeFileReader, text),
                lambda: data.WholeFileReader().read(text),
                {},
            ),
        ],
        "IdentityReader": [
            (
                "work",
                _legacy_read(qp.IdentityReader, ["a", "b", "c"]),
                lambda: data.IdentityReader().read(["a", "b", "c"]),
                {},
            ),
        ],
        "batch": [
            (
                "tail_kept",
                lambda: qp.batch([_range_source()()], 4, allow_smaller_final_batch=True),
                lambda: data.batch(_range_twin(), 4, allow_smaller_final_batch=True),
                {},
            ),
            (
                "tail_dropped_dict",
                lambda: qp.batch({"x": _range_source()(), "y": tf.constant("s")}, 4),
                lambda: data.batch(_range_twin().map(lambda x: {"x": x, "y": tf.constant("s")}), 4),
                {},
            ),
        ],
        "maybe_batch": [
            (
                "keep_even",
                lambda: _maybe(qp.maybe_batch),
                lambda: data.maybe_batch(
                    _range_twin(), lambda x: tf.equal(x % 2, 0), 4, allow_smaller_final_batch=True
                ),
                {},
            ),
        ],
        "batch_join": [
            (
                "two_lists",
                lambda: qp.batch_join(
                    [[_range_source(5, 1)()], [_range_source(7, 1)() + 100]],
                    3,
                    allow_smaller_final_batch=True,
                ),
                lambda: data.batch_join(
                    [_range_twin(5, 1), _range_twin(7, 1).map(lambda x: x + 100)],
                    3,
                    allow_smaller_final_batch=True,
                ),
                {},
            ),
        ],
        "maybe_batch_join": [
            (
                "keep_even",
                lambda: qp.maybe_batch_join(
                    [[_range_source(6, 1)()], [_range_source(6, 1)() + 100]],
                    tf.constant(True),
                    2,
                    allow_smaller_final_batch=True,
                ),
                lambda: data.maybe_batch_join(
                    [_range_twin(6, 1), _range_twin(6, 1).map(lambda x: x + 100)],
                    True,
                    2,
                    allow_smaller_final_batch=True,
                ),
                {},
            ),
        ],
        "shuffle_batch": [
            (
                "seeded",
                lambda: qp.shuffle_batch(
                    [_range_source()()], 4, 20, 5, seed=3, allow_smaller_final_batch=True
                ),
                lambda: data.shuffle_batch(
                    _range_twin(), 4, 20, 5, seed=3, allow_smaller_final_batch=True
                ),
                {},
            ),
        ],
        "maybe_shuffle_batch": [
            (
                "keep_odd",
                lambda: _maybe(qp.maybe_shuffle_batch, odd=True),
                lambda: data.maybe_shuffle_batch(
                    _range_twin(),
                    4,
                    20,
                    5,
                    lambda x: tf.equal(x % 2, 1),
                    allow_smaller_final_batch=True,
                ),
                {},
            ),
        ],
        "shuffle_batch_join": [
            (
                "two_lists",
                lambda: qp.shuffle_batch_join(
                    [[_range_source(8, 1)()], [_range_source(8, 1)() + 100]],
                    3,
                    12,
                    4,
                    allow_smaller_final_batch=True,
                ),
                lambda: data.shuffle_batch_join(
                    [_range_twin(8, 1), _range_twin(8, 1).map(lambda x: x + 100)],
                    3,
                    12,
                    4,
                    allow_smaller_final_batch=True,
                ),
                {},
            ),
        ],
        "maybe_shuffle_batch_join": [
            (
                "keep_all",
                lambda: qp.maybe_shuffle_batch_join(
                    [[_range_source(8, 1)()], [_range_source(8, 1)() + 100]],
                    3,
                    12,
                    4,
                    tf.constant(True),
                    allow_smaller_final_batch=True,
                ),
                lambda: data.maybe_shuffle_batch_join(
                    [_range_twin(8, 1), _range_twin(8, 1).map(lambda x: x + 100)],
                    3,
                    12,
                    4,
                    True,
                    allow_smaller_final_batch=True,
                ),
                {},
            ),
        ],
    }


def _maybe(fn, odd=False):
    value = _range_source()()
    keep = tf.equal(value % 2, 1 if odd else 0)
    if fn is qp.maybe_shuffle_batch:
        return fn([value], 4, 20, 5, keep, allow_smaller_final_batch=True)
    return fn([value], keep, 4, allow_smaller_final_batch=True)


ROWS = [m.legacy for m in migration.MIGRATIONS]


def test_every_row_has_a_case(files):
    assert set(_cases(files)) == set(ROWS)


@pytest.mark.parametrize("row", ROWS)
def test_legacy_and_twin_deliver_the_same(files, row):
    for case, legacy, twin, kwargs in _cases(files)[row]:
        report = compare.compare(legacy, twin, timeout=20, **kwargs)
        assert report.matched, f"{row}/{case}:\n{report}"
