"""``queue-pipeline migrate`` on programs shaped like public TF 1.x code (tests/scripts/real_*.py).

Each program is laid out with its data in a test directory and migrated there as
a user would (``FILE.py:FUNCTION``, ``--call``, ``--argv``), with migrate's own
command line in ``sys.argv``: the verdict must be MATCH, nothing of the
program's top level (training, ``os.makedirs``, checkpoints) may run, no file or
temporary directory may be left, and the program's flags see only ``--argv``.
Both TF modes (the suite's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate
from queue_pipeline._migrate.static_check import check_names
from helpers import tf1_mode
from real_programs import PROGRAMS

# Whole-program migrations of programs shaped like public code (seconds each):
# the full suite runs them in both TF modes, the quick suite (`-m 'not slow'`,
# CI's run on the other Pythons) leaves them to it.
pytestmark = pytest.mark.slow

_MIGRATE_ARGV = ["queue-pipeline", "migrate", "--no-verify", "--bogus-flag", "x.py:f"]


def _migrate(tmp_path, monkeypatch, key: str, **overrides):
    program = PROGRAMS[key]
    path = program.lay_out(str(tmp_path))
    temp = tmp_path.parent / f"{tmp_path.name}-temp"
    temp.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # what migrate leaves, it leaves here
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", list(_MIGRATE_ARGV))
    options = {"call": program.call, "argv": program.argv, "max_batches": program.max_batches}
    options.update(overrides)
    return migrate(path, program.function, **options)


@pytest.mark.parametrize("key", sorted(PROGRAMS))
def test_a_real_shaped_program_migrates_match_and_runs_nothing_else(tmp_path, monkeypatch, key):
    if PROGRAMS[key].tf1_only and not tf1_mode():
        pytest.skip(PROGRAMS[key].tf1_only)
    result = _migrate(tmp_path, monkeypatch, key)
    assert result.verdict is not None and result.verdict.status == "MATCH", result.report()
    # nothing of the program ran: no checkpoint, no output folder, no trained.txt
    assert sorted(os.listdir(tmp_path)) == ["data", PROGRAMS[key].script]
    left = os.listdir(tmp_path.parent / f"{tmp_path.name}-temp")
    # AutoGraph's own cache of converted functions (TensorFlow's, removed at exit) aside
    assert [f for f in left if not f.startswith("__autograph_generated_file")] == []
    assert sys.argv == _MIGRATE_ARGV  # the program's argv was its own, and is put back
    check_names(result.source, [result.function], PROGRAMS[key].script)


def test_module_level_training_is_listed_as_not_run(tmp_path, monkeypatch):
    result = _migrate(tmp_path, monkeypatch, "module_level_training")
    report = result.report()
    assert "Not run of the file" in report
    not_run = "\n".join(result.not_run)
    first = "real_module_level_training.py:37-55: `x_batch, y_batch = read_inputs(DATA_FILES)`"
    assert f"{first} and 6 more statement(s)" in not_run
    assert "tf.compat.v1.disable_eager_execution()" in not_run


def test_absl_flags_keep_their_defaults_unless_argv_sets_them(tmp_path, monkeypatch):
    from absl import flags  # noqa: PLC0415

    result = _migrate(tmp_path, monkeypatch, "absl_flags", argv=None)
    assert result.verdict.status == "MATCH"
    assert flags.FLAGS.batch_size == 4
    assert "records.batch(FLAGS.batch_size)" in result.source
    other = tmp_path / "again"
    other.mkdir()
    _migrate(other, monkeypatch, "absl_flags", argv="--batch_size 3")
    assert flags.FLAGS.batch_size == 3
    # a second load of the same module saw its own default data_dir (the new folder)
    assert flags.FLAGS.data_dir == str(other / "data")


def test_argparse_sees_only_argv_and_a_rejected_argv_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(MigrateError, match=r"exited \(2\).*--argv"):
        _migrate(tmp_path, monkeypatch, "argparse_wholefile", argv="--input_dir data --mode bad")
    other = tmp_path / "again"
    other.mkdir()
    with pytest.raises(MigrateError, match="input_dir does not exist"):
        _migrate(other, monkeypatch, "argparse_wholefile", argv="")


def test_reader_keys_migrate_with_the_legacy_key_strings(tmp_path, monkeypatch):
    result = _migrate(tmp_path, monkeypatch, "wholefile_keys")
    assert "filenames.map(lambda f: (f, tf.io.read_file(f)))" in result.source
    assert "def per_record(key, contents):" in result.source


def test_a_comprehension_variable_is_not_the_readers_key(tmp_path, monkeypatch):
    result = _migrate(tmp_path, monkeypatch, "list_edits")
    added = result.added
    # the defaults and their edits stay together, outside the per-record function
    per_record = added[added.index("def per_record") :]
    assert "defaults = [[0.0] for _ in range(num_numeric)]" not in per_record
    assert added.index("defaults[1] = [-1.0]") < added.index("def per_record")


def test_a_reader_argument_computed_in_a_helper_is_carried_as_its_value(tmp_path, monkeypatch):
    result = _migrate(tmp_path, monkeypatch, "cifar_record_helper")
    assert "tf.data.FixedLengthRecordDataset(files, 193)" in result.added


def test_a_range_producer_read_as_an_index_migrates(tmp_path, monkeypatch):
    result = _migrate(tmp_path, monkeypatch, "ptb_producer")
    assert "tf.data.Dataset.range(tf.cast(epoch_size, tf.int64), output_type=tf.int32)" in (
        result.added
    )
    assert "def per_record(i):" in result.added


def test_the_static_check_names_an_undefined_name_and_its_line():
    source = "import tensorflow as tf\n\n\ndef f_dataset(files):\n    return g(files, size)\n"
    with pytest.raises(MigrateError, match=r"reads `g` in f_dataset\(\) \(line 5"):
        check_names(source, ["f_dataset"], "user.py")
    nested = (
        "def f_dataset():\n    def per_record(v):\n        d = 1\n        return v\n    return d\n"
    )
    with pytest.raises(MigrateError, match="reads `d` in f_dataset"):
        check_names(nested, ["f_dataset"], "user.py")
    check_names("import os\n\n\ndef f_dataset():\n    return os.sep, len\n", ["f_dataset"], "u")


@pytest.mark.slow
@pytest.mark.one_suite("runs the installed console script in both TF modes itself")
@pytest.mark.parametrize("tf1", [False, True], ids=["tf2", "tf1"])
def test_the_console_script_migrates_the_argparse_program_with_its_argv(tmp_path, tf1):
    script = shutil.which("queue-pipeline")
    if script is None:
        pytest.skip("the package's console script is not installed")
    program = PROGRAMS["argparse_wholefile"]
    program.lay_out(str(tmp_path))
    command = [script, "migrate", f"{program.script}:{program.function}"]
    command += ["--argv", "--input_dir data", "--out", "migrated.py"] + (["--tf1"] if tf1 else [])
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Verify: MATCH" in done.stderr
    assert sorted(os.listdir(tmp_path)) == ["data", "migrated.py", program.script]


def test_a_kept_docstring_that_speaks_of_queues_is_flagged(tmp_path):
    (tmp_path / "d.txt").write_text("a\nb\nc\n")
    path = tmp_path / "docq.py"
    path.write_text(
        "import tensorflow as tf\n\n\ndef inputs(files):\n"
        '    """Reads files through a filename queue; start the queue runners first."""\n'
        "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
        "    _, value = tf.compat.v1.TextLineReader().read(q)\n"
        "    return tf.compat.v1.train.batch([value], 2, allow_smaller_final_batch=True)\n"
    )
    result = migrate(str(path), "inputs", args=([str(tmp_path / "d.txt")],))
    assert result.verdict.status == "MATCH"
    assert any(
        f"{path}:5: the docstring of inputs" in d and "queue runners" in d
        for d in result.differences
    ), result.differences


def test_the_loader_runs_what_the_function_needs_by_its_scopes():
    """A function's own locals (``X, Y``) do not pull in module code of the same names;
    defaults and decorators are evaluated at definition; helpers' globals count."""
    import ast  # noqa: PLC0415

    from queue_pipeline._migrate import selection  # noqa: PLC0415

    source = (
        "import os\nSIZE = 4\nUNUSED = open('x')\nFLAG = os.environ.get('X')\n"
        "def helper():\n    return FLAG\n"
        "def inputs(n=SIZE):\n    X, Y = helper(), [i for i in range(n)]\n    return X, Y\n"
        "X, Y = inputs()\nos.makedirs('out')\nlogits = X * 2\n"
        "if __name__ == '__main__':\n    inputs()\n"
    )
    keep, skipped, _ = selection.select(ast.parse(source), "inputs")
    kept = [ast.unparse(s).splitlines()[0] for s in keep]
    assert kept == [
        "import os",
        "SIZE = 4",
        "FLAG = os.environ.get('X')",
        "def helper():",
        "def inputs(n=SIZE):",
    ]
    assert [(first, last) for first, last, _ in skipped] == [(3, 3), (10, 12), (13, 14)]
    assert "__main__ block" in skipped[-1][2]


