"""Checkpoints across engines: native TF, the queue engine and the dataset engine.

A model trained one way is restored another way, with ``Saver`` and with
``MonitoredTrainingSession``: every variable comes back, and the input
resumes where the checkpoint says (dataset engine to dataset engine) or
starts from the beginning (a checkpoint with no input position, logged once).
A checkpoint written under the dataset engine restores natively and on the
queue engine (its extra key is ignored). Runs in both TF modes.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf

from helpers import WAYS, new_session, running, session_config

ROWS = 30


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "rows.csv"
    path.write_text("".join(f"{i}\n" for i in range(ROWS)))
    return str(path)


def _model(csv):
    """The legacy program: CSV rows in order -> batch(5) -> a variable that sums them."""
    v1 = tf.compat.v1
    filenames = v1.train.string_input_producer([csv], num_epochs=1, shuffle=False)
    _, line = v1.TextLineReader().read(filenames)
    (value,) = v1.decode_csv(line, record_defaults=[[0]])
    batch = v1.train.batch([value], batch_size=5)
    total = v1.get_variable("total", [], tf.int32, initializer=v1.zeros_initializer())
    step = v1.assign_add(total, tf.reduce_sum(batch))
    return batch, total, step


def _train(way, csv, ckpt_dir, steps):
    """Trains `steps` batches the `way` given; saves with a default Saver."""
    v1 = tf.compat.v1
    with running(way), tf.Graph().as_default():
        _, total, step = _model(csv)
        saver = v1.train.Saver()
        with new_session(tf.compat.v1.get_default_graph()) as sess:
            sess.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess, coord)
            for _ in range(steps):
                sess.run(step)
            path = saver.save(sess, f"{ckpt_dir}/model")
            value = sess.run(total)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return path, value


def _restore_and_read(way, csv, path):
    """Restores `path` the `way` given; returns (restored total, next batch)."""
    v1 = tf.compat.v1
    with running(way), tf.Graph().as_default():
        batch, total, _ = _model(csv)
        saver = v1.train.Saver()
        with new_session(tf.compat.v1.get_default_graph()) as sess:
            sess.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
            saver.restore(sess, path)
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess, coord)
            restored, first = sess.run(total), sess.run(batch).tolist()
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return restored, first


@pytest.mark.parametrize("writer", WAYS)
@pytest.mark.parametrize("reader", WAYS)
def test_every_direction_restores_the_variables(writer, reader, csv_file, tmp_path, caplog):
    path, trained = _train(writer, csv_file, str(tmp_path), steps=2)
    assert trained == sum(range(10))
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        restored, first = _restore_and_read(reader, csv_file, path)
    assert restored == trained
    notes = [
        r.getMessage()
        for r in caplog.records
        if r.name == "queue_pipeline" and "no input position" in r.getMessage()
    ]
    if writer == reader == "dataset":
        assert first == [10, 11, 12, 13, 14] and not notes  # resumed mid-epoch
    else:
        assert first == [0, 1, 2, 3, 4]  # a queue pipeline restarts its input
        assert len(notes) == (1 if reader == "dataset" else 0), notes


def test_the_note_is_logged_once_per_checkpoint(csv_file, tmp_path, caplog):
    path, _ = _train("native", csv_file, str(tmp_path), steps=1)
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        for _ in range(2):
            _restore_and_read("dataset", csv_file, path)
    notes = [r for r in caplog.records if "no input position" in r.getMessage()]
    assert len(notes) == 1 and path in notes[0].getMessage()


def test_a_saver_without_the_engine_keeps_tfs_strict_restore(csv_file, tmp_path):
    """Only Savers holding the engine's input position are made tolerant."""
    v1 = tf.compat.v1
    path, _ = _train("native", csv_file, str(tmp_path), steps=1)
    with tf.Graph().as_default():
        v1.get_variable("total", [], tf.int32)
        v1.get_variable("not_in_the_checkpoint", [], tf.int32)
        saver = v1.train.Saver()
        with new_session(tf.compat.v1.get_default_graph()) as sess:
            with pytest.raises(tf.errors.NotFoundError, match="not_in_the_checkpoint"):
                saver.restore(sess, path)


def _monitored(way, csv, ckpt_dir, steps=None):
    """A MonitoredTrainingSession program with checkpoints in `ckpt_dir`.

    Runs `steps` steps (all the input if None); returns (total, batches read).
    """
    v1 = tf.compat.v1
    batches = []
    with running(way), tf.Graph().as_default():
        batch, total, step = _model(csv)
        global_step = v1.train.get_or_create_global_step()
        train = tf.group(step, v1.assign_add(global_step, 1))
        with v1.train.MonitoredTrainingSession(
            checkpoint_dir=ckpt_dir,
            save_checkpoint_steps=1,
            config=session_config(),
            save_summaries_steps=None,
            save_summaries_secs=None,
            log_step_count_steps=None,
        ) as sess:
            while not sess.should_stop() and (steps is None or len(batches) < steps):
                _, value = sess.run([train, batch])
                batches.append(value.tolist())
            value = sess.run(total) if not sess.should_stop() else None
    return value, batches


@pytest.mark.parametrize("writer", ["native", "queue"])
@pytest.mark.slow
def test_monitored_training_session_resumes_a_model_trained_elsewhere(writer, csv_file, tmp_path):
    ckpt = str(tmp_path / "mts")
    trained, _ = _monitored(writer, csv_file, ckpt, steps=2)
    assert tf.compat.v1.train.latest_checkpoint(ckpt)
    restored, batches = _monitored("dataset", csv_file, ckpt, steps=1)
    assert batches == [[0, 1, 2, 3, 4]]  # the input starts again
    assert restored == trained + sum(range(5))  # the variable came back


@pytest.mark.slow
def test_monitored_training_session_checkpoint_of_the_engine_restores_natively(csv_file, tmp_path):
    ckpt = str(tmp_path / "mts")
    trained, _ = _monitored("dataset", csv_file, ckpt, steps=2)
    for way in ("native", "queue"):
        restored, batches = _monitored(way, csv_file, ckpt, steps=1)
        assert batches == [[0, 1, 2, 3, 4]]
        assert restored == trained + sum(range(5))
        trained = restored
    restored, batches = _monitored("dataset", csv_file, ckpt, steps=1)
    assert restored == trained + sum(batches[0])
    assert np.asarray(batches).shape == (1, 5)
