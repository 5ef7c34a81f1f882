"""migrate on the program's own queue filled from arrays in memory (#41).

NOTE [ A queue filled from arrays in memory ] (``_migrate/constant_queues.py``):
``enqueue_many([a, b])`` of arrays run by a QueueRunner is
``Dataset.from_tensor_slices((a, b)).repeat()``, ``enqueue([a, b])``
``from_tensors((a, b)).repeat()``, then the own queue's dequeue. The
functions are in ``tests/scripts/unseen_array_queue_fn.py``, the scripts in
``unseen_array_queue.py`` (``create_threads``) and
``unseen_array_queue_script.py`` (``add_queue_runner`` and
``start_queue_runners``, ``dequeue_many``). Run in the suite's TF mode (the
suite runs this file with ``--tf1`` too); the scripts run in subprocesses
through the CLI, in that mode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from helpers import copy_script, line_of, migrated_prints_the_same, tf1_mode

from queue_pipeline._migrate.api import MigrateError, migrate

FUNCTIONS = os.path.join(os.path.dirname(__file__), "scripts", "unseen_array_queue_fn.py")
_BOUNDED = "the queue filled from arrays in memory read for"


def _new(result, function: str) -> str:
    return result.source.split(f"def {function}_dataset")[1].split("\ndef ")[0]


def _elements(dataset, count: int) -> list:
    """The first `count` elements of `dataset`, as numpy, in either TF mode."""
    with tf.Graph().as_default():
        rebuilt = dataset()
        get = tf.compat.v1.data.make_one_shot_iterator(rebuilt.take(count)).get_next()
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=20000)
        out = []
        with tf.compat.v1.Session(config=config) as sess:
            for _ in range(count):
                out.append(sess.run(get))
    return out


@pytest.mark.parametrize("epochs", [1, 2])
def test_rows_of_arrays_dequeued_one_at_a_time_migrate_in_order(tmp_path, epochs):
    result = migrate(FUNCTIONS, "fifo_rows", call="12, 8", epochs=epochs)
    assert result.verdict.status == "MATCH", result.report()
    # four (eight) threads of one enqueue_many deliver the arrays repeated, in order
    assert result.verdict.reason.startswith("ordered"), result.verdict.reason
    assert f"{_BOUNDED} {epochs} pass(es)" in result.verdict.reason
    new = _new(result, "fifo_rows")
    assert (
        "records = tf.data.Dataset.from_tensor_slices((features, tf.constant(targets, "
        "tf.int32))).repeat()" in new
    )
    assert "Queue" not in new and "enqueue" not in new
    # one op of the same arrays: no difference in order is reported
    assert not any("enqueue threads" in d for d in result.differences), result.differences
    module = {}
    exec(compile(result.source, FUNCTIONS, "exec"), module)  # noqa: S102 - the written code
    got = _elements(lambda: module["fifo_rows_dataset"](12, 8), 30)
    features = np.arange(48, dtype=np.float32).reshape(12, 4) / 10.0 + 1.0
    assert [int(y) for _, y in got] == [i % 12 % 3 for i in range(30)]
    np.testing.assert_allclose(np.stack([x for x, _ in got]), features[np.arange(30) % 12])


def test_ops_on_the_whole_arrays_stay_and_batches_are_mapped(tmp_path):
    result = migrate(FUNCTIONS, "scaled_fifo_batches")
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("ordered"), result.verdict.reason
    new = _new(result, "scaled_fifo_batches")
    # computed on the whole arrays as before, not per record
    assert "    centred = tf.constant(features) - features.mean()\n" in new
    assert "from_tensor_slices((centred, tf.constant(targets, tf.int32))).repeat()" in new
    assert "dataset = records.batch(batch_size, drop_remainder=True)" in new
    assert "data_batch * 2.0" in new and "map(" in new


def test_a_list_of_arrays_enqueued_by_name_is_sliced_as_a_tuple(tmp_path):
    result = migrate(FUNCTIONS, "listed_rows")
    assert result.verdict.status == "MATCH", result.report()
    new = _new(result, "listed_rows")
    # a list would be stacked into one tensor: each array is sliced on its own
    assert "records = tf.data.Dataset.from_tensor_slices(tuple(tensors)).repeat()" in new


def test_a_shuffling_queue_of_arrays_is_a_shuffle_compared_as_a_bounded_multiset(tmp_path):
    result = migrate(FUNCTIONS, "shuffled_batches")
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("multiset"), result.verdict.reason
    assert f"{_BOUNDED} 1 pass(es)" in result.verdict.reason
    new = _new(result, "shuffled_batches")
    lines = [line.strip() for line in new.splitlines()]
    at = lines.index("records = records.shuffle(50)")
    assert lines[at - 1].startswith("records = tf.data.Dataset.from_tensor_slices(")
    assert lines[at + 1] == "dataset = records.batch(batch_size, drop_remainder=True)"
    assert "_shuffle = " not in new  # written where the records start, not deferred
    assert any("RandomShuffleQueue: a shuffle buffer" in d for d in result.differences)


@pytest.mark.parametrize("kind", ["fifo", "shuffled"])
def test_several_enqueue_ops_of_arrays_are_sampled_and_compared_as_a_bounded_multiset(kind):
    """Threads of two ops interleave their enqueues in an order of their own (probed)."""
    result = migrate(FUNCTIONS, "two_arrays", args=(kind, 4), epochs=2)
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("multiset;"), result.verdict.reason
    assert f"{_BOUNDED} 2 pass(es)" in result.verdict.reason
    assert result.verdict.report.legacy.examples == 2 * (8 + 4)
    new = _new(result, "two_arrays")
    assert "records = tf.data.Dataset.sample_from_datasets([records, tf.data.Dataset." in new
    # the shuffle of the queue the run made, after the records of both ops
    lines = [line.strip() for line in new.splitlines()]
    at = lines.index("records = records.shuffle(*queue_shuffle)")
    assert lines[at - 2].startswith("records = tf.data.Dataset.sample_from_datasets(")
    assert "queue_shuffle = (20, 5)" in new and "queue_shuffle = None" in new
    assert any("sample_from_datasets draws" in d for d in result.differences)


def test_an_enqueue_of_one_row_is_that_row_repeated(tmp_path):
    result = migrate(FUNCTIONS, "one_row", epochs=3)
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("ordered"), result.verdict.reason
    new = _new(result, "one_row")
    assert "records = tf.data.Dataset.from_tensors((row * 3.0, 7)).repeat()" in new
    assert "    row = tf.constant([1.0, 2.0, 3.0, 4.0])\n" in new


def test_a_queue_fed_by_a_placeholder_is_refused_at_its_line():
    with pytest.raises(MigrateError) as e:
        migrate(FUNCTIONS, "fed_rows")
    message = str(e.value)
    queue = line_of(FUNCTIONS, "queue = tf.FIFOQueue(capacity=20, dtypes=[tf.float32]")
    assert f"{FUNCTIONS}:{queue}: fed_rows() dequeues from a queue the program fills" in message
    assert "placeholders" in message and "Fix:" in message and "bug in migrate" not in message


def test_a_queue_filled_from_a_random_draw_is_refused_at_the_draw():
    with pytest.raises(MigrateError) as e:
        migrate(FUNCTIONS, "drawn_rows")
    message = str(e.value)
    draw = line_of(FUNCTIONS, "features = 10 * tf.random_normal([rows, 4]) + 1")
    assert f"{FUNCTIONS}:{draw} (`features = 10 * tf.random_normal([rows, 4]) + 1`):" in message
    assert "RandomStandardNormal" in message and "other values each time" in message
    assert "Fix: draw the data once in NumPy" in message and "bug in migrate" not in message


@pytest.mark.slow
@pytest.mark.parametrize("script", ["unseen_array_queue.py", "unseen_array_queue_script.py"])
def test_a_script_of_arrays_migrates_and_prints_what_it_printed(tmp_path, script):
    copy_script(script, tmp_path, "queue_example.py")
    printed, migrated = migrated_prints_the_same(
        tmp_path, "queue_example.py", "Verify: MATCH (ordered"
    )
    assert printed.count("\n") >= 5, printed
    code = migrated[migrated.index("import tensorflow") :]  # below the docstring
    assert "Dataset.from_tensor_slices((" in code and ").repeat()" in code
    for gone in ("Queue", "coord", "threads =", "should_stop", "finally"):
        assert gone not in code, migrated


_MEASURE = """
import json, resource, sys
import tensorflow as tf
if sys.argv[1] == "tf1":
    tf.compat.v1.disable_v2_behavior()
