"""``queue-pipeline run --service``: an unmodified session script reading from a tf.data service.

A dispatcher and two workers run as subprocesses on loopback
(``service_cluster.cluster``); one or two trainer processes run
``tests/scripts/served_trainer.py`` (string_input_producer over four CSV
files -> TextLineReader -> decode_csv -> a per-record square ->
shuffle_batch, in a Coordinator loop) through ``queue-pipeline run
--service``, in the suite's TF mode (``run --tf1`` under ``--tf1``). See
NOTE [ Legacy pipelines on tf.data service ] in ``_engine/service.py``.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import subprocess
import sys
import time
import warnings

import pytest
import tensorflow as tf

from helpers import session_config, tf1_mode
from service_cluster import REPO, cluster, server_env

# Most tests here start subprocess servers or trainers (seconds each).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("service_run")]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "served_trainer.py")
RECORDS = 100  # four files of 25
TRAINER_TIMEOUT_S = 120.0


@pytest.fixture
def files(tmp_path):
    paths = []
    for i in range(4):
        path = tmp_path / f"part{i}.csv"
        path.write_text("".join(f"{v}\n" for v in range(i * 25, i * 25 + 25)))
        paths.append(str(path))
    return paths


class Trainer:
    """One ``queue-pipeline run --service ... served_trainer.py`` process.

    A `held` trainer starts (imports TensorFlow) at once but builds and reads
    nothing until :meth:`go`: its start-up runs beside the test's other work.
    """

    def __init__(self, tmp_path, name, address, files, *args, job=None, env=None, held=False):
        self.out = tmp_path / f"{name}.stdout"
        self.err = tmp_path / f"{name}.stderr"
        self._go = tmp_path / f"{name}.go"
        argv = [sys.executable, "-m", "queue_pipeline", "run"]
        argv += ["--tf1"] if tf1_mode() else []
        argv += ["--service", address] + (["--service-job", job] if job else [])
        argv += [SCRIPT, *files, *args] + (["--wait-for", str(self._go)] if held else [])
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=REPO,
                env=server_env(env),
            )  # fmt: skip

    def go(self) -> None:
        """Lets a `held` trainer build its pipeline and read."""
        self._go.touch()

    def records(self) -> list[int]:
        lines = self.out.read_text().splitlines()
        return [int(line.split()[1]) for line in lines if line.startswith("record ")]

    def wait_for_records(self, n: int, timeout: float = TRAINER_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while len(self.records()) < n:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the trainer delivered {len(self.records())} < {n}:\n"
                                     + self.err.read_text()[-3000:])  # fmt: skip
            time.sleep(0.1)

    def finish(self, timeout: float = TRAINER_TIMEOUT_S) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise AssertionError(
                f"the trainer hung ({timeout:g} s):\n{self.err.read_text()[-3000:]}"
            ) from None

    def stderr(self) -> str:
        return self.err.read_text()

    def kill(self) -> None:
        """Kills the process if it still runs (a held one when its test failed first)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture(scope="module")
def service():
    """One dispatcher and two workers for the tests that stop nothing."""
    with cluster(workers=2) as c:
        yield c.dispatcher_address


def test_one_trainer_receives_every_record_once_per_epoch(tmp_path, files, service):
    trainer = Trainer(tmp_path, "t", service, files, "--epochs", "2")
    assert trainer.finish() == 0, trainer.stderr()[-3000:]
    counts = collections.Counter(trainer.records())
    assert counts == {v: 2 for v in range(RECORDS)}
    assert f"done {2 * RECORDS}" in trainer.out.read_text()


def test_two_trainers_with_one_job_split_the_epoch(tmp_path, files, service):
    """TF 1.x between-graph replication: each record goes to one of the trainers."""
    job = f"split-{os.getpid()}-{time.monotonic_ns()}"
    trainers = [
        Trainer(tmp_path, f"t{i}", service, files, "--slow", "0.02", job=job) for i in range(2)
    ]
    for trainer in trainers:
        assert trainer.finish() == 0, trainer.stderr()[-3000:]
    first, second = (trainer.records() for trainer in trainers)
    assert sorted(first + second) == list(range(RECORDS)), (len(first), len(second))
    print(f"records per trainer: {len(first)} + {len(second)}")


