"""Helpers shared by the test modules (import them from here, never from conftest).

Sessions made here have ``operation_timeout_in_ms``, so a blocked queue fails
a test instead of hanging it; every helper that starts threads stops and
joins them before it returns.

The suite runs in two TF modes (``--tf1`` in ``conftest.py``): TF 2.x
defaults, and TF1 mode after ``tf.compat.v1.disable_v2_behavior()``.
:func:`dataset_values` reads a Dataset the way each mode's user would:
eagerly under TF 2.x defaults, through an iterator in a Session otherwise.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

__all__ = [
    "GUARD",
    "OP_TIMEOUT_MS",
    "TF",
    "WAYS",
    "assert_produces",
    "build",
    "dataset_values",
    "drain",
    "drain_dataset",
    "graph_nodes",
    "id_label_csv",
    "new_session",
    "py",
    "python_argv",
    "running",
    "session_config",
    "tf1_mode",
]

OP_TIMEOUT_MS = 20_000


SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


def copy_script(name: str, directory, as_name: str | None = None):
    """Copies ``tests/scripts/NAME`` into `directory` (as `as_name`); returns the copy's path."""
    target = directory / (as_name or name)
    shutil.copy(os.path.join(SCRIPTS, name), target)
    return target


def line_of(path, text: str) -> int:
    """The number (from 1) of the first line of the file `path` that contains `text`."""
    with open(path) as f:
        return 1 + next(i for i, line in enumerate(f.read().splitlines()) if text in line)


def id_label_csv(directory, *, files: int = 3, rows: int = 20) -> list[str]:
    """Writes `files` CSV files of `rows` lines ``id,label`` (ids ``file * 100 + row``,
    distinct; labels ``row % 4``) to `directory`; returns their paths, in order."""
    paths = []
    for i in range(files):
        path = directory / f"part{i}.csv"
        path.write_text("".join(f"{i * 100 + j},{j % 4}\n" for j in range(rows)))
        paths.append(str(path))
    return paths


def tf1_mode() -> bool:
    """True when v2 behaviour is disabled in this process (the suite's ``--tf1``).

    A process-wide fact, unlike ``tf.executing_eagerly()``, which is False
    inside any ``Graph.as_default()`` block in both modes.
    """
    return not tf.__internal__.tf2.enabled()


def session_config(timeout_ms: int = OP_TIMEOUT_MS) -> tf.compat.v1.ConfigProto:
    """A ConfigProto whose operations time out instead of blocking forever."""
    return tf.compat.v1.ConfigProto(operation_timeout_in_ms=timeout_ms)


def new_session(graph: tf.Graph, timeout_ms: int = OP_TIMEOUT_MS) -> tf.compat.v1.Session:
    """A Session on `graph` with an operation timeout."""
    return tf.compat.v1.Session(graph=graph, config=session_config(timeout_ms))


class _TFOracle:
    """TF's own implementation under queue_pipeline's names (the test oracle)."""

    def __getattr__(self, name):
        for module in (tf.compat.v1.train, tf.compat.v1):
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(name)

    def __repr__(self):
        return "tf"


TF = _TFOracle()


def build(impl, fn, seed=None):
    """Calls fn(impl) in a fresh graph (with graph seed `seed`); returns (graph, result)."""
    g = tf.Graph()
    with g.as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        result = fn(impl)
    return g, result


def drain(impl, graph, fetch, *, max_steps=10_000, init=True, coord=True, join=True):
    """Runs `fetch` until OutOfRangeError with `impl`'s runners and Coordinator.

    Returns the list of fetched values. Stops and joins every thread; the
    Coordinator's join re-raises any error a runner reported.
    """
    out = []
    with graph.as_default(), new_session(graph) as sess:
        if init:
            sess.run(
                [
                    tf.compat.v1.global_variables_initializer(),
                    tf.compat.v1.local_variables_initializer(),
                ]
            )
        c = impl.Coordinator() if coord else None
        threads = impl.start_queue_runners(sess=sess, coord=c)
        try:
            for _ in range(max_steps):
                out.append(sess.run(fetch))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            if c is not None:
                c.request_stop()
                if join:
                    c.join(threads, stop_grace_period_secs=5)
                else:
                    c.join(threads, stop_grace_period_secs=5, ignore_live_threads=True)
    return out


# ------------------------------------------------------------- native or installed

WAYS = ("native", "queue", "dataset")


@contextlib.contextmanager
def running(way: str):
    """Runs TF's ``tf.compat.v1`` code natively, or under install() on an engine.

    `way` is one of :data:`WAYS`: ``"native"`` (TF's own queue API, the
    oracle), ``"queue"`` or ``"dataset"`` (``queue_pipeline.install()`` with
    that engine). For differential tests of unmodified programs.
    """
    if way not in WAYS:
        raise ValueError(f"running: `way` must be one of {WAYS}; got {way!r}.")
    if way == "native":
        yield
        return
    import queue_pipeline as qp

    with qp.install(), qp.engine(way):
        yield


# -------------------------------------------------------------------- subprocesses

