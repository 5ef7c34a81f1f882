"""Opens the package's pages in a real headless Chromium, offline, and says what a person would see.

The fixture ``browser`` (a plugin: ``conftest.py`` names this module in
``pytest_plugins``) hands a test a
:class:`Browser`; ``browser.open(path)`` loads a local HTML file and returns a
:class:`PageCheck`: every request the page attempted (all are blocked: a page
the package writes must be self-contained), its console errors and uncaught
page errors, whether ``#verdict`` is visible and its text, the rendered size
of each ``.graphic`` element, the page's text, and a screenshot.

One Chromium serves the whole session (the launch is the costly part, about a
second); each page gets a fresh browser context. The browser is Playwright's
Python API driving the system's Chromium (Debian's ``chromium``): Playwright's
own browser download is never used. The executable is ``$QP_CHROMIUM``, else
``chromium`` or ``chromium-browser`` on PATH; a launcher script there (Debian's
``/usr/bin/chromium`` is one) is replaced by the binary it starts, because the
script adds the system's flags (its extensions among them) to Playwright's.
Where Playwright or Chromium cannot be had, the tests that need them are
skipped with the reason, never passed.

Screenshots go to ``--browser-screenshots DIR`` if given (kept, one per page,
named after the test), else to a folder under pytest's temporary directory.
A failing test's report lists the screenshots of the pages it opened, and
:meth:`PageCheck.assert_clean`'s message names its screenshot.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import shutil
from typing import Any

import pytest

__all__ = [
    "Browser",
    "Graphic",
    "PageCheck",
    "browser",
    "find_chromium",
]

CHROMIUM_ENV = "QP_CHROMIUM"
VIEWPORT = {"width": 1280, "height": 900}
# The binaries that distributions' launcher scripts start (Debian, Ubuntu, Fedora).
_REAL_BINARIES = (
    "/usr/lib/chromium/chromium",
    "/usr/lib/chromium-browser/chromium-browser",
    "/usr/lib64/chromium-browser/chromium-browser",
)
_SCREENSHOTS_OPTION = "--browser-screenshots"


def pytest_addoption(parser) -> None:
    """Adds ``--browser-screenshots DIR``."""
    parser.addoption(
        _SCREENSHOTS_OPTION,
        metavar="DIR",
        default=None,
        help="keep a screenshot of every page the browser tests open in DIR "
        "(default: a folder under pytest's temporary directory)",
    )


def find_chromium() -> tuple[str | None, str]:
    """The Chromium executable to launch, and where it came from (or why there is none)."""
    named = os.environ.get(CHROMIUM_ENV)
    if named:
        if not os.access(named, os.X_OK):
            return None, f"${CHROMIUM_ENV}={named!r} is not an executable file"
        return named, f"${CHROMIUM_ENV}"
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found is None:
            continue
        if _is_script(found):
            for real in _REAL_BINARIES:
                if os.access(real, os.X_OK) and not _is_script(real):
                    return real, f"started by the launcher script {found}"
        return found, "PATH"
    return None, (
        f"no Chromium: set ${CHROMIUM_ENV} or install one (Debian: apt-get install chromium)"
    )


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


@dataclasses.dataclass
class Graphic:
    """One ``.graphic`` element as rendered: its size in CSS pixels (0 when not laid out)."""

    tag: str
    label: str
    width: float
    height: float
    loaded: bool  # an <img> decoded its picture; always True for <svg>

    @property
    def ok(self) -> bool:
        return self.width > 0 and self.height > 0 and self.loaded


@dataclasses.dataclass
class PageCheck:
    """What one page did and showed in Chromium, with no network."""

    path: pathlib.Path
    requests: list[str]
    console_errors: list[str]
    page_errors: list[str]
    verdict_visible: bool
    verdict_text: str | None
    graphics: list[Graphic]
    text: str
    screenshot: pathlib.Path

    def problems(self, *, graphics: bool = True) -> list[str]:
        """Everything a person would object to: a request, an error, no verdict, an
        empty graphic (and, with `graphics`, no graphic at all)."""
        found = [f"request attempted: {url}" for url in self.requests]
        found += [f"console error: {text}" for text in self.console_errors]
        found += [f"page error: {text}" for text in self.page_errors]
        if not self.verdict_visible:
            found.append("#verdict is missing or not visible")
        if graphics and not self.graphics:
            found.append("no element with class 'graphic'")
        found += [
            f"graphic {g.label} ({g.tag}) renders {g.width:g}x{g.height:g}"
            + ("" if g.loaded else ", its picture did not load")
            for g in self.graphics
            if not g.ok
        ]
        return found

    def assert_clean(self, *, graphics: bool = True) -> None:
        """Fails with every problem and the screenshot's path unless there are none."""
        problems = self.problems(graphics=graphics)
        if problems:
            raise AssertionError(
                f"{self.path.name} in Chromium:\n- "
                + "\n- ".join(problems)
                + f"\nscreenshot: {self.screenshot}"
            )

    def __repr__(self) -> str:  # what pytest shows for `assert ..., check`
        return (
            f"PageCheck({self.path.name}: requests={self.requests}, "
            f"console_errors={self.console_errors}, page_errors={self.page_errors}, "
            f"verdict={self.verdict_text!r} visible={self.verdict_visible}, "
            f"graphics={[(g.label, g.width, g.height, g.loaded) for g in self.graphics]}; "
            f"screenshot: {self.screenshot})"
        )


