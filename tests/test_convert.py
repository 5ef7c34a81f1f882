"""queue_pipeline.convert on images:DIR and csv:FILE: the TPU format, exactly once, bad input.

The conversions run on Beam's DirectRunner in one in-process worker
(convert_helpers.IN_MEMORY) except the slow tests, which run the default (a
worker thread per core) and a worker process per core.
"""

from __future__ import annotations

import io
import json
import os

import pytest
from convert_helpers import IN_MEMORY, image_bytes, make_image_tree, parse_image_records, records_of
from PIL import Image

import queue_pipeline as qp
from queue_pipeline import cli


def _convert(source, out, **kwargs):
    kwargs.setdefault("beam_options", IN_MEMORY)
    return qp.convert(source, str(out), **kwargs)


def _all(directory, compression=None) -> list[dict]:
    return [
        r for recs in records_of(directory, compression).values() for r in parse_image_records(recs)
    ]


@pytest.fixture
def tree(tmp_path):
    made = make_image_tree(tmp_path / "images")
    return tmp_path / "images", made


def test_images_dir_tpu_format(tree, tmp_path):
    root, made = tree
    result = _convert(f"images:{root}", tmp_path / "out", shards=3)
    assert result.counts == {"train": len(made)} and result.errors == [] and result.verified
    assert result.shards["train"] == [f"train-0000{i}-of-00003" for i in range(3)]
    back = _all(tmp_path / "out")
    assert sorted(r["image/filename"].decode() for r in back) == sorted(
        os.path.basename(p) for p in made
    )
    by_key = {(r["image/class/synset"].decode(), r["image/filename"].decode()): r for r in back}
    for rel, (name, height, width, data) in made.items():
        r = by_key[(name, os.path.basename(rel))]
        assert r["image/class/label"] == ("cat", "dog").index(name) + 1  # 1-based
        assert (r["image/height"], r["image/width"], r["image/channels"]) == (height, width, 3)
        assert (r["image/format"], r["image/colorspace"]) == (b"JPEG", b"RGB")
        if rel.endswith(".jpg"):
            assert r["image/encoded"] == data  # an RGB JPEG is stored byte for byte
        else:  # a PNG is re-encoded as a JPEG of the same size
            decoded = Image.open(io.BytesIO(r["image/encoded"]))
            assert (decoded.format, decoded.size) == ("JPEG", (width, height))
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["records"] == {
        "listed": 8, "written": 8, "errors": 0, "ignored": 0, "reencoded": {"PNG image": 2}
    }  # fmt: skip
    assert manifest["classes"] == ["cat", "dog"] and manifest["version"] == qp.__version__
    assert sum(s["count"] for s in manifest["splits"]["train"]["shards"]) == 8
    assert manifest["features"]["image/class/label"] == {"dtype": "int64", "shape": []}
    assert not [p for p in os.listdir(tmp_path / "out") if p.startswith(".")]  # temp dir gone


def test_bad_input_is_counted_listed_and_the_job_goes_on(tree, tmp_path):
    root, made = tree
    (root / "cat" / "corrupt.jpg").write_bytes(image_bytes(1)[:40])  # truncated
    os.symlink(tmp_path / "missing.jpg", root / "dog" / "gone.jpg")  # unreadable
    (root / "dog" / "notes.txt").write_text("not an image")
    result = _convert(f"images:{root}", tmp_path / "out", shards=2)
    assert result.written == len(made)
    reasons = {e["record"]: e["reason"] for e in result.errors}
    assert set(reasons) == {"cat/corrupt.jpg", "dog/gone.jpg"}
    assert reasons["cat/corrupt.jpg"].startswith("corrupt image")
    assert reasons["dog/gone.jpg"].startswith("unreadable file")
    lines = (tmp_path / "out" / "errors.jsonl").read_text().splitlines()
    assert [json.loads(line)["record"] for line in lines] == sorted(reasons)
    assert json.loads(lines[0])["file"] == str(root / "cat" / "corrupt.jpg")
    records = result.manifest["records"]
    assert records == {
        "listed": 10, "written": 8, "errors": 2, "ignored": 1, "reencoded": {"PNG image": 2}
    }  # fmt: skip
    assert result.report().splitlines()[1:] == [
        "  train: 8 records in 2 shards",
        "  10 source records: 8 written, 2 bad (listed in errors.jsonl), 1 non-image file ignored",
        "  re-encoded as RGB JPEG: 2 (2 PNG image); every RGB or grayscale JPEG stored byte for "
        "byte",
        "  verified: every record read back once",
    ]


