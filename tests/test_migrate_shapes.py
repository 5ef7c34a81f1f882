"""migrate on shapes found in public programs it had not seen (#41).

An ``if`` in the per-record code keeps its test (BEGAN's ``if is_grayscale:``);
a helper shuffling the records through its own queue, in an ``if`` (magenta);
per-step lists collected for one record, concatenated, then two branches that
each batch and return (video prediction); a script whose session initializes
its variables before it builds its input (the tensorflowbook's titanic);
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
@pytest.mark.slow
def test_a_per_record_if_keeps_its_test(jpegs, grayscale):
    shutil.copy(os.path.join(SCRIPTS, "began_loader.py"), jpegs / "data_loader.py")
    call = f"{str(jpegs / 'images')!r}, 4, 8, 'NCHW', seed=3, is_grayscale={grayscale}"
    result = migrate(str(jpegs / "data_loader.py"), "get_loader", call=call)
    assert result.verdict.status == "MATCH", result.report()
    per_record = result.source.split("def per_record(")[1].split("records.map")[0]
    assert "        if is_grayscale:\n            image = tf.image.rgb_to_grayscale(image)" in (
        per_record
    )


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_helper_shuffling_the_records_through_its_own_queue(tmp_path):
    """NOTE [ A helper that shuffles the records ]: magenta's ``_shuffle_inputs``. Run
    with ``shuffle=False``, the branch that calls it was not seen: refused with its line."""
    shutil.copy(os.path.join(SCRIPTS, "magenta_sequence_lib.py"), tmp_path / "seq_lib.py")
    rng = np.random.default_rng(11)
    files = []
    for k in range(2):
        files.append(str(tmp_path / f"melody-{k}.tfrecord"))
        with tf.io.TFRecordWriter(files[-1]) as writer:
            for _ in range(12):
                steps = int(rng.integers(2, 6))
                inputs = [
                    tf.train.Feature(float_list=tf.train.FloatList(value=rng.random(3).tolist()))
                    for _ in range(steps)
                ]
                labels = [
                    tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rng.integers(9))]))
                    for _ in range(steps)
                ]
                example = tf.train.SequenceExample(
                    feature_lists=tf.train.FeatureLists(
                        feature_list={
                            "inputs": tf.train.FeatureList(feature=inputs),
                            "labels": tf.train.FeatureList(feature=labels),
                        }
                    )
                )
                writer.write(example.SerializeToString())
    path = str(tmp_path / "seq_lib.py")
    line = 1 + next(
        i for i, t in enumerate(open(path).read().splitlines()) if t.strip() == "if shuffle:"
    )
    with pytest.raises(MigrateError, match=rf"seq_lib\.py:{line}: .*did not take calls `_shuffle"):
        migrate(path, "get_padded_batch", call=f"{files!r}, 4, 3, shuffle=False")
    result = migrate(path, "get_padded_batch", call=f"{files!r}, 4, 3, shuffle=True")
    assert result.verdict.status == "MATCH", result.report()
    function = result.source.split("def get_padded_batch_dataset(")[1]
    assert "records = _shuffle_inputs_dataset(records" in function
    assert "def per_record(*input_tensors):" in function
    shuffler = result.source.split("def _shuffle_inputs_dataset(")[1].split("\ndef ")[0]
    assert ".shuffle(capacity" in shuffler and "set_shape" not in shuffler
    assert any("static shapes" in d for d in result.dropped), result.dropped


@pytest.mark.parametrize("use_state", [True, False])
@pytest.mark.slow
def test_per_step_lists_of_one_record_stay_in_the_record(tmp_path, use_state):
    """The empty lists a time-step loop appends to are made per record (was: once,
    outside the map: a concat of empty lists)."""
    shutil.copy(os.path.join(SCRIPTS, "video_frames_input.py"), tmp_path / "prediction_input.py")
    rng = np.random.default_rng(13)
    path = str(tmp_path / "push.tfrecords")
    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(16):
            feature = {}
            for i in range(3):
                for name, size in (("image", 4), ("state", 2), ("action", 2)):
                    values = rng.random(size).tolist()
                    feature[f"move/{i}/{name}"] = tf.train.Feature(
                        float_list=tf.train.FloatList(value=values)
                    )
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    call = f"[{path!r}], use_state={use_state}"
    result = migrate(str(tmp_path / "prediction_input.py"), "build_tfrecord_input", call=call)
    assert result.verdict.status == "MATCH", result.report()
    per_record = result.source.split("def per_record(")[1]
    assert "image_seq, state_seq, action_seq = [], [], []" in per_record


@pytest.mark.slow
def test_a_scripts_session_statements_before_its_input_are_not_run(tmp_path, monkeypatch):
    """``tf.global_variables_initializer().run()`` before ``X, Y = inputs()`` in the
    session block needs a session: the copy the migration runs leaves it out (was:
    "No default session is registered"); the migrated script keeps it."""
    shutil.copy(os.path.join(SCRIPTS, "titanic_script.py"), tmp_path / "logistic_regression.py")
    rows = ["id,survived,age,fare"] + [f"{i},{i % 2},{20 + i},{1.5 * i}" for i in range(24)]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    monkeypatch.chdir(tmp_path)
    result = migrate(str(tmp_path / "logistic_regression.py"), None)
    assert result.verdict.status == "MATCH", result.report()
    assert "    tf.global_variables_initializer().run()\n" in result.source
    assert "make_one_shot_iterator(dataset).get_next()" in result.source


_GRAPH_DEFAULT = """
import tensorflow.compat.v1 as tf

