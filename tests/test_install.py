"""install() / uninstall() and `queue-pipeline run`: unmodified TF 1.x code on queue_pipeline.

The rest of the suite uses TF's own functions as the oracle, so every test here
uninstalls in a fixture and an autouse guard checks, before and after each
test, that every TensorFlow binding of the legacy API is TF's original again.
"""

from __future__ import annotations

import collections
import os
import pathlib
import subprocess
import sys
import threading
import types

import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import python_argv, session_config, tf1_mode
from queue_pipeline import cli
from queue_pipeline._scripts import install as _install

SCRIPT = pathlib.Path(__file__).parent / "scripts" / "legacy_csv_batch.py"
TRAIN_NAMES = (
    "string_input_producer",
    "input_producer",
    "range_input_producer",
    "slice_input_producer",
    "limit_epochs",
    "match_filenames_once",
    "batch",
    "batch_join",
    "shuffle_batch",
    "shuffle_batch_join",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "QueueRunner",
    "add_queue_runner",
    "start_queue_runners",
    "Coordinator",
    "LooperThread",
)
READER_NAMES = (
    "ReaderBase",
    "TextLineReader",
    "FixedLengthRecordReader",
    "TFRecordReader",
    "WholeFileReader",
    "IdentityReader",
)
RUNNER_NAMES = ("QueueRunner", "add_queue_runner", "start_queue_runners")


def _namespaces():
    """(label, module, names) of every place install() must route, found by hand."""
    from tensorflow.python.ops import io_ops
    from tensorflow.python.training import coordinator, queue_runner, queue_runner_impl
    from tensorflow.python.training import input as input_lib

    import tensorflow.compat.v1 as tf_v1

    return [
        ("tf.compat.v1.train", tf.compat.v1.train, TRAIN_NAMES),
        ("tf.compat.v1.train.queue_runner", tf.compat.v1.train.queue_runner, RUNNER_NAMES),
        ("tf.compat.v1", tf.compat.v1, READER_NAMES),
        ("tensorflow.compat.v1 (import as)", tf_v1, READER_NAMES),
        ("tf.compat.v1.io", tf.compat.v1.io, ("match_filenames_once",)),
        ("input", input_lib, TRAIN_NAMES[:14]),
        ("queue_runner_impl", queue_runner_impl, RUNNER_NAMES),
        ("queue_runner", queue_runner, RUNNER_NAMES),
        ("coordinator", coordinator, ("Coordinator", "LooperThread")),
        ("io_ops", io_ops, READER_NAMES),
    ]


def _bindings():
    return {
        (label, name): getattr(module, name)
        for label, module, names in _namespaces()
        for name in names
    }


# Taken when this file is imported, before any install().
ORIGINALS = _bindings()
LMDB_READER = tf.compat.v1.LMDBReader
OURS = {id(getattr(qp, name)) for name in TRAIN_NAMES + READER_NAMES}


def _leaks():
    """TensorFlow module attributes that hold a queue_pipeline object."""
    found = []
    for name, module in list(sys.modules.items()):
        if name.startswith("tensorflow") and isinstance(module, types.ModuleType):
            found += [
                f"{name}.{attr}" for attr, value in list(vars(module).items()) if id(value) in OURS
            ]
    return found


@pytest.fixture(autouse=True)
def tf_oracle_intact():
    """Fails (and repairs) if a test leaves TF's legacy API routed to queue_pipeline."""
    assert _install._ACTIVE is None
    yield
    active = _install._ACTIVE is not None
    _install.uninstall()
    assert not active, "a test left queue_pipeline installed"
    changed = [key for key, value in _bindings().items() if value is not ORIGINALS[key]]
    assert not changed, f"not restored: {changed}"
    assert not _leaks()
    assert tf.compat.v1.LMDBReader is LMDB_READER


@pytest.fixture
def installed():
    handle = qp.install()
    try:
        yield handle
    finally:
        qp.uninstall()


# --- install / uninstall -----------------------------------------------------


def test_originals_are_tf_before_install():
    for (label, name), value in ORIGINALS.items():
        assert value is not getattr(qp, name), (label, name)
        assert value.__module__.startswith("tensorflow."), (label, name)


