"""Where the tf.data service servers listen: addresses, port and dispatcher probes, the warning.

TensorFlow-free, so that ``queue-pipeline service --help`` and the parser's
argument checks never import TensorFlow; :mod:`queue_pipeline._service.servers`
runs the servers themselves.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import ipaddress
import os
import socket
import time
from typing import Callable

__all__ = [
    "DEFAULT_DISPATCHER_PORT",
    "DEFAULT_WAIT_S",
    "LOOPBACK",
    "PROBE_TIMEOUT_S",
    "PROTOCOL",
    "Address",
    "DispatcherUnreachableError",
    "PortInUseError",
    "ServerError",
    "check_port_free",
    "connect_error",
    "dispatcher_argument",
    "host_argument",
    "is_loopback",
    "join_host_port",
    "port_argument",
    "probe_dispatcher",
    "security_warning",
    "wait_argument",
    "wait_for_dispatcher",
]

LOOPBACK = "127.0.0.1"
PROTOCOL = "grpc"
DEFAULT_DISPATCHER_PORT = 5050
PROBE_TIMEOUT_S = 3.0
# How long a worker waits for its dispatcher by default (`--wait`): servers
# started together (a script, systemd, a pod) give the dispatcher the time its
# TensorFlow import takes, seconds, on a busy machine tens of seconds.
DEFAULT_WAIT_S = 60.0
_RETRY_INTERVAL_S = 0.25

# The dispatcher's own handshake: the first call every tf.data service client
# (a worker's heartbeat, a trainer's distribute()) makes. Its request is empty.
_GET_VERSION = "/tensorflow.data.DispatcherService/GetVersion"


class ServerError(RuntimeError):
    """A tf.data service server could not start (or stop); the message names the address."""


class PortInUseError(ServerError):
    """The port a server was asked to listen on is taken by another process."""


class DispatcherUnreachableError(ServerError):
    """A worker's ``--dispatcher`` does not answer as a tf.data service dispatcher.

    Attributes:
      transient: True when a dispatcher starting there could still answer
        (nothing listens yet, no answer yet, an unknown host whose name may
        still be registered); False when something else answers there.
    """

    transient = True


@dataclasses.dataclass(frozen=True)
class Address:
    """A server's address: `host` as given (IPv6 without brackets) and `port`."""

    host: str
    port: int

    @property
    def hostport(self) -> str:
        """``host:port`` (``[v6]:port``), as tf.data service configs take it."""
        return join_host_port(self.host, self.port)

    @property
    def url(self) -> str:
        """``grpc://host:port``, as ``distribute(service=...)`` takes it."""
        return f"{PROTOCOL}://{self.hostport}"

    def __str__(self) -> str:
        return self.url


def join_host_port(host: str, port: int | str) -> str:
    """``host:port``, with an IPv6 host in brackets; `port` may be TF's ``%port%``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine's loopback (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: not known to be local
        return False


# ------------------------------------------------------------ argparse types


def port_argument(text: str) -> int:
    """``--port``: an integer in 0..65535; 0 lets the server pick a free port."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"must be an integer from 0 to 65535 (0: any free port); got {text!r}"
        )
    return port


def host_argument(text: str) -> str:
    """``--host``: a host name or IP address without a port (IPv6 brackets are dropped)."""
    host = text.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    malformed = not host or any(c.isspace() for c in host) or "/" in host
    if not malformed and ":" in host:  # only an IPv6 literal may hold a colon
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            malformed = True
    if malformed:
        raise argparse.ArgumentTypeError(
            "must be a host name or an IP address without a port (e.g. 10.0.0.5 or "
            f"trainer-1.example.com); got {text!r}"
        )
    return host


def dispatcher_argument(text: str) -> Address:
    """``--dispatcher``: ``HOST:PORT`` or ``grpc://HOST:PORT``, as the dispatcher printed it."""
    rest = text.strip()
    scheme, sep, after = rest.partition("://")
    if sep:
        if scheme != PROTOCOL:
            raise argparse.ArgumentTypeError(
                f"must use the {PROTOCOL}:// protocol (the only one tf.data service "
                f"has); got {text!r}"
            )
        rest = after
    host, sep, port_text = rest.rpartition(":")
    try:
        host = host_argument(host) if sep else ""
        port = port_argument(port_text) if sep else 0
    except argparse.ArgumentTypeError:
        host, port = "", 0
    if not host or port == 0:
        raise argparse.ArgumentTypeError(
            "must be the dispatcher's HOST:PORT (e.g. 127.0.0.1:5050 or "
            f"grpc://10.0.0.5:5050, as `dispatcher listening on ...` shows it); got {text!r}"
        )
    return Address(host, port)


