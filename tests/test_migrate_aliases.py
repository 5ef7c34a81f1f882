"""migrate on legacy calls made through a name, and on code failing under its arguments (#41).

A call is a legacy call when its callee evaluates to a legacy function,
however it is spelled: ``batchfn = tf.train.batch; batchfn(dat, ...)``, a
module-level ``READER = tf.TFRecordReader``, a name rebound in a branch
(NOTE [ A legacy function called through a name ]). A binding to anything
else is refused with its line; ``**batch_kwargs`` of a dict literal never
changed is written out, and one changed per mode stays a refusal, quoting
the user's line. When the user's own code fails under the given arguments,
the fix names the failing line instead of ``--call`` (NOTE [ A function that
fails under its arguments ]). The program is ``tests/scripts/unseen_batch_alias.py``;
run in the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import os
import shutil
import textwrap

import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate
from queue_pipeline._migrate.failure_hints import failure_fix
from queue_pipeline._migrate.legacy_aliases import cleaned, legacy_kind
from helpers import line_of

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")
HPS = "type('H', (), {'batch_size': 4})()"


def _sequence_records(path, count: int) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(count):
            steps = 1 + i % 4
            context = tf.train.Features(
                feature={
                    "uid": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                    "seqlen": tf.train.Feature(int64_list=tf.train.Int64List(value=[steps])),
                    "weight": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 10])),
                }
            )

            def floats(values):
                return tf.train.Feature(float_list=tf.train.FloatList(value=values))

            lists = tf.train.FeatureLists(
                feature_list={
                    "label": tf.train.FeatureList(feature=[floats([k]) for k in range(steps)]),
                    "feats": tf.train.FeatureList(
                        feature=[floats([i, k, 1.0]) for k in range(steps)]
                    ),
                }
            )
            example = tf.train.SequenceExample(context=context, feature_lists=lists)
            writer.write(example.SerializeToString())


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "decode_examples.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_batch_alias.py"), path)
    _sequence_records(tmp_path / "users.tfrecords", 10)
    return path


def _records_call(tmp_path, *middle: str) -> str:
    return ", ".join([repr(str(tmp_path / "users.tfrecords")), *middle, HPS])


def test_a_local_batching_alias_and_a_module_reader_alias_migrate(program, tmp_path):
    """``batchfn = tf.train.batch`` then ``batchfn(dat, ...)``, the reader made
    by a module-level ``READER = tf.TFRecordReader``: the batching call is the
    legacy one (was: moved into ``per_record`` inside ``Dataset.map``, DIFFER
    with 0 twin batches), and the alias line is not in the tf.data code."""
    result = migrate(str(program), "fetch_batch_plain", call=_records_call(tmp_path))
    assert result.verdict is not None
    assert result.verdict.status == "MATCH", result.report()
    line = line_of(program, "# the last batch may be short") + 1
    # the call spans lines; its step is at one of them
    assert any(s.legacy == "batch" and line <= s.line <= line + 3 for s in result.steps), (
        result.report()
    )
    assert "padded_batch(" in result.added
    assert "batchfn" not in result.added
    assert "READER" not in result.added
    # the user's own function is kept as written
    assert "    batchfn = tf.train.batch\n" in result.source


def test_the_public_shape_with_batch_kwargs_is_refused_at_its_line_as_written(program, tmp_path):
    """The public shape: ``batchfn`` rebound to ``maybe_batch`` in training, the
    arguments in a ``batch_kwargs`` dict filled per mode: an honest refusal of
    ``**batch_kwargs`` quoting the user's line (was: UnboundLocalError in the
    written code, with a hint to debug ``twin``)."""
    line = line_of(program, "batchdat = batchfn(dat, **batch_kwargs)")
    with pytest.raises(MigrateError) as caught:
        migrate(str(program), "fetch_batchdat_vars", call=_records_call(tmp_path, "'test'"))
    message = str(caught.value)
    assert f"decode_examples.py:{line}: cannot migrate `batchdat = batchfn(dat" in message, message
    assert "`**batch_kwargs` argument in a call of batch" in message
    assert "UnboundLocalError" not in message


def test_an_alias_rebound_to_a_partial_is_refused_with_both_lines(program, tmp_path):
    """``batchfn = functools.partial(tf.train.maybe_batch, ...)`` in a branch:
    which function the call makes is not known from the source; refused at
    the call's line, naming both bindings and the fix."""
    call_line = line_of(program, "return batchfn(dat, batch_size=hps.batch_size")
    legacy_line = line_of(program, "def fetch_batch(") + 3
    other_line = line_of(program, "batchfn = functools.partial(")
    with pytest.raises(MigrateError) as caught:
        migrate(str(program), "fetch_batch", call=_records_call(tmp_path, "'test'"))
    message = str(caught.value)
    assert f"decode_examples.py:{call_line}: cannot migrate `return batchfn(" in message, message
    assert f"`tf.train.batch` at line {legacy_line}" in message
    assert f"`functools.partial(tf.train.maybe_batch, keep_input=keep)` at line {other_line}" in (
        message
    )
    assert "call the legacy function by its own name" in message