def test_a_file_written_for_tf1_without_tf1_is_told_to_add_it(tmp_path):
    path = tmp_path / "old.py"
    path.write_text(
        "import tensorflow as tf\n\n\ndef words(name):\n    return tf.gfile.GFile(name).read()\n"
        "\n\ndef inputs(values):\n"
        "    (x,) = tf.train.slice_input_producer([values], num_epochs=1, shuffle=False)\n"
        "    return tf.train.batch([x], 2)\n"
    )
    with pytest.raises(MigrateError, match=r"no attribute 'gfile'.*add --tf1"):
        migrate(str(path), "inputs", call=f"words({str(path)!r})")


KEYED = """
import tensorflow as tf


def keyed(files):
    queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    reader = {reader}
    key, value = reader.read(queue)
    name = tf.strings.regex_replace(key, "^.*/", "")
    return tf.compat.v1.train.batch([name, value], 2, allow_smaller_final_batch=True)
"""


def _keyed_files(tmp_path, kind: str) -> list[str]:
    import tensorflow as tf  # noqa: PLC0415

    paths = [str(tmp_path / f"part{i}.{kind}") for i in range(2)]
    for i, p in enumerate(paths):
        if kind == "tfrecord":
            with tf.io.TFRecordWriter(p) as w:
                for j in range(3 + i):
                    w.write(b"x" * (j + 1))
        elif kind == "bin":
            with open(p, "wb") as f:
                f.write(bytes(range(4 * (3 + i))))
        else:
            with open(p, "w") as f:
                f.write("header\n" + "".join(f"row{j}\n" for j in range(3 + i)))
    return paths


