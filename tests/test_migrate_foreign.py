"""migrate following the functions of the program's other modules (#41).

NOTE [ Following a function of another module ] in ``_migrate/foreign.py``:
a reading function, a pipeline function and a function imported by name,
each in ``records_util.py`` beside the migrated file; and a GAN's
``build_model`` that reads through it and builds the model after (NOTE [ The
model after the input, in a method ], NOTE [ A branch that feeds placeholders ]).
Run in the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import migrate
from helpers import line_of

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


@pytest.fixture
def program(tmp_path):
    """train.py, layout_gan.py and records_util.py beside records/ (2 files x 10 records)."""
    shutil.copy(os.path.join(SCRIPTS, "foreign_records_util.py"), tmp_path / "records_util.py")
    shutil.copy(os.path.join(SCRIPTS, "foreign_train_inputs.py"), tmp_path / "train.py")
    shutil.copy(os.path.join(SCRIPTS, "foreign_layout_gan.py"), tmp_path / "layout_gan.py")
    (tmp_path / "records").mkdir()
    rng = np.random.default_rng(3)
    for k in range(2):
        with tf.io.TFRecordWriter(str(tmp_path / "records" / f"part{k}.tfrecords")) as writer:
            for i in range(10):
                pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8).tobytes()
                emb = rng.random(4, dtype=np.float32).tobytes()
                feature = {
                    "image_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels])),
                    "emb_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[emb])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[k * 10 + i])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    return tmp_path


def _files(directory) -> str:
    return repr([str(directory / "records" / f"part{k}.tfrecords") for k in range(2)])


def test_a_queue_handed_to_another_modules_reading_function(program):
    """``records_util.read_and_decode(queue, n)``, which reads through ``read_record``."""
    out = program / "migrated.py"
    result = migrate(
        str(program / "train.py"), "train_inputs", call=f"{_files(program)}, 4", out=str(out)
    )
    assert result.verdict.status == "MATCH", result.report()
    source = out.read_text()
    # the legacy function is unchanged; the versions are named after the functions
    assert "records_util.read_and_decode(filename_queue, batch_size)" in source
    assert "def read_and_decode_record(serialized):" in source
    assert "def read_record_record(serialized):" in source
    assert "records_util.IMAGE_SIZE" in source and "records_util._scale(image)" in source
    assert "records_util__" not in source and "queue_pipeline migrate" not in source
    assert source.index("def read_and_decode_record") < source.index("def train_inputs_dataset")
    read = line_of(program / "records_util.py", "reader.read(filename_queue)")
    report = result.report()
    assert "TFRecordReader.read (in records_util.read_and_decode)" in report
    assert f"records_util.py:{read}" not in report or "records_util.py" in report
    assert not [n for n in os.listdir(program) if "__qp_" in n]
    if tf.executing_eagerly():
        dataset = result.load().train_inputs_dataset(eval(_files(program)), 4)
        labels = sorted(int(x) for _, _, batch in dataset for x in batch.numpy())
        assert labels == sorted(list(range(20)) * 2)


def test_a_pipeline_function_of_another_module(program):
    """``return records_util.inputs(files, n)``: its lines are reported in its own file."""
    result = migrate(str(program / "train.py"), "eval_inputs", call=f"{_files(program)}, 4")
    assert result.verdict.status == "MATCH", result.report()
    util = program / "records_util.py"
    producer = line_of(util, "string_input_producer(")
    steps = {(os.path.basename(s.file), s.line) for s in result.steps if s.file}
    assert ("records_util.py", producer) in steps, result.report()
    assert f"records_util.py:{producer}: string_input_producer" in result.report()
    assert "def inputs_dataset(files, batch_size, num_epochs=1):" in result.source
    assert "return inputs_dataset(files, batch_size)" in result.source


def test_a_function_imported_by_name(program):
    """``from records_util import read_and_decode as decode``: the module is imported
    for the names its versions read."""
    out = program / "migrated.py"
    result = migrate(str(program / "train.py"), "short_inputs", call=_files(program), out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    source = out.read_text()
    assert "return decode(filename_queue, batch_size=5, capacity=40)" in source
    if tf.executing_eagerly():
        dataset = result.load().short_inputs_dataset(eval(_files(program)))
        assert sum(int(labels.shape[0]) for _, _, labels in dataset) == 20


@pytest.mark.slow
def test_a_gan_build_model_reading_through_another_module(program):
    """text2image's shape: the input of build_model migrates; the placeholder branch
    raises; the model after the batches stays in build_model."""
    out = program / "migrated_gan.py"
    call = f"LayoutGAN({str(program / 'records')!r}, 4)"
    result = migrate(
        str(program / "layout_gan.py"), "LayoutGAN.build_model", call=call, out=str(out)
    )
    assert result.verdict.status == "MATCH", result.report()
    source = out.read_text()
    method = source.split("    def build_model_dataset(self):\n")[1].split("\ndef ")[0]
    assert "raise ValueError(" in method
    assert "            if self.output_size == 16:\n" in method  # kept conditional, per batch
    assert "get_variable" not in method and "Saver" not in method
    assert "return {'images': " in method and "'labels': " in method  # not the logits
    placeholders = line_of(program / "layout_gan.py", 'name="images"')
    assert any(f"layout_gan.py:{placeholders}:" in d for d in result.dropped), result.dropped
    model = line_of(program / "layout_gan.py", "self.is_training =")
    assert any(f"layout_gan.py:{model}-" in d for d in result.differences), result.differences
    if tf.executing_eagerly():
        module = result.load()
        gan = module.LayoutGAN.__new__(module.LayoutGAN)
        gan.record_dir, gan.batch_size, gan.output_size, gan.use_tfrecords = (
            str(program / "records"),
            4,
            8,
            True,
        )
        batches = list(gan.build_model_dataset())
        assert len(batches) == 15 and batches[0]["images"].shape == (4, 8, 8, 3)
        gan.use_tfrecords = False
        with pytest.raises(ValueError, match="feeds placeholders"):
            gan.build_model_dataset()


@pytest.mark.slow
def test_a_queue_handed_to_a_method_of_the_programs_object(tmp_path):
    """youtube-8m's ``[reader.prepare_reader(filename_queue) for _ in range(n)]`` with
    ``reader`` a ``readers.YT8MAggregatedFeatureReader``: the method (found on the
    run's object, defined in the program's ``readers.py``) is followed; the join of
    ``enqueue_many`` rows becomes an interleave, ``unbatch`` and the batch."""
    shutil.copy(os.path.join(SCRIPTS, "yt8m_readers.py"), tmp_path / "readers.py")
    shutil.copy(os.path.join(SCRIPTS, "yt8m_train.py"), tmp_path / "train.py")
    rng = np.random.default_rng(17)
    for k in range(2):
        with tf.io.TFRecordWriter(str(tmp_path / f"train{k}.tfrecord")) as writer:
            for i in range(12):
                labels = sorted(set(rng.integers(0, 10, 2).tolist()))
                feature = {
                    "id": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"v%d" % i])),
                    "labels": tf.train.Feature(int64_list=tf.train.Int64List(value=labels)),
                    "mean_rgb": tf.train.Feature(
                        float_list=tf.train.FloatList(value=rng.random(4).tolist())
                    ),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    pattern = str(tmp_path / "train*.tfrecord")
    call = f"readers.YT8MAggregatedFeatureReader(), {pattern!r}, num_epochs=1, num_readers=2"
    result = migrate(str(tmp_path / "train.py"), "get_input_data_tensors", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert "training_data = [reader.prepare_reader(filename_queue)" in result.source
    assert "def prepare_reader_record(" in result.source
    assert "__prepare_reader" not in result.source
    assert "cycle_length=num_readers" in result.source and ".unbatch()" in result.source