_GRAPH = tf.Graph()
with _GRAPH.as_default():
    BATCH = tf.constant(4)
    STEP = tf.Variable(2)


def get_batch_producer(files, batch_size=BATCH):
    queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(queue)
    return tf.train.batch([line], batch_size=batch_size)


def stepped_producer(files, step=STEP):
    queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(queue)
    return tf.train.batch([line], batch_size=2 * step)
"""


@pytest.mark.slow
def test_a_constant_default_made_in_the_import_graph_is_passed_as_its_value(tmp_path):
    """cinc2017's ``FLAGS.batch_size = tf.constant(16)`` as a parameter's default
    (NOTE [ A default made at import ]): both sides of the proof get its value, the
    migrated default stays as written. A default that is a variable cannot be read
    so: the fix names the parameter. (The ``with _GRAPH.as_default():`` block runs
    when the file is loaded, as the definitions the function needs do.)"""
    (tmp_path / "ops.py").write_text(_GRAPH_DEFAULT)
    (tmp_path / "lines.txt").write_text("a\nb\nc\nd\n")
    files = repr([str(tmp_path / "lines.txt")])
    result = migrate(str(tmp_path / "ops.py"), "get_batch_producer", call=files)
    assert result.verdict.status == "MATCH", result.report()
    assert "def get_batch_producer_dataset(files, batch_size=BATCH):" in result.source
    with pytest.raises(MigrateError, match=r"the default of step .* --call 'step=VALUE'"):
        migrate(str(tmp_path / "ops.py"), "stepped_producer", call=files)


_PYTHON_FED = """
import threading

import tensorflow.compat.v1 as tf


class AudioReader(object):
    def __init__(self, queue_size=32):
        self.sample_placeholder = tf.placeholder(dtype=tf.float32, shape=None)
        self.queue = tf.PaddingFIFOQueue(queue_size, ["float32"], shapes=[(None, 1)])
        self.enqueue = self.queue.enqueue([self.sample_placeholder])

    def dequeue(self, num_elements):
        return self.queue.dequeue_many(num_elements)

    def thread_main(self, sess):
        for piece in ([[0.0]], [[1.0], [2.0]]):
            sess.run(self.enqueue, feed_dict={self.sample_placeholder: piece})

    def start_threads(self, sess):
        thread = threading.Thread(target=self.thread_main, args=(sess,))
        thread.start()
        return [thread]
