"""The comparison page (`ComparisonReport.to_html`, `compare --html`, the plugin's pages).

Pages are read as text: the verdict, the words, the marked rows and tiles,
the graphics, and that nothing in them points elsewhere. How a browser shows
them is `test_compare_browser.py`'s part.
"""

from __future__ import annotations

import html
import re
import struct
import zlib

import numpy as np
import pytest
import tensorflow as tf

import compare_images as C
import queue_pipeline as qp
from queue_pipeline import cli
from queue_pipeline._compare import png, samples, svg
from queue_pipeline.compare import compare

pytest_plugins = ["pytester"]

T = 20.0  # seconds per fetch


def assert_self_contained(text: str) -> None:
    """No address of anything elsewhere: every src/href is data: or #fragment."""
    assert "http://" not in text and "https://" not in text
    assert "<script" not in text.lower() and "@import" not in text and "url(" not in text
    for attr in re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', text):
        assert attr.startswith(("data:", "#")), attr


def page_of(report, tmp_path, name="page.html", **kwargs) -> str:
    path = report.to_html(tmp_path / name, **kwargs)
    text = open(path, encoding="utf-8").read()
    assert_self_contained(text)
    return text


def verdict(text: str) -> str:
    match = re.search(r'<p id="verdict" class="(\w+)">([^<]*)</p>', text)
    assert match, text[:400]
    return match.group(2)


def image_rows(text: str, path: str) -> dict[str, str]:
    """The image strips drawn for component `path`, by alt text."""
    found = re.findall(r'<img class="graphic strip" alt="([^"]*)"[^>]*src="(data:[^"]*)"', text)
    return {alt: src for alt, src in found if alt.startswith(path + " ")}


def decode_png(uri: str) -> np.ndarray:
    """Reads the pixels of an 8-bit PNG written by png.encode (filter 0, one IDAT)."""
    import base64

    data = base64.b64decode(uri.split(",", 1)[1])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = body
        pos += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8
    channels = {0: 1, 2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8)
    rows = raw.reshape(height, 1 + width * channels)
    assert not rows[:, 0].any()  # filter type 0
    return rows[:, 1:].reshape(height, width, channels)


# ---------------------------------------------------------------- the pieces


@pytest.mark.parametrize("shape", [(5, 7), (4, 6, 3), (3, 2, 4)], ids=["grey", "rgb", "rgba"])
def test_png_round_trips(shape):
    pixels = np.random.default_rng(0).integers(0, 256, size=shape).astype(np.uint8)
    back = decode_png(png.data_uri(pixels))
    assert np.array_equal(back.reshape(shape), pixels)
    with pytest.raises(ValueError, match="uint8"):
        png.encode(pixels.astype(np.float32))


def test_tiles_are_downscaled_and_marked():
    big = np.random.default_rng(1).random([300, 200, 3])
    tile = png.tile(big, 0.0, 1.0)
    assert tile.shape == (60, 40, 3) and tile.dtype == np.uint8
    blocks = big.reshape(60, 5, 40, 5, 3).mean(axis=(1, 3))  # 5x5 block means
    assert np.allclose(png.downscale(big), blocks)
    assert np.array_equal(tile, np.rint(blocks * 255).astype(np.uint8))
    assert png.tile(np.full([4, 4, 1], np.nan), 0.0, 1.0).shape == (4, 4)
    strip = png.strip([tile, None], [True, False])
    assert strip.shape == (66, 2 * 46, 3)
    assert tuple(strip[0, 0]) == png.MARK and tuple(strip[0, 46]) == (255, 255, 255)


def test_svg_charts_escape_their_text_and_are_graphics():
    title = "<b>&'x\""
    charts = [
        svg.histogram({"legacy": np.arange(10.0), "twin": np.arange(10.0) + 0.5}, title=title),
        svg.histogram({"legacy": np.array([np.nan])}, title=title),
        svg.bars(["1", "2"], {"legacy": [3, 4], "twin": [3, 5]}, title=title, marked=[0, 1]),
        svg.scatter(
            np.array([[0, 1], [1, 0]]),
            title=title,
            xlabel="x",
            ylabel="y",
            xmax=1,
            ymax=1,
            color="#000",
        ),
        svg.lines({"legacy": np.array([[0, 0], [1, 2]])}, title=title, xlabel="s", ylabel="n"),
    ]
    for chart in charts:
        assert chart.startswith('<svg class="graphic"') and chart.endswith("</svg>")
        assert "<b>" not in chart and html.escape(title) in chart
        assert_self_contained(chart)