def test_install_routes_every_namespace_and_uninstall_restores_exactly():
    handle = qp.install()
    try:
        for (label, name), value in _bindings().items():
            assert value is getattr(qp, name), (label, name)
        assert tf.compat.v1.train.string_input_producer is qp.string_input_producer
        assert tf.compat.v1.TextLineReader is qp.TextLineReader
        assert tf.compat.v1.LMDBReader is LMDB_READER  # not ours: TF's stays
        assert tf.train.Coordinator is qp.Coordinator  # the same object in TF 2.x's tf.train
        patched = set(handle.patched)
        for expected in (
            "tensorflow.python.training.input.shuffle_batch",
            "tensorflow.python.training.queue_runner_impl.start_queue_runners",
            "tensorflow.python.training.coordinator.Coordinator",
            "tensorflow.python.ops.io_ops.TFRecordReader",
            "tensorflow._api.v2.compat.v1.train.batch_join",
            "tensorflow._api.v2.compat.v1.train.queue_runner.QueueRunner",
            "tensorflow._api.v2.compat.v1.TextLineReader",
            "tensorflow._api.v2.compat.v1.io.match_filenames_once",
        ):
            assert expected in patched, expected
        assert not any("LMDBReader" in p for p in patched)
    finally:
        qp.uninstall()
    assert handle.patched == []
    for key, value in _bindings().items():
        assert value is ORIGINALS[key], key


def test_install_is_idempotent_nests_and_uninstall_twice_is_a_no_op():
    first = qp.install()
    try:
        count = len(first.patched)
        with qp.install() as inner:  # already installed: leaving it keeps it
            assert len(inner.patched) == count
        assert tf.compat.v1.train.batch is qp.batch
        assert len(qp.install().patched) == count
    finally:
        qp.uninstall()
    qp.uninstall()
    assert tf.compat.v1.train.batch is ORIGINALS[("tf.compat.v1.train", "batch")]
    with qp.install():
        assert tf.compat.v1.train.batch is qp.batch
    assert tf.compat.v1.train.batch is ORIGINALS[("tf.compat.v1.train", "batch")]


def test_install_from_many_threads_at_once():
    barrier, errors = threading.Barrier(8), []

    def go():
        try:
            barrier.wait(timeout=10)
            qp.install()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    try:
        assert not errors
        assert tf.compat.v1.train.shuffle_batch is qp.shuffle_batch
        patched = qp.install().patched
        assert len(patched) == len(set(patched))  # each binding patched once
    finally:
        qp.uninstall()


def test_uninstall_sweeps_modules_loaded_while_installed_and_keeps_user_bindings():
    before = types.ModuleType("tensorflow._qp_test_before")
    before.batch = qp.batch  # a user's own routing, made before install(): kept
    sys.modules[before.__name__] = before
    try:
        with qp.install():
            late = types.ModuleType("tensorflow._qp_test_late")
            late.shuffle_batch = tf.compat.v1.train.shuffle_batch  # binds ours
            sys.modules[late.__name__] = late
        assert late.shuffle_batch is ORIGINALS[("tf.compat.v1.train", "shuffle_batch")]
        assert before.batch is qp.batch
    finally:
        sys.modules.pop("tensorflow._qp_test_before", None)
        sys.modules.pop("tensorflow._qp_test_late", None)


def test_importing_queue_pipeline_patches_nothing():
    assert tf.compat.v1.train.batch.__module__ == "tensorflow.python.training.input"
    assert not _leaks()


# --- unmodified pipelines under install() --------------------------------------

ROWS = [f"{i},w{i}" for i in range(10)]


def _legacy_csv_pipeline(path):
    """string_input_producer -> TextLineReader -> decode_csv -> shuffle_batch, as in TF 1.x."""
    v1 = tf.compat.v1
    filenames = v1.train.string_input_producer([path], num_epochs=2, shuffle=True, seed=3)
    _, line = v1.TextLineReader().read(filenames)
    number, word = v1.decode_csv(line, record_defaults=[[0], [""]])
    return v1.train.shuffle_batch(
        [number, word],
        batch_size=3,
        capacity=20,
        min_after_dequeue=5,
        seed=4,
        allow_smaller_final_batch=True,
    )


def _run_legacy(path):
    """Builds and drains the pipeline; returns (rows delivered, runner types)."""
    v1 = tf.compat.v1
    rows = []
    with tf.Graph().as_default():
        numbers, words = _legacy_csv_pipeline(path)
        runners = v1.get_collection(v1.GraphKeys.QUEUE_RUNNERS)
        with v1.Session(config=session_config()) as sess:
            sess.run(v1.local_variables_initializer())
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while not coord.should_stop():
                    n, w = sess.run([numbers, words])
                    rows += zip(n.tolist(), w.tolist())
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return rows, runners, coord


