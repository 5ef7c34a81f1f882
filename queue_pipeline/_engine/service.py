"""The dataset engine on tf.data service: each rebuilt pipeline read from a cluster's workers.

NOTE [ Legacy pipelines on tf.data service ]
With a dispatcher's address (``queue-pipeline run --service grpc://HOST:P``,
``QUEUE_PIPELINE_SERVICE`` or ``engine("dataset", service=...)``), the
dataset engine builds each batching call's pipeline as usual and then reads
it through ``tf.data.experimental.service.distribute``: the workers open the
files, decode, shuffle and batch; the trainer receives finished batches.

* **Processing mode.** A pipeline whose producers all have a finite
  ``num_epochs`` runs in ``distributed_epoch`` mode: the workers split its
  source (the file names, the rows of a preloaded array), so each record is
  produced once per epoch, by one worker. Each worker batches its own part:
  with ``allow_smaller_final_batch=True`` every record arrives exactly once
  (up to one smaller batch per worker); with the default (drop the
  remainder) each worker drops up to ``batch_size - 1`` records of its part,
  where the local pipeline drops them once. A pipeline that repeats forever
  runs in ``parallel_epochs`` mode: every worker runs the whole pipeline,
  and the trainer reads their streams interleaved.
* **Sharing a stream.** With a job name (``--service-job NAME``,
  ``QUEUE_PIPELINE_SERVICE_JOB``), trainer processes that run the same
  script read one job between them (TF 1.x's between-graph replication over
  shared queues): in ``distributed_epoch`` mode the epoch is split between
  the trainers, each record going to one of them. Each batching call has a
  job of its own, ``NAME/<call scope>``. Without a name each trainer reads a
  stream of its own. The dispatcher keeps a finished job under its name for
  a while: a new run needs a new name.
* **What is not served** runs locally on the dataset engine, and the reason
  is logged once: a pipeline with a Python function (``py_func``, and the
  engine's own gather for large preloaded arrays: the workers cannot run the
  trainer's Python), one that reads variables (their values live in the
  trainer's session), and one that reads files by relative names (the
  workers resolve them against their own directories).
* **An unreachable dispatcher** when the pipeline is built is an error that
  names the address (:class:`ServiceUnreachableError`). When the dispatcher
  goes away later, tf.data's client waits for it forever; so the call's
  stand-in runner starts one watchdog thread (``start_queue_runners``,
  MonitoredTrainingSession and Supervisor start it) that probes the
  dispatcher's port every second. A dispatcher gone for
  ``QUEUE_PIPELINE_SERVICE_TIMEOUT`` seconds (30) stops the coordinator with
  a ``tf.errors.UnavailableError`` naming the address and closes the session,
  which ends the step waiting for data; the session hook raises that error
  in place of the step's ``CancelledError``. A dispatcher restarted within
  the timeout (with ``--work-dir``, the job goes on) is not an error.
* **A worker lost mid-epoch.** In ``distributed_epoch`` mode the records a
  dead worker held are lost (the service delivers each at most once), and
  TF's client then waits forever for the end of an epoch that cannot come.
  The watchdog sees it: while a step waits and the dispatcher answers, no
  element has arrived for ``QUEUE_PIPELINE_SERVICE_STALL`` seconds (120;
  each arrival is stamped on the trainer). It then ends the input: the
  waiting step raises ``OutOfRangeError`` (so the script's loop ends its
  epoch as at the end of the data) with a message, also logged as a
  warning, that names the address, the loss and the batches delivered, and
  the session is closed (the only way to end the wait). A worker restarted
  on its address in time loses nothing.
* **Checkpoints.** A served iterator's position is not saved (tf.data service
  keeps no checkpointable state on the trainer); a restore starts the input
  from the beginning.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

import numpy as np
import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._core.compat import logger
from queue_pipeline._service import addresses as _addresses

__all__ = [
    "ServiceUnreachableError",
    "TIMEOUT_ENV",
    "check_reachable",
    "distribute",
    "unservable_reason",
    "watchdog",
]

TIMEOUT_ENV = "QUEUE_PIPELINE_SERVICE_TIMEOUT"
DEFAULT_TIMEOUT_SECS = 30.0
STALL_ENV = "QUEUE_PIPELINE_SERVICE_STALL"
DEFAULT_STALL_SECS = 120.0
_PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})
_PROBE_SECS = 1.0


class ServiceUnreachableError(ConnectionError):
    """The dispatcher's address does not answer when the pipeline is built."""