def test_image_shapes_are_parsed_and_checked():
    assert samples.parse_image_shape("0=28x28") == ("[0]", (28, 28))
    assert samples.parse_image_shape("image=4x5x3") == ("[image]", (4, 5, 3))
    assert samples.parse_image_shape("[a][b]=2x2x1") == ("[a][b]", (2, 2, 1))
    for bad in ("0=28", "28x28", "0=4x4x2", "0=0x3"):
        with pytest.raises(ValueError, match="HxW"):
            samples.parse_image_shape(bad)
    with pytest.raises(ValueError, match="image_shapes"):
        compare(C.legacy_images, C.twin_match, image_shapes={"0": (4, 4, 5)})


# ---------------------------------------------------------------- pages of comparisons


def test_a_matching_page(tmp_path):
    report = compare(C.legacy_images, C.twin_match, timeout=T)
    assert report.matched
    text = page_of(report, tmp_path)
    assert verdict(text) == "MATCH"
    assert "Both sides deliver the same 12 example(s), in the same order." in text
    assert "Explained" not in text and 'class="differs"' not in text
    for section in ("values", "epochs", "images", "order", "throughput", "examples"):
        assert f'id="{section}"' in text
    rows = image_rows(text, "[0]")
    assert set(rows) == {"[0] legacy", "[0] twin", "[0] difference"}
    assert np.array_equal(decode_png(rows["[0] legacy"]), decode_png(rows["[0] twin"]))
    assert decode_png(rows["[0] difference"])[3:19, 3:19].max() == 0  # tile 0: no difference
    assert "framed red: differing (none)" in text
    # the samples behind it
    s = report.samples
    assert s.paired and s.paths == ["[0]", "[1]"]
    assert s.legacy.first_array("[0]").shape == (12, 16, 16, 3)
    assert np.array_equal(s.legacy.first_array("[0]"), C.IMAGES)
    assert s.legacy.values["[1]"].tolist() == C.LABELS.astype(float).tolist()
    assert s.legacy.order.tolist() == [[i, i] for i in range(12)] == s.twin.order.tolist()
    assert s.twin.timeline[-1, 1] == 12 and np.all(np.diff(s.twin.timeline[:, 0]) >= 0)
    assert "samples" not in report.to_dict() and '"samples"' not in report.to_json()


@pytest.mark.parametrize("twin", ["twin_flipped", "twin_bgr", "twin_scaled"])
def test_a_slip_is_named_and_its_images_marked(tmp_path, twin):
    report = compare(C.legacy_images, getattr(C, twin), timeout=T)
    slip, words = C.SLIPS[twin]
    assert report.explanation is not None and report.explanation.slip == slip
    text = page_of(report, tmp_path)
    assert verdict(text).startswith("DIFFER")
    assert "First difference at example #0 (legacy batch 0)" in text
    assert f"Explained: {html.escape(report.explanation.text)}." in text and words in text
    assert 'class="differs"' in text  # the table's differing rows
    assert "framed red: differing (#0, #1, #2, #3, #4, #5, #6, #7, #8, #9, #10, #11)" in text
    rows = image_rows(text, "[0]")
    legacy, twin_row = decode_png(rows["[0] legacy"]), decode_png(rows["[0] twin"])
    assert tuple(legacy[0, 0]) == png.MARK == tuple(twin_row[0, 0])  # framed red
    assert not np.array_equal(legacy, twin_row)
    assert decode_png(rows["[0] difference"]).max() == 255  # the largest difference is white
    if twin == "twin_scaled":  # one value range for both sides: the twin is drawn dark
        assert "legacy values in [0, 1]; twin values in [0, 0.003922]" in text
        assert twin_row[3:19, 3:19].mean() < legacy[3:19, 3:19].mean() / 10  # tile 0


