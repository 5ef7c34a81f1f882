"""Runs pipelines for compare and testing: bounded, timed, and diagnosed when they stall.

* :func:`run_graph` does the whole session dance for a legacy pipeline
  (initializers, a Coordinator, runner threads, stop and join) with an
  operation timeout, and turns a stall into a :class:`PipelineStalledError`
  that names the starved queue.
* :class:`TwinReader` reads a ``tf.data.Dataset`` element by element with a
  timeout per element.
* :func:`call_builder` calls a user's builder and names it in any error.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import queue as queue_lib
import threading
import time
from typing import Any, Callable, Iterator

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from queue_pipeline._compare import inspect as _inspect
from queue_pipeline._core.compat import PrivateKey
from queue_pipeline.coordinator import Coordinator
from queue_pipeline.errors import QueuePipelineError

QUEUE_RUNNERS = tf.compat.v1.GraphKeys.QUEUE_RUNNERS
_JOIN_GRACE_SECS = 5.0


class PipelineError(QueuePipelineError, RuntimeError):
    """A pipeline could not be built or run (its builder or a runner thread failed)."""


class PipelineStalledError(PipelineError, TimeoutError):
    """A pipeline delivered nothing within the timeout.

    Attributes:
      queue_name: the name of the starved queue, or None if none was found.
      diagnosis: the per-queue report (size, closed, runner threads).
    """

    def __init__(self, message: str, queue_name: str | None = None, diagnosis: str = ""):
        super().__init__(message)
        self.queue_name = queue_name
        self.diagnosis = diagnosis


@dataclasses.dataclass
class RunResult:
    """What :func:`run_graph` fetched and how long it took."""

    batches: list
    exhausted: bool
    seconds: float
    startup_seconds: float
    held_bytes: int = 0  # the bytes of the batches held, when `max_bytes` stopped the run


def _backstop(timeout: float) -> float:
    return max(2 * timeout, timeout + 5)


# NOTE [ Exact arithmetic for a migration's proof ]
# Grappler's constant folding rewrites a division by a constant into a
# multiplication by its reciprocal in a Session's graph (`x / 255.0` becomes
# `x * (1 / 255.0)`), which differs from the division in the last bit of some
# float32 values; a tf.data map function keeps the division. Both are the
# user's code, so for `queue-pipeline migrate`'s verification the legacy
# Session runs without constant folding (`exact_arithmetic()`), and the two
# sides compute the same float values. compare itself keeps TF's defaults.
_EXACT = contextvars.ContextVar("queue_pipeline_exact_arithmetic", default=False)


@contextlib.contextmanager
def exact_arithmetic() -> Iterator[None]:
    """Legacy Sessions made in the block skip constant folding; see the NOTE above."""
    token = _EXACT.set(True)
    try:
        yield
    finally:
        _EXACT.reset(token)


_SETUPS = PrivateKey("queue_pipeline_session_setups")


def add_session_setup(graph: tf.Graph, setup: Callable[[Any], None]) -> None:
    """Registers ``setup(sess)`` to run in each harness session on `graph`.

    It runs after the variable initializers and before the runner threads
    start (:func:`run_graph`) or before the twin's iterator is initialized
    (:class:`TwinReader`): the place of a program's own loader, such as the
    preloaded-variable program's ``load(sess)``, which feeds arrays to the
    variables its pipeline reads.
    """
    graph.add_to_collection(_SETUPS, setup)


def _run_setups(graph: tf.Graph, sess) -> None:
    for setup in graph.get_collection(_SETUPS):
        setup(sess)


def session_config(timeout: float) -> tf.compat.v1.ConfigProto:
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=max(1, int(timeout * 1000)))
    if _EXACT.get():
        config.graph_options.rewrite_options.constant_folding = (
            rewriter_config_pb2.RewriterConfig.OFF
        )
    return config


def run_graph(
    fetches,
    *,
    graph,
    max_batches: int | None,
    timeout: float,
    api: str,
    start_runners: bool = True,
    initialize: bool = True,
    on_batch: Callable[[int], None] | None = None,
    max_bytes: int | None = None,
) -> RunResult:
    """Fetches `fetches` until OutOfRangeError, `max_batches` or `max_bytes`, never hanging.

    `max_bytes` bounds the memory the fetched batches hold (their arrays'
    bytes, strings' lengths, and `EXAMPLE_BYTES` for each example: what a
    comparison keeps of it, split out and keyed, on both sides): the run stops
    after the batch that reaches it, and :attr:`RunResult.held_bytes` says so.

    Raises:
      PipelineStalledError: a fetch blocked for `timeout` seconds.
      PipelineError: a fetch or a runner thread failed.
    """
    t0 = time.perf_counter()
    with graph.as_default():
        init_op = None
        if initialize and not graph.finalized:
            init_op = tf.group(
                tf.compat.v1.global_variables_initializer(),
                tf.compat.v1.local_variables_initializer(),
            )
        probes = _inspect.Probes(graph, fetches)
    # NOTE [ Timeouts of the fetch vs the runners ]: each fetch gets `timeout`
    # through RunOptions; the session's operation timeout is only a backstop,
    # longer, so that runner threads blocked on an upstream queue outlive the
    # fetch and the diagnosis sees them alive. At stop, cancel ops and
    # Session.close() unblock them.
    sess = tf.compat.v1.Session(graph=graph, config=session_config(_backstop(timeout)))
    options = tf.compat.v1.RunOptions(timeout_in_ms=max(1, int(timeout * 1000)))
    coord = Coordinator()
    threads_by_runner: dict[int, list] = {}
    batches: list = []
    exhausted = False
    held, stopped_at = 0, 0
    error: PipelineError | None = None
    try:
        with graph.as_default():
            if init_op is not None:
                sess.run(init_op, options=options)
            _run_setups(graph, sess)
            if start_runners:
                for qr in graph.get_collection(QUEUE_RUNNERS):
                    threads_by_runner[id(qr)] = qr.create_threads(
                        sess, coord=coord, daemon=True, start=True
                    )
        step = sess.make_callable(fetches, accept_options=True)
        t1 = time.perf_counter()
        while max_batches is None or len(batches) < max_batches:
            try:
                batches.append(step(options=options))
            except tf.errors.OutOfRangeError:
                exhausted = True
                break
            except tf.errors.DeadlineExceededError:
                error = PipelineStalledError(
                    *_inspect.diagnose(
                        api,
                        sess,
                        graph,
                        probes,
                        threads_by_runner,
                        start_runners,
                        timeout,
                        len(batches),
                    )
                )
                break
            except tf.errors.OpError as e:
                error = PipelineError(
                    f"{api}: fetching batch {len(batches)} failed: {type(e).__name__}: {e.message}"
                )
                error.__cause__ = e
                break
            if on_batch is not None:
                on_batch(len(batches))
            if max_bytes is not None:
                held += nbytes(batches[-1]) + EXAMPLE_BYTES * examples_in(batches[-1])
                if held >= max_bytes:
                    stopped_at = held
                    break
            if coord.should_stop():
                break
        t2 = time.perf_counter()
    finally:
        coord.request_stop()
        if isinstance(error, PipelineStalledError):
            sess.close()  # cancels runs blocked on queues that no runner closes
        try:
            coord.join(stop_grace_period_secs=_JOIN_GRACE_SECS, ignore_live_threads=True)
        except Exception as e:  # noqa: BLE001 - a runner's error, re-raised below
            if error is None or not isinstance(error, PipelineStalledError):
                error = PipelineError(
                    f"{api}: a QueueRunner thread failed after {len(batches)} batch(es): "
                    f"{type(e).__name__}: {getattr(e, 'message', e)}"
                )
                error.__cause__ = e
        sess.close()
    if error is not None:
        raise error
    return RunResult(batches, exhausted, t2 - t1, t1 - t0, stopped_at)


# What a comparison keeps for each example beyond its arrays (its components split
# out as numpy values, its multiset key), both sides together: measured about 1.2 KB
# for one-scalar examples (a 200,000-record epoch added 236 MiB to a migrate proof).
EXAMPLE_BYTES = 1024


def examples_in(value) -> int:
    """The examples in a fetched batch: the leading size of its first array (1 if none)."""
    if isinstance(value, np.ndarray):
        return int(value.shape[0]) if value.ndim else 1
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)) and value:
        return examples_in(value[0])
    return 1


def nbytes(value) -> int:
    """The bytes a fetched value holds: arrays' buffers, strings' lengths, nested values'."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return sum(nbytes(v) for v in value.flat)
        return int(value.nbytes)
    if isinstance(value, (bytes, str)):
        return len(value)
    if isinstance(value, dict):
        return sum(nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 8))


