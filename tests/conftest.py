"""The suite's fixtures and its TF-mode switch.

``--tf1`` (or ``QUEUE_PIPELINE_TEST_TF1=1``) runs the whole suite in TF1 mode:
``tf.compat.v1.disable_v2_behavior()`` is applied in ``pytest_configure``,
before any test module is imported and so before any graph is built, and each
test then runs in a fresh default graph (as a fresh TF1 script would). The
variable is exported, so subprocesses that tests start (scripts, the CLI)
know the mode. Tests that only make sense in one mode carry
``@pytest.mark.v2_only("reason")`` or ``@pytest.mark.tf1_only("reason")``.
A test that fixes the TF mode of everything it runs itself (its subprocesses
choose their own, whatever the suite's mode) carries
``@pytest.mark.one_suite("reason")``: the TF1 suite would repeat the very same
work, so it runs in the TF 2.x suite only.

Every Session made here has ``operation_timeout_in_ms`` so a blocked queue
fails a test instead of hanging it; every fixture that can start threads stops
and joins them at teardown. Helpers live in ``helpers.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from helpers import TF, tf1_mode  # noqa: E402
from queue_pipeline._core.quiet import tf_logs_hidden  # noqa: E402

TF1_ENV = "QUEUE_PIPELINE_TEST_TF1"

# The `browser` fixture and --browser-screenshots: the pages in headless Chromium.
pytest_plugins = ["browser"]


def pytest_addoption(parser):
    parser.addoption(
        "--tf1",
        action="store_true",
        default=False,
        help=(
            "run the suite in TF1 mode: tf.compat.v1.disable_v2_behavior() before "
            f"any graph is built (also {TF1_ENV}=1)"
        ),
    )


def _tf1_requested(config) -> bool:
    return bool(config.getoption("--tf1")) or os.environ.get(TF1_ENV, "") not in ("", "0")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "v2_only(reason): the behaviour exists only under TF 2.x defaults "
        "(eager execution, Keras 3); skipped in TF1 mode",
    )
    config.addinivalue_line(
        "markers",
        "tf1_only(reason): the behaviour exists only in TF1 mode; skipped under TF 2.x defaults",
    )
    config.addinivalue_line(
        "markers",
        "one_suite(reason): the test sets the TF mode of what it runs itself (subprocesses "
        "with their own mode), so the suite's mode changes nothing; run in the TF 2.x suite",
    )
    if _tf1_requested(config):
        os.environ[TF1_ENV] = "1"
        with tf_logs_hidden():  # TF's notice that ref variables are deprecated
            tf.compat.v1.disable_v2_behavior()
    else:
        os.environ.pop(TF1_ENV, None)


def pytest_report_header(config):
    return "TF mode: " + ("TF1 (disable_v2_behavior)" if tf1_mode() else "TF 2.x defaults")


def pytest_collection_modifyitems(config, items):
    tf1 = tf1_mode()
    for item in items:
        for name, skipped in (("v2_only", tf1), ("tf1_only", not tf1), ("one_suite", tf1)):
            marker = item.get_closest_marker(name)
            if marker is None:
                continue
            reason = marker.args[0] if marker.args else marker.kwargs.get("reason")
            if not reason:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} needs a reason")
            if skipped:
                item.add_marker(pytest.mark.skip(reason=f"{name}: {reason}"))
    # Slow tests (subprocesses, seconds each) first, the rest in their order: with
    # pytest-xdist the two workers then end together instead of one waiting for a
    # long test that was handed out last (the slow files sort late by name).
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def _fresh_default_graph():
    """In TF1 mode each test builds in a fresh default graph, as a new script would."""
    if not tf1_mode():
        yield
        return
    with tf.Graph().as_default():
        yield


@pytest.fixture
def graph(qp_graph):
    """A fresh graph, installed as the default for the test: the plugin's ``qp_graph``."""
    return qp_graph


@pytest.fixture
def sess(qp_session):
    """A Session on the test's graph whose ops time out (pytest.ini's
    ``queue_pipeline_timeout``), closed at teardown: the plugin's ``qp_session``."""
    return qp_session


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


def _impls():
    import queue_pipeline

    return {"tf": TF, "qp": queue_pipeline}


@pytest.fixture(params=["tf", "qp"])
def impl(request):
    """Parametrizes a test over TF's own implementation and queue_pipeline's."""
    return _impls()[request.param]