def test_grayscale_jpegs_are_stored_byte_for_byte_and_each_re_encode_is_counted(tmp_path):
    """NOTE [ What a conversion re-encodes ]: RGB and grayscale JPEGs keep their bytes
    (decode_jpeg(channels=3) reads a grayscale stream as 3 channels); a CMYK JPEG
    and a PNG are re-encoded as RGB JPEGs and counted by reason in the manifest."""
    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415

    rng = np.random.default_rng(2)
    source = Image.fromarray(rng.integers(0, 255, (10, 12, 3), dtype=np.uint8))
    made = {}
    (tmp_path / "images" / "a").mkdir(parents=True)
    for name, mode, fmt in (("rgb.jpg", "RGB", "JPEG"), ("gray.jpg", "L", "JPEG"),
                            ("cmyk.jpg", "CMYK", "JPEG"), ("gray.png", "L", "PNG")):  # fmt: skip
        buffer = io.BytesIO()
        source.convert(mode).save(buffer, format=fmt, quality=90)
        made[name] = buffer.getvalue()
        (tmp_path / "images" / "a" / name).write_bytes(made[name])
    result = _convert(f"images:{tmp_path / 'images'}", tmp_path / "out", shards=1)
    back = {r["image/filename"].decode(): r for r in _all(tmp_path / "out")}
    assert back["rgb.jpg"]["image/encoded"] == made["rgb.jpg"]
    assert back["gray.jpg"]["image/encoded"] == made["gray.jpg"]  # was re-encoded, lossy
    for name in ("cmyk.jpg", "gray.png"):
        again = Image.open(io.BytesIO(back[name]["image/encoded"]))
        assert (again.format, again.mode, again.size) == ("JPEG", "RGB", (12, 10))
    for record in back.values():  # what the readers' decode makes of each (either TF mode)
        assert (record["image/channels"], record["image/colorspace"]) == (3, b"RGB")
        with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
            decoded = tf.io.decode_jpeg(record["image/encoded"], channels=3)
            assert tuple(sess.run(tf.shape(decoded))) == (10, 12, 3)
    reencoded = {"CMYK JPEG": 1, "PNG image": 1}
    assert result.manifest["records"]["reencoded"] == reencoded
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["records"]["reencoded"] == reencoded
    assert "  re-encoded as RGB JPEG: 2 (1 CMYK JPEG, 1 PNG image)" in result.report()


def test_split_and_shards_place_each_record_exactly_once(tree, tmp_path):
    root, made = tree
    result = _convert(
        f"images:{root}",
        tmp_path / "out",
        split="train=0.5,validation=0.5",
        shards="train=3,validation=2",
    )
    shards = records_of(tmp_path / "out")
    assert sorted(shards) == [f"train-0000{i}-of-00003" for i in range(3)] + [
        f"validation-0000{i}-of-00002" for i in range(2)
    ]
    names = [
        (r["image/class/synset"], r["image/filename"])
        for recs in shards.values()
        for r in parse_image_records(recs)
    ]
    assert len(names) == len(set(names)) == len(made)
    assert result.counts["train"] + result.counts["validation"] == len(made)
    for split, count in result.counts.items():
        assert count == sum(len(v) for k, v in shards.items() if k.startswith(split))


def test_reruns_are_byte_identical(tree, tmp_path):
    root, _ = tree
    kwargs = {"split": "train=0.7,validation=0.3", "shards": 2}
    _convert(f"images:{root}", tmp_path / "a", **kwargs)
    _convert(f"images:{root}", tmp_path / "b", **kwargs)
    a, b = records_of(tmp_path / "a"), records_of(tmp_path / "b")
    assert a == b
    for name in a:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [[], ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]],
    ids=["default-threads", "processes"],
)
def test_default_runner_on_every_core_writes_the_same_bytes(tree, tmp_path, options):
    """A thread per core (the default), two processes and one in-process worker write
    identical shards."""
    root, _ = tree
    _convert(f"images:{root}", tmp_path / "one", shards=2)
    result = qp.convert(f"images:{root}", str(tmp_path / "all"), shards=2, beam_options=options)
    assert result.verified and result.manifest["runner"] == "DirectRunner"
    for name in result.shards["train"]:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "all" / name).read_bytes()


