"""migrate on a pipeline behind a class: ``FILE.py:Class.method`` (#41 class 2).

See NOTE [ Migrating a method ] in ``_migrate/methods.py``. The method is
migrated and proven like a function, in the suite's TF mode (the suite runs
this file with ``--tf1`` too), and written back as a method of its class.
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
def reader_dir(tmp_path):
    """class_reader.py and its utils module beside a TFRecord file of 30 small JPEGs."""
    for name in ("class_reader.py", "class_reader_utils.py"):
        shutil.copy(os.path.join(SCRIPTS, name), tmp_path / name)
    rng = np.random.default_rng(0)
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [20, 24, 3])
        encoded = tf.io.encode_jpeg(pixels)
        jpegs = [
            sess.run(encoded, {pixels: rng.integers(0, 256, size=(20, 24, 3), dtype=np.uint8)})
            for _ in range(30)
        ]
    with tf.io.TFRecordWriter(str(tmp_path / "apples.tfrecords")) as writer:
        for i, jpeg in enumerate(jpegs):
            feature = {
                "image/file_name": tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[b"a%d.jpg" % i])
                ),
                "image/encoded_image": tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[jpeg])
                ),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    return tmp_path


@pytest.mark.slow
def test_a_gan_readers_feed_method_migrates_as_a_method(reader_dir):
    """CycleGAN's shape: Reader(...).feed(), a reader made in __init__, a preprocessing method."""
    path = str(reader_dir / "class_reader.py")
    files = repr(str(reader_dir / "apples.tfrecords"))
    out = str(reader_dir / "migrated_reader.py")
    result = migrate(path, "Reader.feed", call=f"{files}, name='apples'", out=out)
    assert result.verdict.status == "MATCH", result.verdict.reason
    assert result.function == "Reader.feed_dataset"
    source = open(out).read()
    method = source.split("    def feed_dataset(self):\n")[1].split("\n    def ")[0]
    assert "self._preprocess(image)" in method and "self.batch_size" in method
    assert "__qp_method" not in source and "Reader__feed" not in source
    lines = open(path).read().splitlines()
    read_line = 1 + next(i for i, text in enumerate(lines) if "self.reader.read(" in text)
    assert any(s.line == read_line and "TFRecordReader" in s.legacy for s in result.steps)
    summary = 1 + next(i for i, text in enumerate(lines) if "summary.image(" in text)
    assert any(f"class_reader.py:{summary}:" in d for d in result.dropped), result.dropped
    assert not [n for n in os.listdir(reader_dir) if "__qp_method" in n]


_REFUSED = """
import tensorflow as tf


class Base:
    def feed(self):
        return None


class Reader(Base):
    @staticmethod
    def make(files):
        return files

    def feed(self):
        super().feed()
        return None
"""


@pytest.mark.parametrize(
    "target, match",
    [
        ("Missing.feed", r"defines no class 'Missing'"),
        ("Reader.nothing", r"class Reader defines no method 'nothing'"),
        ("Reader.make", r"refused\.py:12: Reader\.make\(\) is a staticmethod"),
        ("Reader.feed", r"refused\.py:16: Reader\.feed\(\) calls `super\(\)`"),
    ],
)
def test_methods_that_cannot_run_outside_their_class_are_refused(tmp_path, target, match):
    path = tmp_path / "refused.py"
    path.write_text(_REFUSED)
    with pytest.raises(MigrateError, match=match):
        migrate(str(path), target, call="")


def _write_labelled_images(directory, files=3, per_file=7, size=8):
    """TFRecord files of `size`x`size`x3 uint8 images with int64 labels."""
    rng = np.random.default_rng(1)
    for f in range(files):
        with tf.io.TFRecordWriter(str(directory / f"part-{f}.tfrecords")) as writer:
            for i in range(per_file):
                pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8).tobytes()
                feature = {
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels])),
                    "label": tf.train.Feature(
                        int64_list=tf.train.Int64List(value=[f * per_file + i])
                    ),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())


