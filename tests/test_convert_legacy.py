"""``FILE.py:FUNCTION`` sources: a legacy input function's per-record values, written and read back.

The function is shaped like public TF 1.x input code (string_input_producer
-> TextLineReader -> decode_csv -> shuffle_batch), in a file whose
``__main__`` block trains and writes a marker: convert must not run it.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from convert_helpers import IN_MEMORY
from helpers import dataset_values, tf1_mode

import queue_pipeline as qp

LEGACY = """
import sys

import tensorflow.compat.v1 as tf

def inputs(path, batch_size=4, num_epochs=None):
    names = tf.train.string_input_producer([path], num_epochs=num_epochs, shuffle=True, seed=3)
    _, line = tf.TextLineReader().read(names)
    number, word, value = tf.decode_csv(line, record_defaults=[[0], [""], [0.0]])
    pixels = tf.cast(tf.fill([2, 3], number), tf.uint8)
    exact = tf.stack([tf.cast(value, tf.float64) / 3.0, tf.cast(number, tf.float64)])
    flag = tf.greater(number, 2)
    return tf.train.shuffle_batch(
        [number, word, pixels, exact, flag], batch_size=batch_size, capacity=20,
        min_after_dequeue=5, num_threads=2, seed=1, allow_smaller_final_batch=True)

def no_batch(path):
    names = tf.train.string_input_producer([path], num_epochs=1)
    return tf.TextLineReader().read(names)

if __name__ == "__main__":
    open(sys.argv[1], "w").write("trained")
"""
ROWS = [(1, "a", 0.5), (2, "b", 1.25), (3, "c", -2.0), (4, "d", 7.0), (5, "e", 0.1), (6, "f", 2)]


@pytest.fixture
def legacy(tmp_path):
    (tmp_path / "data.csv").write_text("".join(f"{n},{w},{v}\n" for n, w, v in ROWS))
    (tmp_path / "legacy_inputs.py").write_text(LEGACY)
    return tmp_path


def _read_back(result, tmp_path) -> list[dict]:
    (tmp_path / "reader.py").write_text(result.reader_source())
    spec = importlib.util.spec_from_file_location("legacy_reader", tmp_path / "reader.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = []
    for split in result.counts:
        for batch in dataset_values(module.input_fn(split, 4, shuffle=False)):
            rows += [{k: batch[k][i] for k in batch} for i in range(len(batch["number"]))]
    return sorted(rows, key=lambda r: int(r["number"]))


@pytest.mark.slow
def test_per_record_values_read_back_equal_with_dtype_and_shape(legacy):
    result = qp.convert(
        f"{legacy / 'legacy_inputs.py'}:inputs",
        str(legacy / "out"),
        call=f"{str(legacy / 'data.csv')!r}, num_epochs=1",
        split="train=0.5,validation=0.5",
        beam_options=IN_MEMORY,
    )
    assert result.written == len(ROWS) and result.errors == [] and result.verified
    assert result.manifest["features"] == {
        "number": {"dtype": "int32", "shape": []},
        "word": {"dtype": "string", "shape": []},
        "pixels": {"dtype": "uint8", "shape": [2, 3]},
        "exact": {"dtype": "float64", "shape": [2], "encoding": "raw"},
        "flag": {"dtype": "bool", "shape": []},
    }
    rows = _read_back(result, legacy)
    assert [int(r["number"]) for r in rows] == [n for n, _, _ in ROWS]
    for row, (number, word, value) in zip(rows, ROWS):
        assert row["word"] == word.encode()
        assert row["pixels"].dtype == np.uint8 and row["pixels"].shape == (2, 3)
        assert (row["pixels"] == number).all()
        # float64 is stored raw: bit for bit what the legacy graph computed
        want = np.array([np.float64(np.float32(value)) / 3.0, float(number)])
        assert row["exact"].dtype == np.float64 and (row["exact"] == want).all()
        assert row["flag"].dtype == np.bool_ and bool(row["flag"]) == (number > 2)
    assert not (legacy / "marker").exists()


@pytest.mark.slow
def test_shards_do_not_depend_on_the_legacy_order(legacy):
    """The shuffled, threaded legacy order changes nothing: identities are content hashes."""
    call = f"{str(legacy / 'data.csv')!r}, num_epochs=1"
    for out in ("a", "b"):
        qp.convert(
            f"{legacy / 'legacy_inputs.py'}:inputs",
            str(legacy / out),
            call=call,
            shards=2,
            beam_options=IN_MEMORY,
        )
    for name in ("train-00000-of-00002", "train-00001-of-00002"):
        assert (legacy / "a" / name).read_bytes() == (legacy / "b" / name).read_bytes()


@pytest.mark.parametrize(
    "function, call, match",
    [
        ("no_batch", "{csv!r}", "no batching call"),
        ("missing", "{csv!r}", "no function 'missing'"),
        ("inputs", "{csv!r}, nope=1", "nope"),
    ],
)
def test_functions_that_cannot_be_converted(legacy, function, call, match):
    with pytest.raises(ValueError, match=match):
        qp.convert(
            f"{legacy / 'legacy_inputs.py'}:{function}",
            str(legacy / "out"),
            call=call.format(csv=str(legacy / "data.csv")),
            beam_options=IN_MEMORY,
        )
    assert list((legacy / "out").iterdir()) == []


@pytest.mark.slow
def test_a_producer_that_repeats_forever_is_converted_for_one_epoch(legacy):
    """``num_epochs=None``: one epoch is written, the same shards as ``num_epochs=1``."""
    csv = str(legacy / "data.csv")
    for out, call in (("once", f"{csv!r}, num_epochs=1"), ("forever", f"{csv!r}")):
        result = qp.convert(
            f"{legacy / 'legacy_inputs.py'}:inputs",
            str(legacy / out),
            call=call,
            shards=2,
            beam_options=IN_MEMORY,
        )
        assert result.written == len(ROWS) and result.verified
    for name in ("train-00000-of-00002", "train-00001-of-00002"):
        assert (legacy / "once" / name).read_bytes() == (legacy / "forever" / name).read_bytes()


@pytest.mark.parametrize("key", ["absl_flags", "argparse_wholefile"])
@pytest.mark.slow
def test_the_programs_own_argv_reaches_its_flags_and_nothing_else_runs(tmp_path, monkeypatch, key):
    """Programs whose input function reads absl flags / argparse results: ``argv`` is
    theirs (convert's own command line never reaches them), as for ``migrate --argv``."""
    import sys

    from real_programs import PROGRAMS

    program = PROGRAMS[key]
    path = program.lay_out(str(tmp_path))
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    tool_argv = ["queue-pipeline", "convert", "--bogus-flag", "x.py:f"]
    monkeypatch.setattr(sys, "argv", list(tool_argv))
    result = qp.convert(
        f"{path}:{program.function}",
        str(tmp_path / "out"),
        call=program.call,
        argv=program.argv,
        beam_options=IN_MEMORY,
    )
    assert result.written > 0 and result.errors == [] and result.verified
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "out"])
    assert sys.argv == tool_argv  # the tool's own, back