@pytest.mark.parametrize(
    "reader, kind, expected",
    [
        ("tf.compat.v1.TextLineReader(skip_header_lines=1)", "csv", "part0.csv:3"),
        ("tf.compat.v1.TFRecordReader()", "tfrecord", "part0.tfrecord:17"),
        ("tf.compat.v1.FixedLengthRecordReader(4)", "bin", "part0.bin:1"),
    ],
)
def test_each_readers_key_strings_migrate_as_the_legacy_reader_gives_them(
    tmp_path, reader, kind, expected
):
    """The verdict compares the batched key strings themselves (ordered)."""
    path = tmp_path / "keyed.py"
    path.write_text(KEYED.format(reader=reader))
    result = migrate(str(path), "keyed", args=(_keyed_files(tmp_path, kind),))
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("ordered")
    if not tf1_mode():  # the second record's key, read eagerly from the migrated code
        dataset = result.load().keyed_dataset(_keyed_files(tmp_path, kind))
        names = [n.decode() for batch, _ in dataset for n in batch.numpy()]
        assert names[1] == expected


_EXAMPLES = (
    "import collections\nimport tensorflow as tf\n\n"
    'Examples = collections.namedtuple("Examples", "paths, inputs, count, steps_per_epoch")\n\n\n'
    "def load_examples(values, batch_size):\n"
    "    (x,) = tf.compat.v1.train.slice_input_producer([values], num_epochs=1, shuffle=False)\n"
    "    batch = tf.compat.v1.train.batch([x], batch_size, allow_smaller_final_batch=True)\n"
    "    steps = (len(values) + batch_size - 1) // batch_size\n"
    "    return RETURNED\n\n\n"
    "def train():\n"
    "    examples = load_examples([1, 2, 3, 4, 5], 2)\n"
    "    total = examples.inputs * 3\n"
    "    seen = []\n"
    "    with tf.compat.v1.Session() as sess:\n"
    "        coord = tf.compat.v1.train.Coordinator()\n"
    "        threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)\n"
    "        for _ in range(examples.steps_per_epoch):\n"
    "            seen.append(sess.run(total).tolist())\n"
    "        coord.request_stop()\n"
    "        coord.join(threads)\n"
    "    return seen, examples.count\n"
)


