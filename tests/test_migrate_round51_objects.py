"""migrate on two shapes of public TF 1.x input code it refused or got wrong (#41, round 51).

1. A batching helper that computes on a record object it is handed
   (CIFAR-10's shape: ``make_batch(read_record(queue), n)`` casting, flipping
   and reshaping ``record.image`` / ``record.label`` before its
   ``shuffle_batch``): refused before ("uses it for more than batching"); a
   batching helper computing on the record tensors it is handed wrote a map
   of ``records`` that nothing bound (an UnboundLocalError in the proof).
   NOTE [ A record passed as an object ], NOTE [ A batching helper computing
   on its records ]. Program: ``tests/scripts/unseen_record_object_distort.py``.
2. Function mode of a module-level queue: ``filename_queue =
   string_input_producer(...)`` (and a reader) at the top of the module, read
   by ``inputs(batch_size)``: "Queues are not supported when eager execution
   is enabled" at load under TF 2.x, "must be from the same graph" in TF1
   mode. NOTE [ A queue made at module level ]. Program:
   ``tests/scripts/unseen_module_queue_inputs.py`` (script mode too, with
   session code appended at module level).

Run in the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline import cli
from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, elements, line_of, tf1_mode

pytestmark = pytest.mark.slow

SIDE, DEPTH, PER_FILE = 6, 3, 10


def _records(directory) -> list[tuple[int, np.ndarray]]:
    """Two files of CIFAR-style records: a label byte, then a depth-major 6x6x3 image;
    returns (label, image as height x width x depth) in file order."""
    rng = np.random.default_rng(51)
    out = []
    for f in range(2):
        with open(directory / f"part_{f}.bin", "wb") as w:
            for i in range(PER_FILE):
                depth_major = rng.integers(0, 255, (DEPTH, SIDE, SIDE), dtype=np.uint8)
                w.write(bytes([f * PER_FILE + i]) + depth_major.tobytes())
                out.append((f * PER_FILE + i, depth_major.transpose(1, 2, 0)))
    return out


def _objects(tmp_path, function: str, extra: str = ""):
    path = copy_script("unseen_record_object_distort.py", tmp_path, "cifar_like.py")
    records = _records(tmp_path)
    result = migrate(str(path), function, call=f"{str(tmp_path)!r}, 4{extra}", tf1=tf1_mode())
    return path, records, result


@pytest.mark.parametrize("extra", ["", ", shuffle=True"], ids=["batch", "shuffle_batch"])
def test_a_helper_computing_on_a_record_object_read_in_its_call_matches(tmp_path, extra):
    """``make_batch(read_record(filename_queue), n)``: the reading helper's record
    object is named once per record, its attributes are the element, and the helper's
    per-record work is mapped over the Dataset it is handed."""
    _, records, result = _objects(tmp_path, "inputs", extra)
    assert result.verdict.status == "MATCH", result.report()
    source = result.source
    assert "record = read_record_record(value)" in source
    assert "return record.label, record.image" in source
    helper = source[source.index("def make_batch_dataset(") :]
    assert helper.startswith("def make_batch_dataset(dataset, batch_size, shuffle=False):")
    assert "image = tf.cast(record_image, tf.float32) / 255.0" in helper
    assert "label = tf.reshape(record_label, [])" in helper
    assert "records = dataset\n" in helper
    if extra:
        return
    got = elements(result.load().inputs_dataset(str(tmp_path), 4))
    assert len(got) == 5  # 20 records, batches of 4
    for b, (images, labels) in enumerate(got):
        assert list(np.asarray(labels)) == [r[0] for r in records[4 * b : 4 * b + 4]]
        for image, (_, raw) in zip(np.asarray(images), records[4 * b : 4 * b + 4]):
            scaled = raw.astype(np.float32) / 255.0  # flipped left-right at random, or not
            assert np.allclose(image, scaled) or np.allclose(image, scaled[:, ::-1])


def test_a_queue_made_in_the_reading_helpers_call_inside_the_batching_helpers_matches(tmp_path):
    """``make_batch(read_record(string_input_producer(...)), n)``: was a version that
    returned nothing (the batching helper's call was lost)."""
    _, _, result = _objects(tmp_path, "inline_inputs")
    assert result.verdict.status == "MATCH", result.report()
    written = result.source[result.source.index("def inline_inputs_dataset(") :]
    assert "record = read_record_record(value)" in written
    assert "return make_batch_dataset(records, batch_size)" in written


def test_a_named_record_object_of_an_endless_producer_matches(tmp_path):
    _, _, result = _objects(tmp_path, "train_inputs")
    assert result.verdict.status == "MATCH", result.report()
    assert "repeats bounded" in result.verdict.reason
    assert "dataset = make_batch_dataset(records, batch_size, shuffle=True)" in result.source


def test_a_helper_computing_on_the_record_tensors_it_is_handed_matches(tmp_path):
    """Was: the helper's map read ``records``, which nothing bound in its version."""
    _, records, result = _objects(tmp_path, "tensor_inputs")
    assert result.verdict.status == "MATCH", result.report()
    helper = result.source[result.source.index("def batch_scaled_dataset(") :]
    assert helper.startswith(
        "def batch_scaled_dataset(dataset, batch_size):\n    records = dataset"
    )
    got = elements(result.load().tensor_inputs_dataset(str(tmp_path), 4))
    assert [list(np.asarray(labels)) for _, labels in got][1] == [4, 5, 6, 7]
    standardized = np.asarray(got[0][0])[0]
    assert abs(float(standardized.mean())) < 1e-4 and standardized.shape == (SIDE, SIDE, DEPTH)


def test_distortions_between_two_helpers_match(tmp_path):
    """cifar10_input's distorted_inputs: the object's image distorted in the function,
    then plain tensors handed to the batching helper."""
    _, _, result = _objects(tmp_path, "distorted_inputs")
    assert result.verdict.status == "MATCH", result.report()
    assert "pinned" in result.verdict.reason


def test_a_plain_attribute_of_the_record_object_is_refused_at_the_call(tmp_path):
    """``record.height`` is a Python value the object carries, not a tensor a Dataset's
    element can hold: refused at the user's line, naming it, with the fix."""
    path = copy_script("unseen_record_object_distort.py", tmp_path, "cifar_like.py")
    _records(tmp_path)
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "sized_inputs", call=f"{str(tmp_path)!r}, 4", tf1=tf1_mode())
    message = str(e.value)
    line = line_of(path, "return sized_batch(read_record(filename_queue), batch_size)")
    assert f"cifar_like.py:{line}: cannot migrate `return sized_batch(" in message
    assert "(`record.height`)" in message
    assert "Fix: read `record.height` from where the reading helper got it" in message
    assert "`record = read_record(filename_queue)`, then `sized_batch(record.key" in message


