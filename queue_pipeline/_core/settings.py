"""Behaviour switches: the build engine and the diagnostics that differ from TF 1.x.

Two kinds of switch live here, both read when a pipeline is *built* (or, for
runner behaviour, when its threads are created):

* the **engine** (``"queue"``, the faithful queue-runner engine, or
  ``"dataset"``), set by :func:`engine` or the ``QUEUE_PIPELINE_ENGINE``
  environment variable, and the tf.data service that the dataset engine
  reads through (``QUEUE_PIPELINE_SERVICE``, ``QUEUE_PIPELINE_SERVICE_JOB``);
* the **diagnostics**, each a deliberate difference from TF 1.x listed in the
  README's table, on by default and turned off one by one with
  :func:`diagnostics` or all at once with :func:`tf_faithful` (environment:
  ``QUEUE_PIPELINE_DIAGNOSTICS=off`` or a comma-separated list of the switches
  to keep on).

Context managers change the setting for the current thread (and for contexts
copied from it) only; nothing here touches TensorFlow's global state.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
from typing import Any, Iterator

__all__ = [
    "DEFAULT_GRACE_SECS",
    "DIAGNOSTICS",
    "ENGINES",
    "Settings",
    "current",
    "diagnostics",
    "engine",
    "tf_faithful",
]

ENGINES = ("queue", "dataset")

# Each diagnostic switch, with the one-line reason shown in errors and docs.
DIAGNOSTICS = {
    "unstarted_guard": "a dequeue in a session whose queue runners were never "
    "started fails at once instead of hanging",
    "runner_errors": "a runner's error reaches the consumer's sess.run and "
    "Coordinator.join with its original type and where it came from",
    "quiet_shutdown": "cancellations caused by request_stop or a closed session "
    "are not logged as runner errors",
    "no_spin": "a runner whose enqueue op is a NoOp (keep_input statically False) "
    "closes its queue instead of spinning a core",
    "tail_warning": "a fixed-length file whose size leaves a partial record is reported once",
    "exit_unblock": "at interpreter exit, the queues of running runners are cancelled, "
    "so non-daemon runner threads cannot keep the process alive",
}


# How long a dequeue in a session whose runners were not started yet waits
# for them before the unstarted guard raises (a consumer thread may start
# before the main thread calls start_queue_runners).
DEFAULT_GRACE_SECS = 3.0
GRACE_ENV = "QUEUE_PIPELINE_UNSTARTED_GRACE_SECS"
SERVICE_ENV = "QUEUE_PIPELINE_SERVICE"
SERVICE_JOB_ENV = "QUEUE_PIPELINE_SERVICE_JOB"


@dataclasses.dataclass(frozen=True)
class Settings:
    """The switches in force: ``engine``, one bool per diagnostic, and the guard's grace."""

    engine: str = "queue"
    service: str | None = None
    service_job: str | None = None
    unstarted_guard: bool = True
    runner_errors: bool = True
    quiet_shutdown: bool = True
    no_spin: bool = True
    tail_warning: bool = True
    exit_unblock: bool = True
    unstarted_grace_secs: float = DEFAULT_GRACE_SECS


def _grace(value, where: str) -> float:
    """`value` as a grace period in seconds (a number >= 0), or a ValueError naming `where`."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if isinstance(value, bool) or not seconds >= 0:
        raise ValueError(f"{where} must be a number of seconds >= 0; got {value!r}.")
    return seconds


def _service_address(value: str, where: str) -> str:
    """`value` as ``grpc://host:port`` (the protocol may be omitted), or a ValueError."""
    import argparse  # noqa: PLC0415 - the parser's error type

    from queue_pipeline._service.addresses import dispatcher_argument  # noqa: PLC0415

    try:
        return dispatcher_argument(value).url
    except argparse.ArgumentTypeError:
        raise ValueError(
            f"{where} must be a tf.data service dispatcher's address, 'grpc://HOST:PORT'; "
            f"got {value!r}. Fix: start one with `queue-pipeline service dispatcher` and "
            "pass the address it prints."
        ) from None


