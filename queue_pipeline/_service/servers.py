"""The lifecycle of ``queue-pipeline service``'s servers: start, address, wait for a signal, stop.

The commands are thin: ``service dispatcher`` runs a
``tf.data.experimental.service.DispatchServer`` and ``service worker`` a
``WorkerServer``, each until SIGTERM or SIGINT (Ctrl-C). Their contract with
scripts and tests:

* The first line on stdout, flushed as soon as the server is up, is
  ``<role> listening on grpc://HOST:PORT``: the address to hand on (``HOST``
  is ``--host``, 127.0.0.1 by default; ``PORT`` the bound port, also with
  ``--port 0``). Nothing else goes to stdout; warnings and notes go to stderr.
* SIGTERM or SIGINT stops the server (``stop()``) and exits 0, without a
  traceback; 1 if TensorFlow's ``stop()`` has not returned after
  :data:`STOP_GRACE_S` (see NOTE [ Exiting after stop ]). Exit 2, with one
  ``queue-pipeline service <role>: error:`` line naming the address, when it
  cannot start: the port is taken, the dispatcher does not answer,
  TensorFlow refuses.

A worker of another TensorFlow version (not tested: one TensorFlow is
installed here). Every tf.data service client, a worker's heartbeat
included, first asks the dispatcher for its service protocol version
(``GetVersion``) and compares it with its own. Different versions fail the
worker's start with TensorFlow's ``FailedPreconditionError: Version mismatch
with tf.data service server...``, reported as an error (exit 2). That number
is the service protocol's, not TensorFlow's: releases that share it register
without complaint, and a dataset graph the trainer's TensorFlow serialized
may then fail on the worker at read time (an op or attribute it does not
know), as an error the trainer sees. Run the dispatcher, the workers and the
trainers on one TensorFlow version.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import os
import signal
import sys
import threading
from typing import Any, Callable, NoReturn, TextIO

from queue_pipeline._service.addresses import (
    DEFAULT_DISPATCHER_PORT,
    LOOPBACK,
    PROBE_TIMEOUT_S,
    Address,
    ServerError,
    check_port_free,
    join_host_port,
    probe_dispatcher,
    security_warning,
)

__all__ = [
    "STOP_GRACE_S",
    "STOP_SIGNALS",
    "RunningServer",
    "StopSignals",
    "exit_process",
    "serve",
    "start_dispatcher",
    "start_worker",
]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

# How often a wait for a stop signal wakes up to look at its flag.
_POLL_S = 1.0
# How long a command lets TensorFlow's stop() take before it ends the
# process anyway (NOTE [ Exiting after stop ]).
STOP_GRACE_S = 5.0


@dataclasses.dataclass(frozen=True)
class RunningServer:
    """A started tf.data service server.

    Attributes:
      role: ``"dispatcher"`` or ``"worker"``.
      address: the address it advertises, with the port it bound.
      server: TensorFlow's ``DispatchServer`` or ``WorkerServer``.
      notes: lines for stderr about this server (its state, its dispatcher).
    """

    role: str
    address: Address
    server: Any
    notes: tuple[str, ...] = ()

    def announcement(self) -> str:
        """The first stdout line: ``<role> listening on grpc://HOST:PORT``."""
        return f"{self.role} listening on {self.address.url}"

    def stop(self) -> None:
        """Stops the server (TensorFlow's ``stop()``: no new RPCs, then its threads end).

        Raises:
          ServerError: TensorFlow failed to stop it.
        """
        try:
            self.server.stop()
        except Exception as e:  # noqa: BLE001 - reported with the address
            raise ServerError(
                f"the {self.role} at {self.address.hostport} failed to stop: "
                f"{type(e).__name__}: {e}"
            ) from e


