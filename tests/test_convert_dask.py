"""convert on Beam's Dask runner against a dask.distributed cluster the tests start.

A ``LocalCluster`` of 2 worker processes (bounded start, stopped after the
module); the shards it writes equal the DirectRunner's byte for byte, for
images (bad files included) and a table (NOTE [ One output per step ] in
queue_pipeline/_convert/pipeline.py; NOTE [ Runners by name ] in runners.py),
and when a worker process is killed mid-job (a cluster of its own).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from convert_helpers import (
    IN_MEMORY,
    blocked_opening_a_fifo,
    image_bytes,
    make_image_tree,
    records_of,
)

import queue_pipeline as qp
from queue_pipeline._convert.pipeline import beam_options

distributed = pytest.importorskip("distributed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("convert_dask"),
    pytest.mark.one_suite(
        "images and tables on Beam's Dask runner: no TF mode is involved (the workers import no "
        "TensorFlow; the launcher only opens files with tf.io.gfile and reads records back)"
    ),
]


@pytest.fixture(scope="module")
def cluster():
    made = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
        timeout=120,
    )  # fmt: skip
    try:
        yield made.scheduler_address
    finally:
        made.close(timeout=60)


def _dask(address: str) -> list[str]:
    return ["--runner", "DaskRunner", f"--dask_client_address={address}"]


def test_dask_runner_is_taken_by_name():
    """``--runner DaskRunner``, as users type it: Beam gets the class's path."""
    path = "--runner=apache_beam.runners.dask.dask_runner.DaskRunner"
    assert beam_options(None, ["--runner", "DaskRunner", "--x=1"]) == ["--x=1", path]
    assert beam_options("DaskRunner", ["--runner=DirectRunner"]) == [path]
    flink = "--runner=apache_beam.runners.portability.flink_runner.FlinkRunner"
    assert beam_options(None, ["--runner=FlinkRunner"]) == [flink]


def test_images_on_a_dask_cluster_equal_the_direct_runners_shards(cluster, tmp_path):
    made = make_image_tree(tmp_path / "images", per_class=12)
    (tmp_path / "images" / "cat" / "bad.jpg").write_bytes(image_bytes(7)[:30])
    source = f"images:{tmp_path / 'images'}"
    options = {"split": "train=0.75,validation=0.25", "shards": 2}
    on_dask = qp.convert(source, str(tmp_path / "dask"), beam_options=_dask(cluster), **options)
    direct = qp.convert(source, str(tmp_path / "direct"), beam_options=IN_MEMORY, **options)
    assert records_of(tmp_path / "dask") == records_of(tmp_path / "direct")
    for name in records_of(tmp_path / "direct"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "direct" / name).read_bytes()
    assert on_dask.written == direct.written == len(made)
    assert [e["record"] for e in on_dask.errors] == ["cat/bad.jpg"]
    assert on_dask.manifest["runner"] == "DaskRunner"
    assert on_dask.manifest["records"] == direct.manifest["records"]


def test_a_table_on_a_dask_cluster_equals_the_direct_runners_shards(cluster, tmp_path):
    rows = "".join(f"{i},{i * 0.5},w{i % 7}\n" for i in range(500))
    (tmp_path / "t.csv").write_text("n,x,word\n" + rows)
    source = f"csv-table:{tmp_path / 't.csv'}"
    qp.convert(source, str(tmp_path / "dask"), shards=3, beam_options=_dask(cluster))
    qp.convert(source, str(tmp_path / "direct"), shards=3, beam_options=IN_MEMORY)
    for name in records_of(tmp_path / "direct"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "direct" / name).read_bytes()


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads /proc (Linux)")
def test_a_worker_killed_mid_job_is_retried_and_the_shards_are_an_undisturbed_runs(tmp_path):
    """One image is a FIFO: the worker that opens it blocks there, mid-job, and is
    killed (SIGKILL). Dask reschedules its work on a live worker, which blocks on
    the FIFO in turn; then the image's bytes are written into it. The job ends, and
    its shards equal the DirectRunner's on the same images, byte for byte."""
    make_image_tree(tmp_path / "images", per_class=6)
    data = image_bytes(99)
    fifo = tmp_path / "images" / "dog" / "zz.jpg"
    os.mkfifo(fifo)
    made = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", timeout=120
    )
    client = distributed.Client(made, timeout=60)
    outcome: dict = {}

    def job():
        try:
            outcome["result"] = qp.convert(
                f"images:{tmp_path / 'images'}", str(tmp_path / "dask"), shards=2,
                beam_options=_dask(made.scheduler_address),
            )  # fmt: skip
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = e

    thread = threading.Thread(target=job)
    thread.start()
    killed = None
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and thread.is_alive():
            blocked = blocked_opening_a_fifo(client.run(os.getpid).values())
            if blocked and killed is None:
                killed = blocked[0]
                os.kill(killed, signal.SIGKILL)
            elif blocked and blocked[0] != killed:
                break  # the work, retried on a live worker, waits for the image
            time.sleep(0.2)
    finally:
        try:  # the image for whoever waits (and a reader, so the job can end)
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError:
            pass
        thread.join(120)
        client.close()
        made.close(timeout=60)
    assert killed is not None and not thread.is_alive()
    assert "error" not in outcome, outcome
    os.remove(fifo)
    fifo.write_bytes(data)
    qp.convert(f"images:{tmp_path / 'images'}", str(tmp_path / "direct"), shards=2,
               beam_options=IN_MEMORY)  # fmt: skip
    names = sorted(records_of(tmp_path / "direct"))
    assert names == sorted(records_of(tmp_path / "dask"))
    for name in names:
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "direct" / name).read_bytes()
    assert outcome["result"].written == 13
