"""Shared fixtures: fresh graphs, sessions with operation timeouts, data files.

Every Session made here has ``operation_timeout_in_ms`` so a blocked queue
fails a test instead of hanging it; every fixture that can start threads stops
and joins them at teardown.
"""

from __future__ import annotations

import os
import re

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

OP_TIMEOUT_MS = 20_000


def session_config(timeout_ms: int = OP_TIMEOUT_MS) -> tf.compat.v1.ConfigProto:
    """A ConfigProto whose operations time out instead of blocking forever."""
    return tf.compat.v1.ConfigProto(operation_timeout_in_ms=timeout_ms)


def new_session(graph: tf.Graph, timeout_ms: int = OP_TIMEOUT_MS) -> tf.compat.v1.Session:
    """A Session on `graph` with an operation timeout."""
    return tf.compat.v1.Session(graph=graph, config=session_config(timeout_ms))


@pytest.fixture
def graph():
    """A fresh graph, installed as the default for the test."""
    g = tf.Graph()
    with g.as_default():
        yield g


@pytest.fixture
def sess(graph):
    """A Session on the test's graph, with an operation timeout; closed at teardown."""
    s = new_session(graph)
    with s.as_default():
        yield s
    s.close()


@pytest.fixture
def text_files(tmp_path):
    """Writes small text files; returns a function(name_to_lines) -> list of paths."""

    def write(files: dict[str, list[str]], newline: str = "\n") -> list[str]:
        paths = []
        for name, lines in files.items():
            path = tmp_path / name
            path.write_bytes("".join(line + newline for line in lines).encode())
            paths.append(str(path))
        return paths

    return write


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


def _impls():
    import queue_pipeline

    return {"tf": TF, "qp": queue_pipeline}


@pytest.fixture(params=["tf", "qp"])
def impl(request):
    """Parametrizes a test over TF's own implementation and queue_pipeline's."""
    return _impls()[request.param]


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
            sess.run([tf.compat.v1.global_variables_initializer(),
                      tf.compat.v1.local_variables_initializer()])
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
        inputs = tuple(i for i in node.input
                       if not (strip_guards and i.startswith("^") and GUARD in i))
        nodes[node.name] = (node.op, inputs, node.device, attrs)
    return nodes


def drain_dataset(make, *, seed=None, limit=10_000):
    """Builds make() (a Dataset) in a fresh graph and drains a one-shot iterator.

    Returns the raw session outputs, in order, until OutOfRangeError; the
    graph gets random seed `seed` if given.
    """
    g = tf.Graph()
    with g.as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        dataset = make()
        assert isinstance(dataset, tf.data.Dataset), type(dataset)
        fetch = tf.compat.v1.data.make_one_shot_iterator(dataset.take(limit)).get_next()
    out = []
    with new_session(g) as sess:
        try:
            while True:
                out.append(sess.run(fetch))
        except tf.errors.OutOfRangeError:
            pass
    return out