def start_dispatcher(
    *, host: str = LOOPBACK, port: int = DEFAULT_DISPATCHER_PORT, work_dir: str | None = None
) -> RunningServer:
    """Starts a tf.data service dispatcher in this process.

    Args:
      host: the address printed for it (TensorFlow listens on every interface).
      port: the port to listen on; 0 picks a free one.
      work_dir: where the dispatcher journals its state (registered datasets,
        jobs, workers); with it the dispatcher runs in fault-tolerant mode and
        a new one started on the same port and directory resumes where the
        old one stopped. Any path TensorFlow can write (``gs://...`` too).
        Without it, the state is lost when it stops.

    Returns:
      The running dispatcher.

    Raises:
      PortInUseError: another process listens on `port`.
      ServerError: TensorFlow could not start it (e.g. `work_dir` unusable).
    """
    check_port_free(port, host=host)
    import tensorflow as tf

    service = tf.data.experimental.service
    config = service.DispatcherConfig(
        port=port, work_dir=work_dir, fault_tolerant_mode=bool(work_dir)
    )
    try:
        server = service.DispatchServer(config)
    except (RuntimeError, ValueError, tf.errors.OpError) as e:
        raise ServerError(
            f"TensorFlow could not start the dispatcher on {join_host_port(host, port)}"
            f"{f' with `--work-dir` {work_dir!r}' if work_dir else ''}: {type(e).__name__}: {e}"
        ) from e
    bound = int(server.target.rpartition(":")[2])
    state = (
        f"fault-tolerant: state journaled in {work_dir}, resumed by a dispatcher restarted "
        "on the same port and --work-dir"
        if work_dir
        else "no --work-dir: its state (datasets, jobs) is lost when it stops"
    )
    return RunningServer("dispatcher", Address(host, bound), server, (state,))


def start_worker(
    *,
    dispatcher: Address,
    host: str = LOOPBACK,
    port: int = 0,
    probe_timeout: float = PROBE_TIMEOUT_S,
) -> RunningServer:
    """Starts a tf.data service worker in this process, registered with `dispatcher`.

    Args:
      dispatcher: the dispatcher's address.
      host: the address the worker advertises to the dispatcher, which hands
        it to trainers (TensorFlow listens on every interface).
      port: the port to listen on; 0 (default) picks a free one.
      probe_timeout: seconds the dispatcher has to answer before the start
        (see NOTE [ Probing the dispatcher ] in ``addresses.py``).

    Returns:
      The running worker.

    Raises:
      PortInUseError: another process listens on `port`.
      DispatcherUnreachableError: no tf.data service dispatcher answers at
        `dispatcher`.
      ServerError: TensorFlow could not start it, e.g. the dispatcher runs
        another tf.data service version (see the module docstring).
    """
    check_port_free(port, host=host)
    probe_dispatcher(dispatcher, timeout=probe_timeout)
    import tensorflow as tf

    service = tf.data.experimental.service
    config = service.WorkerConfig(
        dispatcher_address=dispatcher.hostport,
        worker_address=join_host_port(host, "%port%"),
        port=port,
        data_transfer_address=join_host_port(host, "%dts_port%"),
    )
    try:
        server = service.WorkerServer(config)
    except (RuntimeError, ValueError, tf.errors.OpError) as e:
        hint = (
            " Fix: run the dispatcher, the workers and the trainers on one TensorFlow version."
            if isinstance(e, tf.errors.FailedPreconditionError)
            else ""
        )
        raise ServerError(
            f"TensorFlow could not start the worker on {join_host_port(host, port)} for the "
            f"dispatcher at {dispatcher.hostport}: {type(e).__name__}: {e}{hint}"
        ) from e
    bound = int(server._address.rpartition(":")[2])  # noqa: SLF001 - TF's only port accessor
    return RunningServer(
        "worker", Address(host, bound), server, (f"registered with the dispatcher {dispatcher}",)
    )


class StopSignals:
    """Catches SIGTERM and SIGINT while active; :meth:`wait` returns the first one caught.

    Use it as a context manager in the main thread (Python delivers signals
    there only); it restores the previous handlers on exit.
    """

    def __init__(self, signals: tuple[signal.Signals, ...] = STOP_SIGNALS) -> None:
        self._signals = signals
        self._caught: list[int] = []
        self._event = threading.Event()
        self._previous: dict[signal.Signals, Any] = {}

    def _catch(self, signum: int, frame: object) -> None:
        self._caught.append(signum)
        self._event.set()

    def __enter__(self) -> StopSignals:
        for signum in self._signals:
            self._previous[signum] = signal.signal(signum, self._catch)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            if handler is not None:  # None: installed outside Python; leave ours
                signal.signal(signum, handler)

    def wait(self) -> int:
        """Blocks until a signal is caught; returns its number."""
        while not self._event.wait(_POLL_S):  # wakes up at once on a signal too
            pass
        return self._caught[0]