_GRAPHIC_FACTS = """el => ({
    tag: el.tagName.toLowerCase(),
    label: el.id || el.getAttribute('aria-label') || el.getAttribute('alt') || '',
    loaded: el.tagName.toLowerCase() !== 'img' || (el.complete && el.naturalWidth > 0),
})"""


class Browser:
    """Opens local HTML files in the session's Chromium, one fresh context per page."""

    def __init__(self, chromium: Any, screenshots: pathlib.Path, test_name: str) -> None:
        self._chromium = chromium
        self._screenshots = screenshots
        self._stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name).strip("_")[:100]
        self.opened: list[PageCheck] = []

    def open(self, path: str | os.PathLike[str], *, name: str | None = None) -> PageCheck:
        """Loads `path` with every request but the page itself and ``data:`` URLs
        aborted (and recorded); returns what it showed. `name` names the screenshot
        (default: the test's name, numbered)."""
        page_path = pathlib.Path(path).resolve()
        page_url = page_path.as_uri()
        requests: list[str] = []
        console_errors: list[str] = []
        page_errors: list[str] = []

        def route(route):
            url = route.request.url
            if url == page_url or url.startswith("data:"):
                route.continue_()
            else:
                requests.append(url)
                route.abort()

        context = self._chromium.new_context(viewport=VIEWPORT, service_workers="block")
        try:
            context.route("**/*", route)
            page = context.new_page()
            # Requests that never reach a route (a WebSocket) are recorded here.
            page.on("websocket", lambda ws: requests.append(ws.url))
            page.on(
                "console",
                lambda msg: console_errors.append(msg.text) if msg.type == "error" else None,
            )
            page.on("pageerror", lambda error: page_errors.append(str(error)))
            page.goto(page_url, wait_until="load")
            verdict = page.locator("#verdict")
            has_verdict = verdict.count() > 0
            graphics = []
            for i, element in enumerate(page.locator(".graphic").all()):
                facts = element.evaluate(_GRAPHIC_FACTS)
                box = element.bounding_box()
                graphics.append(
                    Graphic(
                        tag=facts["tag"],
                        label=facts["label"] or f"#{i}",
                        width=box["width"] if box else 0.0,
                        height=box["height"] if box else 0.0,
                        loaded=bool(facts["loaded"]),
                    )
                )
            stem = name if name is not None else f"{self._stem}-{len(self.opened)}"
            shot = self._screenshots / f"{stem}.png"
            page.screenshot(path=str(shot), full_page=True)
            check = PageCheck(
                path=page_path,
                requests=requests,
                console_errors=console_errors,
                page_errors=page_errors,
                verdict_visible=has_verdict and verdict.first.is_visible(),
                verdict_text=verdict.first.inner_text().strip() if has_verdict else None,
                graphics=graphics,
                text=page.locator("body").inner_text(),
                screenshot=shot,
            )
        finally:
            context.close()
        self.opened.append(check)
        return check


class _Session:
    """The session's one Chromium, launched on first use; or why it cannot be had."""

    def __init__(self) -> None:
        self.chromium: Any = None
        self.unavailable: str | None = None
        self._playwright: Any = None

    def launch(self) -> Any:
        if self.chromium is None and self.unavailable is None:
            self.unavailable = self._launch()
        if self.unavailable is not None:
            pytest.skip(f"no headless browser: {self.unavailable}")
        return self.chromium

    def _launch(self) -> str | None:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as e:
            return f"Playwright is not installed ({e}); pip install playwright"
        executable, origin = find_chromium()
        if executable is None:
            return origin
        try:
            self._playwright = sync_playwright().start()
            # chromium_sandbox=False: Playwright then passes --no-sandbox, which
            # Chromium needs when run as root (CI's user).
            self.chromium = self._playwright.chromium.launch(
                executable_path=executable, headless=True, chromium_sandbox=False
            )
        except Exception as e:  # noqa: BLE001 - any launch failure means no browser
            self.close()
            return f"Chromium {executable} ({origin}) did not start: {e}"
        return None

    def close(self) -> None:
        if self.chromium is not None:
            self.chromium.close()
            self.chromium = None
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None


@pytest.fixture(scope="session")
def _chromium_session():
    session = _Session()
    yield session
    session.close()


@pytest.fixture(scope="session")
def _screenshot_dir(request, tmp_path_factory) -> pathlib.Path:
    chosen = request.config.getoption(_SCREENSHOTS_OPTION, default=None)
    if chosen is None:
        return tmp_path_factory.mktemp("browser-screenshots")
    folder = pathlib.Path(chosen).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def browser(request, _chromium_session, _screenshot_dir) -> Browser:
    """A :class:`Browser` on the session's headless Chromium; skips the test if there is none."""
    opened = Browser(_chromium_session.launch(), _screenshot_dir, request.node.name)
    request.node._browser_pages = opened.opened
    return opened


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test that opened pages gets their screenshots' paths in its report."""
    outcome = yield
    report = outcome.get_result()
    pages = getattr(item, "_browser_pages", None)
    if report.failed and pages:
        report.sections.append(
            ("browser screenshots", "\n".join(str(page.screenshot) for page in pages))
        )
