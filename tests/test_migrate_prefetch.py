"""migrate on a queue a helper fills and returns (#41 class 3, im2txt and skip-thoughts).

NOTE [ A queue a helper fills and returns ] in ``_migrate/codegen.py``; the
copies that pass ``thread_id`` but build the same ops (NOTE [ Copies of the
per-record code for a join ]); NOTE [ A batching helper looping over the
copies ]; NOTE [ Dynamic padding under a shuffle ] in the proof. Run in the
suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate

# Whole-program migrations of programs shaped like public code (seconds each):
# the full suite runs them in both TF modes, the quick suite (`-m 'not slow'`,
# CI's run on the other Pythons) leaves them to it.
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


@pytest.fixture
def captions(tmp_path):
    """model.py and input_ops.py beside 2 files x 12 SequenceExamples (a JPEG, 3-7 ids)
    and 2 files x 10 Examples of 3 ids."""
    shutil.copy(os.path.join(SCRIPTS, "prefetch_input_ops.py"), tmp_path / "input_ops.py")
    shutil.copy(os.path.join(SCRIPTS, "prefetch_caption_model.py"), tmp_path / "model.py")
    rng = np.random.default_rng(5)
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [10, 12, 3])
        encoded = tf.io.encode_jpeg(pixels)
        jpegs = [
            sess.run(encoded, {pixels: rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)})
            for _ in range(24)
        ]
    for k in range(2):
        with tf.io.TFRecordWriter(str(tmp_path / f"train-{k}.tfrecords")) as writer:
            for i in range(12):
                ids = rng.integers(1, 50, rng.integers(3, 8)).tolist()
                example = tf.train.SequenceExample(
                    context=tf.train.Features(
                        feature={
                            "image/data": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[jpegs[k * 12 + i]])
                            )
                        }
                    ),
                    feature_lists=tf.train.FeatureLists(
                        feature_list={
                            "image/caption_ids": tf.train.FeatureList(
                                feature=[
                                    tf.train.Feature(int64_list=tf.train.Int64List(value=[c]))
                                    for c in ids
                                ]
                            )
                        }
                    ),
                )
                writer.write(example.SerializeToString())
        with tf.io.TFRecordWriter(str(tmp_path / f"ids-{k}.tfrecords")) as writer:
            for i in range(10):
                feature = {
                    "ids": tf.train.Feature(
                        int64_list=tf.train.Int64List(value=[k * 100 + i, i, k])
                    )
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    return tmp_path


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_im2txt_build_inputs_migrates(captions, mode):
    """prefetch_input_data's queue (RandomShuffleQueue or FIFOQueue), dequeued in two
    copies passing thread_id, then batch_with_dynamic_pad's join over the copies."""
    pattern = str(captions / "train-*.tfrecords")
    out = captions / f"migrated_{mode}.py"
    result = migrate(
        str(captions / "model.py"),
        "ShowAndTellModel.build_inputs",
        call=f"ShowAndTellModel({pattern!r}, {mode!r})",
        out=str(out),
    )
    assert result.verdict.status == "MATCH", result.report()
    source = out.read_text()
    method = source.split("    def build_inputs_dataset(self):\n")[1].split("\n    def ")[0]
    assert "records = prefetch_input_data_dataset(" in method
    assert "thread_id = 0" in method
    assert "raise ValueError(" in method  # the inference branch's placeholders
    assert "input_queue." not in method
    prefetch = source.split("def prefetch_input_data_dataset(")[1].split("\ndef ")[0]
    assert "return records.prefetch(" in prefetch and "Queue(" not in prefetch
    assert "def batch_with_dynamic_pad_dataset(dataset, batch_size" in source
    assert "padded_batch(batch_size, drop_remainder=True)" in source
    assert any("built the same ops" in d for d in result.differences), result.differences
    if mode == "train":
        assert "padded with zeros" in str(result.verdict.report) or result.verdict.report is None


def test_skip_thoughts_dequeue_many_of_a_returned_queue(captions):
    """``serialized = input_queue.dequeue_many(n)`` then a batch parse."""
    pattern = str(captions / "ids-*.tfrecords")
    result = migrate(
        str(captions / "model.py"),
        "ShowAndTellModel.build_id_batches",
        call=f"ShowAndTellModel('unused', 'eval', 5), {pattern!r}",
    )
    assert result.verdict.status == "MATCH", result.report()
    method = result.source.split("    def build_id_batches_dataset(self, pattern):\n")[1]
    assert "records = prefetch_input_data_dataset(" in method
    assert "dataset = records.batch(self.batch_size, drop_remainder=True)" in method


def test_copies_that_differ_by_thread_are_still_refused(captions):
    """A copy whose ops depend on thread_id (a crop per thread) stays refused."""
    model = captions / "model.py"
    model.write_text(
        model.read_text().replace(
            "        return tf.image.resize_images(image, size=[8, 8])",
            "        return tf.image.resize_images(image, size=[8, 8]) * float(thread_id + 1)",
        )
    )
    pattern = str(captions / "train-*.tfrecords")
    with pytest.raises(MigrateError, match=r"model\.py:\d+: .*reads `thread_id`"):
        migrate(str(model), "ShowAndTellModel.build_inputs", call=f"ShowAndTellModel({pattern!r})")