# NOTE [ Stopping a tf.data service server ]
# TensorFlow's server start holds the GIL and may block: a worker whose
# dispatcher went away after the probe retries its registration forever
# (NOTE [ Probing the dispatcher ]). No Python signal handler can run then,
# so while a server starts SIGTERM and SIGINT keep the operating system's
# default action: they end the process at once, which is all there is to
# stop. Once it is up, the handlers are installed *before* the address line
# is printed, so a script that reads the line and sends SIGTERM at once gets
# a clean stop: the main thread waits for the handler's flag, calls the
# server's stop() (which returns in milliseconds), says so on stderr and
# returns 0 (a second signal meanwhile is caught and ignored), and the
# command ends its process at once (NOTE [ Exiting after stop ]).
# TensorFlow's own join() is not used: it blocks in C++ and would keep the
# handlers from running.


def serve(
    start: Callable[[], RunningServer],
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    exit_after_stop: bool = False,
) -> int:
    """Starts a server with `start`, announces it, serves until a stop signal, stops it.

    See NOTE [ Stopping a tf.data service server ]. Main thread only.

    Args:
      start: :func:`start_dispatcher` or :func:`start_worker` with their arguments bound.
      out: where the address line goes (default: stdout).
      err: where warnings and notes go (default: stderr).
      exit_after_stop: end the process with status 0 once the server has
        stopped, before TensorFlow's server object is destroyed, and with
        status 1 if its stop() takes more than :data:`STOP_GRACE_S` (the
        commands; see NOTE [ Exiting after stop ]).

    Returns:
      0 once stopped by SIGTERM or SIGINT (unless `exit_after_stop`).

    Raises:
      ServerError: the server could not start or stop.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    saved = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        running = start()
        prefix = f"queue-pipeline service {running.role}: "
        with StopSignals() as stop:
            _say(err, [prefix + line for line in security_warning(running.role, running.address)])
            _say(err, [prefix + note for note in running.notes])
            out.write(running.announcement() + "\n")
            out.flush()
            caught = signal.Signals(stop.wait())
            _say(err, [f"{prefix}{caught.name}: stopping {running.address}"])
            if exit_after_stop:  # a watchdog that needs no GIL: TF's stop() holds it
                faulthandler.dump_traceback_later(STOP_GRACE_S, exit=True, file=_fd_of(err))
            running.stop()
            if exit_after_stop:
                faulthandler.cancel_dump_traceback_later()
            _say(err, [f"{prefix}stopped"])
            if exit_after_stop:
                exit_process(0)  # `running` still referenced: no destructor runs
        return 0
    finally:
        for signum, handler in saved.items():
            if handler is not None:
                signal.signal(signum, handler)


def _fd_of(err: TextIO) -> TextIO:
    """`err` if it has a file descriptor (faulthandler writes to one), else stderr."""
    try:
        err.fileno()
    except (OSError, ValueError, AttributeError):
        return sys.__stderr__ or sys.stderr
    return err


def _say(err: TextIO, lines: list[str]) -> None:
    """Writes `lines` to `err`; a closed stderr does not stop the server."""
    try:
        err.write("".join(line + "\n" for line in lines))
        err.flush()
    except (OSError, ValueError):
        pass


# NOTE [ Exiting after stop ]
# A TF 2.21 worker retires a finished job's task on its next heartbeat
# (every 30 s), and tearing down that task's iterator can take 10 s and
# more: it waits for the iterator's own threads (tf.data's autotuning loop).
# Meanwhile the worker's stop() waits for it, and so does its destructor,
# which joins the heartbeat thread. Seen on 2 of 8 workers stopped about
# 30 s after their last job (gdb: the main thread in ~DataServiceWorkerImpl
# -> pthread_join; the heartbeat thread in UpdateTasks ->
# ~StandaloneTaskIterator -> ~LogicalThreadWrapper), and once in the suite
# as a stop() that had not returned after 10 s. So the commands
# * end their process right after the stop, with stdout and stderr flushed,
#   while the server object is still referenced (it would be destroyed as
#   soon as serve() returned): no destructor, no interpreter teardown (which
#   costs TensorFlow about a second anyway); the operating system reclaims
#   the rest;
# * bound stop() by STOP_GRACE_S with faulthandler's watchdog, a C thread
#   that needs no GIL (stop() holds it): past the grace it prints
#   "Timeout (0:00:05)!" and the Python stack (the stop() call) to stderr and
#   ends the process with status 1. Clients see the worker gone, as after a
#   stop: TensorFlow's stop() does not deregister a worker either.


def exit_process(status: int) -> NoReturn:
    """Ends the process at once with `status`, stdout and stderr flushed.

    :func:`serve` calls it for the commands (``exit_after_stop``); see NOTE
    [ Exiting after stop ]. Never call it from a process that has other work
    to do.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