def test_flat_vectors_drawn_with_a_named_shape(tmp_path):
    images = C.IMAGES[..., 0].reshape(C.N, -1)  # 256 values each

    def legacy():
        (x,) = qp.slice_input_producer([tf.constant(images)], num_epochs=1, shuffle=False)
        return qp.batch([x], C.BATCH)

    def twin():
        return tf.data.Dataset.from_tensor_slices(images[:, ::-1].copy()).batch(C.BATCH)

    report = compare(legacy, twin, timeout=T)
    assert not report.matched
    assert 'id="images"' not in page_of(report, tmp_path, "plain.html")  # flat: not drawn
    text = page_of(report, tmp_path, "named.html", image_shapes={"": (16, 16)})
    rows = image_rows(text, "")  # a bare tensor's path is ''
    assert set(rows) == {" legacy", " twin", " difference"}
    assert decode_png(rows[" legacy"]).shape[:2] == (16 + 6, 12 * (16 + 6))
    wrong = page_of(report, tmp_path, "wrong.html", image_shapes={"": (10, 10)})
    assert not image_rows(wrong, "")  # 100 values are not 256: nothing is drawn, and why
    assert "Not drawn: (tensor): 10x10 does not fit its examples." in wrong
    with pytest.raises(ValueError, match="HxW"):
        report.to_html(tmp_path / "bad.html", image_shapes={"": (16, 16, 2)})


WORDS = [b"a", b"queue", b"pipeline", b"", b"tf.data <twin> & more", b"\xff\xfe"]


def _legacy_words():
    s = qp.string_input_producer(tf.constant(WORDS), num_epochs=1, shuffle=False).dequeue()
    return [s, tf.range(tf.strings.length(s))]


def _twin_words(upper=False):
    def twin():
        ds = tf.data.Dataset.from_tensor_slices(tf.constant(WORDS))
        if upper:
            ds = ds.map(tf.strings.upper)
        return ds.map(lambda s: (s, tf.range(tf.strings.length(s))))

    return twin


@pytest.mark.parametrize("upper", [False, True], ids=["match", "upper-cased"])
def test_strings_and_variable_lengths(tmp_path, upper):
    report = compare(_legacy_words, _twin_words(upper), timeout=T)
    assert report.matched is not upper, report.render()
    s = report.samples
    assert s.legacy.string_lengths["[0]"].tolist() == [len(w) for w in WORDS]
    assert s.legacy.sizes["[1]"].tolist() == [len(w) for w in WORDS]
    text = page_of(report, tmp_path)
    assert "[0]: string length (bytes)" in text and "[1]: values per example" in text
    assert "tf.data &lt;twin&gt; &amp; more" in text and "<twin>" not in text
    if upper:
        assert "TF.DATA &lt;TWIN&gt; &amp; MORE" in text
        marked = re.findall(r'<tr class="differs"><td>(\d+)</td>', text)
        assert marked == ["0", "1", "2", "4"]  # upper-cased; "" and non-ASCII bytes stay
    else:
        assert '<tr class="differs">' not in text