def test_the_command_refuses_with_exit_status_2(tmp_path, capsys):
    path = copy_script("unseen_record_object_distort.py", tmp_path, "cifar_like.py")
    _records(tmp_path)
    argv = ["migrate", f"{path}:sized_inputs", "--call", f"{str(tmp_path)!r}, 4"]
    assert cli.main(argv + (["--tf1"] if tf1_mode() else [])) == 2
    assert "`record.height`" in capsys.readouterr().err


# ------------------------------------------------------- a queue made at module level


def _shapes(directory) -> None:
    """Two TFRecord files of 12 examples: 9 float pixels and a label ``100 * file + i``."""
    for f in range(2):
        with tf.io.TFRecordWriter(str(directory / f"shapes-{f}.tfrecords")) as writer:
            for i in range(12):
                pixels = [float(100 * f + i + k) for k in range(9)]
                feature = {
                    "pixels": tf.train.Feature(float_list=tf.train.FloatList(value=pixels)),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[100 * f + i])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())


def _module_queue(tmp_path, source_edit=None):
    path = copy_script("unseen_module_queue_inputs.py", tmp_path, "shapes_input.py")
    if source_edit is not None:
        path.write_text(source_edit(path.read_text()))
    _shapes(tmp_path)
    return path


def _kept_in_order(original: str, written: str) -> bool:
    """Whether every line of `original` is in `written`, in the same order."""
    lines = iter(written.splitlines())
    return all(any(line == w for w in lines) for line in original.splitlines())


