"""migrate on trial 52's shapes: a read chosen by a Python ``if``, N readers in lockstep,
messages for --call errors, Python 2 files and tf.contrib names, and blemishes of
written modules (#41).

hGRU's loader reads with ``read`` or ``read_up_to`` by a Python argument
(NOTE [ A read in the branch the run took ], ``_migrate/taken_reads.py``) and
calls its reading helper once per example of a batch (NOTE [ Readers in lockstep
on one queue ]). Run in the suite's TF mode (the suite runs this file with
``--tf1`` too); the programs spell TF as ``tf.compat.v1``, so they run in both.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate import verify as verify_module
from queue_pipeline._migrate.api import MigrateError, migrate
from queue_pipeline._migrate.python2_hints import python2_fix
from queue_pipeline._scripts.removed import removed_message

from helpers import copy_script, dataset_values, line_of, tf1_mode

pytestmark = pytest.mark.slow

BRANCH = "unseen52_branch_read.py"


def _records(path, count: int = 6) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(count):
            features = {
                "pixels": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[i, i + 1, i + 2, i + 3])
                ),
                "mask": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=features))
            writer.write(example.SerializeToString())


def _values(build) -> list:
    with tf.Graph().as_default():
        return dataset_values(build(), limit=10)


def _no_queue(source: str) -> None:
    for name in ("string_input_producer", ".read(", "read_up_to", "tf.train.batch("):
        assert name not in source.split("_dataset(", 1)[-1].split("\ndef ", 1)[0], name


@pytest.mark.parametrize("per_step, function", [(1, "contour_batches"), (2, "contour_chunks")])
def test_a_read_in_an_if_on_a_python_value_migrates_the_branch_taken(tmp_path, per_step, function):
    """Was: "cannot migrate `if number_of_files == 1:`: the read must assign `key, value =
    reader.read(queue)`"."""
    path = copy_script(BRANCH, tmp_path, "loader.py")
    data = tmp_path / "c.tfrecords"
    _records(data)
    call = f"{str(data)!r}, 2, 1" + (f", {per_step}" if function == "contour_chunks" else "")
    result = migrate(str(path), function, call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    record = result.added.split("def load_pair_record(", 1)[1].split("\ndef ", 1)[0]
    assert "per_step == 1:" in record and "raise ValueError(" in record
    assert ".read(" not in record and "read_up_to" not in record
    untaken = line_of(path, "else:") if per_step == 1 else line_of(path, "if per_step == 1:")
    assert any(f"loader.py:{untaken}:" in d and "did not take" in d for d in result.dropped)
    module = result.load()
    got = _values(lambda: getattr(module, f"{function}_dataset")(str(data), 2, 1, per_step))
    if per_step == 1:
        scale = 0.5
        assert [g[0][:, 0].tolist() for g in got] == [[0, scale], [2 * scale, 3 * scale], [2, 2.5]]
    else:
        assert [g[0][:, 0].tolist() for g in got] == [[0, 1], [2, 3], [4, 5]]
    assert [g[1].tolist() for g in got] == [[0, 1]] * 3


@pytest.mark.parametrize("epochs", ["1", "None"])
def test_a_reading_helper_called_in_a_loop_is_refused_at_the_loop(tmp_path, epochs):
    """N readers of one queue in lockstep: each takes a file of its own (TF delivers
    nothing with one file and num_epochs=1); was a DIFFER blaming the twin."""
    path = copy_script(BRANCH, tmp_path, "loader.py")
    data = tmp_path / "c.tfrecords"
    _records(data)
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "contour_stacks", call=f"{str(data)!r}, 3, {epochs}", tf1=tf1_mode())
    text = str(caught.value)
    assert f"loader.py:{line_of(path, 'for _ in range(copies):')}:" in text
    assert "`load_pair` is called 3 times here (in a loop)" in text
    assert "TF delivers nothing" in text and "batch_size=3" in text
    assert ".." not in text.replace(str(tmp_path), "")


def test_tf_itself_gives_nothing_to_readers_left_without_a_file(tmp_path):
    """The probe behind the refusal: 3 readers on a one-file queue with num_epochs=1."""
    data = tmp_path / "c.tfrecords"
    _records(data)
    with tf.Graph().as_default():
        queue = tf.compat.v1.train.string_input_producer([str(data)], num_epochs=1)
        reads = [tf.compat.v1.TFRecordReader().read(queue)[1] for _ in range(3)]
        with tf.compat.v1.Session(
            config=tf.compat.v1.ConfigProto(operation_timeout_in_ms=20000)
        ) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess, coord)
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(reads)
            coord.request_stop()
            coord.join(threads)


def test_a_legacy_side_that_delivers_nothing_is_unverified_said_plainly():
    side = types.SimpleNamespace
    report = side(matched=False, legacy=side(examples=0), twin=side(examples=4))
    why = verify_module._legacy_empty(report)
    assert why.startswith("the legacy pipeline delivered nothing with these arguments")
    assert "not a difference of the tf.data version" in why
    report.legacy.examples = 4
    assert verify_module._legacy_empty(report) == ""


def test_an_error_of_the_call_arguments_names_the_users_line(tmp_path):
    """KittiSeg's `tf.scalar_summary` in a function --call runs: was a message with no
    file:line, ending in "1.0..""."""
    path = copy_script("unseen52_call_summary.py", tmp_path, "queues.py")
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "lines_from", call="make_queue(8), 2", tf1=tf1_mode())
    text = str(caught.value)
    line = line_of(path, "tf.scalar_summary(")
    assert f"queues.py:{line} (`tf.scalar_summary(" in text, text
    assert ".." not in text.replace(str(tmp_path), ""), text
    assert text.endswith(".") and f"Fix: at {path}:{line}" in text, text
    assert "renamed `tf.compat.v1.summary.scalar`" in text, text


def test_a_python2_idiom_at_module_level_says_the_file_is_python2(tmp_path):
    """census: `zip(...)[0]` (was: "run migrate where the file's imports and data are found")."""
    path = copy_script("unseen52_py2_columns.py", tmp_path, "model.py")
    (tmp_path / "rows.csv").write_text("a,x,1\nb,y,2\n")
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "rows", call=f"[{str(tmp_path / 'rows.csv')!r}], 2", tf1=tf1_mode())
    text = str(caught.value)
    assert f"model.py:{line_of(path, 'UNUSED =')}:" in text
    assert "written for Python 2" in text and "`list(zip(...))[i]`" in text, text
    assert "imports and data are found" not in text


