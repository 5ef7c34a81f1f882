"""migrate on a join of a literal list and on a batching call's ``shapes=`` (#41).

NOTE [ A join of a literal list ] (``queue_pipeline/_migrate/joins.py``):
``*_batch_join([x], ...)`` is ``*_batch(x, ...)`` with its ``enqueue_many``;
``[read(queue), read(queue)]`` is two readers of one queue (an interleave);
lists read by different code are refused with the line and the fix.
NOTE [ A batching call's shapes ] (``queue_pipeline/_migrate/batch_shapes.py``):
shapes that repeat the records' static shapes are dropped, shapes that fix
an open dimension become ``tf.ensure_shape`` before the batch. The programs
are ``tests/scripts/unseen_read_up_to_join.py`` and
``tests/scripts/unseen_batch_shapes.py``; run in the suite's TF mode (the
suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import importlib.util

import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate
from queue_pipeline._migrate.batch_shapes import narrowed_shapes
from queue_pipeline.plan import PlanNode
from helpers import copy_script, line_of


def _csv_parts(directory, parts: int = 2, rows: int = 10) -> list[str]:
    names = []
    for p in range(parts):
        path = directory / f"part{p}.csv"
        path.write_text("".join(f"n{p}{i},c{i % 3},{i},{i / 2}\n" for i in range(rows)))
        names.append(str(path))
    return names


def _sequences(path, count: int = 10) -> None:
    """SequenceExamples: a float ``signal`` of 12..15 steps, its ``length``, a ``label``."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(count):
            n = 12 + i % 4
            example = tf.train.SequenceExample()
            example.context.feature["length"].int64_list.value.append(n)
            example.context.feature["label"].int64_list.value.append(i % 3)
            steps = example.feature_lists.feature_list["signal"]
            for k in range(n):
                steps.feature.add().float_list.value.append(i + k / 100)
            writer.write(example.SerializeToString())


# -- D: joins of a literal list ---------------------------------------------------------


def test_a_join_of_one_list_of_chunks_is_the_plain_batch_of_its_rows(tmp_path):
    """``shuffle_batch_join([columns], enqueue_many=True)`` after ``read_up_to`` +
    ``decode_csv``: one list is one thread, so it migrates as ``shuffle_batch`` of
    the unbatched rows (was: refused, "the join's lists must be ...")."""
    path = copy_script("unseen_read_up_to_join.py", tmp_path, "csv_reader.py")
    files = _csv_parts(tmp_path)
    result = migrate(str(path), "chunk_read", call=f"{files!r}, 4, 1")
    assert result.verdict.status == "MATCH", result.report()
    added = result.added
    assert "tf.data.TextLineDataset(f).batch(batch_size)" in added
    assert "dataset = records.unbatch()" in added
    assert "dataset = dataset.shuffle(batch_size * 5)" in added
    assert "dataset = dataset.batch(batch_size, drop_remainder=True)" in added
    assert "batch_join" not in added
    step = next(s for s in result.steps if s.legacy == "shuffle_batch_join")
    assert step.replacement.startswith("dataset = records.unbatch()")


def test_pipelines_returned_in_lists_filled_in_a_loop_are_each_proven(tmp_path):
    """``train.append(chunk_read([f], ...))`` per file, then ``return train, test``:
    the tf.data version returns Datasets in the same lists, and the proof
    compares each with the legacy pipeline in its place (NOTE [ Pipelines
    returned in lists ]; was: "compare: `twin` must return a tf.data.Dataset")."""
    path = copy_script("unseen_read_up_to_join.py", tmp_path, "csv_reader.py")
    files = _csv_parts(tmp_path, parts=3)
    result = migrate(str(path), "get_splits", call=f"{files[:2]!r}, {files[2:]!r}, 4, 1")
    assert result.verdict.status == "MATCH", result.report()
    assert "each of the 3 Datasets it returns compared on its own" in result.verdict.reason
    written = tmp_path / "csv_reader_tf.py"  # autograph reads the code from its file
    written.write_text(result.source)
    spec = importlib.util.spec_from_file_location("csv_reader_tf", written)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tf.Graph().as_default():
        train, test = getattr(module, result.function)(files[:2], files[2:], 4, 1)
    assert all(isinstance(d, tf.data.Dataset) for d in train + test)
    assert (len(train), len(test)) == (2, 1)


def test_a_literal_list_of_one_reading_helper_is_an_interleave_of_its_readers(tmp_path):
    """``batch_join([read_row(queue), read_row(queue)], ...)``: two readers of one
    queue, as the comprehension ``[read_row(queue) for _ in range(2)]``."""
    path = copy_script("unseen_read_up_to_join.py", tmp_path, "csv_reader.py")
    files = _csv_parts(tmp_path)
    result = migrate(str(path), "two_readers", call=f"{files!r}")
    assert result.verdict.status == "MATCH", result.report()
    assert "tf.data.TextLineDataset, cycle_length=2" in result.added
    assert "records.map(read_row_record" in result.added
    assert "records.batch(batch_size, drop_remainder=True)" in result.added


def test_a_join_of_one_reading_helper_call_is_one_reader_in_file_order(tmp_path):
    """``batch_join([read_row(queue)], ...)``: one list, one reader; proven in order."""
    path = copy_script("unseen_read_up_to_join.py", tmp_path, "csv_reader.py")
    files = _csv_parts(tmp_path)
    result = migrate(str(path), "one_reader", call=f"{files!r}")
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("ordered")
    assert "tf.data.TextLineDataset, cycle_length=1" in result.added
    assert "records.map(read_row_record" in result.added


