"""``queue-pipeline migrate``: legacy input functions rewritten as tf.data code, proven by compare.

Each classic program of ``legacy_examples/`` is migrated with its bundled data
and verified (exact order where the legacy side is deterministic, multisets
otherwise); the migrated code is compared with a checked-in expected diff
(``tests/migrate_expected/``: regenerate with ``QUEUE_PIPELINE_UPDATE_MIGRATE=1``
and review the diff). Both TF modes run every test (the suite's ``--tf1``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import dataset_values, tf1_mode
from queue_pipeline import cli
from queue_pipeline._migrate import verify as _verify
from queue_pipeline._migrate.api import MigrateError, migrate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "legacy_examples")
EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrate_expected")

# (program, function, --call with {d} for a data directory, verify mode). Shuffled
# programs use batch sizes that divide the epochs (or keep the tail): a dropped
# tail of shuffled examples is a different multiset on each side.
PROGRAMS = [
    ("mnist_tfrecords", "inputs", "prepare_data({d!r})['train'], 479, 1, seed=3", "multiset"),
    ("mnist_tfrecords", "eval_inputs", "prepare_data({d!r})['t10k'], 32", "ordered"),
    (
        "csv_reading",
        "build_legacy",
        "write_csv_files({d!r}), num_epochs=1, shuffle=False",
        "ordered",
    ),
    (
        "multi_reader_join",
        "build_legacy",
        "write_files({d!r}), num_epochs=1, seed=1, batch_size=16, allow_smaller_final_batch=True",
        "multiset",
    ),
    (
        "preloaded_data",
        "preloaded_constant",
        "*load_training_data({d!r}), num_epochs=1, shuffle=False",
        "ordered",
    ),
    (
        "preloaded_data",
        "preloaded_variable",
        "*load_training_data({d!r}), num_epochs=1, shuffle=False",
        "ordered",
    ),
    (
        "detection_dynamic_pad",
        "build_legacy",
        "[write_records({d!r})[0]], num_epochs=1, shuffle=False",
        "ordered",
    ),
    (
        "cifar10_binary",
        "inputs",
        "True, _bundled_data.write_cifar_binary({d!r}) and {d!r}, 50, num_epochs=1, "
        "shuffle=False, num_threads=1",
        "ordered",
    ),
    (
        "cifar10_binary",
        "inputs",
        "True, _bundled_data.write_cifar_binary({d!r}) and {d!r}, 299, num_epochs=2",
        "multiset",
    ),
    (
        "cifar10_binary",
        "distorted_inputs",
        "_bundled_data.write_cifar_binary({d!r}) and {d!r}, 8, verbose=False",
        "multiset",
    ),
]


def _expected_name(program: str, function: str) -> str:
    """The checked-in migrated code; a ``.tf1.py`` one where TF1 mode writes other code
    (preloaded arrays held in variables: tests/test_migrate_preloaded.py)."""
    tf1 = os.path.join(EXPECTED, f"{program}.{function}.tf1.py")
    if tf1_mode() and os.path.exists(tf1):
        return tf1
    return os.path.join(EXPECTED, f"{program}.{function}.py")


@pytest.mark.slow
@pytest.mark.parametrize(
    "program,function,call,mode",
    PROGRAMS,
    ids=[f"{p}.{f}-{m}" for p, f, _, m in PROGRAMS],
)
def test_every_classic_program_migrates_and_verifies_match(tmp_path, program, function, call, mode):
    result = migrate(
        os.path.join(EXAMPLES, f"{program}.py"), function, call=call.format(d=str(tmp_path))
    )
    assert result.verdict is not None
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.partition(",")[0].partition(";")[0] == mode
    assert result.exit_status == 0
    assert all(part in result.source for part in result.added.split("\n\n\n"))
    _assert_expected(result.added, _expected_name(program, function))


def _assert_expected(migrated: str, expected_file: str) -> None:
    """`migrated` is the checked-in `expected_file` (rewritten if QUEUE_PIPELINE_UPDATE_MIGRATE)."""
    if os.environ.get("QUEUE_PIPELINE_UPDATE_MIGRATE"):
        os.makedirs(EXPECTED, exist_ok=True)
        with open(expected_file, "w", encoding="utf-8") as f:
            f.write(migrated)
    with open(expected_file, encoding="utf-8") as f:
        expected = f.read()
    assert migrated == expected, f"migrated code changed; review and regenerate {expected_file}"


LEGACY_NAMES = {
    "queue_pipeline",
    "IMPLS",
    "Coordinator",
    "start_queue_runners",
    "QueueRunner",
    "string_input_producer",
    "slice_input_producer",
    "batch_join",
    "shuffle_batch",
    "shuffle_batch_join",
    "TFRecordReader",
    "TextLineReader",
    "FixedLengthRecordReader",
}


@pytest.mark.parametrize("program,function", sorted({(p, f) for p, f, _, _ in PROGRAMS}))
def test_migrated_code_is_plain_tensorflow(program, function):
    """The added functions use tf.data and no name of the legacy queue API (docstrings aside)."""
    with open(_expected_name(program, function), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "data" in names and "Dataset" in names or "map" in names
    assert not names & LEGACY_NAMES, names & LEGACY_NAMES


def _distorted_cifar(tmp_path):
    import legacy_examples.cifar10_binary as cifar  # noqa: PLC0415

    from queue_pipeline import _bundled_data  # noqa: PLC0415

    _bundled_data.write_cifar_binary(str(tmp_path))
    return cifar, f"{str(tmp_path)!r}, 8, verbose=False"


@pytest.mark.slow
def test_distorted_cifar_input_verifies_with_bounded_repeats_and_pinned_draws(tmp_path):
    """Random augmentation on an input that repeats forever: proven for one epoch, draws pinned.

    NOTE [ Proving a random, endless input pipeline ]. The migrated Dataset
    itself keeps its endless repeat and its random draws.
    """
    cifar, call = _distorted_cifar(tmp_path)
    result = migrate(cifar.__file__, "distorted_inputs", call=call)
    assert result.verdict.status == "MATCH", result.report()
    reason = result.verdict.reason
    assert "repeats bounded to 1 epoch(s) on both sides" in reason
    assert "random draws (RandomUniform, RandomUniformInt) pinned" in reason
    assert result.exit_status == 0
    assert "random_crop" in result.added and ".repeat()" in result.source
    migrated = result.load()
    with tf.Graph().as_default():
        legacy_images, legacy_labels = cifar.distorted_inputs(str(tmp_path), 8, verbose=False)
    dataset = migrated.distorted_inputs_dataset(str(tmp_path), 8, verbose=False)
    images, labels = dataset.element_spec
    assert images.dtype == legacy_images.dtype and labels.dtype == legacy_labels.dtype
    assert images.shape.as_list() == legacy_images.shape.as_list() == [8, 24, 24, 3]
    assert labels.shape.as_list() == legacy_labels.shape.as_list() == [8]
    # Unbounded outside the proof: more batches than one epoch holds (250 images).
    batches = dataset_values(dataset.take(40))
    assert len(batches) == 40 and set(batches[-1][1]) <= set(range(10))


def _edited_proof(module, function, call, source, old, new):
    """The proof of `source` (a migration of `module.function`) with one line edited."""
    from queue_pipeline._migrate import trace as _trace  # noqa: PLC0415

    lines = source.splitlines(keepends=True)
    index = max(i for i, line in enumerate(lines) if old in line)  # the migrated function's
    lines[index] = lines[index].replace(old, new)
    args, kwargs = _trace.parse_call(module, call)
    traced = _trace.trace(module.__file__, function, args, kwargs)
    edited = _verify.load_migrated(traced.module, "".join(lines), None)
    return _verify.verify(traced, edited, function + "_dataset", args, kwargs)


@pytest.mark.slow
def test_pinned_draws_still_see_a_lost_flip(tmp_path):
    """The proof is not blind to the augmentation: without the flip the images DIFFER.

    (CIFAR's brightness and contrast changes are undone by its
    per_image_standardization, in both pipelines alike; NOISY_SCRIPT shows
    that a changed range is seen.)
    """
    cifar, call = _distorted_cifar(tmp_path)
    result = migrate(cifar.__file__, "distorted_inputs", call=call, verify=False)
    flip = "distorted_image = tf.image.random_flip_left_right(distorted_image)"
    verdict = _edited_proof(cifar, "distorted_inputs", call, result.source, flip, "pass")
    assert verdict.status == "DIFFER", verdict.reason


NOISY_SCRIPT = """
import tensorflow as tf