def test_faults_a_restarted_dispatcher_a_lost_worker_and_lost_servers(tmp_path, files):
    """The three faults in turn on one fault-tolerant cluster (one start of its servers).

    1. The dispatcher restarted with its work dir mid-epoch: its journal
       resumes the job; the epoch stays whole, each record once.
    2. A worker killed mid-epoch: the trainer neither hangs nor crashes.
       distributed_epoch delivers each record at most once: the records the
       dead worker held are lost and said, nothing comes twice.
    3. Every server stopped under a trainer reading forever: it ends in an
       error that names the dispatcher's address.
    """
    with cluster(workers=2, work_dir=str(tmp_path / "dispatcher")) as c:
        address = c.dispatcher_address
        restarted = Trainer(tmp_path, "restarted", address, files, "--slow", "0.1")
        restarted.wait_for_records(8)
        c.restart_dispatcher()
        # The next two trainers start now, held: their start-up runs beside this epoch.
        trainer = Trainer(
            tmp_path, "t", address, files, "--slow", "0.1",
            env={"QUEUE_PIPELINE_SERVICE_STALL": "5"}, held=True,
        )  # fmt: skip
        forever = Trainer(
            tmp_path, "forever", address, files, "--epochs", "0", "--slow", "0.05",
            env={"QUEUE_PIPELINE_SERVICE_TIMEOUT": "3"}, held=True,
        )  # fmt: skip
        try:
            status = restarted.finish()
            journal = f"fault-tolerant: state journaled in {tmp_path / 'dispatcher'}"
            assert journal in c.dispatcher.output()[1]
            assert status == 0, restarted.stderr()[-3000:]
            assert sorted(restarted.records()) == list(range(RECORDS))  # each once, none lost

            trainer.go()
            trainer.wait_for_records(12)
            c.kill_worker(0)
            status = trainer.finish()
            records = trainer.records()
            assert status == 0, trainer.stderr()[-3000:]
            assert len(records) == len(set(records)) and set(records) <= set(range(RECORDS))
            assert f"done {len(records)}" in trainer.out.read_text()
            lost = RECORDS - len(records)
            if lost:  # the dead worker held unread records: the end is reported
                assert "a worker was lost mid-epoch" in trainer.stderr()
            print(f"worker killed mid-epoch: {len(records)} of {RECORDS} delivered, {lost} lost, "
                  "none twice")  # fmt: skip

            forever.go()
            forever.wait_for_records(8)
            c.stop_dispatcher()
            c.stop_worker(1)
            status = forever.finish(timeout=60)
        finally:  # a held trainer a failure left waiting
            for held in (trainer, forever):
                held.kill()
    assert status == 1
    err = forever.stderr()
    assert f"dispatcher at {address} has not answered for 3 s" in err
    assert "UnavailableError" in err.splitlines()[-1]


def test_an_unreachable_dispatcher_is_an_error_naming_its_address(tmp_path, files):
    trainer = Trainer(tmp_path, "t", "grpc://127.0.0.1:9", files)
    assert trainer.finish() == 1
    last = trainer.stderr().strip().splitlines()[-1]
    assert "no tf.data service dispatcher answers at grpc://127.0.0.1:9" in last


# --- in process: what is served, what runs locally ----------------------------------


def _read_all(fetch, *, epochs_end=True):
    import queue_pipeline  # noqa: PLC0415

    values = []
    with tf.compat.v1.Session(config=session_config()) as sess:
        sess.run([tf.compat.v1.local_variables_initializer()])
        coord = queue_pipeline.Coordinator()
        threads = queue_pipeline.start_queue_runners(sess=sess, coord=coord)
        try:
            while True:
                values.extend(sess.run(fetch).tolist())
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads)
    return values


def _csv_pipeline(paths, decode=lambda number: number):
    import queue_pipeline  # noqa: PLC0415

    files = queue_pipeline.string_input_producer(paths, num_epochs=1, shuffle=False)
    _, line = queue_pipeline.TextLineReader().read(files)
    (number,) = tf.io.decode_csv(line, [[0]])
    return queue_pipeline.batch([decode(number)], 5, allow_smaller_final_batch=True)


def test_a_finite_pipeline_is_served_in_distributed_epoch_mode(service, files, caplog):
    import queue_pipeline  # noqa: PLC0415

    caplog.set_level(logging.INFO, logger="queue_pipeline")
    with tf.Graph().as_default(), queue_pipeline.engine("dataset", service=service):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fetch = _csv_pipeline(files)
        values = _read_all(fetch)
    assert sorted(values) == list(range(RECORDS))
    assert f"read through tf.data service at {service} (distributed_epoch)" in caplog.text
    # TF's distribute() calls Dataset.options() in graph mode: its UserWarning is not shown
    assert [str(w.message) for w in caught] == []


def _slice_pipeline(rows):
    import queue_pipeline  # noqa: PLC0415

    (row,) = queue_pipeline.slice_input_producer([rows], num_epochs=1, shuffle=False)
    return queue_pipeline.batch([row[0]], 1_000, allow_smaller_final_batch=True)