_BRANCHES = """
import tensorflow.compat.v1 as tf

FEATURES = {"a": tf.FixedLenFeature([], tf.float32), "b": tf.FixedLenFeature([2], tf.int64)}
BATCH = tf.train.batch


def inputs(fname, batch_size, mode):
    batchfn = tf.train.batch
    fq = tf.train.string_input_producer([fname], num_epochs=1, shuffle=False)
    _, serialized = tf.TFRecordReader().read(fq)
    dat = tf.parse_single_example(serialized, FEATURES)
    if mode == "train":
        batchfn = tf.train.maybe_batch
    dat["a"] = dat["a"] * 2.0
    return batchfn(dat, batch_size=batch_size)


def literal_kwargs(fname, batch_size):
    fq = tf.train.string_input_producer([fname], num_epochs=1, shuffle=False)
    _, serialized = tf.TFRecordReader().read(fq)
    dat = tf.parse_single_example(serialized, FEATURES)
    batch_kwargs = {"batch_size": batch_size, "capacity": 100}
    return tf.train.batch(dat, **batch_kwargs)


def rebound_kwargs(fname, batch_size):
    fq = tf.train.string_input_producer([fname], num_epochs=1, shuffle=False)
    _, serialized = tf.TFRecordReader().read(fq)
    dat = tf.parse_single_example(serialized, FEATURES)
    batch_kwargs = {"batch_size": batch_size, "capacity": 100}
    batch_size = batch_size * 2
    return tf.train.batch(dat, **batch_kwargs)


def module_alias(fname, batch_size):
    fq = tf.train.string_input_producer([fname], num_epochs=1, shuffle=False)
    _, serialized = tf.TFRecordReader().read(fq)
    return BATCH(tf.parse_single_example(serialized, FEATURES), batch_size=batch_size)
"""


@pytest.fixture
def branches(tmp_path):
    path = tmp_path / "branches.py"
    path.write_text(textwrap.dedent(_BRANCHES))
    with tf.io.TFRecordWriter(str(tmp_path / "test.tfrecord")) as writer:
        for i in range(12):
            feature = {
                "a": tf.train.Feature(float_list=tf.train.FloatList(value=[float(i)])),
                "b": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, -i])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return path


def test_an_alias_bound_in_a_branch_the_run_did_not_take_is_the_runs_one(branches, tmp_path):
    """``batchfn`` is ``tf.train.batch``, or ``maybe_batch`` in training: the run
    (mode 'val') took ``batch``, which is migrated; the report says the other
    branch exists, and neither binding nor the emptied ``if`` is written."""
    call = f"{str(tmp_path / 'test.tfrecord')!r}, 4, 'val'"
    result = migrate(str(branches), "inputs", call=call)
    assert result.verdict is not None
    assert result.verdict.status == "MATCH", result.report()
    line = line_of(branches, "return batchfn(")
    note = next((d for d in result.differences if f"branches.py:{line}:" in d), result.report())
    assert "`batchfn` is `tf.train.batch`" in note
    assert "`tf.train.maybe_batch` in other branches" in note
    assert "batchfn" not in result.added
    assert 'if mode == "train"' not in result.added
    assert "records.batch(batch_size, drop_remainder=True)" in result.added


def test_a_module_level_alias_is_followed(branches, tmp_path):
    """``BATCH = tf.train.batch`` at the module level, ``BATCH(...)`` in the function."""
    call = f"{str(tmp_path / 'test.tfrecord')!r}, 4"
    result = migrate(str(branches), "module_alias", call=call)
    assert result.verdict is not None
    assert result.verdict.status == "MATCH", result.report()
    assert "BATCH" not in result.added
    assert any(s.legacy == "batch" for s in result.steps)


def test_legacy_kind_knows_the_legacy_functions_by_value():
    assert legacy_kind(tf.compat.v1.train.batch) == "batch"
    assert legacy_kind(tf.compat.v1.TFRecordReader) == "TFRecordReader"
    assert legacy_kind(tf.compat.v1.train.string_input_producer) == "string_input_producer"

    def batch(tensors):  # the user's own function of that name
        return tensors

    assert legacy_kind(batch) == ""
    assert legacy_kind(len) == ""


def test_cleaned_drops_the_left_out_bindings_and_an_if_left_empty():
    marker = "pass  # queue-pipeline: a legacy function's name, left out"
    code = (
        "def f(mode):\n"
        f"    {marker}\n"
        "    x = 1\n"
        "    if mode == 'train':\n"
        f"        {marker}\n"
        "    if check(mode):\n"
        f"        {marker}\n"
        "    return x\n"
    )
    assert cleaned(code) == (
        "def f(mode):\n    x = 1\n    if check(mode):\n        pass\n    return x\n"
    )
    assert cleaned("def g():\n    pass\n") == "def g():\n    pass\n"


