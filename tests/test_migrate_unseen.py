"""migrate on shapes of a third round of public programs it had not seen (#41).

A program's own Python object called on a folder (not a queue) beside a
``py_func`` label (Cat-GAN); a constructor rebinding its feature specs' names
to the parsed tensors (entity networks); a count returned beside batches that
were computed on (seq2seq regression), and an unbatched record beside them
refused; ``**`` arguments of an own queue read from the queue the run built; a reading
function in a package (object detection), from a plain function and from a
``main()`` that runs the session itself; a constructor building a training
and a validation pipeline (face attributes). Each program is in
``tests/scripts/unseen_*``. Run in the suite's TF mode (the suite runs this file
with ``--tf1`` too).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline import cli
from queue_pipeline._migrate.api import MigrateError, migrate
from helpers import copy_script, line_of

# Whole-program migrations of programs shaped like public code (seconds each):
# the full suite runs them in both TF modes, the quick suite (`-m 'not slow'`,
# CI's run on the other Pythons) leaves them to it.
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


def test_an_object_walking_a_folder_is_not_followed_and_a_py_func_label_migrates(tmp_path):
    """``FileNameQueue(folder, 1)`` calls its own method on a folder: no queue is
    handed, so it is the program's, run as is (was: a copy "does not exist"); the
    label made by ``tf.py_func`` from the key stays in the per-record function."""
    path = copy_script("unseen_image_pipeline.py", tmp_path, "imagePipeline.py")
    (tmp_path / "data").mkdir()
    for i in range(24):
        kind = "cat" if i % 3 else "dog"
        (tmp_path / "data" / f"{kind}{i:02d}.txt").write_text(f"{i} {i + 1} {i + 2} {i + 3}")
    result = migrate(str(path), "inputPipeline", call=f"{str(tmp_path / 'data')!r}, 4, 1")
    assert result.verdict.status == "MATCH", result.report()
    assert "tf.py_func(getLabel, [key], tf.float32)" in result.added
    assert "FileNameQueue(folderPath, 1)" in result.added


def _sequence_records(path, count: int) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(count):
            example = tf.train.SequenceExample()
            example.context.feature["answer"].int64_list.value.append(i)
            story = example.feature_lists.feature_list["story"]
            for k in range(6):
                story.feature.add().int64_list.value.append(10 * i + k)
            writer.write(example.SerializeToString())


def test_a_spec_name_rebound_to_the_parsed_tensors_is_read_from_outside(tmp_path):
    """entity networks' ``context_features, sequence_features = ...(...,
    context_features=context_features, ...)``: in ``per_record`` the specs come in
    as defaults (was: UnboundLocalError in the twin, nothing written)."""
    path = copy_script("unseen_sequence_dataset.py", tmp_path, "dataset.py")
    _sequence_records(tmp_path / "qa.tfrecords", 30)
    files = repr([str(tmp_path / "qa.tfrecords")])
    for shuffle in (True, False):
        result = migrate(str(path), "Dataset", call=f"{files}, 4, shuffle={shuffle}")
        assert result.verdict.status == "MATCH", result.report()
        assert (
            "def per_record(serialized, context_features=context_features, "
            "sequence_features=sequence_features):" in result.added
        )


def _audio_records(directory, count: int) -> None:
    rng = np.random.default_rng(5)
    for i in range(count):
        frames = rng.random((1 + i % 4, 3), dtype=np.float32)
        feature = {
            "frames": tf.train.Feature(bytes_list=tf.train.BytesList(value=[frames.tobytes()])),
            "word": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"w%d" % i])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        with tf.io.TFRecordWriter(str(directory / f"ex{i:02d}.tfrecords")) as writer:
            writer.write(example.SerializeToString())


def test_a_count_beside_batches_computed_on_is_returned_beside_the_dataset(tmp_path):
    """``return frames, frame_lengths, num_examples`` after per-batch code: the
    tf.data version returns ``(dataset, num_examples)``, proven with the count (was:
    refused). An unbatched record beside the batches is refused with its name and
    the fix (was: a per_batch reading an undefined name)."""
    path = copy_script("unseen_audio_provider.py", tmp_path, "data_provider.py")
    _audio_records(tmp_path, 12)
    options = f"{{'batch_size': 3, 'is_training': False}}, {str(tmp_path)!r}"
    result = migrate(str(path), "get_split", call=options)
    assert result.verdict.status == "MATCH", result.report()
    assert "values beside the batches (12)" in result.verdict.reason
    assert "return dataset.prefetch(tf.data.AUTOTUNE), num_examples" in result.added
    assert "def per_batch(frames, words):" in result.added
    line = line_of(path, "return frames, frame_lengths, word")
    refusal = r"per-record tensors \(word\) beside the batches: .*add them to the batching"
    with pytest.raises(MigrateError, match=rf"data_provider.py:{line}: .*{refusal}"):
        migrate(str(path), "get_split_word", call=options)


def test_double_star_arguments_of_an_own_queue_are_read_from_the_queue_the_run_built(tmp_path):
    """``tf.RandomShuffleQueue(..., **({...} if names else {}))``: which arguments
    it sets is known only when it runs, so they are read from the queue the trace
    built (NOTE [ A queue's `**` arguments ]); ``return queue.dequeue()`` hands
    the records back (was: refused, and before that a traceback)."""
    path = copy_script("unseen_rbox_reader.py", tmp_path, "tfrecord_utils.py")
    (tmp_path / "values.csv").write_text("".join(f"{i}\n" for i in range(20)))
    result = migrate(str(path), "read_tfrecord", call=f"{str(tmp_path / 'values.csv')!r}, Config()")
    assert result.verdict.status == "MATCH", result.report()
    assert "dataset = dataset.shuffle(config.capacity)" in result.added
    assert "RandomShuffleQueue" not in result.added


def _box_records(tmp_path) -> None:
    shutil.copytree(os.path.join(SCRIPTS, "unseen_datasets"), tmp_path / "unseen_datasets")
    with tf.io.TFRecordWriter(str(tmp_path / "train.tfrecords")) as writer:
        for i in range(10):
            feature = {
                "boxes": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[float(i)] * 4 * (1 + i % 3))
                ),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def test_a_reading_function_of_a_package_module_is_imported_by_its_dotted_name(tmp_path):
    """``from unseen_datasets.read import read_and_decode``: the migrated file imports
    the package's module by its dotted name (was: ``import read``, which fails)."""
    _box_records(tmp_path)
    path = copy_script("unseen_package_inputs.py", tmp_path, "probe_inputs.py")
    result = migrate(str(path), "build_inputs", call=f"{str(tmp_path / 'train.tfrecords')!r}, 4")
    assert result.verdict.status == "MATCH", result.report()
    assert "import unseen_datasets.read as read\n" in result.source
    assert "import read\n" not in result.source
    assert "[-1, read.BOX]" in result.added


def test_an_inline_pipeline_reading_through_a_package_function_migrates(tmp_path, monkeypatch):
    """``main()`` builds its queue, hands it to an imported ``read_and_decode`` and
    runs the session itself: the function is followed as for a plain function (was:
    refused, "does not follow"); what the program prints while it is traced goes to
    stderr, so the console script's stdout is the migrated module alone."""
    _box_records(tmp_path)
    path = copy_script("unseen_package_train.py", tmp_path, "train.py")
    monkeypatch.chdir(tmp_path)
    result = migrate(str(path), "main", argv="--batch_size 2")
    assert result.verdict.status == "MATCH", result.report()
    assert "tf.train.start_queue_runners" not in result.source
    assert "def read_and_decode_record(serialized):" in result.source
    assert "import unseen_datasets.read as read\n" in result.source
    line = line_of(path, "string_input_producer([args.tfrecord])")
    # the file's own line (was: the wrapped copy's, one off)
    assert any(f"train.py:{line}: string_input_producer" in d for d in result.differences), (
        result.differences
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["migrate", "train.py:main", "--argv", "--batch_size 2"])
    assert status == 0, err.getvalue()
    assert "boxes: (" in err.getvalue() and "boxes: (" not in out.getvalue()
    compile(out.getvalue(), "train_migrated.py", "exec")


def _face_records(directory) -> None:
    rng = np.random.default_rng(0)
    directory.mkdir()
    for split, shards in (("train", 2), ("val", 1)):
        for shard in range(shards):
            with tf.io.TFRecordWriter(str(directory / f"{split}-{shard}.tfrecords")) as writer:
                for _ in range(7):
                    pixels = rng.integers(0, 255, 8 * 8 * 3, dtype=np.uint8).tobytes()
                    feature = {
                        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels])),
                        "attributes": tf.train.Feature(
                            int64_list=tf.train.Int64List(value=rng.integers(0, 2, 4))
                        ),
                    }
                    example = tf.train.Example(features=tf.train.Features(feature=feature))
                    writer.write(example.SerializeToString())