@pytest.mark.parametrize(
    "returned",
    [
        "Examples(paths=batch, inputs=batch * 2, count=len(values), steps_per_epoch=steps)",
        "Examples(batch, batch * 2, len(values), steps)",
    ],
)
def test_a_namedtuple_with_plain_values_beside_the_batches_migrates(tmp_path, returned):
    """pix2pix's ``Examples(paths=..., inputs=..., count=len(input_paths), ...)`` (#41 class 4).

    The batch fields become the Dataset's elements (a dict by field name), the
    plain ones a dict returned beside it; the caller rebuilds the namedtuple
    and keeps its loop.
    """
    path = tmp_path / "p2p.py"
    path.write_text(_EXAMPLES.replace("RETURNED", returned))
    result = migrate(str(path), "load_examples", call="[1, 2, 3, 4, 5], 2", callers=True)
    assert result.verdict.status == "MATCH", result.report()
    assert "({'count': 5, 'steps_per_epoch': 3}) compared too" in result.verdict.reason
    assert "lambda batch: {'paths': batch, 'inputs': batch * 2}" in result.source
    assert "examples = Examples(**tf.compat.v1.data.make_one_shot_iterator(" in result.source
    module = result.load()
    with tf.Graph().as_default():
        dataset, plain = module.load_examples_dataset([1, 2, 3], 2)
        assert plain == {"count": 3, "steps_per_epoch": 2}
        assert dataset.element_spec["inputs"].dtype == tf.int32
    with tf.Graph().as_default():  # the rewritten caller runs as it did on the queues
        assert module.train() == ([[6, 12], [18, 24], [30]], 5)


def test_a_dict_with_plain_values_and_a_counted_tuple_keep_their_callers(tmp_path):
    """``return {"x": ..., "num_batches": n}`` and ``return x, y, n`` with --callers."""
    (tmp_path / "d.csv").write_text("1,a\n2,b\n3,c\n4,d\n5,e\n")
    body = (
        "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
        "    _, line = tf.compat.v1.TextLineReader().read(q)\n"
        "    x, y = tf.io.decode_csv(line, [[0], ['']])\n"
        "    xb, yb = tf.compat.v1.train.batch([x, y], 2, allow_smaller_final_batch=True)\n"
    )
    path = tmp_path / "counted.py"
    path.write_text(
        "import tensorflow as tf\n\n\ndef as_dict(files):\n" + body
        + '    return {"x": xb, "y": yb, "num_batches": 3}\n\n\n'
        "def as_tuple(files):\n" + body + "    return xb, yb, 3\n\n\n"
        "def main(files):\n"
        "    d = as_dict(files)\n"
        "    x, y, n = as_tuple(files)\n"
        "    out = []\n"
        "    with tf.compat.v1.Session() as sess:\n"
        "        sess.run(tf.compat.v1.local_variables_initializer())\n"
        "        coord = tf.compat.v1.train.Coordinator()\n"
        "        threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)\n"
        "        for _ in range(d['num_batches']):\n"
        "            out.append([v.tolist() for v in sess.run([d['x'], y])] + [n])\n"
        "        coord.request_stop()\n"
        "        coord.join(threads)\n"
        "    return out\n"
    )  # fmt: skip
    files = [str(tmp_path / "d.csv")]
    first = migrate(str(path), "as_dict", args=(files,), callers=True)
    assert first.verdict.status == "MATCH", first.report()
    assert "d = {**tf.compat.v1.data.make_one_shot_iterator(dataset).get_next(), **plain}" in (
        first.source
    )
    step = tmp_path / "step.py"
    step.write_text(first.source)
    second = migrate(str(step), "as_tuple", args=(files,), callers=True)
    assert second.verdict.status == "MATCH", second.report()
    assert "input_dataset, n = as_tuple_dataset(files)" in second.source
    expected = [[[1, 2], [b"a", b"b"], 3], [[3, 4], [b"c", b"d"], 3], [[5], [b"e"], 3]]
    with tf.Graph().as_default():
        assert second.load().main(files) == expected


