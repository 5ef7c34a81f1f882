"""``queue-pipeline service dispatcher|worker``: the commands' parser, checks and runs.

TensorFlow-free at import, like the rest of the parser
(:mod:`queue_pipeline._cli_support`): the address checks run before
TensorFlow's import, and :mod:`queue_pipeline._service.servers` is imported
only by the command that runs. :mod:`queue_pipeline.cli` adds the parser.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any, Callable

from queue_pipeline._cli_support import report_error
from queue_pipeline._service import addresses as _addresses

__all__ = ["SERVICE_DESCRIPTION", "add_service_parser"]


SERVICE_DESCRIPTION = (
    "Runs one tf.data service server in this process, for "
    "queue_pipeline.data.distribute() and tf.data.experimental.service.distribute(): "
    "`service dispatcher` coordinates, `service worker --dispatcher HOST:PORT` runs the "
    "input pipelines. The first line on stdout is `<role> listening on grpc://HOST:PORT` "
    "(the bound port, also with --port 0); the server runs until SIGTERM or SIGINT "
    "(Ctrl-C), then stops and exits 0 (1 if TensorFlow's stop takes over 5 s). Exit 2 "
    "when it cannot start: the port is taken, "
    "the dispatcher does not answer (a worker waits for it up to --wait seconds "
    "first). tf.data service has no authentication or "
    "encryption, and TensorFlow listens on every network interface whatever --host "
    "says: run it only on a trusted network."
)


def _service_dispatcher(args: argparse.Namespace) -> int:
    from queue_pipeline._service import servers

    work_dir = args.work_dir
    if work_dir and "://" not in work_dir:  # a local path; gs://... goes to TF as given
        work_dir = os.path.abspath(work_dir)
    start = functools.partial(
        servers.start_dispatcher, host=args.host, port=args.port, work_dir=work_dir
    )
    return _serve("service dispatcher", start)


def _service_worker(args: argparse.Namespace) -> int:
    from queue_pipeline._service import servers

    start = functools.partial(
        servers.start_worker, dispatcher=args.dispatcher, host=args.host, port=args.port
    )
    return _serve("service worker", start)


def _service_check(args: argparse.Namespace) -> int:
    """The address checks of ``service``, run before TensorFlow is imported.

    A taken port or a dispatcher that does not answer then fails in a
    fraction of a second instead of after TensorFlow's import; the start
    functions check again (the state may change in between). A worker first
    waits for its dispatcher, up to ``--wait`` seconds, saying so once on
    stderr: a dispatcher started at the same moment is still importing.
    """
    try:
        _addresses.check_port_free(args.port, host=args.host)
        if args.role == "worker":
            _addresses.wait_for_dispatcher(
                args.dispatcher,
                wait=args.wait,
                on_wait=lambda message: print(
                    f"queue-pipeline service worker: {message}", file=sys.stderr, flush=True
                ),
            )
    except _addresses.ServerError as e:
        return report_error(f"service {args.role}", e, as_json=False)
    return 0


def _serve(command: str, start: Callable[[], Any]) -> int:
    from queue_pipeline._service import servers

    try:
        # The command owns its process, and ends it once the server stopped:
        # TensorFlow's teardown of a stopped worker can hang (NOTE [ Exiting
        # after stop ] in _service/servers.py).
        return servers.serve(start, exit_after_stop=True)
    except _addresses.ServerError as e:
        return report_error(command, e, as_json=False)


def add_service_parser(commands: Any) -> None:
    """Adds ``service`` and its ``dispatcher`` and ``worker`` subcommands to `commands`."""
    service = commands.add_parser(
        "service",
        help="run a tf.data service dispatcher or worker",
        description=SERVICE_DESCRIPTION,
    )
    roles = service.add_subparsers(dest="role", required=True, metavar="{dispatcher,worker}")
    host_help = (
        "the address this server advertises and prints (default: "
        f"{_addresses.LOOPBACK}); TensorFlow listens on every interface regardless"
    )
    dispatcher = roles.add_parser(
        "dispatcher",
        help="coordinate the workers and the trainers",
        description="Runs a tf.data service dispatcher. " + SERVICE_DESCRIPTION,
    )
    dispatcher.add_argument(
        "--port",
        type=_addresses.port_argument,
        default=_addresses.DEFAULT_DISPATCHER_PORT,
        help=f"port to listen on; 0: any free port (default: {_addresses.DEFAULT_DISPATCHER_PORT})",
    )
    dispatcher.add_argument(
        "--host", type=_addresses.host_argument, default=_addresses.LOOPBACK, help=host_help
    )
    dispatcher.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="journal the dispatcher's state in DIR (fault-tolerant mode): a dispatcher "
        "restarted on the same port and DIR resumes its datasets and jobs",
    )
    dispatcher.set_defaults(run=_service_dispatcher, check=_service_check)
    worker = roles.add_parser(
        "worker",
        help="run input pipelines for a dispatcher",
        description="Runs a tf.data service worker. " + SERVICE_DESCRIPTION,
    )
    worker.add_argument(
        "--dispatcher",
        required=True,
        type=_addresses.dispatcher_argument,
        metavar="HOST:PORT",
        help="the dispatcher's address, as it printed it (grpc:// may be omitted)",
    )
    worker.add_argument(
        "--port",
        type=_addresses.port_argument,
        default=0,
        help="port to listen on (default: 0, any free port)",
    )
    worker.add_argument(
        "--host", type=_addresses.host_argument, default=_addresses.LOOPBACK, help=host_help
    )
    worker.add_argument(
        "--wait",
        type=_addresses.wait_argument,
        default=_addresses.DEFAULT_WAIT_S,
        metavar="SECS",
        help="wait up to SECS seconds for the dispatcher to answer, for servers started "
        f"together (default: {_addresses.DEFAULT_WAIT_S:g}; 0: fail at once)",
    )
    worker.set_defaults(run=_service_worker, check=_service_check)
