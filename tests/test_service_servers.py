"""``queue-pipeline service``: the tf.data service dispatcher and worker commands (#19).

The servers run as real subprocesses through ``service_cluster.py``; the
read-only tests share one cluster per test process (a module fixture), and
the tests that stop or restart servers start their own. Every subprocess
has a timeout, and every read goes through the helper's bounded reads.
"""

from __future__ import annotations

import argparse
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest
import tensorflow as tf

import queue_pipeline
from queue_pipeline import cli
from queue_pipeline._service import addresses
from service_cluster import (
    ADDRESS_LINE,
    REPO,
    ServerProcess,
    cluster,
    read_elements,
    server_env,
    service_argv,
)

# The servers are subprocesses under TF 2.x defaults whatever the suite's mode, and
# what runs in-process here only proves the cluster helper; reading through the
# service in TF1 mode (a Session, a legacy script) is tests/test_service_run.py's.
pytestmark = [
    pytest.mark.one_suite("the servers run under TF 2.x defaults in either suite mode"),
    pytest.mark.xdist_group("service_servers"),
]

# A server command that cannot start fails before it imports TensorFlow, in a
# fraction of a second (its probes wait addresses.PROBE_TIMEOUT_S at most);
# the bound is for a machine busy starting other clusters.
RUN_TIMEOUT_S = 90


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        service_argv(*args),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=server_env(),
        cwd=REPO,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _range_through(address: str, n: int, *, via: str = "queue_pipeline"):
    """A builder of ``Dataset.range(n)`` read through the service at `address`."""

    def make() -> tf.data.Dataset:
        dataset = tf.data.Dataset.range(n)
        if via == "queue_pipeline":
            return queue_pipeline.data.distribute(dataset, address)
        return dataset.apply(tf.data.experimental.service.distribute("distributed_epoch", address))

    return make


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One dispatcher and two workers for the tests that leave them running.

    At the end each must have ended on its SIGTERM by itself: status 0, or for
    a worker status 1 after TensorFlow's stop() overran its grace period (NOTE
    [ Exiting after stop ] in queue_pipeline/_service/servers.py); never killed.
    """
    with cluster(workers=2, log_dir=tmp_path_factory.mktemp("shared-cluster")) as running:
        yield running

    def clean(server) -> bool:
        slow_stop = server.role == "worker" and "Timeout (0:00:05)!" in server.output()[1]
        return server.returncode == 0 or (server.returncode == 1 and slow_stop)

    unclean = [p for p in [running.dispatcher, *running.workers] if not clean(p)]
    assert not unclean, [(p, p.killed_after_s, p.output()[1][-1500:]) for p in unclean]


# ------------------------------------------------------------------ no server


def test_the_suite_and_the_servers_run_this_checkout():
    assert pathlib.Path(queue_pipeline.__file__).resolve() == REPO / "queue_pipeline/__init__.py"
    probe = subprocess.run(
        [sys.executable, "-c", "import queue_pipeline; print(queue_pipeline.__file__)"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=server_env(),
        cwd="/",
    )
    assert pathlib.Path(probe.stdout.strip()).resolve() == REPO / "queue_pipeline/__init__.py"


@pytest.mark.one_suite("a fresh interpreter under TF 2.x defaults in either suite")
def test_help_imports_no_tensorflow():
    code = (
        "import sys\nfrom queue_pipeline import cli\n"
        "for argv in (['service', '--help'], ['service', 'dispatcher', '--help'],"
        " ['service', 'worker', '--help']):\n"
        "    try:\n        cli.main(argv)\n    except SystemExit:\n        pass\n"
        # A dispatcher that does not answer fails before TensorFlow's import
        # (--wait 0: at once; waiting for it is test_a_worker_started_before_...).
        "assert cli.main(['service', 'worker', '--wait', '0', '--dispatcher', "
        f"'127.0.0.1:{_free_port()}']) == 2\n"
        "print('tensorflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=server_env(),
        check=True,
    ).stdout
    assert "--work-dir DIR" in out and "--dispatcher HOST:PORT" in out
    assert out.strip().splitlines()[-1] == "False"


# serve() over a stand-in server whose stop() takes argv[1] seconds, as a command runs it.
_SERVE_A_STAND_IN = """
import sys, time
from queue_pipeline._service import servers
from queue_pipeline._service.addresses import Address
servers.STOP_GRACE_S = 1.0
class StandIn:
    def stop(self):
        time.sleep(float(sys.argv[1]))