# Runs a module (-m NAME) or a script with v2 behaviour disabled first: the
# subprocess twin of the suite's --tf1.
_TF1_BOOT = (
    "import runpy, sys\n"
    "import tensorflow as tf\n"
    "tf.compat.v1.disable_v2_behavior()\n"
    "target = sys.argv.pop(1)\n"
    "if target == '-m':\n"
    "    runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n"
    "else:\n"
    "    sys.argv[0] = target\n"
    "    runpy.run_path(target, run_name='__main__')\n"
)


def python_argv(*args: str) -> list[str]:
    """The command line running ``python ARGS...`` in this suite's TF mode.

    `args` are what would follow ``python``: a script path or ``-m MODULE``,
    then its arguments. In TF1 mode the program runs after
    ``tf.compat.v1.disable_v2_behavior()``, as a legacy script would.
    """
    if not tf1_mode():
        return [sys.executable, *args]
    return [sys.executable, "-c", _TF1_BOOT, *args]


def run_cli(cwd, command: str, *args: str):
    """Runs ``python -m queue_pipeline COMMAND [--tf1] ARGS...`` in `cwd` (this suite's TF
    mode as the command's ``--tf1``), output captured; returns the CompletedProcess."""
    import subprocess  # noqa: PLC0415

    mode = ["--tf1"] if tf1_mode() else []
    return subprocess.run(
        [sys.executable, "-m", "queue_pipeline", command, *mode, *args],
        capture_output=True, text=True, timeout=300, cwd=str(cwd),
    )  # fmt: skip


def migrated_prints_the_same(cwd, script: str, verdict: str = "Verify: MATCH") -> tuple[str, str]:
    """Migrates `script` in `cwd` with the CLI (`verdict` in its report), runs it and the
    written ``migrated.py`` with ``queue-pipeline run``; asserts both print the same.

    Returns:
      (what the original printed, the written module's text).
    """
    done = run_cli(cwd, "migrate", script, "--out", "migrated.py")
    assert done.returncode == 0, done.stderr
    assert verdict in done.stderr, done.stderr
    before = run_cli(cwd, "run", script)
    after = run_cli(cwd, "run", "migrated.py")
    assert before.returncode == 0, before.stderr
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout, after.stdout
    return before.stdout, (cwd / "migrated.py").read_text()


# Runs the CLI with the package's INFO lines on stderr (the engine's "served" lines).
_CLI_BOOT = (
    "import logging, sys; logging.basicConfig(level=logging.INFO); "
    "from queue_pipeline import cli; sys.exit(cli.main(sys.argv[1:]))"
)
_DIGEST = re.compile(r"^DIGEST .*$", re.M)