def test_a_constructor_that_builds_the_pipeline_migrates_as_init_dataset(tmp_path):
    """``FILE.py:Class``: batches kept as attributes by __init__ (#41 class 2).

    NOTE [ Migrating a constructor ]: the batch attributes become the
    Dataset's elements by name; plain settings and a non-queue tensor stay
    statements of the method.
    """
    shutil.copy(os.path.join(SCRIPTS, "ctor_pipeline_loader.py"), tmp_path / "loader.py")
    _write_labelled_images(tmp_path)
    out = str(tmp_path / "migrated.py")
    result = migrate(str(tmp_path / "loader.py"), "DataLoader", call=repr(str(tmp_path)), out=out)
    assert result.verdict.status == "MATCH", result.report()
    assert result.function == "DataLoader.init_dataset"
    source = open(out).read()
    assert "    def init_dataset(self, data_dir, batch_size=4, image_size=8" in source
    assert "{'images': images, 'labels': labels}" in source
    assert "self.learning_rate = tf.constant(1e-3)" in source.split("def init_dataset")[1]
    assert any("__init__ is kept as it was" in d for d in result.differences)
    assert not [n for n in os.listdir(tmp_path) if "__qp_method" in n]
    if not tf.executing_eagerly():
        return
    module = result.load()
    loader = module.DataLoader.__new__(module.DataLoader)
    dataset = loader.init_dataset(str(tmp_path))
    labels = sorted(int(v) for batch in dataset for v in batch["labels"].numpy())
    assert labels == list(range(21)) and loader.num_files == 3


def test_a_class_that_keeps_no_batch_is_refused(tmp_path):
    path = tmp_path / "plain.py"
    path.write_text(
        "import tensorflow as tf\n\n\nclass Settings:\n"
        "    def __init__(self, n):\n        self.n = n\n        self.t = tf.constant(n)\n"
    )
    with pytest.raises(MigrateError, match=r"Settings\(\.\.\.\) keeps no tensor read from a queue"):
        migrate(str(path), "Settings", call="3")


@pytest.mark.slow
def test_a_method_batching_what_its_constructor_read_migrates_with_it(tmp_path):
    """DeepLab-ResNet's ``ImageReader(...).dequeue(n)``: NOTE [ A method reading what its
    constructor built ]; ``--call`` names the instance and the method's argument."""
    shutil.copy(os.path.join(SCRIPTS, "ctor_records_reader.py"), tmp_path / "image_reader.py")
    rng = np.random.default_rng(2)
    lines = []
    for i in range(5):
        image = rng.integers(0, 256, size=(10, 12, 3), dtype=np.uint8)
        mask = rng.integers(0, 5, size=(10, 12, 1), dtype=np.uint8)
        with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
            pngs = sess.run([tf.io.encode_png(image), tf.io.encode_png(mask)])
        (tmp_path / f"{i}.png").write_bytes(pngs[0])
        (tmp_path / f"{i}_mask.png").write_bytes(pngs[1])
        lines.append(f"/{i}.png /{i}_mask.png\n")
    (tmp_path / "train.txt").write_text("".join(lines))
    call = f"ImageReader({str(tmp_path)!r}, {str(tmp_path / 'train.txt')!r}, (8, 8), None), 2"
    out = str(tmp_path / "migrated.py")
    result = migrate(str(tmp_path / "image_reader.py"), "ImageReader.dequeue", call=call, out=out)
    assert result.verdict.status == "MATCH", result.report()
    assert result.function == "ImageReader.dequeue_dataset"
    source = open(out).read()
    assert (
        "    def dequeue_dataset(self, data_dir, data_list, input_size, coord, *, num_elements):"
        in source
    )
    assert "self.queue" not in source.split("def dequeue_dataset")[1]
    lines_of = open(tmp_path / "image_reader.py").read().splitlines()
    slice_line = 1 + next(i for i, t in enumerate(lines_of) if "slice_input_producer(" in t)
    batch_line = 1 + next(i for i, t in enumerate(lines_of) if "train.batch(" in t)
    assert {s.line for s in result.steps} >= {slice_line, batch_line}
    if not tf.executing_eagerly():
        return
    module = result.load()
    reader = module.ImageReader.__new__(module.ImageReader)
    dataset = reader.dequeue_dataset(
        str(tmp_path), str(tmp_path / "train.txt"), (8, 8), None, num_elements=2
    )
    assert [int(images.shape[0]) for images, _ in dataset] == [2, 2, 1]


_MODEL = """
import tensorflow as tf


class Model(object):
    def __init__(self, files, batch_size):
        self.files = files
        self.batch_size = batch_size
        self.build_model()

    def build_model(self):
        queue = tf.compat.v1.train.string_input_producer(self.files, num_epochs=1, shuffle=False)
        _, line = tf.compat.v1.TextLineReader().read(queue)
        self.values = tf.compat.v1.train.batch(
            [tf.strings.to_number(line)], self.batch_size, allow_smaller_final_batch=True
        )
        self.steps = 3


class Reader(object):
    def __init__(self, files):
        self.files = files

    def dequeue(self, n):
        queue = tf.compat.v1.train.string_input_producer(self.files, num_epochs=1, shuffle=False)
        _, line = tf.compat.v1.TextLineReader().read(queue)
        return tf.compat.v1.train.batch([line], n, allow_smaller_final_batch=True)
"""