def inputs(path):
    queue = tf.compat.v1.train.string_input_producer([path], shuffle=False)  # forever
    _, line = tf.compat.v1.TextLineReader().read(queue)
    (value,) = tf.io.decode_csv(line, [[0.0]])
    noisy = value + tf.random.uniform([], -0.5, 0.5) + tf.random.normal([], stddev=0.1)
    return tf.compat.v1.train.batch([noisy], 4)
"""


@pytest.mark.parametrize("old,new", [(None, None), ("-0.5, 0.5", "-0.5, 0.6"), ("0.1", "0.2")])
def test_random_noise_on_an_endless_input_verifies_and_a_changed_range_differs(tmp_path, old, new):
    (tmp_path / "values.csv").write_text("".join(f"{v}\n" for v in range(12)))
    path = _write(tmp_path / "noisy.py", NOISY_SCRIPT)
    call = repr(str(tmp_path / "values.csv"))
    result = migrate(path, "inputs", call=call, verify=old is None)
    if old is None:
        assert result.verdict.status == "MATCH", result.report()
        assert result.verdict.reason == (
            "ordered; repeats bounded to 1 epoch(s) on both sides; random draws "
            "(RandomStandardNormal, RandomUniform) pinned to 0.25 of their range on both sides"
        )
        return
    from queue_pipeline._migrate import trace as _trace  # noqa: PLC0415

    original, _ = _trace.load_module(path)
    verdict = _edited_proof(original, "inputs", call, result.source, old, new)
    assert verdict.status == "DIFFER", verdict.reason


# --- batch-then-decode and exact arithmetic -------------------------------------------

DIVIDE_SCRIPT = """
import tensorflow as tf


def inputs(path):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    (value,) = tf.io.decode_csv(line, [[0]])
    scaled = tf.cast(value, tf.float32) / 255.0  # a Session folds this into a multiplication
    return tf.compat.v1.train.batch([scaled], 4, allow_smaller_final_batch=True)
"""

RAGGED_SCRIPT = """
import tensorflow as tf


def inputs(path):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    raw = tf.io.decode_raw(line, tf.uint8)
    first = tf.cast(raw[0], tf.int32)
    return tf.compat.v1.train.batch([first], 2, allow_smaller_final_batch=True)