running = servers.RunningServer("worker", Address("127.0.0.1", 5051), StandIn())
servers.serve(lambda: running, exit_after_stop=True)
"""


@pytest.mark.parametrize("stop_s, status", [(0, 0), (60, 1)], ids=["stops", "stop-hangs"])
def test_a_command_ends_its_process_after_the_stop_or_after_a_grace(tmp_path, stop_s, status):
    out = tmp_path / "stdout"
    with open(out, "wb") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE_A_STAND_IN, str(stop_s)],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=server_env(),
            cwd=REPO,
        )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not out.read_text().endswith("\n") and time.monotonic() < deadline:
            assert process.poll() is None
            time.sleep(0.02)
        assert out.read_text() == "worker listening on grpc://127.0.0.1:5051\n"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        process.kill()
        process.wait(RUN_TIMEOUT_S)
    assert process.returncode == status, err
    assert "SIGTERM: stopping grpc://127.0.0.1:5051" in err
    if status == 0:
        assert err.endswith("queue-pipeline service worker: stopped\n")
    else:  # faulthandler's watchdog: the stack shows where TensorFlow's stop() hung
        assert "Timeout (0:00:01)!" in err and "in stop" in err and "stopped" not in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["service"], "required: {dispatcher,worker}"),
        (["service", "dispatcher", "--port", "70000"], "--port: must be an integer from 0"),
        (["service", "dispatcher", "--port", "five"], "got 'five'"),
        (["service", "dispatcher", "--host", "10.0.0.5:5050"], "--host: must be a host"),
        (["service", "worker"], "--dispatcher"),
        (["service", "worker", "--dispatcher", "localhost"], "must be the dispatcher's HOST:PORT"),
        (["service", "worker", "--dispatcher", "127.0.0.1:0"], "got '127.0.0.1:0'"),
        (["service", "worker", "--dispatcher", "http://h:5050"], "grpc:// protocol"),
    ],
    ids=[
        "no-role",
        "port-range",
        "port-not-int",
        "host-with-port",
        "no-dispatcher",
        "dispatcher-no-port",
        "dispatcher-port-0",
        "dispatcher-http",
    ],
)
def test_bad_arguments_are_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, host, port, url",
    [
        ("127.0.0.1:5050", "127.0.0.1", 5050, "grpc://127.0.0.1:5050"),
        ("grpc://localhost:5050", "localhost", 5050, "grpc://localhost:5050"),
        ("[::1]:5050", "::1", 5050, "grpc://[::1]:5050"),
        ("grpc://[fd00::2]:1", "fd00::2", 1, "grpc://[fd00::2]:1"),
    ],
)
def test_dispatcher_addresses_as_printed_or_bare(text, host, port, url):
    address = addresses.dispatcher_argument(text)
    assert (address.host, address.port, address.url) == (host, port, url)


def test_the_warning_says_more_for_a_host_that_is_not_loopback():
    local = addresses.security_warning("worker", addresses.Address("127.0.0.1", 5051))
    remote = addresses.security_warning("worker", addresses.Address("10.1.2.3", 5051))
    assert len(local) == 2 and all(line.startswith("warning: ") for line in local)
    assert remote[:2] == [line.replace("127.0.0.1", "10.1.2.3") for line in local]
    assert "--host 10.1.2.3 is not a loopback address" in remote[2]
    assert [addresses.is_loopback(h) for h in ("localhost", "127.0.0.9", "::1", "10.0.0.1")] == [
        True,
        True,
        True,
        False,
    ]
    with pytest.raises(argparse.ArgumentTypeError, match="without a port"):
        addresses.host_argument("fd00::2:5050:x")


# ------------------------------------------------------------ the shared cluster


@pytest.mark.slow
def test_servers_print_their_loopback_address_first_and_warn_on_stderr(shared):
    servers = [shared.dispatcher, *shared.workers]
    ports = set()
    for server in servers:
        out, err = server.output()
        match = ADDRESS_LINE.match(out.splitlines()[0])
        assert match is not None and match.group(1) == server.role, out
        assert match.group(3) == "127.0.0.1" and int(match.group(4)) > 0
        ports.add(int(match.group(4)))
        prefix = f"queue-pipeline service {server.role}: warning: "
        assert f"{prefix}tf.data service has no authentication or encryption" in err
        assert "Run it only on a trusted network." in err
        assert "every network interface" in err and "not a loopback" not in err
    assert len(ports) == 3
    assert shared.dispatcher_address == f"grpc://127.0.0.1:{shared.dispatcher_port}"
    assert "no --work-dir" in shared.dispatcher.output()[1]
    assert (
        f"registered with the dispatcher {shared.dispatcher_address}"
        in (shared.workers[0].output()[1])
    )


@pytest.mark.slow
@pytest.mark.parametrize("via", ["queue_pipeline", "tf"])
def test_a_distributed_epoch_reads_every_element_once(shared, via):
    values = read_elements(_range_through(shared.dispatcher_address, 10, via=via))
    assert sorted(values) == list(range(10))


@pytest.mark.slow
def test_a_second_dispatcher_on_a_dispatchers_port_exits_2(shared):
    # TensorFlow alone would start it without an error, sharing the port.
    port = shared.dispatcher_port
    result = _run("dispatcher", "--port", str(port))
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert (
        f"queue-pipeline service dispatcher: error: PortInUseError: `--port` {port}: "
        f"127.0.0.1:{port} is already in use" in result.stderr
    )
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_worker_on_a_port_another_program_holds_exits_2(shared):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = _run(
            "worker", "--dispatcher", f"127.0.0.1:{shared.dispatcher_port}", "--port", str(port)
        )
    assert result.returncode == 2, result.stderr
    assert f"error: PortInUseError: `--port` {port}: 127.0.0.1:{port} is already" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("target, wait", [("nothing", "0"), ("nothing", "1"), ("a-worker", "60")])
def test_a_worker_whose_dispatcher_does_not_answer_exits_2(shared, target, wait):
    port = _free_port() if target == "nothing" else shared.workers[0].port
    result = _run("worker", "--dispatcher", f"127.0.0.1:{port}", "--wait", wait)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    error = lines[-1]
    assert error.startswith(
        f"queue-pipeline service worker: error: DispatcherUnreachableError: `--dispatcher` "
        f"127.0.0.1:{port} "
    )
    waiting = [line for line in lines if "waiting" in line]
    if target == "nothing":
        assert "is unreachable (connection refused: nothing listens on that port)" in error
    else:  # another server answers there: no dispatcher can come, so no wait
        assert "answers gRPC but is not a tf.data service dispatcher" in error
    if wait == "1":  # said once, then the error says how long it waited
        assert waiting == [
            f"queue-pipeline service worker: waiting up to 1 s for the dispatcher at "
            f"127.0.0.1:{port} to answer (`--wait SECS`)"
        ]
        assert error.endswith("(waited 1 s for it; `--wait SECS` sets how long)")
    else:
        assert waiting == [] and "waited" not in error
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_worker_started_before_its_dispatcher_waits_for_it_and_serves(tmp_path):
    # Servers started together (a script, systemd, a pod): the worker comes up first.
    port = _free_port()
    servers = []
    try:
        worker = ServerProcess(
            ["worker", "--dispatcher", f"127.0.0.1:{port}", "--wait", "60"], tmp_path, name="w"
        )
        servers.append(worker)
        deadline = time.monotonic() + 30
        while "waiting up to 60 s" not in worker.output()[1]:
            assert worker.poll() is None and time.monotonic() < deadline, worker.output()
            time.sleep(0.05)
        dispatcher = ServerProcess(["dispatcher", "--port", str(port)], tmp_path, name="d")
        servers.append(dispatcher)
        address = dispatcher.wait_for_address()
        worker.wait_for_address()
        values = read_elements(_range_through(address, 10))
        assert sorted(values) == list(range(10))
        err = worker.output()[1]
        assert err.count("waiting up to") == 1 and "error" not in err
        assert f"registered with the dispatcher grpc://127.0.0.1:{port}" in err
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            server.reap()


# ------------------------------------------------------------------ own clusters


@pytest.mark.slow
def test_sigterm_and_sigint_stop_each_server_cleanly(tmp_path):
    with cluster(workers=1, log_dir=tmp_path) as running:
        worker, dispatcher = running.workers[0], running.dispatcher
        assert worker.stop(signal.SIGINT) == 0  # Ctrl-C
        assert running.stop_dispatcher() == 0
    for server, name in ((worker, "SIGINT"), (dispatcher, "SIGTERM")):
        out, err = server.output()
        assert len(out.splitlines()) == 1
        assert f"{server.role}: {name}: stopping {server.address}" in err
        assert err.rstrip().endswith(f"queue-pipeline service {server.role}: stopped")
        assert "Traceback" not in err