@pytest.mark.parametrize(
    "code, spelled",
    [
        ("{'a': 1}.keys()[0]", "list(d.keys())[i]"),
        ("map(str, [1])[0]", "list(map(...))[i]"),
        ("xrange(3)", "`range` for `xrange`"),
        ("unicode('a')", "`str` for `unicode`"),
        ("{'a': 1}.iteritems()", "`d.items()` for `.iteritems`"),
        ("{'a': 1}.has_key('a')", "`key in d` for `.has_key`"),
    ],
)
def test_python2_idioms_get_their_python3_spelling(code, spelled):
    try:
        eval(code)  # noqa: S307 - the idiom under test
    except Exception as e:  # noqa: BLE001
        fix = python2_fix(e)
    assert "written for Python 2" in fix and spelled in fix, fix
    assert python2_fix(TypeError("'int' object is not subscriptable")) == ""


@pytest.mark.parametrize(
    "chain, replacement",
    [
        (["contrib", "layers", "create_feature_spec_for_parsing"], "make_parse_example_spec"),
        (["contrib", "layers", "real_valued_column"], "tf.feature_column.numeric_column"),
        (["contrib", "learn", "io", "read_batch_features"], "make_batched_features_dataset"),
        (["contrib", "learn", "read_batch_examples"], "tf.data.TFRecordDataset(files)"),
    ],
)
def test_contrib_names_get_their_own_replacement(chain, replacement):
    """chatbot: was pointed at tf_slim.layers for a feature-spec function."""
    text = removed_message("tf", chain)
    assert f"`tf.{'.'.join(chain)}` was removed" in text and replacement in text, text
    assert "tf_slim" not in text and not text.endswith("..")


def test_a_removed_import_the_tf_data_code_does_not_need_is_commented_out(tmp_path):
    """FastMaskRCNN: the written module kept `import tensorflow.contrib.slim` and could not
    be imported on TensorFlow 2.x."""
    path = copy_script("unseen52_slim_records.py", tmp_path, "records.py")
    data = tmp_path / "n.tfrecords"
    with tf.io.TFRecordWriter(str(data)) as writer:
        for i in range(4):
            feature = {"count": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    out = tmp_path / "records_new.py"
    result = migrate(
        str(path), "count_batches", call=f"[{str(data)!r}], 2", out=str(out), tf1=tf1_mode()
    )
    assert result.verdict.status == "MATCH", result.report()
    line = line_of(path, "import tensorflow.contrib.slim")
    assert "# import tensorflow.contrib.slim as slim  # removed in TensorFlow 2.x" in result.source
    note = next(d for d in result.differences if f"records.py:{line}:" in d)
    assert "commented out" in note and "import tf_slim as slim" in note
    check = "import records_new; print(len(list(records_new.count_batches_dataset({0!r}, 2))))"
    done = subprocess.run(
        [sys.executable, "-c", check.format([str(data)])],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "2", done.stderr[-2000:]


def test_a_script_calling_a_migrated_helper_prefetches_once(tmp_path, monkeypatch):
    """sunkevin's test_queue: `dataset = dataset.prefetch(...)` after a helper that returns
    a prefetched Dataset."""
    path = copy_script("unseen52_script_helper.py", tmp_path, "queue_test.py")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "queue_test_new.py"
    result = migrate(str(path), "", out=str(out), tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert result.source.count(".prefetch(") == 1, result.source
    assert "dataset = make_batches_dataset()\n" in result.source
    assert (
        "string_input_producer" not in result.source and "start_queue_runners" not in result.source
    )
    done = subprocess.run(
        [sys.executable, str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("array(") == 6


def test_comments_above_a_replaced_batching_call_are_kept(tmp_path, monkeypatch):
    """readCsv: the two comments above `tf.train.batch(` were dropped."""
    path = copy_script("unseen52_script_comments.py", tmp_path, "read_csv.py")
    (tmp_path / "scores.csv").write_text("".join(f"n{i},{i}.5\n" for i in range(10)))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "read_csv_new.py"
    result = migrate(str(path), "", out=str(out), tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    source = result.source
    first = source.index("# batch() adds a queue of examples")
    assert source.index("# rows are dequeued five at a time.") > first
    assert source.index(".batch(5", first) > first
    assert "tf.train.batch(" not in source
    done = subprocess.run(
        [sys.executable, str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert np.char.count(done.stdout, "n0").item() == 1
