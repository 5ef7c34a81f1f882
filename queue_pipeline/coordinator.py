"""Pure-threading reimplementation of tf.train.Coordinator and tf.compat.v1.train.LooperThread."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Union

import tensorflow as tf

__all__ = ["Coordinator", "LooperThread"]

_LOGGER = logging.getLogger("queue_pipeline")

_ExcInfo = tuple[type[BaseException], BaseException, Union[TracebackType, None]]
"""A complete ``sys.exc_info()`` triple."""

# The methods LooperThread needs from a coordinator. Checking for them (rather
# than for our class) lets a LooperThread run under TF's own tf.train.Coordinator.
_COORDINATOR_METHODS = (
    "should_stop",
    "request_stop",
    "wait_for_stop",
    "register_thread",
    "stop_on_exception",
)


def _is_complete_exc_info(value: tuple[Any, ...]) -> bool:
    """Whether `value` is a usable ``(type, instance, traceback)`` triple."""
    return len(value) == 3 and bool(value[0]) and isinstance(value[1], BaseException)


def _bad_ex_error(ex: Any) -> ValueError:
    """The error recorded (or raised) when `ex` names no exception."""
    return ValueError(
        "Coordinator.request_stop: `ex` must be an exception or a complete "
        f"sys.exc_info() tuple (type, value, traceback); got {ex!r}. Call it "
        "with the exception you caught, or with no argument for a clean stop."
    )


def _exc_info_of(error: BaseException) -> _ExcInfo:
    """An exc_info triple for an exception instance."""
    return (type(error), error, error.__traceback__)


class Coordinator:
    """Lets a group of threads ask each other to stop, and reports their errors.

    Every cooperating thread polls :meth:`should_stop` (or blocks in
    :meth:`wait_for_stop`) and ends its work once it returns True. Any thread
    may call :meth:`request_stop`, optionally with the exception that made it
    give up; the first such exception is kept and re-raised by :meth:`join`
    in the thread that waits for the group. Exceptions of the clean-stop types
    (by default :class:`tf.errors.OutOfRangeError`, the end-of-input signal of
    queues) stop the group without being reported.

    After :meth:`request_stop`, :meth:`join` gives the threads
    ``stop_grace_period_secs`` to end; threads still alive then are reported
    with a :class:`RuntimeError`, unless a recorded exception takes precedence.

    Example::

        >>> coord = Coordinator()
        >>> def work():
        ...     with coord.stop_on_exception():
        ...         raise ValueError("bad record")
        >>> thread = threading.Thread(target=work)
        >>> coord.register_thread(thread)
        >>> thread.start()
        >>> coord.join(stop_grace_period_secs=5)
        Traceback (most recent call last):
            ...
        ValueError: bad record

    Differences from TF 1.x:
        ``request_stop(ex)`` with an exception instance while no exception is
        being handled (outside an ``except`` block) records ``ex`` itself and
        stops. TF 1.x raises ``TypeError("not all arguments converted during
        string formatting")`` from ``request_stop`` instead, leaves the stop
        flag unset, and a later :meth:`join` raises ``TypeError: exceptions must
        derive from BaseException``. Likewise an incomplete exc_info tuple such
        as ``(None, None, None)``, or any other value that names no exception,
        records a :class:`ValueError` that shows the bad value and stops (after
        :meth:`join`, that ValueError is raised at once). Inside an ``except``
        block the behaviour is TF's: the exception being handled is recorded,
        even when ``ex`` is a different one.
    """

    def __init__(
        self, clean_stop_exception_types: Iterable[type[BaseException]] | None = None
    ) -> None:
        """Creates a Coordinator.

        Args:
            clean_stop_exception_types: Exception types that stop the
                coordinator cleanly: reporting one to :meth:`request_stop` is
                the same as ``request_stop(None)``. Any iterable is accepted
                (converted with ``tuple()``); an empty one makes every exception
                an error. Defaults to ``(tf.errors.OutOfRangeError,)``, what
                queues raise at end of input. Add ``StopIteration`` when a
                thread feeds from a Python iterator.
        """
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (tf.errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: _ExcInfo | None = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    # -- reporting -----------------------------------------------------------

    def _is_clean_stop(self, ex: Any) -> bool:
        """Whether `ex` (an exception or exc_info tuple) is a clean-stop type."""
        error = ex[1] if isinstance(ex, tuple) and len(ex) > 1 else ex
        return isinstance(error, self._clean_stop_exception_types)

    def _resolve(self, ex: Any) -> _ExcInfo:
        """The exc_info triple that `ex` (never None) stands for.

        See the class docstring ("Differences from TF 1.x") for the cases in
        which this departs from TF.
        """
        if isinstance(ex, tuple):
            return ex if _is_complete_exc_info(ex) else _exc_info_of(_bad_ex_error(ex))
        handled = sys.exc_info()
        if handled[1] is not None:
            # TF's contract: inside an `except` block, the handled exception
            # is what gets reported, whatever `ex` is.
            return handled
        if isinstance(ex, BaseException):
            return _exc_info_of(ex)
        return _exc_info_of(_bad_ex_error(ex))

    def request_stop(
        self,
        ex: BaseException | tuple[Any, Any, Any] | None = None,
    ) -> None:
        """Asks every coordinated thread to stop, optionally reporting an error.

        Afterwards :meth:`should_stop` returns True. Only the first reported
        exception is kept; it is re-raised by :meth:`join` and
        :meth:`raise_requested_exception`. Exceptions of the clean-stop types
        are not reported. Once the coordinator has been joined, reporting an
        exception raises it immediately instead (call :meth:`clear_stop` to
        reuse the coordinator).

        Args:
            ex: The error to report: an exception (inside an ``except`` block,
                the exception being handled is the one recorded, as in TF 1.x),
                or a ``sys.exc_info()`` tuple. None for a clean stop.

        Raises:
            BaseException: The reported exception, if the coordinator has
                already been joined.
        """
        with self._lock:
            if isinstance(ex, tuple):
                if self._is_clean_stop(ex):
                    ex = None
            elif not ex or self._is_clean_stop(ex):
                # A falsy value is "no exception", as in TF 1.x.
                ex = None
            if self._joined and ex is not None:
                # Too late to be re-raised by join(): the caller gets it now.
                raise self._resolve(ex)[1]
            if self._stop_event.is_set():
                return  # first stop wins; later exceptions are dropped
            if ex is not None and self._exc_info_to_raise is None:
                exc_info = self._resolve(ex)
                if isinstance(ex, tuple) and exc_info is ex:
                    _LOGGER.info(
                        "Error reported to Coordinator: %s", exc_info[1], exc_info=exc_info
                    )
                else:
                    _LOGGER.info("Error reported to Coordinator: %s, %s", exc_info[0], exc_info[1])
                self._exc_info_to_raise = exc_info
            self._stop_event.set()

    def clear_stop(self) -> None:
        """Resets the stop request, the recorded exception and the joined flag.

        Registered threads are kept.
        """
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        """Whether a stop has been requested.

        Returns:
            True once :meth:`request_stop` has been called (and not cleared).
        """
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """A context manager that reports any exception from its body and swallows it.

        The body's exception (of any kind, including ``SystemExit`` and
        ``KeyboardInterrupt``) is passed to :meth:`request_stop` as
        ``sys.exc_info()``, and execution continues after the ``with`` block;
        :meth:`join` re-raises it later.

        Example::

            with coord.stop_on_exception():
                while not coord.should_stop():
                    ...  # one unit of work

        Yields:
            None.
        """
        try:
            yield
        except BaseException:  # every exception, as a bare `except:` would
            self.request_stop(sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        """Blocks until a stop is requested or `timeout` seconds pass.

        Args:
            timeout: Longest wait, in seconds. None waits without limit.

        Returns:
            True if a stop has been requested, False if the timeout expired.
        """
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        """Adds `thread` to the threads that :meth:`join` waits for.

        Args:
            thread: The thread to watch.
        """
        with self._lock:
            self._registered_threads.add(thread)

    # -- joining -------------------------------------------------------------

    # NOTE [ Coordinator.join: wait phase, then grace phase ]
    # join() watches a snapshot of the registered threads plus `threads`, taken
    # once under the lock: threads registered later are not watched.
    #
    # Wait phase: until a stop is requested, join() waits for the threads to end
    # on their own, re-checking them each second. A thread that never ends and
    # never requests a stop keeps join() waiting forever, as in TF 1.x (part of
    # the contract: callers that want a bound call request_stop() first).
    #
    # Grace phase: once a stop is requested, the threads get
    # `stop_grace_period_secs` to notice it. join() polls them with sleeps that
    # start at 1 ms and double, never past the end of the grace period, so a
    # quick shutdown costs about a millisecond and a slow one is not spun on.
    #
    # Verdict, under the lock: the coordinator becomes `joined` and forgets its
    # registered threads. A recorded exception wins over stragglers (it is the
    # likely reason they are stuck); otherwise stragglers are a RuntimeError, or
    # only an INFO log with ignore_live_threads=True.

    def join(
        self,
        threads: Iterable[threading.Thread] | None = None,
        stop_grace_period_secs: float = 120,
        ignore_live_threads: bool = False,
    ) -> None:
        """Waits for the coordinated threads to end, then re-raises any reported error.

        The threads are the registered ones plus `threads`. See NOTE [
        Coordinator.join: wait phase, then grace phase ] for the timing.

        Args:
            threads: Threads to wait for in addition to the registered ones.
            stop_grace_period_secs: Seconds the threads get to end after a stop
                has been requested.
            ignore_live_threads: If True, threads still alive after the grace
                period are only logged, not raised.

        Raises:
            BaseException: The first exception reported to :meth:`request_stop`.
            RuntimeError: If no exception was reported and some threads are
                still alive after the grace period (unless
                `ignore_live_threads`).
        """
        with self._lock:
            watched = set(self._registered_threads)
            if threads is not None:
                watched.update(threads)
            watched_list = list(watched)

        def any_alive() -> bool:
            return any(thread.is_alive() for thread in watched_list)

        while any_alive() and not self.wait_for_stop(1.0):
            pass

        deadline = time.monotonic() + stop_grace_period_secs
        delay = 0.001
        while any_alive():
            remaining = deadline - time.monotonic()
            if remaining < 0:
                break
            time.sleep(max(min(delay, remaining), 0.001))
            delay *= 2

        stragglers = [thread.name for thread in watched_list if thread.is_alive()]

        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise is not None:
                raise self._exc_info_to_raise[1]
            if stragglers:
                message = "Coordinator stopped with threads still running: %s"
                names = " ".join(stragglers)
                if not ignore_live_threads:
                    raise RuntimeError(message % names)
                _LOGGER.info(message, names)

    @property
    def joined(self) -> bool:
        """Whether :meth:`join` has completed since creation or :meth:`clear_stop`."""
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raises the exception reported to :meth:`request_stop`, if any.

        The coordinator's state is unchanged.

        Raises:
            BaseException: The first reported exception.
        """
        with self._lock:
            if self._exc_info_to_raise is not None:
                raise self._exc_info_to_raise[1]