def _tf1_records(tmp_path) -> str:
    import tensorflow as tf

    data = tmp_path / "records.tfrecords"
    with tf.io.TFRecordWriter(str(data)) as writer:
        for i in range(10):
            feature = {
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "features": tf.train.Feature(float_list=tf.train.FloatList(value=[i, 1, 2, 3])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return str(data)


TF1_SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "tf1_inputs.py")


@pytest.mark.slow
@pytest.mark.one_suite("the convert subprocess runs with --tf1 in either suite")
def test_a_program_written_for_tf1_converts_with_tf1(tmp_path):
    """``import tensorflow as tf`` meaning TF 1.x: ``--tf1``, in a subprocess (it disables v2
    behaviour for the rest of the process)."""
    import subprocess
    import sys

    import tensorflow as tf

    data = _tf1_records(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "queue_pipeline", "convert", f"{TF1_SCRIPT}:inputs", "--tf1"]
        + ["--call", f"{data!r}, 4, 1", "--out", str(tmp_path / "out"), "--", *IN_MEMORY],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert "10 source records: 10 written, 0 bad" in done.stderr
    records = tf.data.TFRecordDataset(str(tmp_path / "out" / "train-00000-of-00001"))
    ids = sorted(
        tf.train.Example.FromString(r.numpy()).features.feature["example_id"].int64_list.value[0]
        for r in records
    )
    assert ids == list(range(10))


@pytest.mark.slow
def test_without_tf1_a_tf1_program_is_told_to_add_it(tmp_path):
    if tf1_mode():
        pytest.skip("in TF1 mode the file's tf.train.* names exist")
    with pytest.raises(ValueError, match="add --tf1"):
        qp.convert(
            f"{TF1_SCRIPT}:inputs",
            str(tmp_path / "out"),
            call=f"{_tf1_records(tmp_path)!r}, 4, 1",
            beam_options=IN_MEMORY,
        )


@pytest.mark.slow
def test_a_record_the_decoder_fails_on_is_listed_with_its_file_and_the_job_goes_on(legacy):
    """NOTE [ Bad records of a legacy function ]: a malformed CSV line in a shuffled,
    threaded pipeline is listed by its reader key, the other rows are written."""
    csv = legacy / "data.csv"
    lines = [f"{n},{w},{v}\n" for n, w, v in ROWS]
    csv.write_text("".join(lines[:2] + ["7,only-two\n"] + lines[2:]))
    result = qp.convert(
        f"{legacy / 'legacy_inputs.py'}:inputs",
        str(legacy / "out"),
        call=f"{str(csv)!r}, num_epochs=1",
        shards=2,
        beam_options=IN_MEMORY,
    )
    assert result.written == len(ROWS) and result.verified
    (error,) = result.errors
    assert error["record"] == f"{csv}:3" and error["file"] == str(csv)
    assert error["reason"].startswith("InvalidArgumentError: Expect 3 fields but have 2")
    assert result.manifest["records"]["listed"] == len(ROWS) + 1
    assert [int(r["number"]) for r in _read_back(result, legacy)] == [n for n, _, _ in ROWS]

    with pytest.raises(qp.ConvertError, match="Expect 3 fields"):
        qp.convert(
            f"{legacy / 'legacy_inputs.py'}:inputs",
            str(legacy / "failed"),
            call=f"{str(csv)!r}, num_epochs=1",
            on_error="fail",
            beam_options=IN_MEMORY,
        )
    assert not (legacy / "failed").exists() or list((legacy / "failed").iterdir()) == []


SLICED_IMAGES = """
import os

import tensorflow.compat.v1 as tf

def read_images(folder, batch_size):
    paths = sorted(os.path.join(folder, f) for f in os.listdir(folder))
    labels = list(range(len(paths)))
    path, label = tf.train.slice_input_producer(
        [tf.convert_to_tensor(paths), tf.convert_to_tensor(labels)], shuffle=True)
    image = tf.image.decode_jpeg(tf.read_file(path), channels=3)
    image = tf.image.resize_images(image, [8, 8])
    return tf.train.batch([image, label], batch_size=batch_size, num_threads=4)
"""


@pytest.mark.slow
def test_a_corrupt_image_behind_sliced_paths_is_listed_by_its_path(tmp_path):
    """The public build_an_image_dataset.py shape: paths sliced (shuffled, repeating
    forever), read, decoded; one truncated JPEG."""
    from convert_helpers import image_bytes

    folder = tmp_path / "photos"
    folder.mkdir()
    for i in range(5):
        (folder / f"{i}.jpg").write_bytes(image_bytes(i))
    (folder / "2.jpg").write_bytes(image_bytes(2)[:60])
    (tmp_path / "images.py").write_text(SLICED_IMAGES)
    result = qp.convert(
        f"{tmp_path / 'images.py'}:read_images",
        str(tmp_path / "out"),
        call=f"{str(folder)!r}, 2",
        beam_options=IN_MEMORY,
    )
    assert result.written == 4
    (error,) = result.errors
    assert error["file"] == str(folder / "2.jpg") and error["record"] == str(folder / "2.jpg")
    assert error["reason"].startswith("InvalidArgumentError: ")
    assert "function_node" not in error["reason"] and "Graph execution" not in error["reason"]


def test_an_iterator_that_only_fails_stops_the_conversion(monkeypatch):
    """NOTE [ Bad records of a legacy function ]: errors with no element between, past
    MAX_ERRORS_IN_A_ROW, end the read with the last one instead of spinning."""
    import tensorflow as tf

    from queue_pipeline._convert import legacy

    error = tf.errors.InvalidArgumentError(None, None, "stuck")
    failing = iter([(1,), *[legacy._Failed(error)] * 3, (2,)] + [legacy._Failed(error)] * 10)
    monkeypatch.setattr(legacy, "_iterate", lambda build: failing)
    monkeypatch.setattr(legacy, "MAX_ERRORS_IN_A_ROW", 4)
    seen = []
    with pytest.raises(tf.errors.InvalidArgumentError, match="stuck"):
        for item in legacy._elements([], False):
            seen.append(item)
    assert [x for x in seen if not isinstance(x, legacy._Failed)] == [(1,), (2,)]
    assert len(seen) == 2 + 3 + 3  # three in a row pass; the fourth stops the read