def _from_environment() -> Settings:
    name = os.environ.get("QUEUE_PIPELINE_ENGINE", "queue").strip().lower() or "queue"
    if name not in ENGINES:
        raise ValueError(f"QUEUE_PIPELINE_ENGINE={name!r} is not an engine; use one of {ENGINES}.")
    flags: dict[str, Any] = dict.fromkeys(DIAGNOSTICS, True)
    raw = os.environ.get("QUEUE_PIPELINE_DIAGNOSTICS")
    if raw is not None:
        raw = raw.strip().lower()
        if raw in ("off", "0", "false", "none", "tf"):
            flags = dict.fromkeys(DIAGNOSTICS, False)
        elif raw not in ("on", "1", "true", "all", ""):
            keep = {part.strip() for part in raw.split(",") if part.strip()}
            unknown = keep - set(DIAGNOSTICS)
            if unknown:
                raise ValueError(
                    f"QUEUE_PIPELINE_DIAGNOSTICS names unknown switches {sorted(unknown)}; "
                    f"use 'off', 'on' or a comma-separated list of {sorted(DIAGNOSTICS)}."
                )
            flags = {key: key in keep for key in DIAGNOSTICS}
    grace = os.environ.get(GRACE_ENV)
    if grace is not None and grace.strip():
        flags["unstarted_grace_secs"] = _grace(grace.strip(), GRACE_ENV)
    service = os.environ.get(SERVICE_ENV, "").strip() or None
    job = os.environ.get(SERVICE_JOB_ENV, "").strip() or None
    if service is not None:
        service = _service_address(service, SERVICE_ENV)
        if "QUEUE_PIPELINE_ENGINE" not in os.environ or not os.environ["QUEUE_PIPELINE_ENGINE"]:
            name = "dataset"  # the service runs the dataset engine's pipelines
        elif name != "dataset":
            raise ValueError(
                f"{SERVICE_ENV}={service!r} needs the dataset engine; got "
                f"QUEUE_PIPELINE_ENGINE={name!r}. Fix: QUEUE_PIPELINE_ENGINE=dataset."
            )
    return Settings(engine=name, service=service, service_job=job, **flags)


_CURRENT: contextvars.ContextVar[Settings | None] = contextvars.ContextVar(
    "queue_pipeline_settings", default=None
)
_DEFAULT: Settings | None = None


def current() -> Settings:
    """The settings in force in this context (environment defaults if none set)."""
    global _DEFAULT
    value = _CURRENT.get()
    if value is not None:
        return value
    if _DEFAULT is None:
        _DEFAULT = _from_environment()
    return _DEFAULT


@contextlib.contextmanager
def _override(**changes) -> Iterator[Settings]:
    settings = dataclasses.replace(current(), **changes)
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)


def engine(name: str, *, service: str | None = None, job_name: str | None = None):
    """Context manager: legacy builders inside it use engine `name`.

    Args:
      name: ``"queue"`` (the faithful queue-runner engine, the default) or
        ``"dataset"`` (the pipeline is rebuilt on tf.data inside the graph).
      service: with ``"dataset"``: the address of a tf.data service
        dispatcher (``"grpc://host:port"``; environment:
        ``QUEUE_PIPELINE_SERVICE``). Each batching call's rebuilt pipeline
        then runs on the service's workers: NOTE [ Legacy pipelines on tf.data
        service ] in ``_engine/service.py``.
      job_name: with `service`: the name shared by trainer processes that
        split one stream between them (environment:
        ``QUEUE_PIPELINE_SERVICE_JOB``); None: each process reads a stream
        of its own.

    Raises:
      ValueError: `name` is not an engine, `service` is not an address, or
        `service` is given with the queue engine.
    """
    if name not in ENGINES:
        raise ValueError(
            f"queue_pipeline.engine: name={name!r} is not an engine; use one of {ENGINES}."
        )
    if service is None:
        if job_name is not None:
            raise ValueError(
                f"queue_pipeline.engine: job_name={job_name!r} needs `service` (the "
                "dispatcher's address)."
            )
        return _override(engine=name)
    if name != "dataset":
        raise ValueError(
            f"queue_pipeline.engine: service={service!r} needs the dataset engine; got "
            f"name={name!r}. Fix: engine('dataset', service=...)."
        )
    address = _service_address(service, "queue_pipeline.engine: `service`")
    return _override(engine=name, service=address, service_job=job_name)


def diagnostics(
    enabled: bool | None = None, *, unstarted_grace_secs: float | None = None, **switches: bool
):
    """Context manager: turns queue_pipeline's diagnostics on or off.

    ``diagnostics(False)`` restores TF 1.x's exact behaviour (hangs and all);
    ``diagnostics(runner_errors=False)`` turns off one switch. The switches
    and what each changes are in ``DIAGNOSTICS`` and in the README's table of
    deliberate differences. Like the switches, they are read when a pipeline
    is built.

    Args:
      enabled: if given, the value for every switch not named in `switches`.
      unstarted_grace_secs: how long a dequeue waits for its runners to start
        before the unstarted guard raises (default 3 s; environment:
        ``QUEUE_PIPELINE_UNSTARTED_GRACE_SECS``).
      **switches: switch name -> bool.

    Raises:
      ValueError: a switch name is unknown, or the grace is not a number >= 0.
    """
    unknown = set(switches) - set(DIAGNOSTICS)
    if unknown:
        raise ValueError(
            f"queue_pipeline.diagnostics: unknown switches {sorted(unknown)}; "
            f"the switches are {sorted(DIAGNOSTICS)}."
        )
    changes: dict = {}
    if enabled is not None:
        changes = {key: bool(enabled) for key in DIAGNOSTICS}
    changes.update({key: bool(value) for key, value in switches.items()})
    if unstarted_grace_secs is not None:
        changes["unstarted_grace_secs"] = _grace(
            unstarted_grace_secs, "queue_pipeline.diagnostics: `unstarted_grace_secs`"
        )
    return _override(**changes)


def tf_faithful():
    """Context manager: every diagnostic off, so behaviour is TF 1.x's exactly."""
    return diagnostics(False)