def test_csv_with_labels_file(tmp_path):
    os.makedirs(tmp_path / "img")
    for i in range(4):
        (tmp_path / "img" / f"{i}.jpg").write_bytes(image_bytes(i))
    (tmp_path / "labels.txt").write_text("n01\nn02\nn03\n")
    (tmp_path / "list.csv").write_text(
        "img/0.jpg,n03\nimg/1.jpg,n01\nimg/2.jpg,n99\nimg/3.jpg\n\nimg/0.jpg,n03\n"
    )
    result = _convert(
        f"csv:{tmp_path / 'list.csv'}", tmp_path / "out", labels=str(tmp_path / "labels.txt")
    )
    back = sorted(
        (r["image/filename"], r["image/class/label"], r["image/class/synset"])
        for r in _all(tmp_path / "out")
    )
    # the repeated row is a second record (its identity gets '#2'), not a duplicate
    assert back == [(b"0.jpg", 3, b"n03"), (b"0.jpg", 3, b"n03"), (b"1.jpg", 1, b"n01")]
    reasons = sorted((e["record"], e["reason"]) for e in result.errors)
    assert reasons[0][0] == "list.csv:3" and "not in `labels`" in reasons[0][1]
    assert reasons[1][0] == "list.csv:4" and "1 fields" in reasons[1][1]
    assert result.manifest["classes"] == ["n01", "n02", "n03"]


def test_csv_without_labels_sorts_the_classes(tmp_path):
    (tmp_path / "a.jpg").write_bytes(image_bytes(0))
    (tmp_path / "list.csv").write_text("path,label\na.jpg,zebra\na.jpg,ant\n")
    result = _convert(f"csv:{tmp_path / 'list.csv'}", tmp_path / "out")
    labels = sorted(
        (r["image/class/synset"], r["image/class/label"]) for r in _all(tmp_path / "out")
    )
    assert labels == [(b"ant", 1), (b"zebra", 2)] and result.errors == []


@pytest.mark.parametrize("bad", ["corrupt", "row"], ids=["worker-error", "listing-error"])
def test_on_error_fail_stops_and_leaves_no_shards(tree, tmp_path, bad):
    root, _ = tree
    if bad == "corrupt":
        (root / "cat" / "corrupt.jpg").write_bytes(b"\xff\xd8\xff garbage")
        source, where = f"images:{root}", "corrupt.jpg"
    else:
        (tmp_path / "list.csv").write_text(f"{root}/cat/0.jpg,cat\n{root}/cat/1.jpg\n")
        source, where = f"csv:{tmp_path / 'list.csv'}", "list.csv"
    with pytest.raises(qp.ConvertError, match=where):
        _convert(source, tmp_path / "out", shards=2, on_error="fail")
    assert os.listdir(tmp_path / "out") == []


def test_non_empty_out_is_refused_and_overwrite_replaces_only_its_own_files(tree, tmp_path):
    root, _ = tree
    out = tmp_path / "out"
    _convert(f"images:{root}", out, shards=3)
    (out / "README").write_text("the user's")
    with pytest.raises(FileExistsError, match="overwrite"):
        _convert(f"images:{root}", out, shards=1)
    assert len(records_of(out)) == 3  # untouched
    _convert(f"images:{root}", out, shards=1, overwrite=True)
    assert sorted(os.listdir(out)) == [
        "README",
        "errors.jsonl",
        "manifest.json",
        "train-00000-of-00001",
    ]


def test_gzip_shards(tree, tmp_path):
    root, made = tree
    result = _convert(f"images:{root}", tmp_path / "out", compression="GZIP", shards=2)
    assert result.manifest["compression"] == "GZIP"
    raw = (tmp_path / "out" / result.shards["train"][0]).read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # gzip magic
    assert len(_all(tmp_path / "out", "GZIP")) == len(made)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"split": "train=0.5,validation=0.4"}, "split"),
        ({"split": "train"}, "split"),
        ({"shards": 0}, "shards"),
        ({"shards": "validation=2"}, "shards"),
        ({"compression": "LZ4"}, "compression"),
        ({"on_error": "skip"}, "on_error"),
    ],
)
def test_bad_arguments_name_themselves(tree, tmp_path, kwargs, match):
    root, _ = tree
    with pytest.raises(ValueError, match=match):
        _convert(f"images:{root}", tmp_path / "out", **kwargs)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("source", ["images:/no/such/dir", "tiff:x", "nocolon"])
def test_bad_sources(tmp_path, source):
    with pytest.raises(ValueError, match="source"):
        _convert(source, tmp_path / "out")