def test_unmodified_pipeline_builds_queue_pipeline_and_delivers_tfs_data(text_files):
    (path,) = text_files({"data.csv": ROWS})
    tf_rows, tf_runners, tf_coord = _run_legacy(path)
    with qp.install():
        qp_rows, qp_runners, qp_coord = _run_legacy(path)
    assert tf_runners and not any(isinstance(r, qp.QueueRunner) for r in tf_runners)
    assert qp_runners and all(isinstance(r, qp.QueueRunner) for r in qp_runners)
    assert isinstance(qp_coord, qp.Coordinator) and not isinstance(tf_coord, qp.Coordinator)
    expected = collections.Counter({(i, f"w{i}".encode()): 2 for i in range(10)})
    assert collections.Counter(tf_rows) == expected
    assert collections.Counter(qp_rows) == expected


def test_tf_slim_style_internal_imports_reach_queue_pipeline(installed):
    from tensorflow.python.ops import io_ops
    from tensorflow.python.training import input as input_lib

    with tf.Graph().as_default():
        (index,) = input_lib.slice_input_producer([tf.range(4)], shuffle=False)
        batch = input_lib.batch([index], batch_size=4)
        reader = io_ops.IdentityReader()
        runners = tf.compat.v1.get_collection("queue_runners")
        assert runners and all(isinstance(r, qp.QueueRunner) for r in runners)
        assert isinstance(reader, qp.ReaderBase)
        with tf.compat.v1.Session(config=session_config()) as sess:
            coord = qp.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess, coord)
            try:
                assert sorted(sess.run(batch).tolist()) == [0, 1, 2, 3]
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=5)


class _RecordCoordinator(tf.compat.v1.train.SessionRunHook):
    def after_create_session(self, session, coord):
        self.coord = coord


def test_monitored_training_session_runs_queue_pipeline_runners(installed, text_files):
    (path,) = text_files({"data.csv": ROWS})
    hook, rows = _RecordCoordinator(), []
    with tf.Graph().as_default():
        numbers, words = _legacy_csv_pipeline(path)
        runners = tf.compat.v1.get_collection("queue_runners")
        with tf.compat.v1.train.MonitoredTrainingSession(
            config=session_config(),
            hooks=[hook],
            log_step_count_steps=None,
            save_summaries_steps=None,
            save_summaries_secs=None,
        ) as sess:
            while not sess.should_stop():
                n, w = sess.run([numbers, words])
                rows += zip(n.tolist(), w.tolist())
    assert all(isinstance(r, qp.QueueRunner) for r in runners)
    assert isinstance(hook.coord, qp.Coordinator)
    assert collections.Counter(rows) == collections.Counter(
        {(i, f"w{i}".encode()): 2 for i in range(10)}
    )


def test_supervisor_runs_queue_pipeline_runners_and_looper(installed, text_files, tmp_path):
    """Supervisor keeps TF's Coordinator and LooperThread, as the classes it derived
    from them at import time need (see test_downstreams for its default services);
    the runners it starts are queue_pipeline's."""
    (path,) = text_files({"data.csv": ROWS})
    rows, ticks = [], threading.Event()
    with tf.Graph().as_default():
        numbers, words = _legacy_csv_pipeline(path)
        runners = tf.compat.v1.get_collection("queue_runners")
        assert runners and all(isinstance(r, qp.QueueRunner) for r in runners)
        sv = tf.compat.v1.train.Supervisor(
            logdir=str(tmp_path / "sv"), save_model_secs=0, save_summaries_secs=0
        )
        assert type(sv.coord) is ORIGINALS[("coordinator", "Coordinator")]
        with sv.managed_session(config=session_config()) as sess:
            looper = sv.loop(0.01, ticks.set)
            assert not isinstance(looper, qp.LooperThread)  # TF's, with TF's Coordinator
            assert ticks.wait(timeout=10)
            while not sv.should_stop():
                try:
                    n, w = sess.run([numbers, words])
                except tf.errors.OutOfRangeError:
                    break
                rows += zip(n.tolist(), w.tolist())
    assert not looper.is_alive()
    assert collections.Counter(rows) == collections.Counter(
        {(i, f"w{i}".encode()): 2 for i in range(10)}
    )


# --- queue-pipeline run --------------------------------------------------------


