"""Migrated preloaded arrays: variables loaded once in TF1 mode, the plain form otherwise.

NOTE [ Preloaded arrays in a migrated TF1-mode program ] in
queue_pipeline/_migrate/preloaded.py. The arrays here are just above the size
from which TF1-mode code holds them in variables (4 MiB), so the proofs stay
quick; benchmarks/run.py measures W4's 188 MB.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import tf1_mode
from queue_pipeline._migrate import preloaded
from queue_pipeline._migrate.api import migrate

OP_TIMEOUT_MS = 30_000
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
ROWS = 1400  # 1400 x 784 float32 + int64 labels: 4.2 MiB, over VARIABLES_FROM_BYTES
CALL = f"np.ones(({ROWS}, 784), np.float32), np.arange({ROWS})"

PROGRAM = """
import numpy as np
import tensorflow as tf

BATCH = 100


def inputs(images, labels):
    image, label = tf.compat.v1.train.slice_input_producer(
        [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
    )
    return tf.compat.v1.train.batch([image, label], BATCH, allow_smaller_final_batch=True)


def run_training(images, labels):
    with tf.Graph().as_default():
        image_batch, label_batch = inputs(images, labels)
        total = tf.reduce_sum(label_batch) + tf.cast(tf.reduce_sum(image_batch), tf.int64)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms={timeout})
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(tf.compat.v1.local_variables_initializer())
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


def _program(tmp_path) -> str:
    path = tmp_path / "preloaded_program.py"
    path.write_text(PROGRAM.format(timeout=OP_TIMEOUT_MS).lstrip("\n"))
    return str(path)


def _arrays(rows: int = ROWS):
    return np.ones((rows, 784), np.float32), np.arange(rows)


def _large_constants(graph: tf.Graph) -> int:
    """Bytes of graph constants of 1 MiB or more in `graph` (and its functions)."""
    nodes = list(graph.as_graph_def().node)
    for function in graph.as_graph_def().library.function:
        nodes += list(function.node_def)
    return sum(
        len(n.attr["value"].tensor.tensor_content)
        for n in nodes
        if n.op == "Const" and len(n.attr["value"].tensor.tensor_content) >= 2**20
    )


@pytest.mark.tf1_only("the variables form is TF1 mode's; eager code iterates the arrays")
def test_tf1_mode_holds_large_arrays_in_variables_and_its_caller_loads_them(tmp_path):
    """The W4 shape: ``(dataset, load)``, no graph constant, the caller's runners
    become ``load(sess)`` and the iterator's initializer, and it computes the same."""
    result = migrate(_program(tmp_path), "inputs", call=CALL, callers=True)
    assert result.verdict.status == "MATCH", result.report()
    source = result.source
    assert "def _in_variables(arrays, dtypes):" in source
    assert (
        "    variables, load = _in_variables([images, labels], [tf.float32, tf.int64])\n"
        "    records = tf.data.Dataset.from_tensor_slices(tuple(variables))\n"
    ) in source, source
    assert "    return dataset.prefetch(tf.data.AUTOTUNE), load\n" in source
    caller = source[source.index("def run_training(") :]
    for line in (
        "        dataset, load = inputs_dataset(images, labels)\n",
        "        iterator = tf.compat.v1.data.make_initializable_iterator(dataset)\n",
        "        image_batch, label_batch = iterator.get_next()\n",
        "            load(sess)\n            sess.run(iterator.initializer)\n",
    ):
        assert line in caller, caller
    assert "start_queue_runners" not in caller and "Coordinator" not in caller
    (note,) = [d for d in result.differences if "held in variables" in d]
    assert "in TF1 mode the migrated function returns (dataset, load)" in note
    migrated = result.load()
    with tf.Graph().as_default() as graph:
        dataset, load = migrated.inputs_dataset(*_arrays())
        assert _large_constants(graph) == 0  # the arrays are fed, not embedded
    assert migrated.run_training(*_arrays()) == result.original.run_training(*_arrays())
    assert migrated.run_training(*_arrays())[1] == 14


