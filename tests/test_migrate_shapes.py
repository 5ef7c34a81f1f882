"""migrate on shapes found in public programs it had not seen (#41).

An ``if`` in the per-record code keeps its test (BEGAN's ``if is_grayscale:``);
an input function that starts the queue runners itself migrates whole
through an ``if`` (srez); a method returning its generator's output on the
batches is refused with the line (SEGAN), a batching list over two lines
included. Run in the suite's TF mode (the suite runs this file with
``--tf1`` too).
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


@pytest.fixture
def jpegs(tmp_path):
    """30 JPEGs of 12x10 pixels in tmp_path/images."""
    (tmp_path / "images").mkdir()
    rng = np.random.default_rng(7)
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [12, 10, 3])
        encoded = tf.io.encode_jpeg(pixels)
        for i in range(30):
            data = sess.run(encoded, {pixels: rng.integers(0, 256, (12, 10, 3), dtype=np.uint8)})
            (tmp_path / "images" / f"{i:02d}.jpg").write_bytes(data)
    return tmp_path


@pytest.mark.parametrize("grayscale", [True, False])
def test_a_per_record_if_keeps_its_test(jpegs, grayscale):
    shutil.copy(os.path.join(SCRIPTS, "began_loader.py"), jpegs / "data_loader.py")
    call = f"{str(jpegs / 'images')!r}, 4, 8, 'NCHW', seed=3, is_grayscale={grayscale}"
    result = migrate(str(jpegs / "data_loader.py"), "get_loader", call=call)
    assert result.verdict.status == "MATCH", result.report()
    per_record = result.source.split("def per_record(")[1].split("records.map")[0]
    assert "        if is_grayscale:\n            image = tf.image.rgb_to_grayscale(image)" in (
        per_record
    )


def test_a_function_starting_its_runners_migrates_whole(jpegs):
    """srez: the region runs through `if crop_size != image_size:` to the batch."""
    shutil.copy(os.path.join(SCRIPTS, "srez_inputs.py"), jpegs / "srez_input.py")
    files = repr(sorted(str(p) for p in (jpegs / "images").iterdir()))
    call = f"tf.compat.v1.Session(), {files}, 4"
    result = migrate(str(jpegs / "srez_input.py"), "setup_inputs", call=call)
    assert result.verdict.status == "MATCH", result.report()
    function = result.source.split("def setup_inputs(")[1]
    assert "tf.train.batch(" not in function and ".batch(batch_size" in function
    assert "Coordinator kept" not in result.report()


def test_a_method_returning_the_model_on_its_batches_is_refused(tmp_path):
    shutil.copy(os.path.join(SCRIPTS, "segan_model.py"), tmp_path / "model.py")
    with tf.io.TFRecordWriter(str(tmp_path / "wavs.tfrecords")) as writer:
        for i in range(20):
            wave = np.arange(i, i + 8, dtype=np.int32).tobytes()
            feature = {
                "wav_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[wave])),
                "noisy_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[wave])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    call = f"SEGAN([{str(tmp_path / 'wavs.tfrecords')!r}]), 0"
    lines = (tmp_path / "model.py").read_text().splitlines()
    line = 1 + next(i for i, text in enumerate(lines) if "G = self.generator(" in text)
    with pytest.raises(MigrateError, match=rf"model\.py:{line}: .*builds the model on the batches"):
        migrate(str(tmp_path / "model.py"), "SEGAN.build_model_single_gpu", call=call)