# -------------------------------------------------------------------- probes

# NOTE [ A taken port ]
# TensorFlow's gRPC servers listen on the port of every interface (0.0.0.0
# and [::]) whatever address they advertise, and gRPC sets SO_REUSEPORT. So
# when the port is held by a program that did not set SO_REUSEPORT, TF fails
# with only "RuntimeError: Could not start gRPC server" (and a C++ log line
# "Failed to add port to server"); when it is held by another tf.data service
# server, TF starts *without any error* and the kernel splits the connections
# between the two servers: a trainer then registers its dataset with one
# dispatcher and asks the other for it ("NotFoundError: Dataset id 1000 not
# found"). Binding a plain socket (SO_REUSEADDR, which only allows TIME_WAIT
# leftovers of a stopped server, not SO_REUSEPORT) to the same wildcard
# addresses first fails in both cases, so the port is checked that way. Two
# servers started in the same instant on one port can still both pass.


def check_port_free(port: int, *, host: str, flag: str = "--port") -> None:
    """Raises :class:`PortInUseError` when a server could not have `port` to itself.

    Args:
      port: the port the server will listen on; 0 (any free port) is not checked.
      host: the address the server advertises, named in the message.
      flag: the command-line option that gave `port`, named in the message.

    Raises:
      PortInUseError: another process listens on `port` (on any interface).
      ServerError: the port is not available for another reason (e.g. it is
        below 1024 and this process may not bind it).
    """
    if port == 0:
        return
    for family, wildcard in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            probe = socket.socket(family, socket.SOCK_STREAM)
        except OSError:  # no IPv6 on this machine: nothing can listen there
            continue
        with probe:
            if os.name != "nt":  # Windows' SO_REUSEADDR would take a live port
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((wildcard, port))
            except OSError as e:
                if e.errno == errno.EADDRNOTAVAIL:  # IPv6 present but not configured
                    continue
                where = join_host_port(host, port)
                if e.errno == errno.EADDRINUSE:
                    raise PortInUseError(
                        f"`{flag}` {port}: {where} is already in use by another process "
                        "(tf.data service listens on that port of every interface). Fix: "
                        f"stop that process, choose another `{flag}`, or pass `{flag} 0` "
                        "for any free port."
                    ) from e
                raise ServerError(
                    f"`{flag}` {port}: {where} cannot be listened on ({e.strerror}). Fix: "
                    f"choose a port above 1023, or pass `{flag} 0` for any free port."
                ) from e


# NOTE [ Probing the dispatcher ]
# A WorkerServer whose dispatcher does not answer never fails: its start
# retries the registration heartbeat forever (dispatcher_timeout_ms does not
# bound it; verified with TF 2.21 for 100 s), logging only INFO lines, and it
# holds the GIL all the while, so no Python thread or signal handler runs.
# The worker command therefore asks the dispatcher first, with a deadline:
# a TCP connection (refused, unresolvable or silent hosts get their own
# words), then the dispatcher's own GetVersion RPC, which tells a dispatcher
# from anything else that listens there (a worker's port answers
# UNIMPLEMENTED). A dispatcher that stops between the probe and the start
# still leaves the start waiting, until it comes back.


def connect_error(address: Address, timeout: float) -> OSError | None:
    """Opens and closes a TCP connection to `address`; the error, or None if it answered.

    A ``socket.gaierror`` is an unknown host, ``socket.timeout`` a silent one,
    any other ``OSError`` a refusal (nothing listens) or an unreachable network.
    """
    try:
        with socket.create_connection((address.host, address.port), timeout=timeout):
            return None
    except OSError as e:  # socket.timeout (TimeoutError from Python 3.10) included
        return e