def _answers(address: str, timeout: float = 2.0) -> bool:
    """Whether a TCP connection to `address` (``grpc://HOST:PORT``) is accepted."""
    return _addresses.connect_error(_addresses.dispatcher_argument(address), timeout) is None


def check_reachable(address: str, api: str) -> None:
    """Raises :class:`ServiceUnreachableError` naming `address` if nothing listens there."""
    if not _answers(address):
        raise ServiceUnreachableError(
            f"{api}: no tf.data service dispatcher answers at {address}. Fix: start one "
            "(`queue-pipeline service dispatcher --port P`, and workers with "
            "`queue-pipeline service worker --dispatcher HOST:P`), or unset "
            "QUEUE_PIPELINE_SERVICE / drop --service to read the input locally."
        )


def unservable_reason(
    graph: tf.Graph,
    new_ops: list,
    new_functions: list,
    leaves: list,
    captures: bool,
    feeds: bool = False,
) -> str | None:
    """Why the pipeline just built cannot run on the workers, or None.

    Args:
      graph: the user's graph.
      new_ops: the ops the rebuild added to `graph`.
      new_functions: the names of the functions it added (map bodies).
      leaves: the faithful call's outputs (their plan names the files).
      captures: whether the Dataset reads variables of the trainer's graph.
      feeds: whether the Dataset is fed preloaded arrays when the input starts.
    """
    if captures:
        return "it reads variables, whose values live in the trainer's session"
    if feeds:
        return "its preloaded arrays are fed to it in the trainer's process"
    python = graph_facts.op_types(graph, new_ops, new_functions) & _PYTHON_OPS
    if python:
        return (
            f"it runs Python ({', '.join(sorted(python))}: a py_func), which the workers cannot run"
        )
    for node in plan.plan_for(leaves):
        if node.kind != "string_input_producer" or not node.inputs:
            continue
        names = tf.get_static_value(node.inputs[0])
        if names is None:
            continue
        for name in [n.decode() if isinstance(n, bytes) else str(n) for n in names.flat]:
            if "://" not in name and not os.path.isabs(name):
                return (
                    f"it reads the file {name!r} by a relative name, which each worker "
                    "resolves against its own directory (pass absolute paths)"
                )
    return None


class Arrivals:
    """When the trainer last received an element from the service, and how many (thread-safe)."""

    def __init__(self) -> None:
        self.count = 0
        self.last = time.monotonic()
        self._lock = threading.Lock()

    def stamp(self) -> np.int64:
        with self._lock:
            self.count += 1
            self.last = time.monotonic()
            return np.int64(self.count)


def distribute(dataset: tf.data.Dataset, leaves: list, scope: str, address: str, job: str | None):
    """(`dataset` read through the service at `address`, mode, job name, :class:`Arrivals`).

    The trainer-side stamp of each arrival (a ``numpy_function`` after the
    service, in the trainer) lets the watchdog tell a stalled stream.
    """
    state, _ = plan.epochs_of(leaves)
    mode = "parallel_epochs" if state == "infinite" else "distributed_epoch"
    job_name = None if job is None else f"{job}/{scope.strip('/')}"
    from queue_pipeline.data import service as data_service  # the twins' wrapper

    served = data_service.distribute(dataset, address, processing_mode=mode, job_name=job_name)
    arrivals = Arrivals()

    def stamped(*element):
        count = tf.numpy_function(arrivals.stamp, [], tf.int64, stateful=True)
        with tf.control_dependencies([count]):
            return tf.nest.map_structure(tf.identity, element)

    if not any(isinstance(s, tf.SparseTensorSpec) for s in tf.nest.flatten(served.element_spec)):
        served = served.map(lambda *e: stamped(*e)[0] if len(e) == 1 else stamped(*e))
    return served, mode, job_name, arrivals


