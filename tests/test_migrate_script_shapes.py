"""Scripts whose module level builds the pipeline in an order of its own, migrated and run.

NOTE [ Definitions among a script's pipeline ]: the producer made above the
definition of the reading function it is handed to (was: "a bug in migrate",
pointing at a copy removed after the run). NOTE [ A pipeline finished in the
session block ] and NOTE [ A script's functions reading the pipeline's globals ]:
a reading function without arguments reads the module's queue and is called in
the ``with tf.Session()`` block (was: "the code after the pipeline reads none of
the tensors it builds"). NOTE [ A runner the session code starts ] and NOTE
[ Lines that use the removed queue objects ]: the script's own queue, its runner
made after the dequeue and started with ``create_threads`` (was: the legacy side
stalled for want of a runner; with the runner before the dequeue the written
script kept ``qr.create_threads(...)`` and raised NameError).

Each script is migrated with the CLI and both it and the written script are run
with ``queue-pipeline run`` in the suite's TF mode (subprocesses: the scripts
set the TF mode of their process): they print the same lines.
"""

from __future__ import annotations


import numpy as np
import pytest
import tensorflow as tf
from helpers import copy_script, migrated_prints_the_same

pytestmark = pytest.mark.slow


def _migrated_prints_the_same(tmp_path, script: str) -> str:
    """Migrates `script` (MATCH), runs it and the written script; returns the written text."""
    printed, migrated = migrated_prints_the_same(tmp_path, script)
    assert not list(tmp_path.glob("*__qp_migrate_*"))  # the copies are gone
    assert printed.count("\n") >= 2, printed
    return migrated


def test_a_producer_made_above_the_definition_of_its_reader(tmp_path):
    copy_script("unseen_script_def_between.py", tmp_path, "tf4_record.py")
    (tmp_path / "rows.csv").write_text("".join(f"{i},{i / 2}\n" for i in range(1, 8)))
    migrated = _migrated_prints_the_same(tmp_path, "tf4_record.py")
    # the definition stays as written, above the tf.data code that took the region's place
    assert migrated.index("def read_rows(filename_queue):") < migrated.index("filenames = ")
    assert "filename_queue = tf.train.string_input_producer" not in migrated
    assert "Coordinator" not in migrated


def _face_records(path) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(4):
            feature = {
                "image/height": tf.train.Feature(int64_list=tf.train.Int64List(value=[10 + i])),
                "image/name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"f%d" % i])),
                "image/object/bbox/xmin": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[0.25 * j for j in range(i % 3)])
                ),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def test_a_reader_without_arguments_reading_the_modules_queue_in_the_session_block(tmp_path):
    copy_script("unseen_script_global_queue.py", tmp_path, "TFRecord_Reader.py")
    _face_records(tmp_path / "faces.tfrecord")
    migrated = _migrated_prints_the_same(tmp_path, "TFRecord_Reader.py")
    assert "def read_and_decode():\n" in migrated  # the function as the user wrote it
    iterator = migrated.index("make_one_shot_iterator(dataset).get_next()")
    assert iterator < migrated.index("with tf.Session() as sess:")
    assert "= read_and_decode()" not in migrated  # the session block's line went


def _block_records(path) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(5):
            block = np.full((2, 2), i, np.int16).tobytes()
            feature = {
                "block": tf.train.Feature(bytes_list=tf.train.BytesList(value=[block])),
                "project": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"p%d" % i])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def test_an_own_queue_whose_runner_is_made_after_the_dequeue_and_started_by_hand(tmp_path):
    copy_script("unseen_script_own_queue_runner.py", tmp_path, "data_test.py")
    _block_records(tmp_path / "blocks.tfrecord")
    migrated = _migrated_prints_the_same(tmp_path, "data_test.py")
    code = migrated[migrated.index("import tensorflow") :]  # below the docstring
    for gone in ("qr", "coord", "enqueue_threads", "queue.close", "FIFOQueue"):
        assert gone not in code, migrated