def probe_dispatcher(dispatcher: Address, *, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Checks that a tf.data service dispatcher answers at `dispatcher`, within `timeout`.

    Args:
      dispatcher: the address given as ``--dispatcher``.
      timeout: seconds for the TCP connection, then for the RPC.

    Raises:
      DispatcherUnreachableError: nothing listens there, the host is unknown
        or silent, or what listens is not a tf.data service dispatcher.
    """
    where = dispatcher.hostport
    fix = (
        "Fix: start the dispatcher first (`queue-pipeline service dispatcher --port "
        f"{dispatcher.port}`), or pass the address it printed as `--dispatcher`."
    )
    failure = connect_error(dispatcher, timeout)
    if isinstance(failure, socket.gaierror):
        raise DispatcherUnreachableError(
            f"`--dispatcher` {where}: unknown host {dispatcher.host!r} ({failure.strerror}). {fix}"
        ) from failure
    if isinstance(failure, (socket.timeout, TimeoutError)):
        raise DispatcherUnreachableError(
            f"`--dispatcher` {where} is unreachable: no answer to a TCP connection within "
            f"{timeout:g} s (a wrong host, or a firewall). {fix}"
        ) from failure
    if failure is not None:
        refused = failure.errno == errno.ECONNREFUSED
        why = "connection refused: nothing listens on that port" if refused else failure.strerror
        raise DispatcherUnreachableError(
            f"`--dispatcher` {where} is unreachable ({why or failure}). {fix}"
        ) from failure
    try:
        import grpc  # TensorFlow's own dependency
    except ImportError:  # pragma: no cover - the TCP check has to do
        return
    with grpc.insecure_channel(where) as channel:
        get_version = channel.unary_unary(_GET_VERSION)
        try:
            get_version(b"", timeout=timeout)
        except grpc.RpcError as e:
            code = e.code()
            fix = (
                "Fix: pass the address the dispatcher printed (`dispatcher listening on "
                "grpc://HOST:PORT`) as `--dispatcher`."
            )
            transient = code != grpc.StatusCode.UNIMPLEMENTED
            if not transient:
                what = (
                    "answers gRPC but is not a tf.data service dispatcher (is it a "
                    "worker's address?)"
                )
            elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
                what = (
                    "accepts connections but did not answer as a tf.data service "
                    f"dispatcher within {timeout:g} s"
                )
            else:  # e.g. not HTTP/2: not a gRPC server at all
                what = (
                    f"did not answer as a tf.data service dispatcher ({code.name}: {e.details()})"
                )
            error = DispatcherUnreachableError(f"`--dispatcher` {where} {what}. {fix}")
            error.transient = transient
            raise error from e


def wait_argument(text: str) -> float:
    """``--wait``: seconds, 0 or more (0: do not wait)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds, 0 or more (0: do not wait); got {text!r}"
        )
    return seconds


def wait_for_dispatcher(
    dispatcher: Address,
    *,
    wait: float = DEFAULT_WAIT_S,
    on_wait: Callable[[str], None] | None = None,
    probe_timeout: float = PROBE_TIMEOUT_S,
) -> None:
    """Probes `dispatcher` (:func:`probe_dispatcher`) until it answers, for up to `wait` s.

    A worker started at the same moment as its dispatcher finds nothing
    listening while the dispatcher's TensorFlow still imports; it retries
    every quarter second. What cannot become a dispatcher (another gRPC
    server answers there) fails at once.

    Args:
      dispatcher: the address given as ``--dispatcher``.
      wait: seconds to keep trying; 0 probes once.
      on_wait: called once, with a one-line message, when the first probe
        failed and the worker starts waiting (the command prints it).
      probe_timeout: seconds for each probe's connection and RPC.

    Raises:
      DispatcherUnreachableError: the last probe's error, once `wait` has run
        out (its message then says how long the worker waited), or at once
        when what answers is not a dispatcher.
    """
    deadline = time.monotonic() + wait
    waited = False
    while True:
        try:
            probe_dispatcher(dispatcher, timeout=probe_timeout)
            return
        except DispatcherUnreachableError as e:
            if not e.transient or time.monotonic() >= deadline:
                if not waited:
                    raise
                raise DispatcherUnreachableError(
                    f"{e} (waited {wait:g} s for it; `--wait SECS` sets how long)"
                ) from e
            if not waited and on_wait is not None:
                on_wait(
                    f"waiting up to {wait:g} s for the dispatcher at {dispatcher.hostport} "
                    "to answer (`--wait SECS`)"
                )
            waited = True
        time.sleep(max(0.0, min(_RETRY_INTERVAL_S, deadline - time.monotonic())))


def security_warning(role: str, address: Address) -> list[str]:
    """The warnings a server prints on start: no authentication, every interface, --host.

    Args:
      role: ``"dispatcher"`` or ``"worker"``.
      address: the address the server advertises (its port is the bound one).

    Returns:
      One message per line, each starting with ``warning:``.
    """
    lines = [
        "warning: tf.data service has no authentication or encryption: anyone who can "
        f"reach port {address.port} of this machine can read the data this {role} serves "
        "and have the workers run any TensorFlow graph (reading and writing files as this "
        "user). Run it only on a trusted network.",
        f"warning: TensorFlow listens on port {address.port} of every network interface "
        f"whatever --host says (--host only sets the address this {role} advertises, here "
        f"{address.host}); firewall the port where other machines must not reach it.",
    ]
    if not is_loopback(address.host):
        lines.append(
            f"warning: --host {address.host} is not a loopback address: other machines are "
            f"told to reach this {role} over the network, unauthenticated and unencrypted. "
            "Make sure that network is trusted."
        )
    return lines
