"""queue_pipeline's pytest plugin: fixtures for testing input pipelines.

Registered through the ``pytest11`` entry point ``queue_pipeline``, so every
project where queue_pipeline is installed loads it at pytest start-up. It
therefore imports neither TensorFlow nor the rest of queue_pipeline until one
of its fixtures runs: loading it costs only this module (a test checks that).

Adds:
  * fixtures ``qp_graph`` (a fresh default ``tf.Graph``), ``qp_session`` (a
    Session on it whose ops time out), ``qp_coord`` (a Coordinator that stops
    and joins its threads at teardown) and ``qp_snapshot`` (golden snapshots
    beside the test file, see :func:`queue_pipeline.testing.assert_snapshot`);
  * the option ``--update-snapshots`` (rewrite snapshots instead of comparing);
  * the option ``--queue-pipeline-html-dir DIR``: for each failing test, the
    page (:meth:`ComparisonReport.to_html`) of every comparison in it that
    did not match, and of a snapshot that differs (golden against now), is
    written to ``DIR/<test id>[-k].html``, and the test's report lists them;
  * the ini key ``queue_pipeline_timeout`` (seconds a fixture session op may
    block, default 30).
"""

from __future__ import annotations

import pathlib
import re
from typing import Any, Callable, Generator, Iterator

import pytest

__all__ = [
    "html_dir",
    "qp_coord",
    "qp_graph",
    "qp_session",
    "qp_snapshot",
    "record_report",
    "update_requested",
]

update_requested = False
"""Whether this pytest run was given ``--update-snapshots`` (read by testing)."""

html_dir: pathlib.Path | None = None
"""The ``--queue-pipeline-html-dir`` folder, or None: no pages are written."""

_MAX_PAGES = 8  # pages written per failing test
_recorded: list[Any] = []  # the running test's comparisons that did not match

_DEFAULT_TIMEOUT = 30.0


def _timeout(config: pytest.Config) -> float:
    try:
        return float(config.getini("queue_pipeline_timeout") or _DEFAULT_TIMEOUT)
    except (ValueError, KeyError):
        return _DEFAULT_TIMEOUT


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("queue_pipeline")
    group.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="rewrite queue_pipeline golden snapshots instead of comparing",
    )
    group.addoption(
        "--queue-pipeline-html-dir",
        metavar="DIR",
        default=None,
        help="write the HTML page of each failing test's comparison (or snapshot) to DIR",
    )
    parser.addini(
        "queue_pipeline_timeout",
        default=str(int(_DEFAULT_TIMEOUT)),
        help="seconds a queue_pipeline fixture session op may block",
    )


def pytest_configure(config: pytest.Config) -> None:
    global update_requested, html_dir
    update_requested = bool(config.getoption("update_snapshots", False))
    folder = config.getoption("queue_pipeline_html_dir", None)
    html_dir = pathlib.Path(folder).resolve() if folder else None


def pytest_unconfigure(config: pytest.Config) -> None:
    global update_requested, html_dir
    update_requested = False
    html_dir = None
    _recorded.clear()


def record_report(report: Any) -> None:
    """Called by ``compare`` with each report: keeps the ones that did not match
    while pages are wanted, for the running test's page (bounded)."""
    if html_dir is not None and not report.matched and len(_recorded) < _MAX_PAGES:
        _recorded.append(report)


def pytest_runtest_setup(item: pytest.Item) -> None:
    _recorded.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo
) -> Generator[None, Any, None]:
    outcome = yield
    rep = outcome.get_result()
    if html_dir is None or call.when != "call":
        return
    try:
        if rep.failed:
            try:
                pages = _write_pages(item.nodeid, call.excinfo.value if call.excinfo else None)
            except Exception as e:  # noqa: BLE001 - the test's own failure comes first
                pages = [f"(no page: {type(e).__name__}: {e})"]
            if pages:
                rep.sections.append(("queue_pipeline pages", "\n".join(pages)))
    finally:
        _recorded.clear()


def _write_pages(nodeid: str, error: BaseException | None) -> list[str]:
    """Writes the failing test's pages into `html_dir`; returns their paths."""
    assert html_dir is not None, "only called when pages are wanted"
    reports = list(_recorded)
    found = getattr(error, "report", None)
    if found is not None and all(found is not r for r in reports):
        reports.insert(0, found)
    stem = re.sub(r"[^\w.-]+", "_", nodeid).strip("_") or "test"
    pages = []
    for k, report in enumerate(reports[:_MAX_PAGES]):
        name = f"{stem}.html" if k == 0 else f"{stem}-{k + 1}.html"
        pages.append(report.to_html(html_dir / name))
    snapshot = getattr(error, "snapshot_page", None)
    if snapshot is not None:
        pages.append(snapshot(html_dir / f"{stem}-snapshot.html"))
    return pages


@pytest.fixture
def qp_graph() -> Iterator[Any]:
    """A fresh ``tf.Graph``, installed as the default graph for the test."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        yield graph


@pytest.fixture
def qp_session(qp_graph: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A Session on ``qp_graph`` whose ops time out (ini ``queue_pipeline_timeout``)."""
    import tensorflow as tf

    from queue_pipeline._compare import harness as _harness

    sess = tf.compat.v1.Session(
        graph=qp_graph, config=_harness.session_config(_timeout(request.config))
    )
    with sess.as_default():
        yield sess
    sess.close()


@pytest.fixture
def qp_coord(qp_session: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A Coordinator; at teardown it requests stop and joins every registered thread.

    Start runners with ``queue_pipeline.start_queue_runners(qp_session,
    coord=qp_coord)``; a runner's error fails the test at teardown.
    """
    from queue_pipeline.coordinator import Coordinator

    coord = Coordinator()
    yield coord
    coord.request_stop()
    coord.join(stop_grace_period_secs=_timeout(request.config))


@pytest.fixture
def qp_snapshot(request: pytest.FixtureRequest) -> Callable[..., pathlib.Path]:
    """``check(batches, name=None)``: asserts batches against
    ``__snapshots__/<test module>/<test name>[-name].json`` beside the test file."""
    from queue_pipeline.testing import assert_snapshot

    base = pathlib.Path(str(request.node.fspath)).parent / "__snapshots__"
    stem = pathlib.Path(str(request.node.fspath)).stem
    test = re.sub(r"[^\w.-]+", "_", request.node.name)

    def check(batches: Any, name: str | None = None) -> pathlib.Path:
        file = base / stem / (f"{test}-{name}.json" if name else f"{test}.json")
        assert_snapshot(batches, file)
        return file

    return check
