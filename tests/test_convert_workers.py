"""What convert's Beam workers do, without TensorFlow: Examples, TFRecord framing, JPEG checks.

TensorFlow is the oracle here: every Example the workers serialize parses
back with ``tf.train.Example`` to the message TensorFlow's own protobuf API
builds, and every shard they frame equals ``tf.io.TFRecordWriter``'s bytes.
"""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
from convert_helpers import IN_MEMORY, image_bytes
from PIL import Image

from queue_pipeline._convert import features, images, tfrecords, verify

VALUES = {
    "scalars": {"b": b"\x00x", "s": "é", "i": -3, "big": 2**63 - 1, "small": -(2**63)},
    "floats": {"f": 1.5, "f32": np.float32(0.1), "huge": 1e39, "nan": float("nan")},
    "flags": {"t": True, "n": np.bool_(False), "u8": np.arange(256, dtype=np.uint8)},
    "arrays": {
        "image": np.random.default_rng(0).random((4, 5, 3)).astype(np.float32),
        "h16": np.array([1.5, -2.0], np.float16),
        "ints": np.arange(-300, 300).reshape(2, 300),
        "words": np.array([b"a", b"bc", b""]),
    },
    "empty": {"": 1, "none": [], "nofloat": np.zeros((0, 3), np.float32), "z": np.array([b""])},
}


def _tf_example(values) -> tf.train.Example:
    """The same values through TensorFlow's protobuf API (the oracle)."""
    example = tf.train.Example()
    for name, value in values.items():
        feature = example.features.feature[name]
        array = None if isinstance(value, (bytes, str)) else np.asarray(value)
        if array is None or array.dtype.kind in "SUO":
            items = [value] if array is None else list(array.reshape(-1))
            feature.bytes_list.SetInParent()
            feature.bytes_list.value.extend(v.encode() if isinstance(v, str) else v for v in items)
        elif array.dtype.kind == "f":
            feature.float_list.SetInParent()
            feature.float_list.value.extend(array.reshape(-1).astype(np.float64).tolist())
        else:
            feature.int64_list.SetInParent()
            feature.int64_list.value.extend(array.reshape(-1).astype(np.int64).tolist())
    return example


@pytest.mark.parametrize("case", sorted(VALUES))
def test_examples_parse_back_as_tensorflow_builds_them(case):
    values = VALUES[case]
    record = features.serialize_features(values)
    # compared as deterministic bytes: protobuf 4 (TF 2.16's) holds NaN != NaN in ==
    parsed = tf.train.Example.FromString(record).SerializeToString(deterministic=True)
    assert parsed == _tf_example(values).SerializeToString(deterministic=True)
    assert record == features.serialize_features(dict(reversed(list(values.items()))))
    # the same size as protobuf's own encoding: nothing extra, nothing left out
    assert len(record) == _tf_example(values).ByteSize()


def test_example_entries_are_in_key_order():
    record = features.serialize_features({"b": 1, "a": 2, "ab": 3, "": 4, "é": 5})
    keys = ["", "a", "ab", "b", "é"]
    at = [record.index(b"\x0a" + bytes([len(k.encode())]) + k.encode() + b"\x12") for k in keys]
    assert at == sorted(at)


def test_empty_values_make_an_empty_example():
    assert features.serialize_features({}) == tf.train.Example().SerializeToString() == b""


RECORDS = [b"", b"x", os.urandom(300), features.serialize_features(VALUES["arrays"])]


def test_framing_is_tensorflows_tfrecord_format(tmp_path):
    crc32c = tfrecords.crc32c_function()
    if crc32c is None:
        pytest.skip("google-crc32c (the [beam] extra) is not installed")
    with tf.io.TFRecordWriter(str(tmp_path / "tf")) as writer:
        for record in RECORDS:
            writer.write(record)
    framed = b"".join(tfrecords.frame(r, crc32c) for r in RECORDS)
    assert framed == (tmp_path / "tf").read_bytes()


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_shard_files_are_the_same_with_or_without_tensorflows_writer(
    tmp_path, monkeypatch, compression
):
    path = str(tmp_path / "ours")
    size = tfrecords.write_shard_file(path, RECORDS, compression)
    monkeypatch.setattr(tfrecords, "crc32c_function", lambda: None)
    fallback = str(tmp_path / "tensorflow")
    assert tfrecords.write_shard_file(fallback, RECORDS, compression) == size
    assert size == os.path.getsize(path)
    with open(path, "rb") as a, open(fallback, "rb") as b:
        assert a.read() == b.read()
    assert list(verify.read_records(path, compression)) == RECORDS