@pytest.mark.slow
def test_a_method_that_keeps_its_batches_on_self_migrates(tmp_path):
    """A model's ``build_model(self)`` keeps ``self.values`` and returns nothing: NOTE
    [ Migrating a constructor ], for a method."""
    (tmp_path / "d.txt").write_text("1\n2\n3\n4\n5\n")
    path = tmp_path / "model.py"
    path.write_text(_MODEL)
    files = repr([str(tmp_path / "d.txt")])
    result = migrate(str(path), "Model.build_model", call=f"{files}, 2")
    assert result.verdict.status == "MATCH", result.report()
    assert "    def build_model_dataset(self):" in result.source
    assert "{'values': values}" in result.source


@pytest.mark.slow
def test_a_method_missing_its_own_argument_is_told_the_call_form(tmp_path):
    (tmp_path / "d.txt").write_text("a\nb\n")
    path = tmp_path / "model.py"
    path.write_text(_MODEL)
    files = repr([str(tmp_path / "d.txt")])
    with pytest.raises(MigrateError, match=r"--call 'Reader\(CONSTRUCTOR ARGS\), METHOD ARGS'"):
        migrate(str(path), "Reader.dequeue", call=files)
    result = migrate(str(path), "Reader.dequeue", call=f"Reader({files}), 2")
    assert result.verdict.status == "MATCH", result.report()


@pytest.mark.slow
def test_a_reading_method_is_followed_and_another_objects_reader_refused(tmp_path, monkeypatch):
    """Dense-pixel models read in ``self._file_reader(queue)`` (was an internal error naming
    a temporary file): NOTE [ Reading methods of a migrated class ]. A function of another
    module is followed too (NOTE [ Following a function of another module ]); a queue
    handed to a method of another object is refused with the line."""
    (tmp_path / "d.txt").write_text("a\nb\nc\n")
    (tmp_path / "otherread.py").write_text(
        "import tensorflow as tf\n\n\ndef load_lines(queue):\n"
        "    _, line = tf.compat.v1.TextLineReader().read(queue)\n    return line\n\n\n"
        "class Loader:\n    def load(self, queue):\n        return load_lines(queue)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "dense.py"
    path.write_text(
        "import tensorflow as tf\nimport otherread\n\n\nclass DenseInput:\n"
        "    def __init__(self, files):\n        self.files = files\n\n"
        "    def pipelines(self):\n"
        "        q = tf.compat.v1.train.string_input_producer(self.files, num_epochs=1,"
        " shuffle=False)\n"
        "        line = self._file_reader(q)\n"
        "        return tf.compat.v1.train.batch([line], 2, allow_smaller_final_batch=True)\n\n"
        "    def elsewhere(self):\n"
        "        q = tf.compat.v1.train.string_input_producer(self.files, num_epochs=1)\n"
        "        line = otherread.Loader().load(q)\n"
        "        return tf.compat.v1.train.batch([line], 2, allow_smaller_final_batch=True)\n\n"
        "    def other_module(self):\n"
        "        q = tf.compat.v1.train.string_input_producer(self.files, num_epochs=1)\n"
        "        line = otherread.load_lines(q)\n"
        "        return tf.compat.v1.train.batch([line], 2, allow_smaller_final_batch=True)\n\n"
        "    def _file_reader(self, queue):\n"
        "        _, line = tf.compat.v1.TextLineReader().read(queue)\n"
        "        return tf.strings.upper(line)\n"
    )
    call = repr([str(tmp_path / "d.txt")])
    result = migrate(str(path), "DenseInput.pipelines", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert "\ndef DenseInput___file_reader_record(line):" in result.source
    assert "    def _file_reader(self, queue):" in result.source  # the class keeps it
    assert "DenseInput___file_reader(self" not in result.source
    with pytest.raises(
        MigrateError, match=r"dense\.py:16: .*hands the queue `q` to `otherread\.Loader\(\)\.load`"
    ):
        migrate(str(path), "DenseInput.elsewhere", call=call)
    result = migrate(str(path), "DenseInput.other_module", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert "\ndef load_lines_batch(line):" in result.source  # after the class
    assert "line = otherread.load_lines(q)" in result.source
