"""The clusters of ``benchmarks/convert.py --runner``: started before the clock, stopped after.

* ``DaskRunner``: a ``dask.distributed`` ``LocalCluster`` of 2 worker
  processes, one thread each (as ``tests/test_convert_dask.py`` starts it);
* ``PortableRunner``: Beam's SDK worker pool (``python -m
  apache_beam.runners.worker.worker_pool_main``, its own process group) and
  the embedded job server (``--job_endpoint=embed``), as
  ``tests/test_convert_portable.py`` runs it: one SDK worker a job (the pool
  starts it for each job, in the job's time; the embedded job server's
  FnApiRunner ignores ``--direct_num_workers``).

Each yields the Beam options of a conversion on it. Every process started is
stopped (SIGTERM, then SIGKILL), with bounded waits.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import Iterator

RUNNERS = {"DaskRunner": "dask_2p", "PortableRunner": "portable_1w"}  # runner -> variant
START_TIMEOUT_S, STOP_TIMEOUT_S = 120.0, 10.0


def _environment(repo: str) -> None:
    """The workers (spawned with this environment) import this checkout, quietly."""
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@contextlib.contextmanager
def _dask() -> Iterator[list[str]]:
    from distributed import LocalCluster

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
        timeout=START_TIMEOUT_S,
    )  # fmt: skip
    try:
        yield ["--runner", "DaskRunner", f"--dask_client_address={cluster.scheduler_address}"]
    finally:
        cluster.close(timeout=60)


@contextlib.contextmanager
def _worker_pool() -> Iterator[list[str]]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    with tempfile.TemporaryFile() as log:
        pool = subprocess.Popen(
            [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
             "--service_port=0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline, address = time.monotonic() + START_TIMEOUT_S, None
            while address is None and time.monotonic() < deadline and pool.poll() is None:
                log.seek(0)
                found = re.search(rb"worker pool servicer at port: (\S+:\d+)", log.read())
                address = found.group(1).decode() if found else None
                time.sleep(0.1)
            if address is None:
                raise RuntimeError("the worker pool did not start")
            yield [
                "--runner", "PortableRunner", "--job_endpoint=embed",
                "--environment_type=EXTERNAL", f"--environment_config={address}",
            ]  # fmt: skip
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pool.pid, signal.SIGTERM)  # the pool and its SDK workers
            with contextlib.suppress(subprocess.TimeoutExpired):
                pool.wait(STOP_TIMEOUT_S)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pool.pid, signal.SIGKILL)
            pool.wait(STOP_TIMEOUT_S)


def cluster(runner: str, repo: str):
    """A context manager: the cluster of `runner` (RUNNERS), yielding the Beam options."""
    _environment(repo)
    return _dask() if runner == "DaskRunner" else _worker_pool()