class LooperThread(threading.Thread):
    """A daemon thread that calls a function repeatedly, optionally on a timer, until a stop.

    The work is `target(*args, **kwargs)`, or the :meth:`run_loop` method of a
    subclass. Before each call the thread checks its coordinator and ends once
    a stop is requested. If the work raises, the exception is reported to the
    coordinator (which stops the other threads) and the thread ends without
    calling :meth:`stop_loop`.

    The thread registers itself with the coordinator when it is constructed,
    so ``coord.join()`` waits for it. Any object with TF's Coordinator
    interface works as `coord`, including ``tf.train.Coordinator``.
    """

    def __init__(
        self,
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable[..., Any] | None = None,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        """Creates the thread (not started) and registers it with `coord`.

        Args:
            coord: The coordinator whose stop request ends the loop.
            timer_interval_secs: Seconds between the starts of successive
                calls. Calls are scheduled on fixed boundaries from the start
                of the loop (an overdue call runs at once). None calls the work
                back to back.
            target: The function to call. Without it, override
                :meth:`run_loop`.
            args: Positional arguments for `target`.
            kwargs: Keyword arguments for `target`.

        Raises:
            ValueError: If `coord` is not a coordinator, or if `args` or
                `kwargs` is given without `target`.
        """
        if not all(callable(getattr(coord, name, None)) for name in _COORDINATOR_METHODS):
            raise ValueError("'coord' argument must be a Coordinator: %s" % (coord,))
        super().__init__()
        self.daemon = True
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        # The names `_target`, `_args` and `_kwargs` are threading.Thread's own
        # (and TF's LooperThread's): subclasses written against TF may read them.
        self._target = target
        if self._target:
            self._args = args or ()
            self._kwargs = kwargs or {}
        elif args or kwargs:
            raise ValueError("'args' and 'kwargs' argument require that you also pass 'target'")
        self._coord.register_thread(self)

    @staticmethod
    def loop(
        coord: Coordinator,
        timer_interval_secs: float | None,
        target: Callable[..., Any],
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
    ) -> LooperThread:
        """Creates and starts a LooperThread that calls `target` until a stop.

        Args:
            coord: The coordinator whose stop request ends the loop.
            timer_interval_secs: Seconds between the starts of successive
                calls, or None to call back to back.
            target: The function to call.
            args: Positional arguments for `target`.
            kwargs: Keyword arguments for `target`.

        Returns:
            The started thread.
        """
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self) -> None:
        """The thread body: start_loop, run_loop until a stop, then stop_loop."""
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                # Fixed boundaries: the schedule does not drift with the time the
                # work takes, and a late call is followed at once by the next.
                next_call = time.monotonic()
                while not self._coord.wait_for_stop(next_call - time.monotonic()):
                    next_call += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self) -> None:
        """Hook called once in the thread, before the first :meth:`run_loop`."""

    def stop_loop(self) -> None:
        """Hook called once in the thread after a stop (not if the work raised)."""

    def run_loop(self) -> None:
        """Does one unit of work: calls the target, if one was given."""
        if self._target:
            self._target(*self._args, **self._kwargs)