def test_cli_convert(tree, tmp_path, capsys):
    root, made = tree
    (root / "cat" / "corrupt.jpg").write_bytes(b"\xff\xd8 no")
    out, reader = tmp_path / "out", tmp_path / "reader.py"
    argv = [
        "convert",
        f"images:{root}",
        "--out",
        str(out),
        "--shards",
        "2",
        "--split",
        "train=0.75,validation=0.25",
        "--emit-reader",
        str(reader),
        "--",
        *IN_MEMORY,
    ]
    assert cli.main(argv) == 1  # done, with a bad record
    captured = capsys.readouterr()
    assert "def input_fn(" in captured.out and captured.out == reader.read_text()
    assert "1 bad (listed in errors.jsonl)" in captured.err
    assert cli.main(argv) == 2  # a non-empty --out
    assert "--overwrite" in capsys.readouterr().err
    assert cli.main([*argv[:-2], "--overwrite", "--on-error", "fail", "--", *IN_MEMORY]) == 2
    assert "corrupt.jpg" in capsys.readouterr().err
    assert len(_all(out)) == len(made)  # the failed rerun replaced nothing


def test_beam_options_default_to_every_local_core_and_pass_the_rest_through():
    from queue_pipeline._convert.pipeline import beam_options

    cores = os.cpu_count() or 1
    mode = "multi_threading" if cores > 1 else "in_memory"
    assert beam_options(None, []) == [
        f"--direct_num_workers={cores}",
        f"--direct_running_mode={mode}",
    ]
    assert beam_options(None, ["--direct_num_workers=1"])[0] == "--direct_num_workers=1"
    dataflow = ["--project", "p", "--temp_location=gs://b/t"]
    # the runner by its class's full path (NOTE [ Runners by name ] in runners.py)
    path = "--runner=apache_beam.runners.dataflow.dataflow_runner.DataflowRunner"
    assert beam_options("DataflowRunner", dataflow) == [*dataflow, path]
    flink = ["--runner", "FlinkRunner", "--flink_master=h:8081"]
    assert beam_options(None, flink) == [  # no DirectRunner defaults for another runner
        "--flink_master=h:8081",
        "--runner=apache_beam.runners.portability.flink_runner.FlinkRunner",
    ]


def test_cli_passes_everything_after_the_double_dash_to_beam():
    args = cli.build_parser().parse_args(
        [
            "convert",
            "images:x",
            "--out",
            "o",
            "--shards",
            "4",
            "--",
            "--runner",
            "FlinkRunner",
            "--out",
            "not-ours",
        ]
    )
    assert (args.out, args.shards) == ("o", "4")
    assert args.beam_args == ["--runner", "FlinkRunner", "--out", "not-ours"]


def test_without_beam_the_error_says_what_to_install(tree, tmp_path, monkeypatch):
    import sys

    import queue_pipeline._convert as package

    monkeypatch.setitem(sys.modules, "apache_beam", None)  # `import apache_beam` fails
    monkeypatch.delitem(sys.modules, "queue_pipeline._convert.pipeline", raising=False)
    monkeypatch.delattr(package, "pipeline", raising=False)
    root, _ = tree
    with pytest.raises(ImportError, match=r"queue_pipeline\[beam\]"):
        _convert(f"images:{root}", tmp_path / "out")


def test_committed_convert_benchmark_renders_to_its_table():
    """benchmarks/results/convert/*.json render to their committed .txt, byte for byte."""
    import importlib.util
    import pathlib

    bench = pathlib.Path(__file__).parents[1] / "benchmarks"
    spec = importlib.util.spec_from_file_location("convert_bench", bench / "convert.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = sorted((bench / "results" / "convert").glob("*.json"))
    assert results
    for path in results:
        rendered = module.render(json.loads(path.read_text()))
        assert rendered == path.with_suffix(".txt").read_text()


def test_reasons_are_stable_and_name_no_memory_address(tree, tmp_path):
    root, _ = tree
    (root / "cat" / "empty.jpg").write_bytes(b"")
    (root / "dog" / "text.png").write_bytes(b"not a png")
    result = _convert(f"images:{root}", tmp_path / "out")
    reasons = {e["record"]: e["reason"] for e in result.errors}
    assert reasons["cat/empty.jpg"] == "corrupt image: the file is empty"
    assert reasons["dog/text.png"].startswith("corrupt image: UnidentifiedImageError")
    assert "0x" not in reasons["dog/text.png"]


def test_the_command_hides_beams_bigquery_notice_only():
    import logging

    from queue_pipeline._convert import command

    def record(message):
        return logging.LogRecord("root", logging.WARNING, __file__, 1, message, None, None)

    assert not command._no_bigquery_notice(
        record("apitools not found, and bigquery client libraries are not available")
    )
    assert command._no_bigquery_notice(record("anything else"))
