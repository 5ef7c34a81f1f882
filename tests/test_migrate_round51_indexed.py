"""migrate on an own queue's dequeued list read by index, and on joins of one list
repeated (#41).

NOTE [ A dequeued tuple read by index ] and NOTE [ A dequeue inside an
expression ] (``queue_pipeline/_migrate/dequeued_values.py``): ``sample =
q.dequeue()`` read as ``sample[0]``, ``sample[-1]``, handed whole to a helper;
``dequeue_many``'s list indexed; ``x = q.dequeue() * 2.0``; a dequeue inside
a batching call is refused with its line and the fix. NOTE [ A join of one list
repeated ] (``queue_pipeline/_migrate/repeated_lists.py``): ``[[image, label]]
* n`` and ``[example] * n`` are n enqueue threads of the same ops, the batching
call with ``num_threads=n``. The programs are ``tests/scripts/unseen_indexed_dequeue*.py``
and ``tests/scripts/unseen_join_multiplied*.py``; functions are migrated with the
API, scripts with the CLI and run before and after, in the suite's TF mode (the
suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import importlib.util

import pytest
import tensorflow as tf
from helpers import copy_script, dataset_values, line_of, migrated_prints_the_same

from queue_pipeline._migrate.api import MigrateError, migrate


def _csv_parts(directory, parts: int = 2, rows: int = 10) -> list[str]:
    """CSV files of rows ``id, i, 2i, 3i, i % 3``: four pixel values and a label.

    20 rows in batches of 4: no partial tail, whose records (dropped by
    ``drop_remainder``) the legacy side's enqueue threads would choose.
    """
    names = []
    for p in range(parts):
        path = directory / f"p{p}.csv"
        path.write_text("".join(f"{p * 50 + i},{i},{2 * i},{3 * i},{i % 3}\n" for i in range(rows)))
        names.append(str(path))
    return names


def _migrated(tmp_path, script: str, function: str, batch_size: int = 4):
    path = copy_script(script, tmp_path, "inputs.py")
    files = _csv_parts(tmp_path)
    result = migrate(str(path), function, call=f"{files!r}, {batch_size}")
    assert result.verdict.status == "MATCH", result.report()
    new = result.source.split(f"def {function}_dataset")[1].split("\ndef ")[0]
    return result, new, files


def _run_written(tmp_path, result, files, batch_size: int = 4) -> list:
    """The written function's Dataset, read to its end in this TF mode."""
    written = tmp_path / "inputs_tf.py"  # autograph reads the code from its file
    written.write_text(result.source)
    spec = importlib.util.spec_from_file_location("inputs_tf", written)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tf.Graph().as_default():
        dataset = getattr(module, result.function)(files, batch_size)
        return dataset_values(dataset)


# -- 1: the dequeued list read by index -------------------------------------------------


@pytest.mark.parametrize("function", ["indexed_batch", "indexed_names"])
def test_a_dequeued_list_read_by_constant_indexes_migrates(tmp_path, function):
    """``sample = q.dequeue()`` then ``sample[0]``, ``sample[1]`` / ``sample[-1]``
    (was: refused, "unpack every value the queue holds")."""
    result, new, files = _migrated(tmp_path, "unseen_indexed_dequeue.py", function)
    assert "def per_record(*sample):\n        sample = list(sample)\n" in new
    assert "Queue" not in new and "dequeue" not in new
    assert any("2 enqueue threads" in d for d in result.differences), result.differences
    batches = _run_written(tmp_path, result, files)
    labels = sorted(int(v) for images, labels in batches for v in labels)
    assert len(labels) == 20 and set(labels) == {0, 1, 2}
    assert all(images.shape[1:] == ((4,) if function == "indexed_batch" else (2, 2, 1))
               for images, _ in batches)  # fmt: skip


def test_a_dequeued_list_handed_whole_to_a_helper_is_the_same_list(tmp_path):
    """``_augment(sample)``: the per-record function's ``sample`` is the list TF hands out."""
    result, new, _ = _migrated(tmp_path, "unseen_indexed_dequeue.py", "handed_whole")
    assert "image, label = _augment(sample)" in new


