"""migrate's refusals where the pipeline is built out of the named code's reach (#41, round 47).

Each was a false "builds no queue pipeline" or circular advice:
NOTE [ A script's pipeline built in another module ] (the refusal names the
other file's function and the command, which then MATCHes), NOTE [ A
factory of input functions ] (an Estimator's ``input_fn`` factory taking
``params``: the nested function's line and the fix; one that takes nothing
migrates in its place) and NOTE [ A queue
filled from Python state ] (``py_func(lambda: next(generator))``: its line
and ``Dataset.from_generator``, for the method and the class alike). The
programs are ``tests/scripts/unseen_helper_module_*.py``,
``unseen_estimator_input_fn.py`` and ``unseen_generator_queue.py``; run in
the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate
from queue_pipeline._migrate.python_filled_queues import python_filled_queue

from helpers import copy_script, line_of, tf1_mode


def _copy(name: str, directory) -> str:
    return str(copy_script(name, directory))


def _records(path, examples: list[dict]) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for fields in examples:
            feature = {
                k: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v]))
                if isinstance(v, bytes)
                else tf.train.Feature(int64_list=tf.train.Int64List(value=[v]))
                for k, v in fields.items()
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def test_a_script_whose_pipeline_is_in_another_module_names_its_function(tmp_path):
    script = _copy("unseen_helper_module_script.py", tmp_path)
    helper = _copy("unseen_helper_module_reader.py", tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(3)
    for part in range(2):
        _records(
            data / f"part{part}.tfrecords",
            [
                {
                    "label": f"{part}-{k}".encode(),
                    "img_raw": rng.integers(0, 255, 36, np.uint8).tobytes(),
                }
                for k in range(10)
            ],
        )
    with pytest.raises(MigrateError) as caught:
        migrate(script, "", argv=f"--data_dir {data}", tf1=tf1_mode())
    message = str(caught.value)
    assert "builds no queue pipeline" not in message
    line = line_of(script, "read_examples(flags.data_dir, width=4, height=3)")
    assert f"{script}:{line}: the script builds its queue pipeline in another module" in message
    assert "unseen_helper_module_reader.py:read_examples (line " in message
    expected = (
        "queue-pipeline migrate unseen_helper_module_reader.py:read_examples --call "
        '"flags.data_dir, width=4, height=3" with the value of flags.data_dir'
    )
    assert expected in message
    # the command it gives migrates and proves the helper
    result = migrate(
        helper, "read_examples", call=f"{str(data)!r}, width=4, height=3", tf1=tf1_mode()
    )
    assert result.verdict.status == "MATCH", result.report()


def _count_records(path) -> None:
    rng = np.random.default_rng(5)
    _records(
        path,
        [{"image": rng.integers(0, 255, 4, np.uint8).tobytes(), "count": k} for k in range(12)],
    )


def test_an_input_fn_factory_is_migrated_in_its_place(tmp_path):
    """Was refused (a nested function cannot be named); now NOTE [ Migrating an input_fn
    factory ]: ``make_input_fn_dataset`` returns an ``_input_fn`` returning the Dataset,
    proven MATCH (tests/test_migrate_input_fn_factories.py has the crowd-counting shape)."""
    path = _copy("unseen_estimator_input_fn.py", tmp_path)
    records = tmp_path / "counts.tfrecords"
    _count_records(records)
    result = migrate(path, "make_input_fn", call=f"[{str(records)!r}], 4, 1", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert result.added.startswith(
        "def make_input_fn_dataset(filenames, batch_size, num_epochs):\n    def _input_fn():\n"
    )
    assert "tf.data.TFRecordDataset(" in result.added
    dataset = result.load().make_input_fn_dataset([str(records)], 4, 1)()
    assert isinstance(dataset, tf.data.Dataset)
    features, labels = dataset.element_spec
    assert list(features) == ["images"] and list(labels) == ["counts"]


def test_an_estimator_style_input_fn_names_its_parameters(tmp_path):
    path = _copy("unseen_estimator_input_fn.py", tmp_path)
    records = tmp_path / "counts.tfrecords"
    _count_records(records)
    with pytest.raises(MigrateError) as caught:
        migrate(path, "make_params_input_fn", call=f"[{str(records)!r}], 1", tf1=tf1_mode())
    message = str(caught.value)
    line = line_of(path, "def input_fn(params):")
    assert f"it returns the function `input_fn` ({path}:{line}), which may build it" in message
    assert "`input_fn` takes params (Estimator-style: what Estimator passes cannot be known" in (
        message
    )
    assert "so it was not called" in message
    assert "passing params in --call" in message


def test_a_returned_function_that_builds_no_pipeline_keeps_the_usual_refusal(tmp_path):
    path = _copy("unseen_estimator_input_fn.py", tmp_path)
    with pytest.raises(MigrateError, match="builds no queue pipeline \\(nothing it returns"):
        migrate(path, "make_nothing", call="['a']", tf1=tf1_mode())


@pytest.mark.parametrize("target", ["QueueFeeder.get_inputs", "QueueFeeder"])
def test_a_queue_filled_from_a_generator_is_refused_at_its_py_func(tmp_path, target):
    path = _copy("unseen_generator_queue.py", tmp_path)
    call = "QueueFeeder([2, 2]), 4" if "." in target else "[2, 2]"
    with pytest.raises(MigrateError) as caught:
        migrate(path, target, call=call, tf1=tf1_mode())
    message = str(caught.value)
    line = line_of(path, "fetched = tf.compat.v1.py_func(")
    assert message.startswith(f"queue-pipeline migrate: {path}:{line}")
    assert "QueueRunner fills with `tf.py_func` taking no tensor input" in message
    assert "tf.data.Dataset.from_generator" in message
    assert "builds no queue pipeline" not in message
    assert not re.search(r"migrate the method", message)


def test_a_py_func_over_what_a_reader_read_is_not_python_state():
    graph = tf.Graph()
    with graph.as_default():
        contents = tf.constant(b"abc")
        decoded = tf.compat.v1.py_func(lambda b: np.float32(len(b)), [contents], tf.float32)
        queue = tf.queue.FIFOQueue(4, [tf.float32], [[]])
        queue.enqueue([decoded])
    assert python_filled_queue(graph, __file__, "f()") == ""