"""


def test_a_division_by_a_constant_verifies_match(tmp_path):
    """NOTE [ Exact arithmetic for a migration's proof ]: 58 / 255.0 to the last bit."""
    (tmp_path / "values.csv").write_text("".join(f"{v}\n" for v in range(0, 256, 7)))
    path = _write(tmp_path / "divide.py", DIVIDE_SCRIPT)
    result = migrate(path, "inputs", call=repr(str(tmp_path / "values.csv")))
    assert result.verdict.status == "MATCH", result.report()
    assert "per_batch" in result.added  # decode_csv, cast and / run on whole batches


def test_a_batched_decode_that_fails_falls_back_to_per_record(tmp_path):
    """decode_raw of lines of different lengths works per record, not on a batch."""
    (tmp_path / "lines.txt").write_text("ab\nabc\nabcd\nx\n")
    path = _write(tmp_path / "ragged.py", RAGGED_SCRIPT)
    result = migrate(path, "inputs", call=repr(str(tmp_path / "lines.txt")))
    assert result.verdict.status == "MATCH", result.report()
    assert "per_record" in result.added and "per_batch" not in result.added
    assert any("batch-then-decode" in d and "did not verify" in d for d in result.differences)


def test_without_verify_the_decode_stays_per_record(tmp_path):
    (tmp_path / "values.csv").write_text("1\n2\n")
    path = _write(tmp_path / "divide.py", DIVIDE_SCRIPT)
    result = migrate(path, "inputs", call=repr(str(tmp_path / "values.csv")), verify=False)
    assert "per_record" in result.added and "per_batch" not in result.added


def test_the_classic_fully_connected_reader_migrates_with_batch_then_decode(tmp_path):
    """TF's own fully_connected_reader.py input code: 2-space indents, a separate decode()."""
    import shutil  # noqa: PLC0415

    script = tmp_path / "fully_connected_reader.py"
    shutil.copy(os.path.join(ROOT, "tests", "scripts", "fully_connected_reader.py"), script)
    rng = __import__("numpy").random.default_rng(0)
    with tf.io.TFRecordWriter(str(tmp_path / "validation.tfrecords")) as writer:
        for _ in range(300):
            image = rng.integers(0, 256, 784, dtype="uint8").tobytes()
            feature = {
                "image_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[3])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    result = migrate(str(script), "inputs", call=f"{str(tmp_path)!r}, False, 100, 1")
    assert result.verdict.status == "MATCH", result.report()
    assert "def decode_batch(serialized_example):" in result.added
    assert "tf.io.parse_example(" in result.added and "set_shape([None, 784])" in result.added
    assert "# Convert from [0, 255] -> [-0.5, 0.5] floats." in result.added  # comments kept
    assert "with tf.compat.v1.name_scope('input'):" in result.added
    compile(result.source, str(script), "exec")


# --- session code that calls the migrated function -------------------------------------

SESSION_SCRIPT = """
import tensorflow as tf

OP_TIMEOUT_MS = 20_000


def inputs(path, num_epochs):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=num_epochs, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    (value,) = tf.io.decode_csv(line, [[0]])
    return tf.compat.v1.train.batch([value], 2, allow_smaller_final_batch=True)


def other_inputs(path):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    return tf.compat.v1.train.batch([line], 2, allow_smaller_final_batch=True)


def total(path, num_epochs, stop_after=None):
    with tf.Graph().as_default():
        values = inputs(path, num_epochs)  # a batch of one tensor is that tensor, as in TF
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
            seen, steps = 0, 0
            try:
                while not coord.should_stop():
                    seen += int(sess.run(values).sum())
                    steps += 1
                    if stop_after is not None and steps >= stop_after:
                        coord.request_stop()
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
            return seen, steps


def both(path):
    with tf.Graph().as_default():
        values = inputs(path, 1)
        lines = other_inputs(path)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
            out = sess.run([values, lines])
            coord.request_stop()
            coord.join(threads)
            return out
"""


def _session_module(tmp_path):
    (tmp_path / "values.csv").write_text("".join(f"{v}\n" for v in range(1, 8)))
    return _write(tmp_path / "session_script.py", SESSION_SCRIPT), str(tmp_path / "values.csv")


def test_callers_keep_their_loop_and_lose_the_coordinator(tmp_path):
    """NOTE [ Rewriting the callers of a migrated function ], on a classic loop."""
    path, data = _session_module(tmp_path)
    result = migrate(path, "inputs", call=f"{data!r}, 2", callers=True)
    assert result.verdict.status == "MATCH", result.report()
    module = result.load()
    source = result.source[result.source.index("def total(") : result.source.index("def both(")]
    assert "Coordinator" not in source and "start_queue_runners" not in source
    assert "while True:" in source and "break" in source and "finally" not in source
    assert "make_one_shot_iterator(dataset).get_next()" in source
    legacy = result.original
    assert module.total(data, 2) == legacy.total(data, 2) == (2 * 28, 7)  # 1..7 twice, by 2
    assert module.total(data, 2, stop_after=3) == legacy.total(data, 2, stop_after=3) == (21, 3)


def test_a_caller_with_another_queue_pipeline_keeps_its_coordinator(tmp_path):
    path, data = _session_module(tmp_path)
    result = migrate(path, "inputs", call=f"{data!r}, 1", callers=True)
    source = result.source[result.source.index("def both(") :]
    assert "Coordinator" in source and "make_one_shot_iterator(dataset)" in source
    assert any("Coordinator kept" in step.replacement for step in result.steps)
    values, lines = result.load().both(data)
    assert list(values) == [1, 2] and list(lines) == [b"1", b"2"]


PRELOADED_VAR_SCRIPT = """
import numpy as np
import tensorflow as tf

OP_TIMEOUT_MS = 30_000


def inputs(data, num_epochs, batch_size=2):
    # fully_connected_preloaded_var.py: the data in a variable, not in the graph
    with tf.name_scope("input"):
        initializer = tf.compat.v1.placeholder(dtype=data.dtype, shape=data.shape)
        input_data = tf.compat.v1.Variable(initializer, trainable=False, collections=[])
        (value,) = tf.compat.v1.train.slice_input_producer(
            [input_data], num_epochs=num_epochs, shuffle=False
        )
        values = tf.compat.v1.train.batch([value], batch_size=batch_size)

    def load(sess):
        sess.run(input_data.initializer, feed_dict={initializer: data})

    return values, load


def run_training(data, num_epochs):
    with tf.Graph().as_default():
        values, load = inputs(data, num_epochs)
        total = tf.reduce_sum(values)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            load(sess)
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
            seen, steps = 0, 0
            try:
                while not coord.should_stop():
                    seen += int(sess.run(total))
                    steps += 1
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
            return seen, steps
"""


def test_a_preloaded_variable_caller_loads_then_initializes_its_iterator(tmp_path):
    """A function returning ``(batches, load)``: its caller unpacks ``dataset, load``,
    reads an initializable iterator (a one-shot one cannot capture the variable) and
    initializes it right after ``load(sess)``; the loop is kept, the Coordinator goes."""
    path = _write(tmp_path / "preloaded_var.py", PRELOADED_VAR_SCRIPT)
    result = migrate(path, "inputs", call="np.arange(1, 9), 2", callers=True)
    assert result.verdict.status == "MATCH", result.report()
    source = result.source[result.source.index("def run_training(") :]
    assert "values, load = inputs_dataset(" not in source
    for line in (
        "dataset, load = inputs_dataset(data, num_epochs)",
        "iterator = tf.compat.v1.data.make_initializable_iterator(dataset)",
        "values = iterator.get_next()",
        "load(sess)\n            sess.run(iterator.initializer)\n",
        "while True:",
    ):
        assert line in source, source
    assert "Coordinator" not in source and "start_queue_runners" not in source
    data = np.arange(1, 9)
    assert result.load().run_training(data, 2) == result.original.run_training(data, 2)
    assert result.original.run_training(data, 2) == (72, 8)
    with tf.Graph().as_default():
        dataset, _ = result.load().inputs_dataset(data, 1)
    assert isinstance(dataset.element_spec, tf.TensorSpec)  # batch([value]) is a tensor, as in TF


# --- reports -------------------------------------------------------------------------


@pytest.mark.slow
def test_report_names_each_call_its_replacement_and_argument_fates(tmp_path):
    result = migrate(
        os.path.join(EXAMPLES, "mnist_tfrecords.py"),
        "inputs",
        call=f"prepare_data({str(tmp_path)!r})['train'], 64, 1",
        verify=False,
    )
    report = result.report()
    assert "string_input_producer" in report and "shuffle_batch" in report
    assert "TFRecordReader.read (in read_and_decode)" in report
    assert "min_after_dequeue: shuffle buffer = capacity" in report
    assert "a shuffle buffer is not a RandomShuffleQueue" in report
    assert result.verdict is None


def test_dropped_statements_are_reported_with_file_and_line(tmp_path):
    from queue_pipeline import _bundled_data  # noqa: PLC0415

    _bundled_data.write_cifar_binary(str(tmp_path))
    result = migrate(
        os.path.join(EXAMPLES, "cifar10_binary.py"),
        "inputs",
        call=f"False, {str(tmp_path)!r}, 10, num_epochs=1",
        verify=False,
    )
    dropped = "\n".join(result.dropped)
    assert re.search(r"cifar10_binary\.py:\d+: `tf\.compat\.v1\.summary\.image", dropped)
    assert re.search(r"cifar10_binary\.py:\d+: `result\.key`", dropped)


# --- bad input and nothing lost -------------------------------------------------------


def _write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


PY_FUNC_SCRIPT = """
import numpy as np
import tensorflow as tf


def inputs(path):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    doubled = tf.compat.v1.py_func(lambda s: s + s, [line], tf.string)
    doubled.set_shape([])
    return tf.compat.v1.train.batch([doubled], 2)
"""

NO_PIPELINE = """
import tensorflow as tf


def inputs():
    return tf.constant([1, 2, 3])
"""


def test_a_file_that_does_not_parse_is_a_clear_error(tmp_path):
    path = _write(tmp_path / "broken.py", "def inputs(:\n")
    with pytest.raises(MigrateError, match=r"broken\.py:1: the file does not parse"):
        migrate(path, "inputs")


def test_a_function_that_builds_no_queue_pipeline_is_a_clear_error(tmp_path):
    path = _write(tmp_path / "plain.py", NO_PIPELINE)
    with pytest.raises(MigrateError, match=r"builds no queue pipeline"):
        migrate(path, "inputs")


def test_a_missing_function_and_arguments_that_do_not_run_are_clear_errors(tmp_path):
    path = _write(tmp_path / "plain.py", NO_PIPELINE)
    with pytest.raises(MigrateError, match=r"has no function 'nope'"):
        migrate(path, "nope")
    with pytest.raises(MigrateError, match=r"calling inputs\(1\) failed: TypeError"):
        migrate(path, "inputs", call="1")
    with pytest.raises(MigrateError, match=r"`--call` '1,,' is not a valid argument list"):
        migrate(path, "inputs", call="1,,")
    with pytest.raises(MigrateError, match=r"evaluating `--call` \"open\('/nowhere'\)\" raised"):
        migrate(path, "inputs", call="open('/nowhere')")


def test_a_py_func_of_a_lambda_migrates_as_numpy_function(tmp_path):
    (tmp_path / "a.txt").write_text("x\ny\n")
    path = _write(tmp_path / "pyfunc.py", PY_FUNC_SCRIPT)
    result = migrate(path, "inputs", call=repr(str(tmp_path / "a.txt")))
    assert result.verdict.status == "MATCH", result.verdict.reason
    assert "tf.numpy_function(lambda s: s + s, [line], tf.string)" in result.source


LOADER_FIRST = """
import tensorflow as tf


def inputs(values):
    data = tf.compat.v1.Variable(tf.zeros([4]), trainable=False, collections=[])
    (value,) = tf.compat.v1.train.slice_input_producer([data], num_epochs=1, shuffle=False)
    batch = tf.compat.v1.train.batch([value], 2)

    def load(sess):
        sess.run(data.assign(values))

    return load, batch
"""


def test_a_function_returning_a_loader_before_its_batches_is_refused_with_its_line(tmp_path):
    path = _write(tmp_path / "loader_first.py", LOADER_FIRST)
    with pytest.raises(MigrateError, match=r"loader_first\.py:13: .*returns load beside the "):
        migrate(path, "inputs", call="[1.0, 2.0, 3.0, 4.0]", verify=False)


LAMBDA_LOADER = """
import numpy as np
import tensorflow as tf


def inputs(x, y):
    x_init = tf.compat.v1.placeholder(tf.float32, x.shape)
    xv = tf.compat.v1.Variable(x_init, trainable=False, collections=[])
    feature, label = tf.compat.v1.train.slice_input_producer([xv, y], num_epochs=2, shuffle=False)
    features, labels = tf.compat.v1.train.batch([feature, label], 4, allow_smaller_final_batch=True)
    return features, labels, lambda sess: sess.run(xv.initializer, {x_init: x})
"""


def test_a_loader_written_as_a_lambda_is_kept_in_the_return(tmp_path):
    path = _write(tmp_path / "lambda_loader.py", LAMBDA_LOADER)
    call = "np.arange(20, dtype=np.float32).reshape(10, 2), np.arange(10)"
    result = migrate(path, "inputs", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason == (
        "ordered; the returned loader run in each side's session before it is read"
    )
    expected = "return dataset.prefetch(tf.data.AUTOTUNE), lambda sess: sess.run(xv.initializer"
    assert expected in result.source


@pytest.mark.slow
def test_the_preloaded_variable_proof_runs_the_loader_and_sees_what_it_feeds(tmp_path):
    """The variable program returns ``(dataset, load)``; its proof runs each side's
    ``load`` in that side's session. A migrated load that feeds other labels DIFFERs."""
    from legacy_examples import preloaded_data  # noqa: PLC0415

    call = f"*load_training_data({str(tmp_path)!r}), num_epochs=1, shuffle=False"
    result = migrate(preloaded_data.__file__, "preloaded_variable", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason == "ordered; load run in each side's session before it is read"
    assert "returns (dataset, load)" in result.report()
    assert "make_initializable_iterator" in result.report()
    old = "feed_dict={labels_initializer: labels}"
    verdict = _edited_proof(
        preloaded_data, "preloaded_variable", call, result.source, old,
        "feed_dict={labels_initializer: labels[::-1]}",
    )  # fmt: skip
    assert verdict.status == "DIFFER", verdict.reason


CSV_CALL = "write_csv_files({d!r}), num_epochs=1, shuffle=False"


def test_out_is_written_and_never_overwritten(tmp_path):
    out = tmp_path / "migrated.py"
    call = CSV_CALL.format(d=str(tmp_path))
    result = migrate(
        os.path.join(EXAMPLES, "csv_reading.py"), "build_legacy", call=call, out=str(out)
    )
    assert result.written == str(out) and out.read_text() == result.source
    with pytest.raises(MigrateError, match="exists; it is never overwritten"):
        migrate(os.path.join(EXAMPLES, "csv_reading.py"), "build_legacy", call=call, out=str(out))


def test_in_place_keeps_the_original_and_refuses_a_second_time(tmp_path):
    source = os.path.join(EXAMPLES, "csv_reading.py")
    copy = tmp_path / "legacy_examples_copy" / "csv_reading.py"
    copy.parent.mkdir()
    original = open(source, encoding="utf-8").read()
    copy.write_text(original)
    call = CSV_CALL.format(d=str(tmp_path))
    result = migrate(str(copy), "build_legacy", call=call, in_place=True)
    assert result.written == str(copy)
    assert (tmp_path / "legacy_examples_copy" / "csv_reading.py.orig").read_text() == original
    assert "def build_legacy_dataset(" in copy.read_text()
    with pytest.raises(MigrateError, match=r"csv_reading\.py\.orig exists"):
        migrate(str(copy), "build_legacy", call=call, in_place=True)


def test_a_failed_verify_leaves_the_files_as_they_were(tmp_path, monkeypatch):
    monkeypatch.setattr(
        _verify, "verify", lambda *a, **k: _verify.Verdict("DIFFER", "ordered", "differs")
    )
    out = tmp_path / "migrated.py"
    result = migrate(
        os.path.join(EXAMPLES, "csv_reading.py"),
        "build_legacy",
        call=CSV_CALL.format(d=str(tmp_path)),
        out=str(out),
    )
    assert result.exit_status == 1 and result.written is None
    assert not out.exists()


# --- the command ----------------------------------------------------------------------


def test_command_prints_the_diff_and_the_verdict(tmp_path, capsys):
    target = os.path.join(EXAMPLES, "csv_reading.py") + ":build_legacy"
    status = cli.main(["migrate", target, "--call", CSV_CALL.format(d=str(tmp_path)), "--diff"])
    out, err = capsys.readouterr()
    assert status == 0
    assert out.startswith("---") and "+def build_legacy_dataset(" in out
    assert "Verify: MATCH (ordered)" in err


def test_command_errors_exit_2_without_a_traceback(tmp_path, capsys):
    path = _write(tmp_path / "plain.py", NO_PIPELINE)
    assert cli.main(["migrate", f"{path}:inputs"]) == 2
    err = capsys.readouterr().err
    assert "builds no queue pipeline" in err and "Traceback" not in err
    assert cli.main(["migrate", path]) == 2  # no FUNCTION: the module-level pipeline
    err = capsys.readouterr().err
    assert "at module level builds no queue pipeline" in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.one_suite("the migrate subprocess runs with --tf1 in either suite")
def test_a_script_written_for_tf1_migrates_with_tf1(tmp_path):
    """``import tensorflow as tf`` meaning TF 1.x (tf.TFRecordReader, tf.parse_single_example).

    A subprocess: --tf1 disables v2 behaviour for the rest of the process.
    """
    data = tmp_path / "records.tfrecords"
    with tf.io.TFRecordWriter(str(data)) as writer:
        for i in range(10):
            feature = {
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "features": tf.train.Feature(
                    float_list=tf.train.FloatList(value=[i, i + 0.5, -i, 1.0])
                ),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    out = tmp_path / "migrated.py"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "queue_pipeline",
            "migrate",
            "--tf1",
            os.path.join(ROOT, "tests", "scripts", "tf1_inputs.py") + ":inputs",
            "--call",
            f"{str(data)!r}, 4, 2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert "Verify: MATCH (ordered)" in done.stderr
    migrated = out.read_text()
    assert "def decode_batch(serialized_example):" in migrated
    assert "tf.parse_example(" in migrated  # the script's own spelling, batched
    assert "tf.data.TFRecordDataset" in migrated


@pytest.mark.slow
def test_the_command_migrates_to_a_new_file(tmp_path, capsys):
    """``migrate FILE.py:FUNCTION --out NEW.py`` (``python -m queue_pipeline`` runs the
    same ``cli.main``: the module-level test below runs it as a subprocess)."""
    out = tmp_path / "new.py"
    target = os.path.join(EXAMPLES, "csv_reading.py") + ":build_legacy"
    status = cli.main(
        ["migrate", target, "--call", CSV_CALL.format(d=str(tmp_path)), "--out", str(out)]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.out == ""  # the code goes to the file, the report to stderr
    assert "Verify: MATCH" in captured.err and f"Wrote {out}" in captured.err
    assert "def build_legacy_dataset(" in out.read_text()


# --- a script's module-level pipeline -------------------------------------------------

# The "Reading data" guide's CSV example (its pipeline at module level, read in a
# `with Session()` block below it), in the suite's mode: written for TF 1.x
# (`run --tf1`) in the TF1 suite, on tf.compat.v1 in graph mode under TF 2.x.
GUIDE_CSV = """
# The "Reading data" guide's CSV example.
{header}
filename_queue = {v1}train.string_input_producer(["file0.csv", "file1.csv"], num_epochs=1,
                                               shuffle=False)

reader = {v1}TextLineReader()
key, value = reader.read(filename_queue)

# Default values, in case of empty columns.
record_defaults = [[1], [1], [1], [1], [1]]
col1, col2, col3, col4, col5 = {v1}decode_csv(
    value, record_defaults=record_defaults)
features = tf.stack([col1, col2, col3, col4])

config = {v1}ConfigProto(operation_timeout_in_ms=30000)
with {v1}Session(config=config) as sess:
  sess.run({v1}local_variables_initializer())
  # Start populating the filename queue.
  coord = {v1}train.Coordinator()
  threads = {v1}train.start_queue_runners(coord=coord)

  try:
    while not coord.should_stop():
      example, label = sess.run([features, col5])
      print(example.tolist(), label)
  except tf.errors.OutOfRangeError:
    print("done")
  finally:
    coord.request_stop()
  coord.join(threads)
"""


def _guide_script(tmp_path) -> str:
    (tmp_path / "file0.csv").write_text("1,2,3,4,5\n6,7,8,9,10\n11,12,13,14,15\n")
    (tmp_path / "file1.csv").write_text("16,17,18,19,20\n21,22,23,24,25\n")
    if tf1_mode():
        text = GUIDE_CSV.format(header="import tensorflow as tf", v1="tf.")
    else:
        header = "import tensorflow as tf\n\ntf.compat.v1.disable_eager_execution()"
        text = GUIDE_CSV.format(header=header, v1="tf.compat.v1.")
    return _write(tmp_path / "csv_guide.py", text.lstrip("\n"))


def _run_script(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    mode = ["--tf1"] if tf1_mode() else []
    return subprocess.run(
        [sys.executable, "-m", "queue_pipeline", *argv[:1], *mode, *argv[1:]],
        capture_output=True, text=True, timeout=240, cwd=str(tmp_path),
    )  # fmt: skip


@pytest.mark.slow
def test_a_scripts_module_level_pipeline_migrates_in_place_of_itself(tmp_path):
    """NOTE [ Migrating an inline pipeline ]: no FUNCTION. The script is never
    imported (its session code would run); the migrated script prints what TF's
    queue pipeline prints for the guide's files. Subprocesses: the script itself sets
    the TF mode of its process."""
    script = _guide_script(tmp_path)
    done = _run_script(tmp_path, "migrate", "csv_guide.py", "--out", "migrated.py")
    assert done.returncode == 0, done.stderr
    assert "Verify: MATCH (ordered)" in done.stderr, done.stderr
    lines = open(script).read().splitlines()
    producer = 1 + next(i for i, text in enumerate(lines) if "string_input_producer" in text)
    read = 1 + next(i for i, text in enumerate(lines) if "reader.read(" in text)
    report = done.stderr[done.stderr.index("queue-pipeline migrate: (module level)") :]
    assert f"line {producer}: string_input_producer" in report, report  # the script's lines
    assert f"line {read}: TextLineReader.read" in report, report
    migrated = (tmp_path / "migrated.py").read_text()
    for line in (
        '\nfilenames = tf.data.Dataset.from_tensor_slices(["file0.csv", "file1.csv"])\n',
        "\n\n\ndef per_record(value):\n",
        "features, col5 = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()\n",
        "    while True:\n",
    ):
        assert line in migrated, migrated
    for gone in ("Coordinator", "start_queue_runners", "coord.", "reader", "filename_queue"):
        assert gone not in migrated, migrated
    assert not list(tmp_path.glob("*__qp_migrate_*"))  # the wrapped copy is gone
    # What the original prints, TF's order: file0's lines, then file1's, then "done".
    rows = [range(1 + 5 * i, 6 + 5 * i) for i in range(5)]
    printed = "".join(f"{list(row)[:4]} {row[4]}\n" for row in rows) + "done\n"
    new = _run_script(tmp_path, "run", "migrated.py")
    assert new.returncode == 0, new.stderr
    assert new.stdout == printed


def test_a_script_without_a_module_level_pipeline_or_with_call_is_a_clear_error(tmp_path):
    path = _write(tmp_path / "plain.py", "import tensorflow as tf\n\nx = tf.constant(1)\n")
    with pytest.raises(MigrateError, match=r"plain\.py at module level builds no queue pipeline"):
        migrate(path, "")
    script = _guide_script(tmp_path)
    with pytest.raises(MigrateError, match=r"takes no arguments; `--call` is for FILE"):
        migrate(script, "", call="1")


READ_UP_TO_AT_MODULE_LEVEL = """
import tensorflow as tf

queue = tf.compat.v1.train.string_input_producer(["{path}"], num_epochs=1, shuffle=False)
_, lines = tf.compat.v1.TextLineReader().read_up_to(queue, 2)

print(lines)
"""


def test_a_module_level_statement_that_cannot_migrate_is_named_by_the_scripts_line(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    text = READ_UP_TO_AT_MODULE_LEVEL.format(path=tmp_path / "a.txt")
    path = _write(tmp_path / "read_up_to_script.py", text)
    with pytest.raises(MigrateError, match=r"read_up_to_script\.py:5: .*read_up_to") as info:
        migrate(path, "")
    assert "__qp_migrate_" not in str(info.value)
    assert not list(tmp_path.glob("*__qp_migrate_*"))


def test_a_pipeline_inline_in_a_training_function_migrates_where_it_stands(tmp_path):
    """``fully_connected_preloaded_var.py``'s shape (NOTE [ Migrating an inline
    pipeline ]): run_training is never called to trace it; its pipeline, inside its
    own Graph block and before the model, is replaced in place; the variables it reads
    are loaded by the session code, so the Dataset is read through an initializable
    iterator started where start_queue_runners was. The training losses are the same."""
    path = os.path.join(ROOT, "tests", "scripts", "preloaded_var_training.py")
    out = tmp_path / "migrated_training.py"
    result = migrate(path, "run_training", call="*training_data()", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason == (
        "ordered; the session's variable loads run in each side's session before it is read"
    )
    assert result.function == "run_training() (inline)"
    lines = open(path).read().splitlines()
    producer = 1 + next(i for i, text in enumerate(lines) if "slice_input_producer(" in text)
    assert any(s.line == producer and s.legacy == "slice_input_producer" for s in result.steps)
    source = out.read_text()
    for line in (
        "            records = tf.data.Dataset.from_tensor_slices((input_images, input_labels))\n",
        "        iterator = tf.compat.v1.data.make_initializable_iterator(dataset)\n",
        "        batch_images, batch_labels = iterator.get_next()\n",
        "        sess.run(iterator.initializer)\n",
        "            while True:\n",
    ):
        assert line in source, source
    training = source[source.index("def run_training(") : source.index("if __name__")]
    for gone in ("Coordinator", "start_queue_runners", "coord.", "slice_input_producer"):
        assert gone not in training, training
    assert "_inline_pipeline" not in source and "_load_variables" not in source
    with pytest.raises(MigrateError, match="is not imported"):
        result.load()
    spec = importlib.util.spec_from_file_location("migrated_training", out)
    migrated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migrated)
    data = result.original.training_data()
    original = _trace_module(path)
    assert migrated.run_training(*data) == original.run_training(*data)
    assert len(migrated.run_training(*data, num_epochs=1)) == 6  # 24 examples by 4


def _trace_module(path):
    from queue_pipeline._migrate import trace as _trace  # noqa: PLC0415

    module, _ = _trace.load_module(path)
    return module


@pytest.mark.slow
def test_arrays_held_as_large_graph_constants_get_a_note_with_the_measured_cost(tmp_path):
    """benchmarks/preloaded_forms.py: read in a Session, a Dataset over 180 MiB of
    graph constants reads an epoch at 0.64x TF's queue API; from variables, 36x.
    Migrated in TF1 mode the code holds them in variables itself (the note says so;
    tests/test_migrate_preloaded.py)."""
    from legacy_examples import preloaded_data  # noqa: PLC0415

    path = preloaded_data.__file__
    large = "np.zeros((23000, 784), np.float32), np.zeros(23000, np.uint8), shuffle=False"
    result = migrate(path, "preloaded_constant", call=large, verify=False)
    if tf1_mode():
        (note,) = [d for d in result.differences if "held in variables" in d]
        assert "slice_input_producer: its arrays (69 MiB) are held in variables" in note
    else:
        (note,) = [d for d in result.differences if "graph constants" in d]
        assert "slice_input_producer: its arrays (69 MiB) are graph constants" in note
        assert "variables loaded from placeholders" in note
    small = "np.zeros((20, 784), np.float32), np.zeros(20, np.uint8), shuffle=False"
    result = migrate(path, "preloaded_constant", call=small, verify=False)
    assert not [d for d in result.differences if "graph constants" in d]
    result = migrate(path, "preloaded_variable", call=large, verify=False)
    assert not [d for d in result.differences if "graph constants" in d]  # variables


SAME_NAME = """
import tensorflow as tf


def inputs():
    (x,) = tf.compat.v1.train.slice_input_producer(
        [tf.constant({values})], num_epochs=1, shuffle=False
    )
    return tf.compat.v1.train.batch([x], 2, allow_smaller_final_batch=True)
"""


def test_two_files_of_one_name_in_one_process_each_trace_their_own(tmp_path):
    """The second ``inputs.py`` is traced, not the module the first left in sys.modules."""
    for directory, values in (("a", [1, 2, 3]), ("b", [4, 5, 6, 7, 8])):
        (tmp_path / directory).mkdir()
        path = _write(tmp_path / directory / "inputs.py", SAME_NAME.format(values=values))
        result = migrate(path, "inputs")
        assert result.verdict.status == "MATCH", result.report()
        assert result.original.__file__ == path


TWO_PRODUCERS = """
import numpy as np
import tensorflow as tf


def two_inputs(first, second):
    (x,) = tf.compat.v1.train.slice_input_producer([first], num_epochs=1, shuffle=False)
    (y,) = tf.compat.v1.train.slice_input_producer([second], num_epochs=1, shuffle=False)
    return tf.compat.v1.train.batch([x], 10), tf.compat.v1.train.batch([y], 10)
"""


@pytest.mark.parametrize("large_at", [7, 8])
@pytest.mark.slow
def test_the_large_constants_note_names_only_the_producer_that_holds_them(tmp_path, large_at):
    path = _write(tmp_path / "two_producers.py", TWO_PRODUCERS)
    large, small = "np.zeros((23000, 784), np.float32)", "np.zeros((20, 3), np.float32)"
    call = f"{large}, {small}" if large_at == 7 else f"{small}, {large}"
    # Two pipelines in one function migrate each on its own (NOTE [ Several
    # pipelines in a function ]); the notes are made per producer statement.
    from queue_pipeline._migrate import codegen, trace as _trace  # noqa: PLC0415

    result = migrate(path, "two_inputs", call=call, verify=False)
    assert "def two_inputs_dataset(first, second):" in result.source
    assert [n.partition(": slice_input_producer")[0] for n in result.differences if
            "graph constants" in n] == [f"{path}:{large_at}"]  # fmt: skip
    module, _ = _trace.load_module(path, "two_inputs", (), call)
    traced = _trace.trace(path, "two_inputs", *_trace.parse_call(module, call), module=module)
    rewriter = codegen._Rewriter(traced, TWO_PRODUCERS)
    fn = rewriter.functions["two_inputs"]
    for stmt in fn.node.body.body[:2]:
        rewriter._note_large_constants(fn, stmt)
    notes = [d for d in rewriter.differences if "graph constants" in d]
    assert [n.partition(": slice_input_producer")[0] for n in notes] == [f"{path}:{large_at}"]
    assert "its arrays (69 MiB)" in notes[0]


FLAGS_PROGRAM = "flags_reader_training.py"
FLAGS_MIGRATED = _expected_name("flags_reader_training", "run_training")


def test_a_training_program_with_global_flags_migrates_with_them_at_their_defaults(tmp_path):
    """FLAGS set in the ``__main__`` block, read by the inline pipeline: the copy runs
    the block's flag parsing (not its ``app.run``). The whole migrated program is
    checked in (both modes write it alike); the next test runs it."""
    (tmp_path / "train.csv").write_text("".join(f"{i},{2 * i}\n" for i in range(7)))
    script = tmp_path / FLAGS_PROGRAM
    script.write_text(open(os.path.join(ROOT, "tests", "scripts", FLAGS_PROGRAM)).read())
    out = tmp_path / "migrated.py"
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the default file name is relative, as in the program
    try:
        result = migrate(str(script), "run_training", out=str(out))
    finally:
        os.chdir(cwd)
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason == "ordered"
    source = out.read_text()
    assert "filenames = tf.data.Dataset.from_tensor_slices(FLAGS.files)" in source
    assert "xs, ys = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()" in source
    assert "start_queue_runners" not in source and "FLAGS, unparsed = parser" in source
    _assert_expected(source, FLAGS_MIGRATED)


@pytest.mark.one_suite("the programs run as `python FILE.py`: TF 2.x defaults in either suite")
@pytest.mark.slow
def test_the_migrated_flags_program_trains_like_the_original(tmp_path):
    """The original and its checked-in migration (the test above proves migrate writes
    it, in both modes), each run as a program: the same output, step by step."""
    (tmp_path / "train.csv").write_text("".join(f"{i},{2 * i}\n" for i in range(7)))
    programs = [os.path.join(ROOT, "tests", "scripts", FLAGS_PROGRAM), FLAGS_MIGRATED]
    runs = [
        subprocess.run(
            [sys.executable, path, "--num_epochs", "3"],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=str(tmp_path),
        )
        for path in programs
    ]
    assert runs[0].returncode == runs[1].returncode == 0, runs[1].stderr[-2000:]
    assert runs[1].stdout == runs[0].stdout
    assert runs[0].stdout.splitlines()[-1].startswith("done after 7 steps")  # 21 lines by 3