def test_a_dequeue_many_list_read_by_index_is_the_batch(tmp_path):
    result, new, _ = _migrated(tmp_path, "unseen_indexed_dequeue.py", "indexed_many")
    assert "records.shuffle(64, seed=7)" in new
    assert "dataset.map(lambda *batch: (batch[0], batch[1]))" in new


@pytest.mark.parametrize("function", ["one_component", "scaled_single"])
def test_a_one_component_queues_dequeue_used_directly(tmp_path, function):
    """``value = lines.dequeue()`` (one record at a time through a FIFO queue) and
    ``scaled = queue.dequeue() * 2.0`` (the call read as the element; was: the
    line replaced by the element, its ``* 2.0`` lost)."""
    result, new, files = _migrated(tmp_path, "unseen_indexed_dequeue.py", function)
    if function == "scaled_single":
        assert "scaled = image * 2.0" in new and "records.shuffle(64, seed=3)" in new
    batches = _run_written(tmp_path, result, files)
    assert sum(len(b[0] if isinstance(b, tuple) else b) for b in batches) == 20


def test_a_dequeue_inside_a_batching_call_is_refused_with_its_line_and_the_fix(tmp_path):
    path = copy_script("unseen_indexed_dequeue.py", tmp_path, "inputs.py")
    files = _csv_parts(tmp_path)
    with pytest.raises(MigrateError) as info:
        migrate(str(path), "dequeued_in_batch", call=f"{files!r}, 4")
    message = str(info.value)
    where = line_of(path, "return tf.train.batch([queue.dequeue()], batch_size)")
    assert f"inputs.py:{where}:" in message
    assert "assign it to a name on a line of its own" in message
    assert "`values = queue.dequeue(...)`" in message


# -- 2: a join of one list repeated ------------------------------------------------------


def test_a_join_of_one_pair_repeated_is_a_batch_with_that_many_threads(tmp_path):
    """``batch_join([[image, label]] * num_threads, ...)`` (was: refused, "the join's
    lists ... are not a list the migration can follow")."""
    result, new, files = _migrated(tmp_path, "unseen_join_multiplied.py", "batch_inputs")
    assert "batch_join" not in new and "records.batch(batch_size, drop_remainder=True)" in new
    assert any("batch(num_threads=num_threads)" in d for d in result.differences)
    step = next(s for s in result.steps if s.legacy == "batch_join")
    assert "batch(batch_size, drop_remainder=True)" in step.replacement
    assert sum(len(labels) for _, labels in _run_written(tmp_path, result, files)) == 20


def test_a_shuffled_join_of_one_dict_repeated_is_a_shuffle_batch(tmp_path):
    """``shuffle_batch_join([example] * 3, ...)`` of a dict, its batch read by key."""
    result, new, files = _migrated(tmp_path, "unseen_join_multiplied.py", "shuffled_examples")
    assert "dataset = records.shuffle(64, seed=5)" in new
    assert 'dataset.map(lambda batch: (batch["image"], batch["label"]))' in new
    assert sum(len(labels) for _, labels in _run_written(tmp_path, result, files)) == 20


def test_a_comprehension_of_one_reading_helper_stays_an_interleave(tmp_path):
    _, new, _ = _migrated(tmp_path, "unseen_join_multiplied.py", "comprehension")
    assert "tf.data.TextLineDataset, cycle_length=3" in new


# -- scripts: migrated with the CLI, both run ------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "script", ["unseen_indexed_dequeue_script.py", "unseen_join_multiplied_script.py"]
)
def test_the_scripts_migrate_and_print_the_same(tmp_path, script):
    copy_script(script, tmp_path, "train.py")
    _csv_parts(tmp_path)
    printed, migrated = migrated_prints_the_same(tmp_path, "train.py")
    assert printed.count("\n") == 3, printed
    for gone in ("Queue", "dequeue", "batch_join", "Coordinator"):
        assert gone not in migrated.split('"""', 2)[2], migrated