# ---------------------------------------------------------------- twin side


class TwinReader:
    """Reads a Dataset one element at a time, each within `timeout` seconds.

    In eager mode a daemon thread runs ``next(iterator)`` on request, so a
    blocked dataset cannot hang the caller (the thread is abandoned then). With
    eager execution disabled it runs ``get_next`` in a Session with an
    operation timeout instead. Elements come back as canonical leaves.
    """

    def __init__(self, dataset, *, timeout: float, api: str, graph=None):
        from queue_pipeline._compare import normalize as _normalize

        self._to_leaves = _normalize.leaves_of
        self._timeout, self._api = timeout, api
        self._count, self._abandoned, self._thread, self._sess = 0, False, None, None
        if graph is not None:
            with graph.as_default():
                iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
                self._next = iterator.get_next()
            self._sess = tf.compat.v1.Session(graph=graph, config=session_config(timeout))
            with graph.as_default():
                _run_setups(graph, self._sess)
            self._sess.run(iterator.initializer)
            return
        self._iterator = iter(dataset)
        self._requests: queue_lib.Queue = queue_lib.Queue()
        self._responses: queue_lib.Queue = queue_lib.Queue()
        self._thread = threading.Thread(target=self._work, daemon=True, name=f"{api} twin reader")
        self._thread.start()

    def _work(self) -> None:
        while self._requests.get() is not None:
            try:
                self._responses.put(("ok", self._to_leaves(next(self._iterator))))
            except StopIteration:
                self._responses.put(("end", None))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                self._responses.put(("error", e))

    def next(self) -> list | None:
        """The next element's leaves, or None at the end of the dataset.

        Raises:
          PipelineStalledError: no element within the timeout.
          PipelineError: the dataset raised.
        """
        if self._sess is not None:
            try:
                value = self._sess.run(self._next)
            except tf.errors.OutOfRangeError:
                return None
            except tf.errors.DeadlineExceededError as e:
                raise self._stalled() from e
            except tf.errors.OpError as e:
                raise self._failed(e) from e
            self._count += 1
            return self._to_leaves(value)
        self._requests.put(1)
        try:
            kind, value = self._responses.get(timeout=self._timeout)
        except queue_lib.Empty:
            self._abandoned = True
            raise self._stalled() from None
        if kind == "error":
            raise self._failed(value) from value
        if kind == "end":
            return None
        self._count += 1
        return value

    def _stalled(self) -> PipelineStalledError:
        return PipelineStalledError(
            f"{self._api}: the twin dataset delivered no element within "
            f"{self._timeout:g} s (after {self._count} element(s)).\nFix: check "
            "for a blocking step (a py_function, a file that never ends) or raise "
            "`timeout`.",
            None,
            "",
        )

    def _failed(self, e) -> PipelineError:
        message = getattr(e, "message", None) or str(e)
        return PipelineError(
            f"{self._api}: the twin dataset raised while reading element "
            f"{self._count}: {type(e).__name__}: {message}"
        )

    def close(self) -> None:
        if self._sess is not None:
            self._sess.close()
        elif self._thread is not None:
            self._requests.put(None)
            if not self._abandoned:
                self._thread.join(self._timeout)


def call_builder(api: str, arg: str, fn: Callable[[], Any]) -> Any:
    """Calls a user builder; wraps what it raises in a PipelineError naming it."""
    name = getattr(fn, "__qualname__", None) or repr(fn)
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - re-raised with context
        raise PipelineError(
            f"{api}: the `{arg}` callable {name} raised {type(e).__name__}: {e}\n"
            f"Fix: call it on its own to debug it; `{arg}` must build the pipeline "
            "when called with no arguments."
        ) from e
