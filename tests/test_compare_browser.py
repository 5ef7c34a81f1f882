"""The comparison page in a real headless Chromium, offline: what a person opening it sees.

For a matching twin and for three classic slips (flipped left-right, RGB vs
BGR, divided by 255) of one small image pipeline (``compare_images``), the
page ``ComparisonReport.to_html`` writes must load with no request at all and
no console or page error, show its verdict, draw every graphic at a non-zero
size, and name the slip in its text. ``--browser-screenshots DIR`` keeps a
screenshot of each page (``compare-<twin>.png``) to look at.
"""

from __future__ import annotations

import pytest

import compare_images as C
from queue_pipeline.compare import compare

T = 20.0  # seconds per fetch


@pytest.mark.parametrize("twin", sorted(C.SLIPS))
@pytest.mark.slow
def test_the_page_shows_its_verdict_offline(browser, tmp_path, twin):
    report = compare(C.legacy_images, getattr(C, twin), timeout=T)
    slip, words = C.SLIPS[twin]
    assert report.matched == (slip is None), report.render()
    page = report.to_html(tmp_path / f"{twin}.html")
    check = browser.open(page, name=f"compare-{twin}")
    check.assert_clean()
    assert check.verdict_visible
    assert check.verdict_text.startswith("MATCH" if slip is None else "DIFFER"), check
    # the images (legacy above twin) and the charts are drawn; the strips are <img>s
    tags = {g.tag for g in check.graphics}
    assert tags == {"svg", "img"}, check
    if slip is None:
        assert "explained" not in check.text.lower(), check
    else:
        assert report.explanation is not None and report.explanation.slip == slip
        assert words in check.text, check