@pytest.mark.tf1_only("the variables form is TF1 mode's")
def test_the_load_of_a_helper_that_slices_is_returned_by_the_function_that_returns_it():
    """preloaded_constant: the constants are made in the function, sliced in its helper
    ``_slice_and_batch``; both versions return ``(dataset, load)`` and the proof
    runs the load in its session."""
    from legacy_examples import preloaded_data  # noqa: PLC0415

    call = f"np.ones(({ROWS}, 784), np.float32), np.zeros({ROWS}, np.uint8), shuffle=False"
    result = migrate(preloaded_data.__file__, "preloaded_constant", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert "_in_variables([input_images, input_labels], [tf.float32, tf.uint8])" in result.added
    assert result.added.count("def _in_variables(") == 1
    with tf.Graph().as_default():
        dataset, load = result.load().preloaded_constant_dataset(
            np.ones((ROWS, 784), np.float32), np.zeros(ROWS, np.uint8), shuffle=False
        )
        iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
        images, labels = iterator.get_next()
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            load(sess)
            sess.run(iterator.initializer)
            got_images, got_labels = sess.run([images, labels])
    assert got_images.shape == (preloaded_data.BATCH_SIZE, 784) and got_images.min() == 1.0
    assert got_labels.dtype == np.int32


@pytest.mark.slow
def test_small_arrays_and_tf2_defaults_keep_the_plain_form(tmp_path):
    """Under the size (either mode), and under TF 2.x defaults at any size, the
    function returns just its Dataset over the arrays."""
    path = _program(tmp_path)
    small = migrate(path, "inputs", call="np.ones((20, 784), np.float32), np.arange(20)")
    assert small.verdict.status == "MATCH", small.report()
    assert "_in_variables" not in small.source
    assert "return dataset.prefetch(tf.data.AUTOTUNE)\n" in small.source
    if tf1_mode():
        return
    large = migrate(path, "inputs", call=CALL)
    assert large.verdict.status == "MATCH", large.report()
    assert "_in_variables" not in large.source
    assert isinstance(large.load().inputs_dataset(*_arrays()), tf.data.Dataset)


INLINE = """
import numpy as np
import tensorflow as tf


def training_data():
    return np.ones(({rows}, 784), np.float32), np.arange({rows})


def run_training(images, labels):
    with tf.Graph().as_default():
        image, label = tf.compat.v1.train.slice_input_producer(
            [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
        )
        label_batch = tf.compat.v1.train.batch([label], 200, allow_smaller_final_batch=True)
        total = tf.reduce_sum(label_batch)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms={timeout})
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
            sums = []
            try:
                while not coord.should_stop():
                    sums.append(int(sess.run(total)))
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
            return sums
"""


@pytest.mark.tf1_only("the variables form is TF1 mode's")
def test_an_inline_pipeline_over_large_arrays_loads_them_where_its_runners_started(tmp_path):
    """NOTE [ Migrating an inline pipeline ] with the arrays held in variables: the
    helper is written into the script, and ``load(sess)`` then the initializer take
    ``start_queue_runners``'s place."""
    path = tmp_path / "inline_preloaded.py"
    path.write_text(INLINE.format(rows=ROWS, timeout=OP_TIMEOUT_MS).lstrip("\n"))
    out = tmp_path / "migrated_inline.py"
    result = migrate(str(path), "run_training", call="*training_data()", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    source = out.read_text()
    assert "def _in_variables(arrays, dtypes):" in source
    assert "            load(sess)\n            sess.run(iterator.initializer)\n" in source, source
    assert "start_queue_runners" not in source
    spec = importlib.util.spec_from_file_location("migrated_inline", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = module.training_data()
    assert module.run_training(*data) == [
        sum(range(i, min(i + 200, ROWS))) for i in range(0, ROWS, 200)
    ]


def test_the_threshold_counts_only_fully_known_constants():
    with tf.Graph().as_default():
        big = tf.constant(np.zeros((1024, 1024), np.float32))
        fed = tf.compat.v1.placeholder(tf.float32, [None, 4])
        assert preloaded.constant_bytes([big, fed]) == 4 * 2**20


@pytest.mark.slow
def test_the_public_preloaded_constant_program_migrates_where_it_stands(tmp_path):
    """tests/scripts/real_preloaded_constant.py, TF's fully_connected_preloaded.py
    shape: ``input_images = tf.constant(data_sets.train.images)`` then a shuffled
    slice. In TF1 mode the variables are fed ``data_sets.train.images`` itself and the
    constant lines go; the training runs the same steps over the same labels."""
    path = os.path.join(SCRIPTS, "real_preloaded_constant.py")
    out = tmp_path / "migrated_preloaded.py"
    result = migrate(path, "run_training", call="read_data_sets()", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("multiset")
    source = out.read_text()
    training = source[source.index("def run_training(") : source.index("if __name__")]
    for gone in ("Coordinator", "start_queue_runners", "slice_input_producer"):
        assert gone not in training, training
    if tf1_mode():
        assert "tf.constant(" not in training, training
        for line in (
            "            variables, load = _in_variables(\n"
            "                [data_sets.train.images, data_sets.train.labels], "
            "[tf.float32, tf.uint8]\n            )\n",
            "        load(sess)\n        sess.run(iterator.initializer)\n",
        ):
            assert line in source, source
    else:
        assert "_in_variables" not in source
        assert "input_images = tf.constant(data_sets.train.images)" in training
    spec = importlib.util.spec_from_file_location("migrated_preloaded", out)
    migrated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migrated)
    data = migrated.read_data_sets()
    expected = (28, 2 * int(data.train.labels.astype(np.int64).sum()))
    assert migrated.run_training(data) == expected
    spec = importlib.util.spec_from_file_location("real_preloaded_constant", path)
    original = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(original)  # its training runs under __main__ only
    assert original.run_training(data) == expected