def test_a_join_of_lists_read_by_different_code_is_refused_with_line_and_fix(tmp_path):
    path = copy_script("unseen_read_up_to_join.py", tmp_path, "csv_reader.py")
    files = _csv_parts(tmp_path)
    with pytest.raises(MigrateError) as info:
        migrate(str(path), "two_helpers", call=f"{files!r}")
    message = str(info.value)
    assert f"csv_reader.py:{line_of(path, 'read_row_upper(queue)], batch_size')}:" in message
    assert "the join's 2 lists `[read_row(queue), read_row_upper(queue)]`" in message
    assert "[read(queue) for _ in range(n)]" in message
    assert "sample_from_datasets" in message


# -- B: a batching call's shapes ---------------------------------------------------------


def test_shapes_repeating_the_static_shapes_are_dropped_for_padded_batch(tmp_path):
    """``shapes=[[None], [], []]`` with ``dynamic_pad`` on records whose static shapes
    are ``[None], [], []`` (``placeholder_with_default(data, [None])``): dropped,
    ``padded_batch`` pads as the PaddingFIFOQueue (was: refused)."""
    path = copy_script("unseen_batch_shapes.py", tmp_path, "ops.py")
    _sequences(tmp_path / "seq.tfrecord")
    result = migrate(str(path), "padded_producer", call=f"{str(tmp_path / 'seq.tfrecord')!r}, 4")
    assert result.verdict.status == "MATCH", result.report()
    assert "dataset = records.padded_batch(batch_size, drop_remainder=True)" in result.added
    assert "shapes" not in result.added.split("def padded_producer_dataset")[1]
    assert "tf.ensure_shape" not in result.added
    step = next(s for s in result.steps if s.legacy.startswith("batch(shapes="))
    assert step.replacement == "dropped: the records' static shapes already say it"


def test_shapes_fixing_an_open_dimension_become_ensure_shape(tmp_path):
    """``shapes=[[window], []]`` for a ``[None]`` slice: the queue checks every
    record and gives the batch a static width; ``tf.ensure_shape`` does both,
    spelled from the call's own source (``window`` stays a parameter)."""
    path = copy_script("unseen_batch_shapes.py", tmp_path, "ops.py")
    _sequences(tmp_path / "seq.tfrecord")
    result = migrate(str(path), "window_producer", call=f"{str(tmp_path / 'seq.tfrecord')!r}")
    assert result.verdict.status == "MATCH", result.report()
    assert (
        "dataset = records.map(lambda t0, t1: (tf.ensure_shape(t0, [window]), t1))" in result.added
    )
    module = result.load()
    dataset = module.window_producer_dataset(str(tmp_path / "seq.tfrecord"), 4, 6)
    assert dataset.element_spec[0].shape.as_list() == [4, 6]


def test_shapes_of_enqueue_many_rows_are_checked_after_unbatch(tmp_path):
    path = copy_script("unseen_batch_shapes.py", tmp_path, "ops.py")
    _sequences(tmp_path / "seq.tfrecord")
    result = migrate(str(path), "window_rows", call=f"{str(tmp_path / 'seq.tfrecord')!r}")
    assert result.verdict.status == "MATCH", result.report()
    lines = [line.strip() for line in result.added.splitlines()]
    at = lines.index("dataset = records.unbatch()")
    assert lines[at + 1] == "dataset = dataset.map(lambda t0: tf.ensure_shape(t0, [window]))"


def test_shapes_fixing_the_records_of_a_join_are_refused_with_line_and_fix(tmp_path):
    """The lists of a join are read by a helper, and their element is not one
    expression of the function: the narrowing ``shapes`` is refused with the fix."""
    path = copy_script("unseen_batch_shapes.py", tmp_path, "ops.py")
    _sequences(tmp_path / "seq.tfrecord")
    with pytest.raises(MigrateError) as info:
        migrate(str(path), "joined_windows", call=f"{str(tmp_path / 'seq.tfrecord')!r}")
    message = str(info.value)
    assert f"ops.py:{line_of(path, 'return tf.train.batch_join(')}:" in message
    assert "batch_join's `shapes` fixes a dimension its records leave open" in message
    assert "set the shapes in the per-record code (`x.set_shape(...)`)" in message


def _node(shapes, tensors, **args) -> PlanNode:
    return PlanNode("batch", dict(shapes=shapes, **args), tuple(tensors), ())


def test_narrowed_shapes_compares_given_and_static_shapes():
    with tf.Graph().as_default():
        vector = tf.compat.v1.placeholder(tf.float32, [None])
        image = tf.compat.v1.placeholder(tf.uint8, [None, None, 3])
        fixed = tf.compat.v1.placeholder(tf.int32, [5])
        rows = tf.compat.v1.placeholder(tf.int32, [None, 4])
        unknown = tf.compat.v1.placeholder(tf.int32, None)
        assert (
            narrowed_shapes([_node([[None], [], [None, None, 3]], [vector, fixed[0], image])]) == []
        )
        assert narrowed_shapes([_node([[None]], [fixed])]) == []  # less precise: harmless
        assert narrowed_shapes([_node([[8, 8, 3], [5]], [image, fixed])]) == [0]
        assert narrowed_shapes([_node([[4]], [rows], enqueue_many=True)]) == []
        assert narrowed_shapes([_node([[]], [unknown])]) == [0]  # the rank itself
        joined = _node([[3]], [vector, vector], num_lists=2)
        assert narrowed_shapes([joined]) == [0]
        with pytest.raises(ValueError, match="shape \\(6,\\) for a record of static shape"):
            narrowed_shapes([_node([[6]], [fixed])])
        with pytest.raises(ValueError, match="2 shape\\(s\\) for 1 tensor"):
            narrowed_shapes([_node([[5], []], [fixed])])
        sparse = tf.SparseTensor([[0]], [1], [3])
        with pytest.raises(ValueError, match="SparseTensor"):
            narrowed_shapes([_node([[3]], [sparse])])