def _csv(tmp_path):
    path = tmp_path / "numbers.csv"
    path.write_text("".join(f"{i},w{i}\n" for i in range(5)))
    return str(path)


EXPECTED_ROWS = [f"row {i} w{i}" for i in range(5)] * 2


def _rows(out):
    return sorted(line for line in out.splitlines() if line.startswith("row "))


@pytest.mark.slow
def test_run_subprocess_both_engines(tmp_path):
    """`python -m queue_pipeline run SCRIPT [--engine E] args...` in two processes at once."""
    csv = _csv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "QUEUE_PIPELINE_ENGINE"}
    commands = {
        "queue": ["run", str(SCRIPT), csv, "--epochs", "2"],
        "dataset": ["run", str(SCRIPT), "--engine", "dataset", csv, "--epochs", "2"],
    }
    procs = {
        name: subprocess.Popen(
            python_argv("-m", "queue_pipeline", *argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for name, argv in commands.items()
    }
    results = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            results[name] = (proc.returncode, out, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    for name, (code, out, err) in results.items():
        assert code == 0, (name, err[-2000:])
        assert f"argv: {csv} --epochs 2" in out, name
        assert f"eager: {not tf1_mode()}" in out, name  # the suite's TF mode
        assert _rows(out) == sorted(EXPECTED_ROWS), name
    assert "runners: queue_pipeline.runner" in results["queue"][1]
    assert "runners: queue_pipeline._engine.runners" in results["dataset"][1]
    assert "engine: -" in results["queue"][1]
    assert "engine: dataset" in results["dataset"][1]


def test_run_in_process_exit_statuses_and_errors(tmp_path, capfd):
    csv = _csv(tmp_path)
    assert cli.main(["run", str(SCRIPT), csv]) == 0
    out = capfd.readouterr().out
    assert _rows(out) == sorted(EXPECTED_ROWS[:5])
    assert "runners: queue_pipeline.runner" in out
    assert _install._ACTIVE is None  # uninstalled after the script

    assert cli.main(["run", str(SCRIPT), csv, "--exit-code", "3"]) == 3
    capfd.readouterr()

    assert cli.main(["run", str(SCRIPT), csv, "--fail"]) == 1
    err = capfd.readouterr().err
    assert "Traceback" in err and "legacy_csv_batch.py" in err
    assert "runpy" not in err  # the runner's own frames are cut
    assert err.rstrip().splitlines()[-1] == (
        "queue-pipeline run: error: ValueError: bad row in numbers.csv"
    )

    assert cli.main(["run", str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capfd.readouterr().err


def test_run_sets_main_argv_path_and_engine(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("QUEUE_PIPELINE_ENGINE", raising=False)
    script = tmp_path / "probe.py"
    script.write_text(
        "import os, sys\n"
        "import tensorflow.compat.v1 as tf\n"
        "from queue_pipeline._core import settings as _settings\n"
        "print('name', __name__)\n"
        "print('argv', sys.argv)\n"
        "print('path0', sys.path[0])\n"
        "print('engine', _settings.current().engine, os.environ.get('QUEUE_PIPELINE_ENGINE'))\n"
        "print('routed', type(tf.train.Coordinator()).__module__)\n"
        "if sys.argv[1:2] == ['--engine']:\n"
        "    sys.exit(sys.argv[2])\n"
    )
    argv, path0 = sys.argv[:], sys.path[0]
    assert cli.main(["run", str(script), "--engine", "dataset", "a", "--engine", "b"]) == 0
    out = capfd.readouterr().out
    assert "name __main__" in out
    assert f"argv {[str(script), 'a', '--engine', 'b']}" in out
    assert f"path0 {os.path.realpath(tmp_path)}" in out
    assert "engine dataset dataset" in out
    assert "routed queue_pipeline.coordinator" in out
    assert sys.argv == argv and sys.path[0] == path0
    assert "QUEUE_PIPELINE_ENGINE" not in os.environ

    assert cli.main(["run", "--engine", "queue", str(script), "--engine", "x"]) == 1
    captured = capfd.readouterr()
    assert "engine queue queue" in captured.out
    assert f"argv {[str(script), '--engine', 'x']}" in captured.out
    assert captured.err.strip() == "x"  # sys.exit("x"): printed, status 1, as Python does

    assert cli.main(["run", str(script), "--engine", "nope"]) == 2
    assert "`engine` must be one of" in capfd.readouterr().err


def test_run_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    assert "SCRIPT.py" in out and "--engine" in out and "Exit status" in out
