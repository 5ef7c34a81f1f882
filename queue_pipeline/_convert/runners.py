"""The Beam runner of a conversion: names as users type them, the local defaults (no Beam)."""

from __future__ import annotations

import os
from typing import Sequence

__all__ = [
    "KNOWN_RUNNERS",
    "RUNNER_PATHS",
    "beam_options",
    "is_direct",
    "resolve_runner",
    "runner_name",
    "runner_of",
]

_API = "queue_pipeline.convert"

# NOTE [ Runners by name ]
# Beam takes a runner by the name of its class for the runners it registers
# (DirectRunner, DataflowRunner, FlinkRunner, SparkRunner, PortableRunner,
# PrismRunner) and only by its full path for the others (the Dask runner).
# convert takes each by the name users type (``--runner DaskRunner``, as in
# Beam's own docs; any case, "Runner" optional: ``dask``, ``flink``) and hands
# Beam the class's full path, which every Beam version accepts; a full path
# (``package.module.Class``, a runner of one's own) goes to Beam as given.
# Any other name is refused before anything is listed or written, with the
# names known: Beam would refuse it only once the job is built, in its own
# words and without the Dask runner among them.
RUNNER_PATHS = {
    "DirectRunner": "apache_beam.runners.direct.direct_runner.DirectRunner",
    "DaskRunner": "apache_beam.runners.dask.dask_runner.DaskRunner",
    "PortableRunner": "apache_beam.runners.portability.portable_runner.PortableRunner",
    "FlinkRunner": "apache_beam.runners.portability.flink_runner.FlinkRunner",
    "SparkRunner": "apache_beam.runners.portability.spark_runner.SparkRunner",
    "DataflowRunner": "apache_beam.runners.dataflow.dataflow_runner.DataflowRunner",
    "PrismRunner": "apache_beam.runners.portability.prism_runner.PrismRunner",
}
KNOWN_RUNNERS = tuple(RUNNER_PATHS)
_BY_LOWER = {
    **{name.lower(): name for name in RUNNER_PATHS},
    **{name.lower()[: -len("runner")]: name for name in RUNNER_PATHS},
}
_DIRECT = RUNNER_PATHS["DirectRunner"]


def resolve_runner(name: str) -> str:
    """The full path of runner `name` (NOTE [ Runners by name ]).

    Raises:
      ValueError: `name` is neither a known runner's name nor a class's full path.
    """
    if "." in name:  # a class of its own: Beam imports it
        return name
    known = _BY_LOWER.get(name.lower())
    if known is None:
        raise ValueError(
            f"{_API}: `runner` (`--runner`) must be one of {', '.join(KNOWN_RUNNERS)} (or a "
            f"runner class's full path, package.module.Class); got {name!r}."
        )
    return RUNNER_PATHS[known]


def runner_name(options: Sequence[str]) -> str:
    """The runner of `options` (as :func:`beam_options` made them) by its short name."""
    path = runner_of(options) or _DIRECT
    return next((name for name, full in RUNNER_PATHS.items() if full == path), path)


def is_direct(options: Sequence[str]) -> bool:
    """Whether `options` (as :func:`beam_options` made them) run on the DirectRunner."""
    return runner_of(options) in (None, _DIRECT)


def beam_options(runner: str | None, args: Sequence[str]) -> list[str]:
    """The Beam arguments: `args` as given, the runner by its full path, plus the
    local defaults of the DirectRunner.

    `runner` (None: the DirectRunner, or a ``--runner`` among `args`) replaces a
    ``--runner`` among `args`; either is a name users type (NOTE [ Runners by
    name ]). The DirectRunner (the default) runs ``os.cpu_count()`` workers as
    threads of the launching process (``--direct_running_mode=
    multi_threading``) unless `args` already set ``--direct_num_workers`` or
    ``--direct_running_mode``: the image work (file reads, Pillow's decode,
    hashing, CRCs) runs outside Python's lock, and threads start in a
    fraction of a second where each worker process costs more than one
    (``benchmarks/convert_profile.md``). ``multi_processing`` pays off for
    Python-bound sources (tables, legacy records) on many free cores.

    Raises:
      ValueError: an unknown runner name.
    """
    out = list(args)
    given = runner if runner is not None else runner_of(out)
    if given is not None:
        out = [*_without_runner(out), f"--runner={resolve_runner(given)}"]
    if is_direct(out):
        cores = os.cpu_count() or 1
        in_memory = any(a == "--direct_running_mode=in_memory" for a in out)
        if not in_memory and not any(a.startswith("--direct_num_workers") for a in out):
            out.append(f"--direct_num_workers={cores}")
        if not any(a.startswith("--direct_running_mode") for a in out):
            out.append("--direct_running_mode=" + ("multi_threading" if cores > 1 else "in_memory"))
    return out


def _without_runner(args: Sequence[str]) -> list[str]:
    """`args` without their ``--runner X`` / ``--runner=X``."""
    kept: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a == "--runner":
            skip = True
        elif not a.startswith("--runner="):
            kept.append(a)
    return kept


def runner_of(args: Sequence[str]) -> str | None:
    """The value of the ``--runner X`` / ``--runner=X`` among `args`, or None."""
    for i, a in enumerate(args):
        if a.startswith("--runner="):
            return a.partition("=")[2]
        if a == "--runner" and i + 1 < len(args):
            return args[i + 1]
    return None
