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
from convert_helpers import image_bytes
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
    assert tf.train.Example.FromString(record) == _tf_example(values)
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
        encode = pipeline._Encode("image", {{"train": 1.0}}, {{"train": 1}}, False)
        out = [x for x in encode.process({str(chunk)!r}) if isinstance(x, tuple)]
        key, items = out[0]  # what GroupByKey hands the writer: every chunk's list
        info = pipeline._write_shard((key, [items]), {str(tmp_path)!r}, {{"train": 1}}, None)
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