def test_a_constructor_with_a_training_and_a_validation_pipeline_migrates_each(tmp_path):
    """``FILE.py:Class`` whose ``__init__`` keeps two pipelines' batches: each becomes
    a method of its own, named by its attributes (``init_train_dataset``,
    ``init_val_dataset``), holding only its own statements, each proven (NOTE
    [ Several pipelines in a constructor ]; was: refused as a second pipeline)."""
    path = copy_script("unseen_two_pipeline_class.py", tmp_path, "face_data.py")
    _face_records(tmp_path / "data")
    result = migrate(str(path), "FaceAttributes", call=f"{str(tmp_path / 'data')!r}")
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("pipeline 1: multiset; pipeline 2: ordered")
    source = result.source
    train = source[source.index("def init_train_dataset") : source.index("def init_val_dataset")]
    val = source[source.index("def init_val_dataset") : source.index("    def read(")]
    assert "records.shuffle(40, seed=3)" in train and "val_files" not in train
    assert "records.batch(val_batch_size)" in val and "train_files" not in val
    assert "flip_left_right" in train and "flip_left_right" not in val
    assert source.count("def FaceAttributes__read_record(") == 1
    # the migrated class's datasets deliver every record of their split once
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)
    data = namespace["FaceAttributes"].__new__(namespace["FaceAttributes"])
    with tf.Graph().as_default():
        for method, key, expected in (
            ("init_train_dataset", "train_attributes", 14),
            ("init_val_dataset", "val_attributes", 7),
        ):
            dataset = getattr(data, method)(str(tmp_path / "data"))
            element = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
            count = 0
            config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=60000)
            with tf.compat.v1.Session(config=config) as sess:
                with contextlib.suppress(tf.errors.OutOfRangeError):
                    while True:
                        count += len(sess.run(element)[key])
            assert count == expected, method