from queue_pipeline._migrate.api import migrate
status = ""
if sys.argv[2] == "migrate":
    result = migrate(sys.argv[3], "fifo_batches", call="100_000, 500, 8")
    status = result.verdict.status + " " + result.verdict.reason
print(json.dumps({"status": status,
                  "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


@pytest.mark.slow
def test_the_proof_of_a_large_array_queue_keeps_its_memory_bounded(tmp_path):
    """100,000 rows, 8 enqueue threads: peak RSS of a child process that migrates and proves
    it, against one that only imports the same modules."""
    mode = "tf1" if tf1_mode() else "tf2"

    def child(what: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", _MEASURE, mode, what, FUNCTIONS],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    base, proof = child("import"), child("migrate")
    assert proof["status"].startswith("MATCH ordered;"), proof["status"]
    assert f"{_BOUNDED} 1 pass(es)" in proof["status"]
    grown = (proof["peak_kib"] - base["peak_kib"]) / 1024
    print(f"peak RSS: {base['peak_kib'] / 1024:.0f} MiB imported, +{grown:.0f} MiB proving")
    # the arrays are 2 MB; the proof keeps at most compare's 256 MiB of batches
    assert grown < 400, (base, proof)


# ------------------------------------------------------------------------------------------
# A batching call over an own queue's dequeue (readers fill it): the queue's stream, then
# the batching call's chain (tests/scripts/unseen_batched_own_queue*.py).

BATCHED = os.path.join(os.path.dirname(__file__), "scripts", "unseen_batched_own_queue.py")


@pytest.fixture
def line_files(tmp_path):
    paths = []
    for f in range(2):
        path = tmp_path / f"n{f}.txt"
        path.write_text("".join(f"{10 * f + i}.5,{i % 3}\n" for i in range(9)))
        paths.append(str(path))
    return paths


@pytest.mark.parametrize(
    ("function", "chain"),
    [
        ("batched_lines", "dataset = records.batch(batch_size)"),
        ("shuffled_lines", "dataset = records.shuffle(40, seed=3)"),
        ("threads_of_one_read", "dataset = records.batch(batch_size)"),
        ("helper_filled_lines", "dataset = records.shuffle(30, seed=2)"),
    ],
)
def test_a_batching_call_over_an_own_queues_dequeue_follows_its_stream(line_files, function, chain):
    result = migrate(BATCHED, function, args=(line_files, 4))
    assert result.verdict.status == "MATCH", result.report()
    new = _new(result, function)
    assert chain in new, new
    assert "Queue" not in new and "dequeue" not in new and "tf.train." not in new
    if function == "helper_filled_lines":  # the helper returns the Dataset of what it enqueued
        assert "records = _line_queue_dataset(files, num_readers)" in new
        assert "cycle_length=num_readers" in _new(result, "_line_queue")
    elif function != "threads_of_one_read":
        assert "cycle_length=num_readers" in new  # the loop of readers: an interleave
    # every record of the epoch, each once: the legacy side's 18 lines
    assert result.verdict.report.legacy.examples == 18


@pytest.mark.slow
def test_a_script_batching_its_own_queues_dequeue_prints_what_it_printed(tmp_path, line_files):
    copy_script("unseen_batched_own_queue_script.py", tmp_path, "batched.py")
    printed, migrated = migrated_prints_the_same(tmp_path, "batched.py")
    assert printed.startswith("18 "), printed
    code = migrated[migrated.index("import tensorflow") :]
    assert "TextLineDataset" in code and ".batch(3)" in code
    for gone in ("Queue", "coord", "dequeue"):
        assert gone not in code, migrated


def test_an_enqueue_whose_values_depend_on_a_test_is_refused_at_its_line(tmp_path, line_files):
    """Was "a bug in migrate" (a SyntaxError in the written per-record function)."""
    path = tmp_path / "keyed.py"
    path.write_text(
        "import tensorflow.compat.v1 as tf\n\n\n"
        "def lines(files, batch_size, keyed=False):\n"
        "    queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)\n"
        "    q = tf.FIFOQueue(100, [tf.string], shapes=[[]])\n"
        "    key, value = tf.TextLineReader().read(queue)\n"
        "    enq = q.enqueue([key, value] if keyed else [value])\n"
        "    tf.train.add_queue_runner(tf.train.QueueRunner(q, [enq] * 4))\n"
        "    example = q.dequeue()\n"
        "    return tf.train.batch([example], batch_size, allow_smaller_final_batch=True)\n"
    )
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "lines", args=(line_files, 4))
    message = str(e.value)
    assert f"{path}:8: cannot migrate `enq = q.enqueue([key, value] if keyed else" in message
    assert "depends on a test" in message and "bug in migrate" not in message
