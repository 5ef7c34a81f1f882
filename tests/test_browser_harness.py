"""tests/browser.py: the offline headless Chromium reports what a page did and showed."""

from __future__ import annotations

import base64
import os
import stat

import pytest

import browser as browser_module

# A 2x1 PNG (one red, one blue pixel), so an <img> can load from a data: URL.
PNG_2X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwPCfAQAG+gH/OKlkXAAAAABJRU5ErkJggg=="
)


def _page(tmp_path, body: str, name: str = "page.html"):
    path = tmp_path / name
    path.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'></head><body>{body}</body></html>"
    )
    return path


SVG = (
    "<svg class='graphic' id='bars' width='120' height='40' viewBox='0 0 120 40'>"
    "<rect x='0' y='0' width='60' height='40' fill='teal'/></svg>"
)
VERDICT = "<p id='verdict'>MATCH</p>"


def test_a_self_contained_page_is_clean(browser, tmp_path):
    data_url = "data:image/png;base64," + base64.b64encode(PNG_2X1).decode()
    img = f"<img class='graphic' id='pixels' src='{data_url}' width='40' height='20'>"
    check = browser.open(_page(tmp_path, VERDICT + SVG + img))
    check.assert_clean()
    assert check.requests == [] and check.console_errors == [] and check.page_errors == []
    assert check.verdict_visible and check.verdict_text == "MATCH"
    sizes = {g.label: (g.tag, g.width, g.height, g.loaded) for g in check.graphics}
    assert sizes == {"bars": ("svg", 120, 40, True), "pixels": ("img", 40, 20, True)}
    assert "MATCH" in check.text
    assert check.screenshot.is_file() and check.screenshot.stat().st_size > 0


def test_a_remote_image_is_a_blocked_request(browser, tmp_path):
    img = "<img class='graphic' id='remote' src='https://example.com/x.png' width='10' height='10'>"
    check = browser.open(_page(tmp_path, VERDICT + img))
    assert check.requests == ["https://example.com/x.png"], check
    (graphic,) = check.graphics
    assert not graphic.loaded and not graphic.ok
    problems = check.problems()
    assert "request attempted: https://example.com/x.png" in problems
    assert any("did not load" in p for p in problems)
    with pytest.raises(AssertionError, match="screenshot: ") as raised:
        check.assert_clean()
    assert str(check.screenshot) in str(raised.value) and check.screenshot.is_file()


def test_a_sibling_file_and_a_fetch_are_blocked_too(browser, tmp_path):
    (tmp_path / "style.css").write_text("body { color: red }")
    body = VERDICT + SVG + "<script>fetch('https://example.com/data.json').catch(() => {})</script>"
    page = _page(tmp_path, body.replace("<p", "<link rel='stylesheet' href='style.css'><p", 1))
    check = browser.open(page)
    assert sorted(check.requests) == [
        (tmp_path / "style.css").as_uri(),
        "https://example.com/data.json",
    ]


def test_console_errors_and_page_errors_are_reported(browser, tmp_path):
    script = "<script>console.error('boom'); console.log('fine'); undefinedName();</script>"
    check = browser.open(_page(tmp_path, VERDICT + SVG + script))
    assert check.requests == []
    assert check.console_errors == ["boom"], check
    assert len(check.page_errors) == 1 and "undefinedName" in check.page_errors[0]


def test_a_hidden_verdict_and_an_empty_graphic_are_reported(browser, tmp_path):
    body = (
        "<p id='verdict' style='display:none'>DIFFER</p>"
        "<svg class='graphic' id='empty' width='0' height='30'></svg>"
    )
    check = browser.open(_page(tmp_path, body))
    assert not check.verdict_visible and check.verdict_text == "DIFFER"
    assert check.problems() == [
        "#verdict is missing or not visible",
        "graphic empty (svg) renders 0x30",
    ]


def test_no_verdict_and_no_graphic(browser, tmp_path):
    check = browser.open(_page(tmp_path, "<p>nothing here</p>"))
    assert check.verdict_text is None and not check.verdict_visible
    assert check.problems() == [
        "#verdict is missing or not visible",
        "no element with class 'graphic'",
    ]
    assert check.problems(graphics=False) == ["#verdict is missing or not visible"]


def test_chromium_named_by_the_environment(monkeypatch, tmp_path):
    fake = tmp_path / "my-chromium"
    monkeypatch.setenv(browser_module.CHROMIUM_ENV, str(fake))
    executable, why = browser_module.find_chromium()
    assert executable is None and "not an executable file" in why
    fake.write_bytes(b"\x7fELF")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    assert browser_module.find_chromium() == (str(fake), "$QP_CHROMIUM")


def test_a_launcher_script_on_path_is_replaced_by_its_binary(monkeypatch):
    monkeypatch.delenv(browser_module.CHROMIUM_ENV, raising=False)
    executable, why = browser_module.find_chromium()
    if executable is None:
        pytest.skip(why)
    assert os.access(executable, os.X_OK)
    with open(executable, "rb") as f:
        assert f.read(2) != b"#!", (executable, why)