def test_a_local_whose_attributes_raise_is_a_plain_value(tmp_path):
    """A closed file-like local (its attribute access raises ValueError) is not a stage (#41)."""
    (tmp_path / "d.txt").write_text("a\nb\nc\n")
    path = tmp_path / "closed.py"
    path.write_text(
        "import tensorflow as tf\n\n\nclass ClosedImage:\n"
        "    def __getattr__(self, name):\n"
        "        raise ValueError('Operation on closed image')\n\n\n"
        "def inputs(files):\n"
        "    preview = ClosedImage()\n"
        "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
        "    _, value = tf.compat.v1.TextLineReader().read(q)\n"
        "    return tf.compat.v1.train.batch([value], 2, allow_smaller_final_batch=True)\n"
    )
    result = migrate(str(path), "inputs", args=([str(tmp_path / "d.txt")],))
    assert result.verdict.status == "MATCH"


def test_plain_values_beside_the_batches_are_returned_and_proven(tmp_path):
    """`return x_batch, y_batch, num_batches`: the Dataset and the count, compared both (#41)."""
    (tmp_path / "d.csv").write_text("1,a\n2,b\n3,c\n4,d\n5,e\n")
    path = tmp_path / "counted.py"
    path.write_text(
        "import tensorflow as tf\n\n\ndef inputs(files, batch_size):\n"
        "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
        "    _, line = tf.compat.v1.TextLineReader().read(q)\n"
        "    x, y = tf.io.decode_csv(line, [[0], ['']])\n"
        "    x_batch, y_batch = tf.compat.v1.train.batch(\n"
        "        [x, y], batch_size, allow_smaller_final_batch=True)\n"
        "    num_batches = (5 + batch_size - 1) // batch_size\n"
        "    return x_batch, y_batch, num_batches\n"
    )
    result = migrate(str(path), "inputs", args=([str(tmp_path / "d.csv")], 2))
    assert result.verdict.status == "MATCH", result.verdict.reason
    assert "values beside the batches (3) compared too" in result.verdict.reason
    new = result.load().inputs_dataset([str(tmp_path / "d.csv")], 2)
    assert isinstance(new[0], tf.data.Dataset) and new[1:] == (3,)


def test_the_proof_splits_plain_values_from_the_pipeline():
    from queue_pipeline._migrate.plain_values import split_plain  # noqa: PLC0415

    t = tf.constant([1])
    assert split_plain((t, 3, "train")) == (t, [3, "train"])
    assert split_plain([t, t, np.int64(2)])[1] == [np.int64(2)]
    assert split_plain((t, t)) == ((t, t), [])
    assert split_plain(t) == (t, [])


_PASSED_READER = (
    "import tensorflow as tf\n"
    "from tensorflow.compat.v1 import TextLineReader as BoundBeforeInstall\n\n\n"
    "def read_batch_examples(files, batch_size, reader):\n"
    "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
    "    _, value = reader().read(q)\n"
    "    return tf.compat.v1.train.batch([value], batch_size, allow_smaller_final_batch=True)\n\n\n"
    "def prefetch_input_data(reader, files, batch_size):\n"
    "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
    "    _, value = reader.read(q)\n"
    "    return tf.compat.v1.train.batch([value], batch_size, allow_smaller_final_batch=True)\n\n\n"
    "def bound(files, batch_size):\n"
    "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
    "    _, value = BoundBeforeInstall(skip_header_lines=1).read(q)\n"
    "    return tf.compat.v1.train.batch([value], batch_size, allow_smaller_final_batch=True)\n"
)