def _full_decode_fails(data: bytes) -> bool:
    try:
        Image.open(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - any Pillow error
        return True
    return False


def test_jpeg_checked_at_reduced_scale_fails_exactly_where_a_full_decode_fails(tmp_path):
    data = image_bytes(3, height=120, width=90)
    rng = np.random.default_rng(1)
    variants = [data[: int(len(data) * q)] for q in (0.05, 0.3, 0.6, 0.95)] + [data[:-2]]
    for _ in range(12):
        broken = np.frombuffer(data, np.uint8).copy()
        broken[rng.integers(0, len(data), 20)] = rng.integers(0, 256, 20)
        variants.append(broken.tobytes())
    failures = 0
    for i, variant in enumerate(variants):
        path = tmp_path / f"{i}.jpg"
        path.write_bytes(variant)
        expected = _full_decode_fails(variant)
        failures += expected
        if expected:
            with pytest.raises(images.RecordError, match="corrupt image"):
                images.image_example(str(path), 1, "cat")
        else:
            example = tf.train.Example.FromString(images.image_example(str(path), 1, "cat"))
            feature = example.features.feature
            assert feature["image/encoded"].bytes_list.value == [variant]
            assert feature["image/height"].int64_list.value == [120]
            assert feature["image/width"].int64_list.value == [90]
    assert 0 < failures < len(variants)  # the matrix holds both kinds


@pytest.mark.slow
def test_workers_encode_and_write_without_importing_tensorflow(tmp_path):
    """A fresh process runs a worker's two steps (encode a chunk, write its shard)."""
    if tfrecords.crc32c_function() is None:
        pytest.skip("google-crc32c (the [beam] extra) is not installed: TensorFlow writes")
    image = tmp_path / "cat.jpg"
    image.write_bytes(image_bytes(5))
    chunk = tmp_path / "chunk.pickle"
    chunk.write_bytes(pickle.dumps([("cat.jpg", (str(image), 1, "cat"))]))
    code = textwrap.dedent(
        f"""
        import sys
        from queue_pipeline._convert import pipeline
        encode = pipeline._Encode("image", False)
        chunk = ("train", 0, 0, {str(chunk)!r})
        out = [value for tag, value in encode.process(chunk) if tag == "piece"]
        key, piece = out[0]  # what GroupByKey hands the writer: every piece of its shard
        info = pipeline._write_shard((key, [piece]), {str(tmp_path)!r}, {{"train": 1}}, None)
        print(info["count"], "tensorflow" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["1", "False"]
    (written,) = verify.read_records(str(tmp_path / "train-00000-of-00001"), None)
    assert tf.train.Example.FromString(written).features.feature[
        "image/filename"
    ].bytes_list.value == [b"cat.jpg"]


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_shards_of_many_pieces_hold_their_records_in_hash_order(tmp_path, compression):
    """More records than a chunk per shard: the pieces are copied in order, so a shard
    is exactly its records sorted by (hash, identity) (NOTE [ Records travel in chunks ])."""
    from queue_pipeline._convert import assign, pipeline

    temp, _, _, records = _job(tmp_path, compression, count=600)
    expected: dict[int, list] = {0: [], 1: []}
    for identity, record in records:
        where = assign.assign(identity, {"train": 1.0}, {"train": 2})
        expected[where.shard].append((where.order, identity, record))
    assert all(len(pipeline.chunks_of(len(e), 2)) > 1 for e in expected.values())
    for shard, items in expected.items():
        path = str(temp / f"train-0000{shard}-of-00002")
        assert list(verify.read_records(path, compression)) == [r for _, _, r in sorted(items)]


def test_unframe_reads_back_what_frame_wrote_and_refuses_a_cut_piece():
    crc32c = tfrecords.crc32c_function()
    if crc32c is None:
        pytest.skip("google-crc32c (the [beam] extra) is not installed")
    data = b"".join(tfrecords.frame(r, crc32c) for r in RECORDS)
    assert list(tfrecords.unframe(data)) == RECORDS
    with pytest.raises(ValueError, match="ends inside a record"):
        list(tfrecords.unframe(data[:-3]))
    with pytest.raises(ValueError, match="record header"):
        list(tfrecords.unframe(data[:5]))


def test_the_direct_runner_runs_on_its_fnapi_runner_never_trying_prism(tmp_path, monkeypatch):
    """NOTE [ The DirectRunner without Prism ]: no download attempt, the workers asked for."""
    import queue_pipeline as qp
    from apache_beam.runners.portability import prism_runner
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    from queue_pipeline._convert import pipeline

    def refuse(*args, **kwargs):
        raise AssertionError("convert tried Prism")

    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline", refuse)
    (tmp_path / "t.csv").write_text("a\n1\n2\n")
    result = qp.convert(
        f"csv-table:{tmp_path / 't.csv'}", str(tmp_path / "out"), beam_options=IN_MEMORY
    )
    assert result.written == 2 and result.verified
    options = pipeline.beam_options(None, IN_MEMORY)
    runner = pipeline._local_runner(options, pipeline.PipelineOptions(options))
    assert isinstance(runner, fn_runner.FnApiRunner)
    other = ["--runner=PrismRunner"]
    assert pipeline._local_runner(other, pipeline.PipelineOptions(other)) is None


def test_a_shard_is_cut_into_few_chunks_that_keep_the_workers_busy():
    from queue_pipeline._convert import pipeline

    for count, shards in [(1, 1), (63, 1), (500, 8), (600, 2), (5000, 1), (1250, 1024)]:
        sizes = pipeline.chunks_of(count, shards)
        assert sum(sizes) == count
        assert max(sizes) - min(sizes) <= 1
        assert max(sizes) <= pipeline.MAX_CHUNK
    assert pipeline.chunks_of(0, 4) == []
    assert pipeline.chunks_of(500, 8) == [500]  # 8 shards: a piece each, renamed
    assert len(pipeline.chunks_of(600, 2)) == 4  # 2 shards: 8 chunks in the job
    assert len(pipeline.chunks_of(100, 1)) == 2  # no chunk under MIN_CHUNK records
    assert len(pipeline.chunks_of(1250, 1024)) == 2  # none over MAX_CHUNK


def _job(tmp_path, compression, count=300, shards=2):
    """A job over `count` small Examples in `shards` shards: (temp dir, infos, made, records)."""
    from queue_pipeline._convert import api, pipeline

    records = [(f"r{i}", features.serialize_features({"i": i})) for i in range(count)]
    temp = tmp_path / "temp"
    pipeline.run(
        "example",
        records,
        split={"train": 1.0},
        shards={"train": shards},
        temp_dir=str(temp),
        compression=compression,
        fail=False,
        options=pipeline.beam_options(None, IN_MEMORY),
    )
    infos, errors, made = api._results(str(temp))
    assert errors == []
    return temp, sorted(infos, key=lambda i: i["shard"]), made, records


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_verify_passes_the_shards_as_written_and_names_what_differs(tmp_path, compression):
    """NOTE [ Pieces and their digests ]: a changed record (valid framing), a broken CRC, a
    piece in no shard and a lost record are each found, naming the shard."""
    temp, infos, made, _ = _job(tmp_path, compression)
    assert all(len(i["pieces"]) > 1 for i in infos)  # shards of several pieces
    check = dict(listed=300, errors=0, compression=compression)
    verify.verify(str(temp), infos, made, **check)

    path = str(temp / infos[0]["file"])
    original = list(verify.read_records(path, compression))
    changed = [original[0][:-1] + b"\x01", *original[1:]]  # same count, valid CRCs
    options = tf.io.TFRecordOptions(compression_type=compression or "")
    with tf.io.TFRecordWriter(path, options) as writer:
        for record in changed:
            writer.write(record)
    with pytest.raises(verify.VerifyError, match=rf"{infos[0]['file']}: .*piece 0 differ"):
        verify.verify(str(temp), infos, made, **check)

    if compression is None:
        data = bytearray(open(path, "rb").read())
        data[20] ^= 0xFF  # inside the first record: its CRC no longer holds
        open(path, "wb").write(bytes(data))
        with pytest.raises(verify.VerifyError, match="TensorFlow cannot read it"):
            verify.verify(str(temp), infos, made, **check)

    with tf.io.TFRecordWriter(path, options) as writer:
        for record in original[1:]:
            writer.write(record)
    with pytest.raises(verify.VerifyError, match=f"reads back {len(original) - 1} records"):
        verify.verify(str(temp), infos, made, **check)

    with tf.io.TFRecordWriter(path, options) as writer:
        for record in original:
            writer.write(record)
    verify.verify(str(temp), infos, made, **check)
    with pytest.raises(verify.VerifyError, match="in no shard or in two"):
        verify.verify(str(temp), infos[1:], made, **check)


def test_a_shard_of_one_piece_is_the_piece_renamed_and_a_retry_finds_it_done(tmp_path):
    """A runner may retry a bundle: the second _write_shard of a renamed piece is a no-op."""
    from queue_pipeline._convert import pipeline

    piece = str(tmp_path / "piece.tfrecord")
    count, size, digest = tfrecords.write_piece(piece, iter(RECORDS))
    element = (("train", 0), [((0,), piece, count, size, digest)])
    first = pipeline._write_shard(element, str(tmp_path), {"train": 1}, None)
    assert not os.path.exists(piece)  # renamed, not copied
    again = pipeline._write_shard(element, str(tmp_path), {"train": 1}, None)
    assert first == again and first["pieces"] == [[count, size, digest]]
    shard = str(tmp_path / "train-00000-of-00001")
    assert list(verify.read_records(shard, None)) == RECORDS and os.path.getsize(shard) == size
    os.remove(shard)
    with pytest.raises(FileNotFoundError):  # neither the piece nor its shard: not done
        pipeline._write_shard(element, str(tmp_path), {"train": 1}, None)
