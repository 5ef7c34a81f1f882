"""migrate on an Estimator's ``input_fn`` factory (#41, round 47's crowd-counting case).

``get_input_fn(files, batch_size, num_epochs)`` returns a nested
``_input_fn`` that builds the queue pipeline when Estimator calls it; migrate
rewrites the nested function's body as tf.data in ``get_input_fn_dataset``
(same signature, the factory's names closures as before) and proves
``get_input_fn(ARGS)()`` against ``get_input_fn_dataset(ARGS)()``: NOTE [
Migrating an input_fn factory ] and NOTE [ Lifting an input_fn out of its
factory ]. The program is ``tests/scripts/unseen_input_fn_factory.py``; run
in the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, elements, line_of, tf1_mode

pytestmark = pytest.mark.slow

_SCRIPT = "unseen_input_fn_factory.py"
_RECORDS = 30


def _crowd_records(path) -> None:
    """Records whose image, density map and count all derive from the record's number."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for k in range(_RECORDS):
            image = np.full(16, k, np.uint8).tobytes()
            density = np.full(16, k / 10, np.float32).tobytes()
            feature = {
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image])),
                "density": tf.train.Feature(bytes_list=tf.train.BytesList(value=[density])),
                "count": tf.train.Feature(int64_list=tf.train.Int64List(value=[k])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


@pytest.fixture
def program(tmp_path):
    path = copy_script(_SCRIPT, tmp_path, "input_fn.py")
    records = tmp_path / "crowd.tfrecords"
    _crowd_records(records)
    return str(path), str(records)


def test_a_factory_returning_its_input_fn_migrates_and_matches(program, tmp_path):
    path, records = program
    out = tmp_path / "new_input_fn.py"
    call = f"[{records!r}], 4, 1"
    result = migrate(path, "get_input_fn", call=call, out=str(out), tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert result.function == "get_input_fn_dataset"
    written = out.read_text()
    original = open(path).read()
    # the file stays as it was, the new factory right after the factory
    assert written.replace("\n\n" + result.added, "", 1) == original
    assert result.added.startswith(
        "def get_input_fn_dataset(filenames, batch_size, num_epochs):\n    def _input_fn():\n"
    )
    assert result.added.rstrip().endswith("\n    return _input_fn")
    assert written.index("def get_input_fn_dataset(") < written.index("def get_eval_input_fn(")
    assert "tf.data.TFRecordDataset(" in result.added
    assert "string_input_producer" not in result.added and "shuffle_batch" not in result.added
    assert "__qp" not in written and "\ndef _input_fn(" not in written
    # the report's lines are the nested function's lines in the file
    lines = {step.legacy: step.line for step in result.steps}
    assert lines["shuffle_batch"] == line_of(path, "tf.compat.v1.train.shuffle_batch(")
    assert lines["string_input_producer"] == line_of(path, "train.string_input_producer(")
    shuffle = line_of(path, "tf.compat.v1.train.shuffle_batch(")
    assert any(d.startswith(f"{path}:{shuffle}: shuffle_batch") for d in result.differences)

    # the new factory's input_fn returns a Dataset of (features, labels) dicts, as Estimator takes
    input_fn = result.load().get_input_fn_dataset([records], 4, 1)
    assert input_fn.__name__ == "_input_fn"
    dataset = input_fn()
    assert isinstance(dataset, tf.data.Dataset)
    features, labels = dataset.element_spec
    assert sorted(features) == ["images"] and sorted(labels) == ["counts", "densities"]
    assert features["images"].shape.as_list() == [4, 4, 4, 1]
    assert features["images"].dtype == tf.float32
    assert labels["densities"].shape.as_list() == [4, 4, 4, 1]
    assert labels["counts"].shape.as_list() == [4, 1]
    batches = elements(dataset)
    assert len(batches) == _RECORDS // 4  # the partial batch dropped, as shuffle_batch does
    counts = [c[0] for f, lab in batches for c in lab["counts"]]
    assert len(set(counts)) == len(counts) == 4 * (_RECORDS // 4)
    assert set(counts) <= set(range(_RECORDS))
    for f, lab in batches:
        for image, density, (count,) in zip(f["images"], lab["densities"], lab["counts"]):
            assert np.allclose(np.array(image), count / 255 * 2 - 1)
            assert np.allclose(np.array(density), np.float32(count / 10))


def test_a_factory_local_and_a_defaulted_params_are_closures_and_match_in_order(program):
    """``pixels = size * size`` before the nested ``input_fn(params=None)``: the local and
    the default are what the returned function holds; ``batch`` proves in exact order."""
    path, records = program
    result = migrate(path, "get_eval_input_fn", call=f"[{records!r}], 4", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "multiset" not in result.verdict.reason
    assert "def get_eval_input_fn_dataset(filenames, batch_size, size=4):\n" in result.added
    assert "    pixels = size * size\n\n    def input_fn(params=None):\n" in result.added
    input_fn = result.load().get_eval_input_fn_dataset([records], 4)
    batches = elements(input_fn())
    assert [list(lab["counts"]) for _, lab in batches] == [
        list(range(k, k + 4)) for k in range(0, 4 * (_RECORDS // 4), 4)
    ]
    assert np.array(batches[0][0]["images"]).shape == (4, 4, 4, 1)


def test_an_input_fn_factory_with_callers_is_refused(program):
    path, records = program
    with pytest.raises(MigrateError, match="Estimator calls, not a session loop") as caught:
        migrate(path, "get_input_fn", call=f"[{records!r}], 4, 1", callers=True, tf1=tf1_mode())
    assert "pass get_input_fn_dataset(...) where get_input_fn(...) was" in str(caught.value)


_COUNTING = """import tensorflow as tf


def make_input_fn(filenames):
    calls = 0

    def input_fn():
        nonlocal calls
        calls += 1
        queue = tf.compat.v1.train.string_input_producer(filenames, num_epochs=1)
        _, serialized = tf.compat.v1.TFRecordReader().read(queue)
        return tf.compat.v1.train.batch([serialized], batch_size=2)

    return input_fn


def read(filenames):
    queue = tf.compat.v1.train.string_input_producer(filenames, num_epochs=1)
    _, serialized = tf.compat.v1.TFRecordReader().read(queue)
    return tf.compat.v1.train.batch([serialized], batch_size=2)


def make_module_input_fn(filenames):
    global FILES
    FILES = filenames
    return module_input_fn


def module_input_fn():
    return read(FILES)
"""


def test_an_input_fn_that_cannot_be_rewritten_in_place_is_refused_at_its_line(program, tmp_path):
    _, records = program
    path = tmp_path / "counting.py"
    path.write_text(_COUNTING)
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "make_input_fn", call=f"[{records!r}]", tf1=tf1_mode())
    message = str(caught.value)
    line = line_of(path, "def input_fn():")
    assert message.startswith(f"queue-pipeline migrate: {path}:{line}: `input_fn`")
    assert "declares `nonlocal`" in message and "Fix: make it a plain function" in message
    # a function of the module returned: not the factory's own, named with the fix
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "make_module_input_fn", call=f"[{records!r}]", tf1=tf1_mode())
    message = str(caught.value)
    assert f"it returns the function `module_input_fn` ({path}:" in message
    assert "is not a function make_module_input_fn defines" in message
    assert "Fix: migrate the function that builds the pipeline" in message
