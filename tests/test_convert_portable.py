"""convert on Beam's portable runner, its Python work in an external SDK worker pool.

The tests start Beam's worker pool (``python -m
apache_beam.runners.worker.worker_pool_main``: a process that starts an SDK
worker process per job, the way Flink, Spark and Dataflow run Python work)
and submit to Beam's embedded job server (``--job_endpoint=embed``: the
portable runner's job service in the launching process, no Java), so the
work crosses the Fn API to other processes as on a cluster. The shards equal
the DirectRunner's byte for byte; the pool killed mid-job (SIGKILL, with its
worker) ends the command with a clear error and exit status 2, nothing under
the final names (the FnApiRunner behind the embedded job server does not
retry a bundle), and a rerun writes an undisturbed run's bytes. Every
process started is stopped (SIGTERM, then SIGKILL), with bounded waits.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from typing import Iterator

import pytest
from convert_helpers import (
    IN_MEMORY,
    blocked_opening_a_fifo,
    image_bytes,
    make_image_tree,
    records_of,
)

import queue_pipeline as qp

pytest.importorskip("apache_beam")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("convert_portable"),
    pytest.mark.timeout(90),
    pytest.mark.one_suite(
        "images and tables on Beam's portable runner: no TF mode is involved (the workers "
        "import no TensorFlow; the launcher only opens files with tf.io.gfile and reads "
        "records back)"
    ),
]

REPO = pathlib.Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60.0  # the pool imports Beam (a few seconds on a busy machine)
STOP_TIMEOUT_S = 10.0
_STARTED = re.compile(r"Started worker pool servicer at port: (\S+:\d+)")


class WorkerPool:
    """Beam's SDK worker pool in a process group of its own (the pool and its workers)."""

    def __init__(self, log: pathlib.Path) -> None:
        env = dict(os.environ)
        # the workers are `python -c ...` from PATH: this interpreter, this checkout
        env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        env["TF_CPP_MIN_LOG_LEVEL"] = "3"
        self.log = log
        with open(log, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                 "--service_port=0"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
                start_new_session=True,
            )  # fmt: skip
        self.address = self._wait_for_address()

    def _wait_for_address(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            found = _STARTED.search(self.log.read_text(errors="replace"))
            if found:
                return found.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the worker pool did not start: {self.log.read_text()[-2000:]}")

    def options(self) -> list[str]:
        """convert's Beam options for a job whose Python work runs in this pool."""
        return [
            "--runner", "PortableRunner", "--job_endpoint=embed",
            "--environment_type=EXTERNAL", f"--environment_config={self.address}",
        ]  # fmt: skip

    def processes(self) -> list[int]:
        """The pids of the pool's process group: the pool and the workers it started."""
        found = []
        for entry in os.listdir("/proc"):
            with contextlib.suppress(OSError, ValueError):
                if entry.isdigit() and os.getpgid(int(entry)) == self.process.pid:
                    found.append(int(entry))
        return found

    def kill(self) -> None:
        """SIGKILL to the pool and its workers, as a machine lost."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(STOP_TIMEOUT_S)

    def stop(self) -> None:
        """SIGTERM to the pool and its workers; SIGKILL after STOP_TIMEOUT_S."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


@contextlib.contextmanager
def worker_pool(log: pathlib.Path) -> Iterator[WorkerPool]:
    pool = WorkerPool(log)
    try:
        yield pool
    finally:
        pool.stop()


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    with worker_pool(tmp_path_factory.mktemp("pool") / "pool.log") as made:
        yield made


def _same_shards(got: pathlib.Path, expected: pathlib.Path) -> None:
    names = sorted(records_of(expected))
    assert names and names == sorted(records_of(got))
    for name in names:
        assert (got / name).read_bytes() == (expected / name).read_bytes(), name


def test_images_on_the_portable_runner_equal_the_direct_runners_shards(pool, tmp_path):
    made = make_image_tree(tmp_path / "images", per_class=12)
    (tmp_path / "images" / "cat" / "bad.jpg").write_bytes(image_bytes(7)[:30])
    source = f"images:{tmp_path / 'images'}"
    options = {"split": "train=0.75,validation=0.25", "shards": 2}
    portable = qp.convert(source, str(tmp_path / "portable"), beam_options=pool.options(),
                          **options)  # fmt: skip
    direct = qp.convert(source, str(tmp_path / "direct"), beam_options=IN_MEMORY, **options)
    _same_shards(tmp_path / "portable", tmp_path / "direct")
    assert portable.written == direct.written == len(made)
    assert [e["record"] for e in portable.errors] == ["cat/bad.jpg"]
    assert portable.manifest["runner"] == "PortableRunner"
    assert "Starting worker" in pool.log.read_text()  # the work ran in the pool's workers
    assert portable.manifest["records"] == direct.manifest["records"]


def test_a_table_on_the_portable_runner_equals_the_direct_runners_shards(pool, tmp_path):
    rows = "".join(f"{i},{i * 0.5},w{i % 7}\n" for i in range(500))
    (tmp_path / "t.csv").write_text("n,x,word\n" + rows)
    source = f"csv-table:{tmp_path / 't.csv'}"
    qp.convert(source, str(tmp_path / "portable"), shards=3, beam_options=pool.options())
    qp.convert(source, str(tmp_path / "direct"), shards=3, beam_options=IN_MEMORY)
    _same_shards(tmp_path / "portable", tmp_path / "direct")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc (Linux)")
def test_the_worker_pool_killed_mid_job_is_a_clear_error_and_a_rerun_is_undisturbed(pool, tmp_path):
    """One image is a FIFO: the SDK worker that opens it blocks there, mid-job, and
    the pool is killed with its worker (SIGKILL). The command ends with exit status
    2 and one clear line (or, were the bundle retried, with an undisturbed run's
    shards), never with shards under their final names; a rerun on a live pool
    writes the DirectRunner's bytes."""
    make_image_tree(tmp_path / "images", per_class=6)
    fifo = tmp_path / "images" / "dog" / "zz.jpg"
    os.mkfifo(fifo)
    out = tmp_path / "portable"
    with worker_pool(tmp_path / "doomed.log") as doomed:
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        job = subprocess.Popen(
            [sys.executable, "-m", "queue_pipeline", "convert", f"images:{tmp_path / 'images'}",
             "--out", str(out), "--shards", "2", "--", *doomed.options()],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and job.poll() is None:
                if blocked_opening_a_fifo(doomed.processes()):
                    break
                time.sleep(0.2)
            assert job.poll() is None, job.communicate()
            assert time.monotonic() < deadline, "no worker reached the FIFO"
            doomed.kill()
            stdout, stderr = job.communicate(timeout=60)
        finally:
            if job.poll() is None:
                job.kill()
                job.communicate()
    message = stderr.decode(errors="replace")
    if job.returncode == 0:  # a runner that retried the bundle
        qp.convert(f"images:{tmp_path / 'images'}", str(tmp_path / "undisturbed"), shards=2,
                   beam_options=IN_MEMORY)  # fmt: skip
        _same_shards(out, tmp_path / "undisturbed")
        return
    assert job.returncode == 2, message
    error = [line for line in message.splitlines() if line.startswith("queue-pipeline convert")]
    assert len(error) == 1 and "the Beam job failed" in error[0], message
    assert "worker pool stopped mid-job" in error[0]
    assert "Traceback" not in error[0] and "ERROR:root:Traceback" not in message
    assert not stdout
    assert not out.exists() or not any(out.iterdir())  # no shard, no temporary directory

    os.remove(fifo)
    fifo.write_bytes(image_bytes(99))
    source = f"images:{tmp_path / 'images'}"
    rerun = qp.convert(source, str(out), shards=2, beam_options=pool.options())
    qp.convert(source, str(tmp_path / "undisturbed"), shards=2, beam_options=IN_MEMORY)
    _same_shards(out, tmp_path / "undisturbed")
    assert rerun.written == 13
