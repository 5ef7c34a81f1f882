"""queue_pipeline._compare.tensorboard: a comparison as TensorBoard runs, read back from disk."""

from __future__ import annotations

import collections
import dataclasses
import os

import numpy as np
import pytest
import tensorflow as tf

import compare_images as C
from helpers import tf1_mode
from queue_pipeline._compare import tensorboard
from queue_pipeline._compare.samples import MAX_VALUES
from queue_pipeline.compare import compare

T = 20.0  # seconds per fetch


def _read(folder) -> dict[str, list]:
    """The run's summary values by tag: a list of (step, value) in file order."""
    found = collections.defaultdict(list)
    files = [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
    assert files and all(os.path.basename(f).startswith("events.out.tfevents.") for f in files)
    for path in files:
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                found[value.tag].append((event.step, value))
    return dict(found)


def _text(value) -> str:
    assert value.metadata.plugin_data.plugin_name == "text"
    return value.tensor.string_val[0].decode()


@pytest.fixture(scope="module")
def reports():
    """One report per twin of compare_images, made once for the module."""
    return {name: compare(C.legacy_images, getattr(C, name), timeout=T) for name in C.SLIPS}


@pytest.mark.parametrize("twin", ["twin_match", "twin_flipped"])
def test_both_runs_hold_images_histograms_throughput_and_the_verdict(reports, tmp_path, twin):
    report = reports[twin]
    folders = report.to_tensorboard(tmp_path / "tb")  # the public entry point
    assert folders == {run: str(tmp_path / "tb" / run) for run in ("legacy", "twin")}
    for folder in folders.values():
        tags = _read(folder)
        # images of the first examples: the 12 RGB images in a row, 16x16 drawn 64x64
        # (TILE_SIDE), each in a 3-pixel frame
        ((step, value),) = tags["images/0"]
        assert step == 0 and value.image.colorspace == 3
        assert (value.image.width, value.image.height) == (12 * 70, 70)
        assert value.image.encoded_image_string.startswith(b"\x89PNG")
        # a histogram per numeric component: a sample of the 12 * 16 * 16 * 3 image
        # values (samples.MAX_VALUES of them), all 12 labels
        for tag, count in (("values/0", MAX_VALUES), ("values/1", 12)):
            ((_, hist),) = tags[tag]
            assert hist.histo.num == count and sum(hist.histo.bucket) == count
            assert len(hist.histo.bucket_limit) == tensorboard.HISTOGRAM_BUCKETS
        assert tags["values/1"][0][1].histo.min == 0 and tags["values/1"][0][1].histo.max == 4
        # throughput: examples delivered over time (0, then after each of 3 batches)
        delivered = [v.simple_value for _, v in tags["throughput/examples delivered"]]
        assert delivered == [0, 4, 8, 12]
        steps = [s for s, _ in tags["throughput/examples delivered"]]
        assert steps == sorted(steps)
        rates = tags["throughput/examples per second"]
        assert [s for s, _ in rates] == [4, 8, 12] and all(v.simple_value > 0 for _, v in rates)
        means = tags["throughput/mean examples per second"]
        assert [s for s, _ in means] == [0, 12]  # a level line over the run
        assert means[0][1].simple_value == means[1][1].simple_value > 0
        # the verdict, the same in both runs
        ((_, verdict),) = tags["verdict"]
        text = _text(verdict)
        if twin == "twin_match":
            assert text.startswith("**MATCH**") and "Explained" not in text
        else:
            assert text.startswith("**DIFFER**")
            assert "Explained: the twin's images (component [0]) are the legacy's flipped" in text
        assert "    queue_pipeline compare: " in text  # the table, as a code block


def test_histograms_share_their_buckets_and_show_a_scale_slip(reports, tmp_path):
    folders = tensorboard.write_summaries(reports["twin_scaled"], tmp_path)
    legacy, twin = (_read(folders[run])["values/0"][0][1].histo for run in ("legacy", "twin"))
    assert list(legacy.bucket_limit) == list(twin.bucket_limit)
    assert legacy.max == pytest.approx(1.0) and twin.max == pytest.approx(1 / 255)
    assert twin.bucket[0] == twin.num  # every twin value falls in the lowest bucket
    assert "twin = legacy / 255" in _text(_read(folders["twin"])["verdict"][0][1])


def test_differing_examples_are_framed_and_images_share_one_range(reports, tmp_path):
    """Both runs draw 0..1 as black..white: the scaled twin's strip is darker, and
    its differing examples carry the red frame (decoded with the PNG's own zlib data)."""
    import zlib

    def pixels(folder):
        image = _read(folder)["images/0"][0][1].image
        data = image.encoded_image_string
        chunks, pos = b"", 8
        while pos < len(data):
            size = int.from_bytes(data[pos : pos + 4], "big")
            if data[pos + 4 : pos + 8] == b"IDAT":
                chunks += data[pos + 8 : pos + 8 + size]
            pos += 12 + size
        rows = np.frombuffer(zlib.decompress(chunks), np.uint8)
        return rows.reshape(image.height, -1)[:, 1:].reshape(image.height, image.width, 3)

    folders = tensorboard.write_summaries(reports["twin_scaled"], tmp_path)
    legacy, twin = pixels(folders["legacy"]), pixels(folders["twin"])
    inner = np.s_[3:67, 3:67]  # the first tile, inside its frame
    assert legacy[inner].mean() > 4 * twin[inner].mean()
    red = np.array([214, 39, 40], np.uint8)
    assert (twin[0, 0] == red).all() and (legacy[0, 0] == red).all()  # all 12 differ
    matched = tensorboard.write_summaries(reports["twin_match"], tmp_path / "match")
    assert (pixels(matched["twin"])[0, 0] == 255).all()  # no frame where nothing differs


def test_the_default_graph_is_left_alone(reports, tmp_path):
    graph = tf.compat.v1.get_default_graph()
    before = len(graph.get_operations())
    eager = tf.executing_eagerly()
    tensorboard.write_summaries(reports["twin_flipped"], tmp_path)
    assert tf.compat.v1.get_default_graph() is graph and len(graph.get_operations()) == before
    assert tf.executing_eagerly() == eager == (not tf1_mode())


def test_a_logdir_that_holds_summaries_is_refused(reports, tmp_path):
    tensorboard.write_summaries(reports["twin_match"], tmp_path)
    with pytest.raises(ValueError, match="`logdir`.*already holds summaries.*new folder"):
        tensorboard.write_summaries(reports["twin_match"], tmp_path)


def test_a_report_without_samples_gets_the_verdict_and_mean_throughput(reports, tmp_path):
    bare = dataclasses.replace(reports["twin_match"], samples=None)
    folders = tensorboard.write_summaries(bare, tmp_path)
    for folder in folders.values():
        tags = _read(folder)
        assert sorted(tags) == ["throughput/mean examples per second", "verdict"]


def test_tags_name_components_without_brackets():
    assert tensorboard.tag_of("[0]") == "0"
    assert tensorboard.tag_of("[image][1]") == "image/1"
    assert tensorboard.tag_of("") == "tensor"


def test_cli_logdir(tmp_path, capsys):
    from queue_pipeline import cli

    argv = ["compare", "compare_images:legacy_images", "compare_images:twin_bgr"]
    code = cli.main([*argv, "--timeout", str(T), "--logdir", str(tmp_path / "tb")])
    assert code == 1, capsys.readouterr()
    assert "RGB vs BGR" in capsys.readouterr().out
    for run in ("legacy", "twin"):
        tags = _read(tmp_path / "tb" / run)
        assert {"images/0", "values/0", "values/1", "verdict"} <= set(tags)
        assert "throughput/examples delivered" in tags
        assert "RGB vs BGR" in _text(tags["verdict"][0][1])
    # a second run into the same folder is an error (exit 2), nothing is mixed
    assert cli.main([*argv, "--timeout", str(T), "--logdir", str(tmp_path / "tb")]) == 2
    assert "already holds summaries" in capsys.readouterr().err