@pytest.mark.slow
def test_page_of_a_large_run_stays_small(tmp_path):
    n, side = 5000, 28
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, size=[n, side, side]).astype(np.uint8)
    labels = (np.arange(n) % 10).astype(np.int64)

    def legacy():
        x, y = qp.slice_input_producer(
            [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
        )
        return qp.batch([x, y], 100)

    def twin():
        return tf.data.Dataset.from_tensor_slices((images, labels)).skip(1).batch(100)

    report = compare(legacy, twin, timeout=T)
    assert report.explanation is not None and report.explanation.slip == "order_shift"
    s = report.samples
    for side_samples in (s.legacy, s.twin):
        assert len(side_samples.differs) == samples.FIRST_EXAMPLES
        assert all(len(v) <= samples.MAX_VALUES for v in side_samples.values.values())
        assert len(side_samples.order) <= samples.MAX_ORDER_POINTS
        assert 1 < len(side_samples.timeline) <= samples.MAX_TIMELINE_POINTS
    # a shifted order: the twin's delivered position k holds source record k + 1
    assert np.array_equal(s.twin.order[:, 1] - s.twin.order[:, 0], np.ones(len(s.twin.order)))
    text = page_of(report, tmp_path)
    assert len(text.encode()) < 1_000_000
    assert "shifted by 1" in text


@pytest.mark.slow
def test_large_images_are_downscaled(tmp_path):
    images = np.random.default_rng(4).integers(0, 256, size=[20, 300, 400, 3]).astype(np.uint8)

    def legacy():
        (x,) = qp.slice_input_producer([tf.constant(images)], num_epochs=1, shuffle=False)
        return qp.batch([x], 5)

    def twin():
        return tf.data.Dataset.from_tensor_slices(images).batch(5)

    text = page_of(compare(legacy, twin, timeout=T), tmp_path)
    strip = decode_png(image_rows(text, "")[" legacy"])
    factor = -(-400 // png.TILE_MAX_SIDE)  # block-averaged 7x7: 42x57 tiles
    assert strip.shape[0] == 300 // factor + 6  # and a 3-pixel frame above and below
    assert len(text.encode()) < 2_000_000


# ---------------------------------------------------------------- the command line


def test_cli_writes_the_page(tmp_path, capsys):
    page = tmp_path / "out" / "page.html"
    argv = ["compare", "compare_images:legacy_images", "compare_images:twin_flipped"]
    assert cli.main(argv + ["--html", str(page), "--timeout", str(T)]) == 1
    assert capsys.readouterr().out.startswith("queue_pipeline compare: DIFFER")
    text = page.read_text(encoding="utf-8")
    assert_self_contained(text)
    assert verdict(text).startswith("DIFFER") and "flipped left-right" in text


def test_cli_image_argument(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["compare", "m:l", "--image", "0=28"])
    assert "COMPONENT=HxW" in capsys.readouterr().err
    args = cli.build_parser().parse_args(
        ["compare", "m:l", "--image", "0=28x28", "--image", "image=4x4x3"]
    )
    assert dict(args.image) == {"[0]": (28, 28), "[image]": (4, 4, 3)}


# ---------------------------------------------------------------- the pytest plugin

PLUGIN_TESTS = """
import compare_images as C
import queue_pipeline as qp
from queue_pipeline.compare import compare
from queue_pipeline.testing import run_pipeline


def test_matching():
    compare(C.legacy_images, C.twin_match, timeout=20).assert_match()


def test_flipped():
    compare(C.legacy_images, C.twin_flipped, timeout=20).assert_match()


def test_bgr_checked_by_hand():
    report = compare(C.legacy_images, C.twin_bgr, timeout=20)
    assert report.matched


def test_snapshot(qp_graph, qp_snapshot):
    x = qp.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
    qp_snapshot(run_pipeline(qp.batch([x], VALUE), 1, timeout=20))
"""


@pytest.mark.slow
def test_plugin_writes_pages_of_failing_tests(pytester, monkeypatch):
    import pathlib

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent))  # compare_images
    pytester.makepyfile(test_pages=PLUGIN_TESTS.replace("VALUE", "2"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2, failed=2)  # no pages without the option
    assert not list(pytester.path.glob("**/*.html"))

    pytester.makepyfile(test_pages=PLUGIN_TESTS.replace("VALUE", "3"))  # the snapshot fails
    pages = pytester.path / "pages"
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-q", "--queue-pipeline-html-dir", str(pages)
    )
    result.assert_outcomes(passed=1, failed=3)
    written = sorted(p.name for p in pages.iterdir())
    assert written == [
        "test_pages.py_test_bgr_checked_by_hand.html",
        "test_pages.py_test_flipped.html",
        "test_pages.py_test_snapshot-snapshot.html",
    ]
    out = result.stdout.str()
    assert "queue_pipeline pages" in out and str(pages / written[1]) in out
    for name, words in zip(written, ("RGB vs BGR", "flipped left-right", "golden snapshot")):
        text = (pages / name).read_text(encoding="utf-8")
        assert_self_contained(text)
        assert verdict(text).startswith("DIFFER") and words in text
    snapshot = (pages / written[2]).read_text(encoding="utf-8")
    assert "example count differs" in snapshot  # 2 golden examples, 3 now