@pytest.mark.parametrize(
    "function, call",
    [
        ("read_batch_examples", "FILES, 2, tf.compat.v1.TextLineReader"),
        ("prefetch_input_data", "tf.compat.v1.TextLineReader(skip_header_lines=1), FILES, 2"),
        ("bound", "FILES, 2"),
    ],
    ids=["class", "instance", "bound_before_install"],
)
def test_a_reader_passed_in_or_bound_before_install_is_a_stage(tmp_path, function, call):
    """The reader is TF's own or made by --call: its read is read from the graph (#41 class 1)."""
    data = tmp_path / "d.txt"
    data.write_text("header\na\nb\nc\n")
    path = tmp_path / "passed.py"
    path.write_text(
        _PASSED_READER.replace("\n\n\ndef read", f"\nFILES = [{str(data)!r}]\n\n\ndef read", 1)
    )
    result = migrate(str(path), function, call=call)
    assert result.verdict.status == "MATCH", result.verdict.reason
    skip = "skip(1)" in result.source.split(f"def {function}_dataset")[1]
    assert skip == (function != "read_batch_examples")


def test_a_py_func_stage_migrates_as_numpy_function(tmp_path):
    """A py_func between the reader and the batch runs as tf.numpy_function in the map (#41)."""
    (tmp_path / "d.csv").write_text("1,a\n2,b\n3,c\n4,d\n5,e\n")
    path = tmp_path / "pyfunc.py"
    path.write_text(
        "import numpy as np\nimport tensorflow as tf\n\n\ndef _normalize(x):\n"
        "    return ((x - 1) / 2).astype(np.float32)\n\n\n"
        "def inputs(files, batch_size):\n"
        "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
        "    _, line = tf.compat.v1.TextLineReader().read(q)\n"
        "    x, y = tf.io.decode_csv(line, [[0], ['']])\n"
        "    x = tf.compat.v1.py_func(_normalize, [x], tf.float32, stateful=False)\n"
        "    x.set_shape([])\n"
        "    return tf.compat.v1.train.batch([x, y], batch_size, allow_smaller_final_batch=True)\n"
    )
    result = migrate(str(path), "inputs", args=([str(tmp_path / "d.csv")], 2))
    assert result.verdict.status == "MATCH", result.verdict.reason
    new = result.source.split("def inputs_dataset")[1]
    assert "tf.numpy_function(_normalize, [x], tf.float32, stateful=False)" in new
    assert "tf.compat.v1.py_func" not in new


_KEYED_HELPER = (
    "import tensorflow as tf\n\n\n"
    "def read_image(queue):\n"
    "    unused = tf.Variable([0], dtype=tf.int8)\n"
    "    key, contents = tf.compat.v1.WholeFileReader().read(queue)\n"
    "    size = tf.strings.length(contents)\n"
    "    return size, key\n\n\n"
    "def pipeline(files, batch_size):\n"
    "    queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
    "    size, name = read_image(queue)\n"
    "    return tf.compat.v1.train.batch(\n"
    "        [size, name], batch_size, allow_smaller_final_batch=True)\n"
)


def test_a_reading_helper_that_returns_the_key_reads_key_value_pairs(tmp_path):
    """Cat-GAN's readJPEG: WholeFileReader's key (the file name) returned as the label; an
    unread tf.Variable in the helper is dropped with its line (#41)."""
    files = []
    for i in range(5):
        (tmp_path / f"f{i}.bin").write_bytes(b"x" * (i + 1))
        files.append(str(tmp_path / f"f{i}.bin"))
    path = tmp_path / "keyed.py"
    path.write_text(_KEYED_HELPER)
    result = migrate(str(path), "pipeline", args=(files, 2))
    assert result.verdict.status == "MATCH", result.verdict.reason
    assert "def read_image_record(key, contents):" in result.source
    assert ".map(lambda f: (f, tf.io.read_file(f)))" in result.source
    assert any("keyed.py:5: `unused = tf.Variable" in d for d in result.dropped), result.dropped


