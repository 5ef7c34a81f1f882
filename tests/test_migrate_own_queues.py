"""migrate on functions that build their own queue (#41 class 3).

See NOTE [ Migrating the function's own queue ] in ``_migrate/own_queues.py``.
Each function is migrated and proven against TF's own run of it (compare),
in the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from queue_pipeline._migrate.api import MigrateError, migrate

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


@pytest.fixture(scope="module")
def cifar_files(tmp_path_factory):
    """Two files of CIFAR-shaped records: 1 label byte + 8x8x3 image bytes."""
    d = tmp_path_factory.mktemp("cifar")
    rng = np.random.default_rng(3)
    paths = []
    for f in range(2):
        rows = rng.integers(0, 256, size=(15, 1 + 8 * 8 * 3), dtype=np.uint8)
        rows[:, 0] = np.arange(15) % 10
        path = d / f"data_batch_{f + 1}.bin"
        rows.tofile(path)
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("function", ["inputs", "distorted_inputs"])
def test_the_cifar_trainers_own_queues_migrate(cifar_files, function):
    """cifar10_input's shape: a helper builds a RandomShuffleQueue (16 enqueue threads) or a
    FIFOQueue by its `shuffle` flag, read with dequeue_many; train and eval branches."""
    path = os.path.join(SCRIPTS, "own_queue_cifar_trainer.py")
    data_dir = os.path.dirname(cifar_files[0])
    result = migrate(
        path, function, call=repr((cifar_files, 10))[1:-1], argv=f"--data_dir={data_dir}"
    )
    assert result.verdict.status == "MATCH", result.verdict.reason
    helper = result.source.split("def _generate_image_and_label_batch_dataset")[1]
    helper = helper.split("\ndef ")[0]
    assert "    if shuffle:\n        dataset = dataset.shuffle(" in helper
    assert "dataset.batch(batch_size, drop_remainder=True)" in helper
    assert "Queue" not in helper and "else:" not in helper
    assert any("`threads` enqueue threads" in d for d in result.differences), result.differences
    assert any("tf.summary.image" in d for d in result.dropped), result.dropped


_OWN_QUEUES = """
import tensorflow as tf


def prefetch_input_data(files, batch_size, num_readers=2):
    filename_queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    values_queue = tf.queue.FIFOQueue(64, [tf.string], shapes=[[]])
    enqueue_ops = []
    for _ in range(num_readers):
        _, value = tf.compat.v1.TextLineReader().read(filename_queue)
        enqueue_ops.append(values_queue.enqueue([value]))
    tf.compat.v1.train.add_queue_runner(tf.compat.v1.train.QueueRunner(values_queue, enqueue_ops))
    return values_queue.dequeue_up_to(batch_size)


def shuffled_then_batched(files, batch_size):
    filename_queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(filename_queue)
    number = tf.strings.to_number(line, tf.int32)
    queue = tf.queue.RandomShuffleQueue(50, 10, [tf.int32], shapes=[[]], seed=5)
    tf.compat.v1.train.add_queue_runner(
        tf.compat.v1.train.QueueRunner(queue, [queue.enqueue([number])] * 2)
    )
    (value,) = [queue.dequeue()]
    value = value + 100
    return tf.compat.v1.train.batch([value], batch_size, allow_smaller_final_batch=True)


def enqueued_twice(files, batch_size):
    filename_queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(filename_queue)
    queue = tf.queue.FIFOQueue(50, [tf.string], shapes=[[]])
    first = queue.enqueue([line])
    second = queue.enqueue([line])
    tf.compat.v1.train.add_queue_runner(tf.compat.v1.train.QueueRunner(queue, [first, second]))
    return queue.dequeue_many(batch_size)
"""


@pytest.fixture
def own_queues(tmp_path):
    for f in range(2):
        (tmp_path / f"n{f}.txt").write_text("".join(f"{10 * f + i}\n" for i in range(7)))
    path = tmp_path / "own_queues.py"
    path.write_text(_OWN_QUEUES)
    return str(path), [str(tmp_path / "n0.txt"), str(tmp_path / "n1.txt")]


def test_a_loop_of_readers_filling_a_queue_is_an_interleave(own_queues):
    """im2txt's prefetch_input_data: N readers share the filename queue (#41 class 3)."""
    path, files = own_queues
    result = migrate(path, "prefetch_input_data", args=(files, 3))
    assert result.verdict.status == "MATCH", result.verdict.reason
    new = result.source.split("def prefetch_input_data_dataset")[1].split("\ndef ")[0]
    assert "interleave(" in new and "cycle_length=num_readers" in new
    assert "dataset = records.batch(batch_size)\n" in new and "Queue" not in new


def test_a_queue_dequeued_one_at_a_time_goes_on_as_records(own_queues):
    path, files = own_queues
    result = migrate(path, "shuffled_then_batched", args=(files, 4))
    assert result.verdict.status == "MATCH", result.verdict.reason
    new = result.source.split("def shuffled_then_batched_dataset")[1].split("\ndef ")[0]
    assert "records.shuffle(50, seed=5)" in new and "Queue" not in new


def test_a_second_enqueue_into_one_queue_is_refused_with_its_line(own_queues):
    path, files = own_queues
    with pytest.raises(MigrateError, match=r"own_queues\.py:34: .*enqueues into queue a second"):
        migrate(path, "enqueued_twice", args=(files, 2))