@pytest.mark.parametrize("why", ["relative file name", "large preloaded array"])
def test_what_cannot_be_served_runs_locally_and_says_why_once(
    service, files, caplog, monkeypatch, why
):
    import numpy as np  # noqa: PLC0415

    import queue_pipeline  # noqa: PLC0415

    if why == "relative file name":
        monkeypatch.chdir(os.path.dirname(files[0]))
        build = lambda: _csv_pipeline([os.path.basename(p) for p in files])  # noqa: E731
        expected, reason = list(range(RECORDS)), "by a relative name"
    else:  # NOTE [ Large preloaded arrays ]: fed to the iterator by the trainer
        rows = np.arange(4_100 * 1_024, dtype=np.float32).reshape(4_100, 1_024)  # 16.8 MB
        build = lambda: _slice_pipeline(rows)  # noqa: E731
        expected, reason = rows[:, 0].tolist(), "preloaded arrays are fed to it in the trainer's"
    with tf.Graph().as_default(), queue_pipeline.engine("dataset", service=service):
        values = _read_all(build())
    assert sorted(values) == expected
    local = [r.getMessage() for r in caplog.records if "runs locally" in r.getMessage()]
    assert len(local) == 1 and reason in local[0], local


def test_a_py_func_runs_locally_and_says_it_cannot_be_served(service, files, caplog):
    import queue_pipeline  # noqa: PLC0415

    def decode(number):
        return tf.reshape(tf.compat.v1.py_func(lambda x: x, [number], tf.int32), [])

    with tf.Graph().as_default(), queue_pipeline.engine("dataset", service=service):
        values = _read_all(_csv_pipeline(files, decode))
    assert sorted(values) == list(range(RECORDS))
    # The Python function runs in the trainer's tf.data map, not on the workers.
    local = [r.getMessage() for r in caplog.records if "runs locally" in r.getMessage()]
    assert len(local) == 1 and "it runs Python" in local[0], caplog.text


def test_service_needs_the_dataset_engine_and_an_address():
    import queue_pipeline  # noqa: PLC0415

    with pytest.raises(ValueError, match=r"service='grpc://h:1' needs the dataset engine"):
        queue_pipeline.engine("queue", service="grpc://h:1")
    with pytest.raises(ValueError, match=r"'GRPC://HOST:PORT'|'grpc://HOST:PORT'"):
        queue_pipeline.engine("dataset", service="h")
    with pytest.raises(ValueError, match=r"job_name='j' needs `service`"):
        queue_pipeline.engine("dataset", job_name="j")


def test_the_environment_names_the_service_and_implies_the_dataset_engine(monkeypatch):
    from queue_pipeline._core import settings  # noqa: PLC0415

    monkeypatch.delenv("QUEUE_PIPELINE_ENGINE", raising=False)
    monkeypatch.setenv("QUEUE_PIPELINE_SERVICE", "127.0.0.1:5050")
    monkeypatch.setenv("QUEUE_PIPELINE_SERVICE_JOB", "run-7")
    current = settings._from_environment()
    assert (current.engine, current.service, current.service_job) == (
        "dataset",
        "grpc://127.0.0.1:5050",
        "run-7",
    )
    monkeypatch.setenv("QUEUE_PIPELINE_ENGINE", "queue")
    with pytest.raises(ValueError, match="QUEUE_PIPELINE_SERVICE='grpc://127.0.0.1:5050' needs"):
        settings._from_environment()
    monkeypatch.setenv("QUEUE_PIPELINE_ENGINE", "dataset")
    monkeypatch.setenv("QUEUE_PIPELINE_SERVICE", "ftp://x")
    with pytest.raises(ValueError, match="QUEUE_PIPELINE_SERVICE must be .*'ftp://x'"):
        settings._from_environment()


@pytest.mark.parametrize("family,host", [("AF_INET", "127.0.0.1"), ("AF_INET6", "::1")])
def test_the_trainers_dispatcher_probe_reaches_ipv4_and_ipv6_addresses(family, host):
    """The watchdog's and the build's TCP probe (``grpc://[::1]:P`` included)."""
    import socket  # noqa: PLC0415

    from queue_pipeline._engine import service  # noqa: PLC0415
    from queue_pipeline._service.addresses import join_host_port  # noqa: PLC0415

    try:
        listener = socket.socket(getattr(socket, family), socket.SOCK_STREAM)
        listener.bind((host, 0))
    except OSError as e:
        pytest.skip(f"no {host} on this machine: {e}")
    with listener:
        listener.listen(1)
        address = f"grpc://{join_host_port(host, listener.getsockname()[1])}"
        assert service._answers(address, timeout=5)
    assert not service._answers(address, timeout=5)  # closed: refused
    with pytest.raises(service.ServiceUnreachableError, match=rf"answers at {re.escape(address)}"):
        service.check_reachable(address, "test")