_FAILING = """
import tensorflow.compat.v1 as tf


def merged(ctx, seq):
    return dict(ctx.items() + seq.items())


def shards(num_shards):
    return tf.constant(4400000) - 4400000 / num_shards
"""


def test_python2_code_failing_names_its_line_not_call(tmp_path):
    """The user's Python 2 line fails under Python 3: the fix names that line and
    says so (was: "pass arguments that run (--call)")."""
    path = tmp_path / "decode.py"
    path.write_text(textwrap.dedent(_FAILING))
    line = line_of(path, "return dict(ctx.items() + seq.items())")
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "merged", call="{'a': 1}, {'b': 2}")
    message = str(caught.value)
    assert f"Fix: merged() itself fails at {path}:{line} under these arguments" in message
    assert "that line is Python 2 code" in message
    assert "--call" not in message.split("Fix:")[1]


def _raise(fn, *args, **kwargs) -> BaseException:
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the error to explain
        return e
    raise AssertionError("no error")


def test_failure_fix_suggests_call_only_for_the_arguments(tmp_path):
    """Arguments that do not fit the signature, a missing file, or an object
    passed without the attribute read: ``--call``; a float where TensorFlow
    wants an int at the user's line: that line."""
    path = tmp_path / "decode.py"
    path.write_text(textwrap.dedent(_FAILING))
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - the test's own code
    merged, shards = namespace["merged"], namespace["shards"]

    unfit = _raise(merged, 1)
    assert failure_fix(merged, (1,), {}, unfit, str(path)) == (
        "pass arguments that fit its signature (--call)"
    )
    missing = FileNotFoundError(2, "No such file", "users.tfrecords")
    assert "--call" in failure_fix(merged, ({}, {}), {}, missing, str(path))

    with tf.Graph().as_default():
        error = _raise(shards, 2)
    fix = failure_fix(shards, (2,), {}, error, str(path))
    line = line_of(path, "tf.constant(4400000) - 4400000 / num_shards")
    assert fix.startswith(f"shards() itself fails at {path}:{line} under these arguments")
    assert "make it an int" in fix
    assert "--call" not in fix

    class Hps:
        pass

    def reads(hps):
        return hps.batch_size

    wrong = _raise(reads, Hps())
    assert "--call" in failure_fix(reads, (Hps(),), {}, wrong, str(path))


def test_migrated_code_failing_in_the_proof_is_reported_as_a_bug_in_migrate(monkeypatch):
    """The tf.data side raising a Python error (was: UnboundLocalError with the
    harness's "call it on its own to debug it; `twin` must build the pipeline")
    is migrate's fault, and the message says so."""
    from queue_pipeline._compare.harness import call_builder
    from queue_pipeline._migrate import proven
    from queue_pipeline._migrate import verify as _verify

    def unbound():
        raise UnboundLocalError("'batchfn' is used before assignment")

    def verify(*_args, **_kwargs):
        call_builder("compare", "twin", unbound)

    monkeypatch.setattr(_verify, "load_migrated", lambda *_args: None)
    monkeypatch.setattr(_verify, "verify", verify)
    traced = type("T", (), {"module": type("M", (), {"__file__": __file__})(), "path": __file__})
    rewrite = type("R", (), {"batched": [], "added": "", "function": "f_dataset", "source": ""})
    with pytest.raises(MigrateError) as caught:
        proven._prove(traced, rewrite, (), {}, None, None)
    message = str(caught.value)
    assert "UnboundLocalError: 'batchfn' is used before assignment" in message
    assert "This is a bug in migrate: please report it" in message
    assert "call it on its own" not in message


def test_a_dict_literal_of_arguments_never_changed_is_written_out(branches, tmp_path):
    """``batch_kwargs = {...}`` bound once, read only by ``**batch_kwargs``: its
    arguments are the call's (MATCH, the dict not in the tf.data code); bound
    from a name rebound before the call, it stays the honest refusal."""
    call = f"{str(tmp_path / 'test.tfrecord')!r}, 4"
    result = migrate(str(branches), "literal_kwargs", call=call)
    assert result.verdict is not None
    assert result.verdict.status == "MATCH", result.report()
    assert "batch_kwargs" not in result.added
    assert "records.batch(batch_size, drop_remainder=True)" in result.added
    line = line_of(branches, "batch_size = batch_size * 2") + 1
    with pytest.raises(MigrateError) as caught:
        migrate(str(branches), "rebound_kwargs", call=call)
    message = str(caught.value)
    assert f"branches.py:{line}: cannot migrate `return tf.train.batch(dat, **batch_kwargs)`" in (
        message
    )
    assert "`**batch_kwargs` argument" in message