"""


@pytest.mark.slow
def test_a_queue_fed_from_python_is_refused_with_its_line(tmp_path):
    """NOTE [ A queue the program feeds from Python ]: WaveNet's AudioReader."""
    (tmp_path / "audio_reader.py").write_text(_PYTHON_FED)
    with pytest.raises(
        MigrateError,
        match=r"audio_reader\.py:10: AudioReader\.dequeue\(\) dequeues from a queue the "
        r"program fills from Python .*from_generator",
    ):
        migrate(str(tmp_path / "audio_reader.py"), "AudioReader.dequeue", call="AudioReader(), 2")


@pytest.fixture
def segmentation_pngs(tmp_path):
    """PNG images (6x8x3) and annotations (6x8x1): 10 for training, 6 for validation."""
    rng = np.random.default_rng(3)
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:  # either TF mode
        rgb = tf.compat.v1.placeholder(tf.uint8, [6, 8, 3])
        gray = tf.compat.v1.placeholder(tf.uint8, [6, 8, 1])
        encoded = {3: tf.io.encode_png(rgb), 1: tf.io.encode_png(gray)}
        for folder, count, channels in [
            ("train", 10, 3), ("trainannot", 10, 1), ("val", 6, 3), ("valannot", 6, 1)
        ]:  # fmt: skip
            (tmp_path / folder).mkdir()
            for i in range(count):
                pixels = rng.integers(0, 2 if channels == 1 else 256, (6, 8, channels))
                feed = {rgb if channels == 3 else gray: pixels.astype(np.uint8)}
                (tmp_path / folder / f"{i:02d}.png").write_bytes(sess.run(encoded[channels], feed))
    return tmp_path


@pytest.mark.slow
def test_a_training_and_a_validation_pipeline_in_one_function_migrate_each(
    segmentation_pngs, monkeypatch
):
    """ENet's ``run()`` builds a training pipeline, the model, then a validation
    pipeline (NOTE [ Several pipelines in one function ]): each becomes a Dataset
    at its place and is proven on its own; the model between stays; the report's
    lines are the file's own (was: refused as "a second pipeline")."""
    path = segmentation_pngs / "train_two.py"
    shutil.copy(os.path.join(SCRIPTS, "two_pipelines_train.py"), path)
    monkeypatch.setenv("TWO_PIPELINES_DATA", str(segmentation_pngs))
    result = migrate(str(path), "run")
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("pipeline 1: ")
    assert "pipeline 2: " in result.verdict.reason
    source = result.source
    assert "tf.train.slice_input_producer(" not in source and "tf.train.batch(" not in source
    assert source.count("tf.data.Dataset.from_tensor_slices(") == 2
    assert source.count("make_one_shot_iterator(") == 2  # no variable reaches the input
    model = source.index("train_op = tf.train.GradientDescentOptimizer")
    second = source.index("from_tensor_slices((images_val, annotations_val))")
    assert source.index("records.batch(batch_size)") < model < second
    assert "records.batch(eval_batch_size, drop_remainder=True)" in source[second:]
    # the first pass's own `records` and `per_record` are not the user's names: the
    # second pass binds them again (NOTE [ Names the written code binds ])
    assert "records_1" not in source and "per_record_1" not in source
    original = path.read_text().splitlines()
    lines = {s.legacy: s.line for s in result.steps if s.line}
    assert "slice_input_producer" in original[lines["slice_input_producer"] - 1]
    batches = sorted(s.line for s in result.steps if s.legacy == "batch")
    assert len(batches) == 2 and "images_val, annotations_val" in original[batches[1] - 1]
    assert not any("Coordinator kept" in s.replacement for s in result.steps)
    compile(source, str(path), "exec")