def test_a_helper_making_records_called_twice_for_one_batch_is_zipped(tmp_path):
    """segnet's inputs: one helper builds a producer + reader per file, called twice for
    one batch; was refused as a second pipeline, now zipped (NOTE [ Records read in
    lockstep ]) and proven in order."""
    path = tmp_path / "two.py"
    path.write_text(
        "import tensorflow as tf\n\n\ndef one(name):\n"
        "    q = tf.compat.v1.train.string_input_producer([name], num_epochs=1, shuffle=False)\n"
        "    _, line = tf.compat.v1.TextLineReader().read(q)\n"
        "    return line\n\n\ndef inputs(a, b):\n"
        "    first = one(a)\n    second = one(b)\n"
        "    return tf.compat.v1.train.batch([first, second], 2)\n"
    )
    (tmp_path / "a.txt").write_text("1\n2\n")
    (tmp_path / "b.txt").write_text("3\n4\n")
    result = migrate(str(path), "inputs", args=(str(tmp_path / "a.txt"), str(tmp_path / "b.txt")))
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("ordered"), result.verdict.reason
    assert "records = tf.data.Dataset.zip((records, second_records))" in result.source


def test_an_import_the_function_does_not_need_may_fail(tmp_path):
    """A DCGAN-era file imports scipy.misc.imread (gone from SciPy); the pipeline needs none."""
    (tmp_path / "d.txt").write_text("a\nb\n")
    path = tmp_path / "old_imports.py"
    path.write_text(
        "from os import no_such_name\nimport tensorflow as tf\n\n\ndef inputs(files):\n"
        "    q = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
        "    _, value = tf.compat.v1.TextLineReader().read(q)\n"
        "    return tf.compat.v1.train.batch([value], 2, allow_smaller_final_batch=True)\n"
    )
    result = migrate(str(path), "inputs", args=([str(tmp_path / "d.txt")],))
    assert result.verdict.status == "MATCH", result.verdict.reason
    assert any(
        "old_imports.py:1" in n and "does not need it" in n for n in result.report().splitlines()
    )
    needed = tmp_path / "needed.py"
    needed.write_text(
        path.read_text().replace("files, num_epochs", "no_such_name or files, num_epochs")
    )
    with pytest.raises(MigrateError, match=r"needed\.py:1: .*ImportError"):
        migrate(str(needed), "inputs", args=([str(tmp_path / "d.txt")],))


_NO_RETURN = (
    "import tensorflow as tf\n\n\ndef main(argv):\n"
    "    q = tf.compat.v1.train.string_input_producer(FILES, num_epochs=1, shuffle=False)\n"
    "    _, value = tf.compat.v1.TextLineReader().read(q)\n"
    "    images = tf.compat.v1.train.batch([value], 2)\n\n\n"
    "if __name__ == '__main__':\n    main([])\n"
)


def test_a_pipeline_returned_nowhere_is_told_so_not_a_crash(tmp_path):
    """An MNIST tutorial's main() builds the batches and returns nothing; its module level
    only calls main: clear errors with what to do, never an IndexError."""
    (tmp_path / "d.txt").write_text("a\nb\n")
    path = tmp_path / "no_return.py"
    path.write_text(
        _NO_RETURN.replace(
            "\n\n\ndef main", f"\nFILES = [{str(tmp_path / 'd.txt')!r}]\n\n\ndef main"
        )
    )
    with pytest.raises(
        MigrateError, match=r"main\(\) .* builds a queue pipeline but returns nothing"
    ):
        migrate(str(path), "main", call="[]")
    with pytest.raises(
        MigrateError, match=r"no_return\.py:12: the code after the pipeline reads none of the"
    ):
        migrate(str(path), "")  # `main([])` under the main guard builds it, reads nothing


