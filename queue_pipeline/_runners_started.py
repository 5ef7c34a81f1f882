"""The graph's runners, started together: add_queue_runner and start_queue_runners.

TF 1.x's ``tf.compat.v1.train.add_queue_runner`` and ``start_queue_runners``:
the ``"queue_runners"`` collection of a graph, and the threads of every runner
in it for a Session. :func:`start_queue_runners` starts any object in the
collection that has ``create_threads`` (queue_pipeline's QueueRunner, TF's,
tf-slim's). Both are importable from :mod:`queue_pipeline.runner`, beside
the QueueRunner itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tensorflow as tf

from queue_pipeline._core import compat as _compat
from queue_pipeline._core import settings as _settings
from queue_pipeline._core.compat import QUEUE_RUNNERS, logger
from queue_pipeline._core.graph import queue_op_name
from queue_pipeline._diagnostics import traps as _diagnostics

if TYPE_CHECKING:
    from queue_pipeline._core.types import SessionLike
    from queue_pipeline.coordinator import Coordinator
    from queue_pipeline.runner import QueueRunner

__all__ = ["add_queue_runner", "start_queue_runners"]


def add_queue_runner(qr: QueueRunner, collection: str = QUEUE_RUNNERS) -> None:
    """Adds `qr` to a collection (default ``"queue_runners"``) of the default graph.

    :func:`start_queue_runners`, ``MonitoredTrainingSession`` and
    ``Supervisor`` start every runner in that collection.

    Args:
      qr: a QueueRunner (anything with ``create_threads``).
      collection: the graph collection key.

    tf.data equivalent:
      none needed; a Dataset needs no registration.
    """
    tf.compat.v1.add_to_collection(collection, qr)


def start_queue_runners(
    sess: SessionLike | None = None,
    coord: Coordinator | None = None,
    daemon: bool = True,
    start: bool = True,
    collection: str = QUEUE_RUNNERS,
) -> list:
    """Creates (and by default starts) the threads of every runner in `collection`.

    Args:
      sess: the Session; default: the default session.
      coord: optional Coordinator for the threads (see
        :meth:`QueueRunner.create_threads`).
      daemon: mark the threads daemon (the default here, unlike
        ``create_threads``), so a script can exit with runners still blocked.
      start: start the threads.
      collection: the collection of the **session's graph** to read runners from.

    Returns:
      All threads created. Runners whose threads are still running for `sess`
      contribute none, so a second call returns only new threads.

    Raises:
      GraphModeRequiredError: under eager execution (a RuntimeError).
      ValueError: `sess` is None and there is no default session.
      TypeError: `sess` is not a Session. A ``MonitoredSession`` or
        ``SingularMonitoredSession`` returns ``[]`` instead, since it starts
        the runners itself.

    Side effects:
      Logs a warning when the default graph's collection is empty.

    tf.data equivalent:
      none needed: iterate the Dataset.
    """
    _compat.require_graph("start_queue_runners")
    if sess is None:
        sess = tf.compat.v1.get_default_session()
        if not sess:
            raise ValueError(
                "start_queue_runners: Cannot start queue runners: No default "
                "session is registered. Use `with sess.as_default()` or pass an "
                "explicit session to tf.start_queue_runners(sess=sess)"
            )
    if not isinstance(sess, _compat.SessionInterface):
        if type(sess).__name__ in ("MonitoredSession", "SingularMonitoredSession"):
            return []
        raise TypeError(
            "start_queue_runners: sess must be a `tf.Session` object. "
            f"Given class: {sess.__class__}"
        )
    if not tf.compat.v1.get_collection(collection):
        logger.warning(
            "`tf.train.start_queue_runners()` was called when no queue runners "
            "were defined. You can safely remove the call to this deprecated "
            "function."
        )
    from queue_pipeline.runner import QueueRunner  # the runner module re-exports this one

    if _settings.current().engine == "dataset":
        # NOTE [ Queues filled from tf.data ]: the program's own queues, before any starts.
        from queue_pipeline._engine import bridge  # noqa: PLC0415 - the engine's imports

        bridge.fill_from_datasets(sess)
    threads: list[Any] = []
    with sess.graph.as_default():
        for qr in tf.compat.v1.get_collection(collection):
            if not isinstance(qr, QueueRunner):  # ours mark in create_threads
                _diagnostics.mark_started(sess, queue_op_name(getattr(qr, "queue", None)) or "")
            threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