def run_script_both_ways(name: str, args_for, engines=("dataset",)) -> tuple:
    """Runs ``tests/scripts/NAME`` natively and through ``queue-pipeline run --engine E``.

    `args_for(way)` gives the script's arguments for ``"native"`` and each
    engine (e.g. a data directory of its own). Every run must exit 0 and
    print the same ``DIGEST`` lines (at least one), in the suite's TF mode.

    Returns:
      (the native run, {engine: its run}) as CompletedProcess objects.
    """
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    script = os.path.join(os.path.dirname(__file__), "scripts", name)
    native = subprocess.run(
        python_argv(script, *args_for("native")), capture_output=True, text=True, timeout=300
    )
    assert native.returncode == 0, native.stderr[-3000:]
    mode = ["--tf1"] if tf1_mode() else []
    runs = {}
    for engine in engines:
        runs[engine] = subprocess.run(
            [sys.executable, "-c", _CLI_BOOT, "run", "--engine", engine, *mode, script]
            + list(args_for(engine)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert runs[engine].returncode == 0, runs[engine].stderr[-3000:]
        assert _DIGEST.findall(runs[engine].stdout) == _DIGEST.findall(native.stdout) != []
    return native, runs


# ----------------------------------------------------------------------- datasets


def _numpy(value):
    """An eager element as numpy, like a Session's output (SparseTensorValue for sparse)."""
    if isinstance(value, tf.SparseTensor):
        return tf.compat.v1.SparseTensorValue(
            value.indices.numpy(), value.values.numpy(), value.dense_shape.numpy()
        )
    return value.numpy() if hasattr(value, "numpy") else value


def _is_eager(dataset: tf.data.Dataset) -> bool:
    return not tf.is_symbolic_tensor(dataset._variant_tensor)  # noqa: SLF001 - test helper


def dataset_values(
    dataset: tf.data.Dataset,
    *,
    limit: int | None = 10_000,
    iterator: str = "one_shot",
    feed_dict=None,
) -> list:
    """The elements of `dataset` as numpy, in order, until its end (or `limit`).

    An eager Dataset (TF 2.x defaults) is iterated with a Python ``for``; a
    Dataset in a graph (TF1 mode, or built under ``Graph.as_default()``) the
    TF1 way: ``tf.compat.v1.data.make_one_shot_iterator`` (or, with
    ``iterator="initializable"``, ``make_initializable_iterator``, initialized
    with `feed_dict`) and ``get_next()`` run in a Session with an operation
    timeout until OutOfRangeError. Structures come back as the Dataset's
    (tuples, dicts); SparseTensors as ``SparseTensorValue``.
    """
    if iterator not in ("one_shot", "initializable"):
        raise ValueError(
            f"dataset_values: `iterator` must be 'one_shot' or 'initializable'; got {iterator!r}."
        )
    if _is_eager(dataset):
        taken = dataset if limit is None else dataset.take(limit)
        return [
            tf.nest.map_structure(_numpy, element, expand_composites=False) for element in taken
        ]
    graph = dataset._graph  # noqa: SLF001 - test helper
    with graph.as_default():
        taken = dataset if limit is None else dataset.take(limit)
        if iterator == "one_shot":
            it = tf.compat.v1.data.make_one_shot_iterator(taken)
            init = None
        else:
            it = tf.compat.v1.data.make_initializable_iterator(taken)
            init = it.initializer
        next_element = it.get_next()
    out = []
    with new_session(graph) as sess:
        if init is not None:
            sess.run(init, feed_dict=feed_dict)
        try:
            while True:
                out.append(sess.run(next_element))
        except tf.errors.OutOfRangeError:
            pass
    return out


def drain_dataset(make, *, seed=None, limit=10_000, iterator="one_shot"):
    """Builds make() (a Dataset) in a fresh graph and drains it in a Session.

    Returns the raw session outputs, in order, until OutOfRangeError; the
    graph gets random seed `seed` if given.
    """
    g = tf.Graph()
    with g.as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        dataset = make()
        assert isinstance(dataset, tf.data.Dataset), type(dataset)
    return dataset_values(dataset, limit=limit, iterator=iterator)


def py(value):
    """A fetched or iterated value as plain, hashable Python.

    Arrays become tuples (nested for rank > 1), numpy scalars Python scalars,
    lists and tuples tuples, dicts dicts of the same, and SparseTensor values
    ``("sparse", indices, values, dense_shape)``.
    """
    if isinstance(value, (tf.SparseTensor, tf.compat.v1.SparseTensorValue)):
        return ("sparse", py(value.indices), py(value.values), py(value.dense_shape))
    if isinstance(value, dict):
        return {key: py(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(py(v) for v in value)
    if isinstance(value, tf.Tensor):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return tuple(py(v) for v in value.tolist()) if value.ndim else value.item()
    if isinstance(value, np.generic):
        return value.item()
    return value


def elements(dataset: tf.data.Dataset, limit: int | None = 10_000) -> list:
    """The elements of `dataset` (at most `limit`) as :func:`py` values, read as this
    TF mode's user would (see :func:`dataset_values`)."""
    return [py(element) for element in dataset_values(dataset, limit=limit)]


def assert_produces(fetch, expected, *, ordered: bool = True, error=None, **kwargs) -> list:
    """Asserts that `fetch` delivers `expected` (compared as :func:`py` values).

    Serves legacy and twin tests alike: `fetch` is a ``tf.data.Dataset`` (read
    with :func:`dataset_values`; `kwargs` go there) or a callable returning
    the list of delivered elements (e.g. a legacy drain).

    Args:
      fetch: a Dataset, or a callable returning the elements.
      expected: the elements, in order.
      ordered: compare in order; else as multisets.
      error: an exception type the reading must end in (after delivering
        `expected`), or None for a clean end.

    Returns:
      The delivered elements, as :func:`py` values.
    """
    got: list = []

    def read():
        values = dataset_values(fetch, **kwargs) if isinstance(fetch, tf.data.Dataset) else fetch()
        got.extend(py(v) for v in values)

    if error is None:
        read()
    else:
        with pytest.raises(error):
            read()
    want = [py(v) for v in expected]
    if ordered:
        assert got == want
    else:
        assert sorted(map(repr, got)) == sorted(map(repr, want))
    return got


# --------------------------------------------------------------------- graph structure


_FUNCTION_ATTRS = ("then_branch", "else_branch", "cond", "body", "f")


GUARD = "_qp_guard/"


def graph_nodes(graph, *, skip_attrs=(), strip_guards=True):
    """{node name: (op type, inputs, device, attrs)} of a graph, for structural comparison.

    Function names (cond branches) carry a process-wide counter, which is
    stripped. With `strip_guards`, queue_pipeline's diagnostic ops (names
    containing ``_qp_guard/``) and control inputs from them are left out, so
    a default-mode graph compares equal to TF's when nothing else differs.
    """
    nodes = {}
    for node in graph.as_graph_def().node:
        if strip_guards and GUARD in node.name:
            continue
        attrs = {}
        for key, value in node.attr.items():
            if key in skip_attrs:
                continue
            if key in _FUNCTION_ATTRS and value.HasField("func"):
                copy = type(value)()
                copy.CopyFrom(value)
                value = copy
                value.func.name = re.sub(r"_\d+$", "", value.func.name)
            attrs[key] = value.SerializeToString()
        inputs = tuple(
            i for i in node.input if not (strip_guards and i.startswith("^") and GUARD in i)
        )
        nodes[node.name] = (node.op, inputs, node.device, attrs)
    return nodes
