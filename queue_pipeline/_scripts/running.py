"""Runs a script as ``python SCRIPT args...`` would: :func:`run_under` (``queue-pipeline run``).

The script runs as Python would run it (``__main__``, its argv, its directory
first on ``sys.path``), inside the patches it is given
(:func:`queue_pipeline._scripts.install.install`, through that module's
``run_script``) and optionally an engine; an exception it raises comes back
as :class:`ScriptError` with the script's own traceback. ``ScriptError`` is
also importable from :mod:`queue_pipeline._scripts.install`, where it was first.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import traceback
from typing import Any, Callable, ContextManager, Iterator, Sequence

__all__ = ["ScriptError", "run_under"]


class ScriptError(Exception):
    """A script run by :func:`run_script` raised `error`; `traceback` is its text."""

    def __init__(self, error: BaseException, text: str) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error
        self.traceback = text


def _script_traceback(error: BaseException, script: str) -> str:
    """The traceback of `error` from the script's first frame on (the runner's frames cut)."""
    tb, target = error.__traceback__, os.path.realpath(script)
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename) != target:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb))


@contextlib.contextmanager
def _environ(name: str, value: str | None) -> Iterator[None]:
    """Sets environment variable `name` to `value` (unless None) for the block."""
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if value is None:
            pass
        elif old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def run_under(
    patches: Callable[[], ContextManager[Any]],
    script: str,
    args: Sequence[str] = (),
    *,
    engine: str | None = None,
    service: str | None = None,
    job_name: str | None = None,
) -> int:
    """Runs `script` as ``python SCRIPT args...`` would, inside ``patches()``.

    `patches` is :func:`queue_pipeline._scripts.install.install` for
    ``queue-pipeline run`` (:func:`~queue_pipeline._scripts.install.run_script`,
    which documents the arguments, the exit status and the errors): handed
    over so that this module imports nothing of install.py, which re-exports
    :class:`ScriptError` from here.
    """
    from queue_pipeline._core import settings as _settings

    if not os.path.isfile(script):
        raise FileNotFoundError(f"run: no such script {script!r}.")
    if engine is not None and engine not in _settings.ENGINES:
        raise ValueError(f"run: `engine` must be one of {_settings.ENGINES}; got {engine!r}.")
    if service is not None:
        if engine not in (None, "dataset"):
            raise ValueError(
                f"run: --service {service} needs the dataset engine; got --engine {engine}. "
                "Fix: drop --engine, or pass --engine dataset."
            )
        engine = "dataset"
    elif job_name is not None:
        raise ValueError(f"run: --service-job {job_name} needs --service (the dispatcher).")
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [script, *args]
    script_dir = os.path.dirname(os.path.realpath(script))
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_environ("QUEUE_PIPELINE_ENGINE", engine))
            if service is not None:
                stack.enter_context(_environ(_settings.SERVICE_ENV, service))
                stack.enter_context(_environ(_settings.SERVICE_JOB_ENV, job_name))
            if engine is not None:
                stack.enter_context(_settings.engine(engine, service=service, job_name=job_name))
            stack.enter_context(patches())
            runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            return code or 0
        sys.stderr.write(f"{code}\n")
        return 1
    except Exception as error:  # noqa: BLE001 - reported with the script's traceback
        raise ScriptError(error, _script_traceback(error, script)) from error
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