def _timeout(name: str = TIMEOUT_ENV, default: float = DEFAULT_TIMEOUT_SECS) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ValueError(f"{name} must be a number of seconds > 0; got {raw!r}.")
    return seconds


def watchdog(address: str, where: str, arrivals: Arrivals | None) -> Callable:
    """A factory ``(sess, coord) -> Thread`` of the dispatcher's watchdog (a daemon).

    The thread probes `address` every second until `coord` stops (or, with
    no coordinator, the session closes), and watches `arrivals` while a step
    runs; see NOTE [ Legacy pipelines on tf.data service ].
    """
    timeout = _timeout()
    stall = _timeout(STALL_ENV, DEFAULT_STALL_SECS)

    def make(sess, coord) -> threading.Thread:
        def stopped() -> bool:
            if coord is not None:
                return coord.should_stop()
            return bool(getattr(sess, "_closed", False))

        def wait(seconds: float) -> None:
            if coord is not None:
                coord.wait_for_stop(seconds)
            else:
                time.sleep(seconds)

        def run() -> None:
            from queue_pipeline._diagnostics import session_hook  # noqa: PLC0415

            lost_since = None
            while not stopped():
                if _answers(address, timeout=_PROBE_SECS):
                    lost_since = None
                    waiting = session_hook.waiting_since(sess)
                    now = time.monotonic()
                    if (
                        arrivals is not None
                        and waiting is not None
                        and now - max(waiting, arrivals.last) >= stall
                    ):
                        _end_stalled(sess, address, where, stall, arrivals.count)
                        return
                else:
                    lost_since = lost_since or time.monotonic()
                    if time.monotonic() - lost_since >= timeout:
                        _give_up(sess, coord, address, where, timeout)
                        return
                wait(_PROBE_SECS)

        return threading.Thread(
            target=run, name=f"queue_pipeline-service-watchdog-{where}", daemon=True
        )

    return make


def _give_up(sess, coord, address: str, where: str, timeout: float) -> None:
    from queue_pipeline._diagnostics import session_hook  # noqa: PLC0415 - no cycle at import

    error = tf.errors.UnavailableError(
        None,
        None,
        f"queue_pipeline dataset engine: {where}: the tf.data service dispatcher at {address} "
        f"has not answered for {timeout:g} s (stopped, or the network is down); the input "
        f"cannot go on. Fix: restart the dispatcher (with --work-dir its jobs go on) within "
        f"{TIMEOUT_ENV} seconds, or run without --service.",
    )
    logger.error("%s", error.message)
    session_hook.record_session_failure(sess, error)
    if coord is not None:
        coord.request_stop(error)
    sess.close()  # ends the step waiting in the service's client


def _end_stalled(sess, address: str, where: str, stall: float, count: int) -> None:
    """Ends the input of a stream that stopped while the dispatcher answers (a lost worker)."""
    from queue_pipeline._diagnostics import session_hook  # noqa: PLC0415 - no cycle at import

    message = (
        f"queue_pipeline dataset engine: {where}: no element from the tf.data service at "
        f"{address} for {stall:g} s while a step waited and the dispatcher answers: a worker "
        f"was lost mid-epoch, and the records it held are lost with it (distributed_epoch "
        f"delivers each record at most once; TF's client would wait for them forever). "
        f"The input ends here, after {count} batch(es). Fix: restart the lost worker on its "
        f"address to avoid the loss; {STALL_ENV} sets the wait."
    )
    logger.warning("%s", message)
    session_hook.record_session_failure(sess, tf.errors.OutOfRangeError(None, None, message))
    sess.close()  # ends the step waiting in the service's client