def test_a_file_indented_with_tabs_migrates(tmp_path):
    """influenzaVirus' testbatch_2.py is indented with tabs; the new code uses spaces."""
    (tmp_path / "d.csv").write_text("".join(f"{i},a{i},b{i}\n" for i in range(6)))
    path = tmp_path / "tabs.py"
    path.write_text(
        "import tensorflow as tf\n\n\ndef read_format(queue):\n"
        "\t_, value = tf.compat.v1.TextLineReader().read(queue)\n"
        "\tcol1, col2, col3 = tf.io.decode_csv(value, record_defaults=[[0], [''], ['']])\n"
        "\treturn col3, col1\n\n\ndef pipeline(files, batch_size):\n"
        "\tqueue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
        "\texamples = read_format(queue)\n"
        "\treturn tf.compat.v1.train.batch(\n"
        "\t\texamples, batch_size, allow_smaller_final_batch=True)\n"
    )
    result = migrate(str(path), "pipeline", args=([str(tmp_path / "d.csv")], 4))
    assert result.verdict.status == "MATCH", result.verdict.reason
    added = result.source[result.source.index("def read_format_") :]
    added = added[: added.index("def pipeline(")] + added[added.index("def pipeline_dataset") :]
    assert "\t" not in added


def test_inception_batches_keep_their_queue_kinds_copies_and_per_batch_code(tmp_path, monkeypatch):
    """NOTE [ Copies of the per-record code for a join ], NOTE [ Per-batch code after the
    batching call ], and an own queue made before its records (train: RandomShuffleQueue)."""
    result = _migrate(tmp_path, monkeypatch, "inception_train")
    source = result.source.split("def batch_inputs_dataset")[1]
    assert "examples_queue_shuffle = (min_queue_examples + 3 * self.batch_size, None)" in source
    assert "examples_queue_shuffle = None" in source  # the evaluation branch's FIFOQueue
    assert "if examples_queue_shuffle:" in source
    assert "images_and_labels = []" not in source and "batch_join" not in source
    assert "def per_batch(images, label_index_batch):" in source
    assert "repeats bounded to 1 epoch(s)" in result.verdict.reason  # an endless own queue
    assert any("summary.image" in d for d in result.dropped), result.dropped


def test_a_reading_helper_that_batches_and_match_filenames_once(tmp_path, monkeypatch):
    """NOTE [ A reading helper that batches ]; match_filenames_once as tf.io.matching_files."""
    if not tf1_mode():
        pytest.skip(PROGRAMS["detection_script"].tf1_only)
    result = _migrate(tmp_path, monkeypatch, "detection_script")
    assert "files = tf.io.matching_files(" in result.source
    assert "dataset = records.padded_batch(3)" in result.source
    assert "def read_and_decode_record(serialized_example):" in result.source
    assert any("`mask = tf.greater(" in d for d in result.dropped), result.dropped
    assert any(s.legacy == "batch (in read_and_decode)" for s in result.steps)


def test_flags_read_while_call_runs_see_the_programs_argv(tmp_path, monkeypatch):
    """tf.app.flags parse sys.argv on first use: while `--call` and the trace run, that is
    the program's ``--argv``, never migrate's own command line."""
    (tmp_path / "d.txt").write_text("a\nb\nc\n")
    (tmp_path / "flagdefs.py").write_text(
        "import tensorflow as tf\n"
        "tf.compat.v1.flags.DEFINE_integer('qp_test_batch', 1, 'batch size')\n"
    )
    path = tmp_path / "model.py"
    path.write_text(
        "import tensorflow as tf\nimport flagdefs\n\nF = tf.compat.v1.flags.FLAGS\n\n\n"
        "class Inputs:\n    def __init__(self, files):\n"
        "        self.files = files\n        self.batch_size = F.qp_test_batch\n\n"
        "    def feed(self):\n"
        "        q = tf.compat.v1.train.string_input_producer(self.files, num_epochs=1, "
        "shuffle=False)\n"
        "        _, line = tf.compat.v1.TextLineReader().read(q)\n"
        "        return tf.compat.v1.train.batch([line], self.batch_size, "
        "allow_smaller_final_batch=True)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "argv", list(_MIGRATE_ARGV))
    try:
        result = migrate(
            str(path), "Inputs.feed", call=repr([str(tmp_path / "d.txt")]),
            argv="--qp_test_batch=2",
        )  # fmt: skip
    finally:
        from absl import flags  # noqa: PLC0415

        flags.FLAGS.unparse_flags()
        delattr(flags.FLAGS, "qp_test_batch")
        sys.modules.pop("flagdefs", None)
    assert result.verdict.status == "MATCH", result.report()
    assert sys.argv == _MIGRATE_ARGV