def test_a_function_reading_a_module_level_queue_matches(tmp_path):
    path = _module_queue(tmp_path)
    result = migrate(str(path), "inputs", call="4", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "repeats bounded" in result.verdict.reason  # num_epochs=None, bounded in the proof
    written = result.source[result.source.index("def inputs_dataset(batch_size):") :]
    assert written.startswith(
        "def inputs_dataset(batch_size):\n"
        "    filenames = tf.data.Dataset.from_tensor_slices(FILES)\n"
        "    filenames = filenames.shuffle(filenames.cardinality())\n"
        "    filenames = filenames.repeat()\n"
        "    records = tf.data.TFRecordDataset(filenames)\n"
    )
    assert _kept_in_order(path.read_text(), result.source)  # the module's code left alone
    line = line_of(path, "filename_queue = tf.compat.v1.train.string_input_producer(")
    assert f"shapes_input.py:{line}: `filename_queue = " in result.report()
    assert "stays at module level" in result.report()


def test_a_module_level_reader_and_queue_read_in_order_match(tmp_path):
    path = _module_queue(tmp_path)
    result = migrate(str(path), "eval_inputs", call="4", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("ordered")
    got = elements(result.load().eval_inputs_dataset(4))
    assert [list(np.asarray(labels)) for _, labels in got] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9, 10, 11],
        [100, 101, 102, 103],
        [104, 105, 106, 107],
        [108, 109, 110, 111],
    ]
    first = np.asarray(got[3][0])[0].reshape(-1)
    assert list(first) == [2.0 * (100 + k) for k in range(9)]


def test_the_command_migrates_a_module_level_queue(tmp_path, capsys):
    path = _module_queue(tmp_path)
    out = tmp_path / "migrated.py"
    argv = ["migrate", f"{path}:eval_inputs", "--call", "4", "--out", str(out)]
    assert cli.main(argv + (["--tf1"] if tf1_mode() else [])) == 0, capsys.readouterr().err
    assert "Verify: MATCH" in capsys.readouterr().err
    compile(out.read_text(), str(out), "exec")


def test_a_module_level_queue_made_from_a_name_the_function_binds_is_refused(tmp_path):
    """Its tf.data version, inside the function, would read the function's own value."""
    path = _module_queue(
        tmp_path,
        lambda s: s.replace(
            "def eval_inputs(batch_size):", "def eval_inputs(batch_size, FILES=()):"
        ),
    )
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "eval_inputs", call="4", tf1=tf1_mode())
    message = str(e.value)
    line = line_of(path, "eval_queue = tf.compat.v1.train.string_input_producer(")
    assert f"shapes_input.py:{line}: `eval_queue = " in message
    assert "from `FILES`, a name eval_inputs binds too" in message
    assert "Fix: rename eval_inputs's `FILES`" in message


_SESSION = """

images, labels = inputs(4)
mean = model(images)
with tf.compat.v1.Session() as sess:
    coord = tf.compat.v1.train.Coordinator()
    threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
    for _ in range(3):
        print(sess.run([mean, labels]))
    coord.request_stop()
    coord.join(threads)
"""


def test_a_script_reading_a_module_level_queue_through_its_function_matches(tmp_path):
    """Script mode: the module's session code calls ``inputs(4)``; the queue the
    function reads is a line of the script's pipeline. The evaluation queue and
    reader among its lines, read only by ``eval_inputs`` (not called there), stay as
    written (NOTE [ A stage only the script's other functions read ]; was: an unused
    chain of Datasets, and ``eval_inputs`` reading names the script no longer bound)."""
    path = _module_queue(tmp_path, lambda s: s + _SESSION)
    result = migrate(str(path), "", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    source = result.source
    iterator = "images, labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()\n"
    queue = (
        "eval_queue = tf.compat.v1.train.string_input_producer(FILES, num_epochs=1, "
        "shuffle=False)\n"
    )
    reader = "eval_reader = tf.compat.v1.TFRecordReader()\n"
    assert iterator + queue + reader in source
    assert "filename_queue" not in source[source.index("def model(") :]
    assert "eval_files" not in source
    assert (
        "def eval_inputs(batch_size):\n    _, serialized = eval_reader.read(eval_queue)" in source
    )
