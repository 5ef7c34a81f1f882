"""A tf.data service cluster in subprocesses, for tests: :func:`cluster`.

Each server is ``python -m queue_pipeline service dispatcher|worker --port 0``
run from this checkout (``PYTHONPATH`` points at it, whatever copy of
queue_pipeline is installed), so the tests exercise the real commands: their
address line, their signals, their exit status. Nothing here can hang a test:
every start, read and stop has a deadline, and leaving :func:`cluster` stops
every process it started (SIGTERM, then SIGKILL after
:data:`STOP_TIMEOUT_S`), even when the test failed. Each server's stdout and
stderr go to files, not pipes (a chatty server can never block on a full
pipe), readable with :meth:`ServerProcess.output`.

Example::

    from service_cluster import cluster, read_elements

    with cluster(workers=2) as c:
        values = read_elements(
            lambda: queue_pipeline.data.distribute(tf.data.Dataset.range(10),
                                                   c.dispatcher_address))
        c.kill_worker(1)            # a crash: SIGKILL
        c.restart_dispatcher()      # same port (and work dir)

The servers run under TF 2.x defaults in either suite mode: they run no
Python graph code, so the mode of the test process does not reach them.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Iterator, Sequence

__all__ = [
    "ADDRESS_LINE",
    "REPO",
    "START_TIMEOUT_S",
    "STOP_TIMEOUT_S",
    "Cluster",
    "ElementStream",
    "ServerProcess",
    "cluster",
    "read_elements",
    "server_env",
    "service_argv",
]

REPO = pathlib.Path(__file__).resolve().parents[1]

# The first stdout line of `queue-pipeline service ...`: role, URL, host, port.
ADDRESS_LINE = re.compile(r"^(dispatcher|worker) listening on (grpc://(.+):(\d+))$")

# A server imports TensorFlow (about 3 s, longer on a busy machine) before it
# starts; 60 s covers two test processes starting clusters on two cores.
START_TIMEOUT_S = 60.0
# SIGTERM ends a server in well under a second (a worker whose TensorFlow
# stop() overruns ends itself with status 1 after 5 s); after this, SIGKILL.
STOP_TIMEOUT_S = 10.0


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a server subprocess: this one, this checkout first on PYTHONPATH.

    TensorFlow's C++ INFO lines are hidden (``TF_CPP_MIN_LOG_LEVEL=2``) unless
    the environment already sets a level; `extra` overrides anything.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.update(extra or {})
    return env


def service_argv(*args: str) -> list[str]:
    """``python -m queue_pipeline service ARGS...`` with this interpreter."""
    return [sys.executable, "-m", "queue_pipeline", "service", *args]


class ServerProcess:
    """One ``queue-pipeline service`` subprocess, Popen-like.

    Attributes:
      role: ``"dispatcher"`` or ``"worker"``.
      args: its command-line arguments after ``service``.
      process: the ``subprocess.Popen``.
      address: ``"grpc://127.0.0.1:P"`` from its first stdout line (None until
        :meth:`wait_for_address` has read it).
      port: P.
    """

    def __init__(self, args: Sequence[str], log_dir: pathlib.Path, *, name: str) -> None:
        self.role = args[0]
        self.args = list(args)
        self.address: str | None = None
        self.port: int | None = None
        # Set when reap() had to SIGKILL it: the seconds it was given.
        self.killed_after_s: float | None = None
        self._stdout_path = log_dir / f"{name}.stdout"
        self._stderr_path = log_dir / f"{name}.stderr"
        with open(self._stdout_path, "wb") as out, open(self._stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                service_argv(*args),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=server_env(),
                cwd=REPO,
            )

    # -- Popen's interface
    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def poll(self) -> int | None:
        return self.process.poll()

    def wait(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """Waits for the exit; raises ``subprocess.TimeoutExpired`` after `timeout` s."""
        return self.process.wait(timeout)

    def send_signal(self, signum: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()

    # -- the server's side
    def output(self) -> tuple[str, str]:
        """(stdout, stderr) so far."""
        return (
            self._stdout_path.read_text(errors="replace"),
            self._stderr_path.read_text(errors="replace"),
        )

    def wait_for_address(self, timeout: float = START_TIMEOUT_S) -> str:
        """Reads the address line; returns the address (``grpc://HOST:PORT``).

        Raises:
          RuntimeError: the process exited first, printed something else, or
            said nothing within `timeout` seconds (it is then killed); the
            message holds its stderr.
        """
        deadline = time.monotonic() + timeout
        while True:
            exited = self.process.poll()  # before reading: a last line is not missed
            first, newline, _ = self.output()[0].partition("\n")
            if newline:
                match = ADDRESS_LINE.match(first)
                if not match or match.group(1) != self.role:
                    self.stop()
                    raise RuntimeError(self._failure(f"printed {first!r} instead of its address"))
                self.address, self.port = match.group(2), int(match.group(4))
                return self.address
            if exited is not None:
                raise RuntimeError(self._failure(f"exited with {exited} before its address"))
            if time.monotonic() > deadline:
                self.stop(signal.SIGKILL)
                raise RuntimeError(self._failure(f"printed no address within {timeout:g} s"))
            time.sleep(0.05)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT_S) -> int:
        """Sends `signum` (if it still runs) and waits; SIGKILL after `timeout` s.

        Returns:
          The exit status (negative: killed by that signal).
        """
        self.send_signal(signum)
        return self.reap(timeout)

    def reap(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """Waits `timeout` s for the exit, then SIGKILLs; returns the exit status.

        Sends nothing first: a server is stopped by one signal, and a
        second one could arrive after it has put the default action back.
        """
        started = time.monotonic()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.killed_after_s = time.monotonic() - started
            return self.process.wait(timeout)

    def _failure(self, what: str) -> str:
        stderr = self.output()[1].strip()[-3000:]
        return f"queue-pipeline service {' '.join(self.args)} {what}; its stderr:\n{stderr}"

    def __repr__(self) -> str:
        state = "running" if self.poll() is None else f"exited {self.returncode}"
        return f"<ServerProcess {self.role} {self.address} pid={self.pid} {state}>"


class Cluster:
    """A dispatcher and its workers in subprocesses; made by :func:`cluster`.

    Attributes:
      dispatcher: the dispatcher's :class:`ServerProcess` (the latest one
        after :meth:`restart_dispatcher`).
      dispatcher_address: ``"grpc://127.0.0.1:P"``, for ``distribute()``; the
        same for the cluster's whole life.
      dispatcher_port: P.
      workers: the workers' :class:`ServerProcess` es, in start order; a
        killed or stopped worker stays in the list (indices are stable).
      work_dir: the dispatcher's ``--work-dir``, or None.
    """

    def __init__(self, log_dir: pathlib.Path, work_dir: str | None) -> None:
        self.log_dir = log_dir
        self.work_dir = work_dir
        self.workers: list[ServerProcess] = []
        self._started = 0
        self.dispatcher = self._start_dispatcher(port=0)
        self.dispatcher_address: str = self.dispatcher.address or ""
        self.dispatcher_port: int = self.dispatcher.port or 0

    def _spawn(self, args: list[str], name: str) -> ServerProcess:
        self._started += 1
        return ServerProcess(args, self.log_dir, name=f"{self._started:02d}-{name}")

    def _start_dispatcher(self, port: int) -> ServerProcess:
        args = ["dispatcher", "--port", str(port)]
        if self.work_dir is not None:
            args += ["--work-dir", self.work_dir]
        dispatcher = self._spawn(args, "dispatcher")
        dispatcher.wait_for_address()
        return dispatcher

    def add_workers(self, count: int = 1) -> list[ServerProcess]:
        """Starts `count` more workers (in parallel); returns them once registered."""
        dispatcher = f"127.0.0.1:{self.dispatcher_port}"
        new = [
            self._spawn(["worker", "--dispatcher", dispatcher, "--port", "0"], "worker")
            for _ in range(count)
        ]
        self.workers.extend(new)
        for worker in new:
            worker.wait_for_address()
        return new

    def kill_worker(self, i: int) -> int:
        """Kills worker `i` with SIGKILL (a crash: no stop, no goodbye); returns its status."""
        return self.workers[i].stop(signal.SIGKILL)

    def stop_worker(self, i: int) -> int:
        """Stops worker `i` with SIGTERM (a clean stop); returns its exit status."""
        return self.workers[i].stop()

    def stop_dispatcher(self) -> int:
        """Stops the dispatcher with SIGTERM; returns its exit status. Workers keep running."""
        return self.dispatcher.stop()

    def restart_dispatcher(self) -> ServerProcess:
        """Stops the dispatcher if it runs, starts a new one on the same port and work dir.

        With a work dir the new dispatcher resumes the old one's datasets,
        jobs and workers (fault-tolerant mode): a read in the middle of an
        epoch goes on, each element still delivered once. Without one it
        starts empty, and TensorFlow 2.21 then misbehaves with the old workers
        still running: a read in flight fails (``NotFoundError: ... Iteration
        id 2001 not found``) and a new job may end at once with no elements,
        after about 25 s (its ids are the old ones again). Restart the
        workers too in that case (:meth:`stop_worker`, :meth:`add_workers`).

        Raises:
          RuntimeError: the new dispatcher did not start (e.g. another
            process took the port meanwhile).
        """
        self.stop_dispatcher()
        self.dispatcher = self._start_dispatcher(port=self.dispatcher_port)
        return self.dispatcher

    def close(self) -> None:
        """Stops every process: SIGTERM to all, then waits for each (SIGKILL after the timeout)."""
        processes = [*self.workers, self.dispatcher]
        for process in processes:  # one signal each; all stop at once
            process.terminate()
        for process in processes:
            process.reap()


@contextlib.contextmanager
def cluster(
    workers: int = 2,
    work_dir: str | os.PathLike[str] | None = None,
    *,
    log_dir: str | os.PathLike[str] | None = None,
) -> Iterator[Cluster]:
    """Starts a dispatcher and `workers` workers as subprocesses; stops them all on exit.

    Args:
      workers: how many workers to start (0 is allowed; see
        :meth:`Cluster.add_workers`).
      work_dir: the dispatcher's ``--work-dir`` (fault-tolerant mode), or None.
      log_dir: where the servers' stdout and stderr files go (kept); default:
        a temporary directory, removed on exit.

    Yields:
      The :class:`Cluster`, once every server has printed its address.

    Raises:
      RuntimeError: a server did not start; its stderr is in the message.
    """
    if log_dir is None:
        logs = pathlib.Path(tempfile.mkdtemp(prefix="qp-service-"))
    else:
        logs = pathlib.Path(log_dir)
        logs.mkdir(parents=True, exist_ok=True)
    started: Cluster | None = None
    try:
        # A dispatcher that fails to start has been stopped by wait_for_address.
        started = Cluster(logs, None if work_dir is None else os.fspath(work_dir))
        started.add_workers(workers)
        yield started
    finally:
        if started is not None:
            started.close()
        if log_dir is None:
            shutil.rmtree(logs, ignore_errors=True)


class ElementStream:
    """Reads a Dataset a piece at a time, every piece within a deadline; see :func:`read_elements`.

    For tests that act on the cluster in the middle of an epoch (kill a
    worker, restart the dispatcher): ``stream.take(5)``, act, ``stream.rest()``.
    Each call reads in a daemon thread: a tf.data service read blocks in C++
    (the main thread would never see pytest-timeout's signal), and
    registering a dataset with a dispatcher that is gone retries forever. In
    TF1 mode the Dataset is built in a fresh graph and read through a
    one-shot iterator in a Session whose operations time out; under TF 2.x
    defaults it is iterated eagerly. Elements come back as ``helpers.py``
    values (plain Python).
    """

    def __init__(self, make_dataset: Callable[[], Any], *, timeout: float = 60.0) -> None:
        self._make = make_dataset
        self._timeout = timeout
        self._next: Callable[[], Any] | None = None
        self._session: Any = None
        self._done = False

    def _open(self) -> None:
        import tensorflow as tf

        from helpers import new_session, tf1_mode

        if tf1_mode():
            graph = tf.Graph()
            with graph.as_default():
                get_next = tf.compat.v1.data.make_one_shot_iterator(self._make()).get_next()
            self._session = new_session(graph)
            self._next = lambda: self._session.run(get_next)
        else:
            iterator = iter(self._make())
            self._next = lambda: next(iterator)

    def _read(self, count: int | None) -> list:
        import tensorflow as tf

        from helpers import py

        out: list = []
        while (count is None or len(out) < count) and not self._done:
            try:
                out.append(py(self._next() if self._next else None))
            except (StopIteration, tf.errors.OutOfRangeError):
                self._done = True
        return out

    def _in_thread(self, count: int | None, timeout: float | None) -> list:
        result: list = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                if self._next is None:
                    self._open()
                result.extend(self._read(count))
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                failure.append(e)

        limit = self._timeout if timeout is None else timeout
        reader = threading.Thread(target=run, name="ElementStream", daemon=True)
        reader.start()
        reader.join(limit)
        if reader.is_alive():
            raise TimeoutError(f"ElementStream: the Dataset was not read within {limit:g} s")
        if failure:
            raise failure[0]
        return result

    def take(self, count: int, *, timeout: float | None = None) -> list:
        """The next `count` elements (fewer at the end); TimeoutError after `timeout` s."""
        return self._in_thread(count, timeout)

    def rest(self, *, timeout: float | None = None) -> list:
        """Every element left, to the end; TimeoutError after `timeout` s."""
        return self._in_thread(None, timeout)

    def close(self) -> None:
        """Releases the iterator (and the TF1 Session); the stream is done.

        Call it while the cluster still runs (``read_elements`` does): an
        iterator released after its dispatcher is gone retries its goodbye
        for seconds wherever the garbage collector happens to free it.
        """
        self._done = True
        self._next = None  # the only reference to the eager iterator
        if self._session is not None:
            self._session.close()
            self._session = None


def read_elements(make_dataset: Callable[[], Any], *, timeout: float = 60.0) -> list:
    """Builds ``make_dataset()`` and reads all its elements, within `timeout` seconds.

    See :class:`ElementStream` (threads, TF modes, values).

    Raises:
      TimeoutError: not done within `timeout` (the reading thread is left behind).
    """
    stream = ElementStream(make_dataset, timeout=timeout)
    try:
        return stream.rest()
    finally:
        stream.close()
