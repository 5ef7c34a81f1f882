"""migrate on a binary-record reader walked with a byte counter (#41, trial 51).

Two bugs of hand3d's ``BinaryDbReader.get`` shape
(``tests/scripts/unseen_pose_db_reader.py``): a producer written inside the
read call (``reader.read(tf.train.string_input_producer([path]))``) lost the
read line (an internal error), and a Python counter updated between the decode
lines (``bytes_read += 4 * n``) was hoisted out of the mapped function, so every
slice read its final value (NOTE [ Python values changed between per-record
lines ] in ``_migrate/map_values.py``). A twin-side TF error of the proof names
the user's line (NOTE [ The user's line of a failing twin op ]). Run in the
suite's TF mode (the suite runs this file with ``--tf1`` too); the programs
spell TF as ``tf.compat.v1``, so they run in both.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate import map_values
from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, dataset_values, tf1_mode

pytestmark = pytest.mark.slow

NUM_KP = 4  # the script's layout: xyz, uv floats, 2x2x3 image bytes, visibility bytes
SCRIPT = "unseen_pose_db_reader.py"


def _database(directory, count: int = 6):
    """A binary database of `count` records; returns (xyz, uv, image, visible) per record."""
    rng = np.random.default_rng(51)
    records = []
    with open(directory / "poses.bin", "wb") as f:
        for _ in range(count):
            floats = rng.normal(size=5 * NUM_KP).astype("<f4")
            image = rng.integers(0, 255, 12, dtype=np.uint8)
            visible = rng.integers(0, 2, NUM_KP, dtype=np.uint8)
            f.write(floats.tobytes() + image.tobytes() + visible.tobytes())
            xyz = floats[: 3 * NUM_KP].reshape(NUM_KP, 3)
            uv = floats[3 * NUM_KP :].reshape(NUM_KP, 2)
            records.append((xyz, uv, image.reshape(2, 2, 3), visible.astype(bool)))
    return str(directory / "poses.bin"), records


def _read(build) -> list:
    """The elements of the Dataset `build()` makes, built in a graph of its own (both modes)."""
    with tf.Graph().as_default():
        return dataset_values(build(), limit=3)


def _per_record_body(added: str) -> str:
    return added.split("def per_record(", 1)[1].split("records = records.map(", 1)[0]


@pytest.mark.parametrize("use_wrist", [True, False])
def test_a_producer_inside_the_read_call_and_a_byte_counter_migrate(tmp_path, use_wrist):
    """Was: "reads `value` in per_record() ... this is a bug in migrate" (the read line lost)."""
    path = copy_script(SCRIPT, tmp_path, "pose.py")
    data, records = _database(tmp_path)
    call = f"{data!r}, 2, use_wrist={use_wrist}"
    result = migrate(str(path), "read_pose_batch", call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "records = tf.data.FixedLengthRecordDataset(filenames, record_bytes)" in result.added
    assert "def per_record(value, bytes_read=bytes_read):" in result.added
    body = _per_record_body(result.added)  # each `+=` at its place, between the slices
    order = [ln.strip() for ln in body.splitlines()[1:] if "bytes_read" in ln]
    assert order[:3] == [
        "xyz = tf.reshape(tf.slice(as_float, [bytes_read // 4], [NUM_KP * 3]), [NUM_KP, 3])",
        "bytes_read += 4 * NUM_KP * 3",
        "uv = tf.reshape(tf.slice(as_float, [bytes_read // 4], [NUM_KP * 2]), [NUM_KP, 2])",
    ]
    module = result.load()
    got = _read(lambda: module.read_pose_batch_dataset(data, 2, use_wrist=use_wrist))
    for (xyz, uv, visible), batch in zip(got, zip(records[0::2], records[1::2])):
        for i, (want_xyz, want_uv, _, want_visible) in enumerate(batch):
            if not use_wrist:
                want_xyz = np.concatenate([0.5 * (want_xyz[:1] + want_xyz[1:2]), want_xyz[1:]])
            np.testing.assert_allclose(xyz[i], want_xyz, rtol=1e-6)
            np.testing.assert_allclose(uv[i], want_uv, rtol=1e-6)
            np.testing.assert_array_equal(visible[i], want_visible)


def test_a_text_reader_with_its_producer_inside_the_read_call_migrates(tmp_path):
    """Was: "reads `records` in get_dataset() ... this is a bug in migrate"."""
    path = copy_script(SCRIPT, tmp_path, "pose.py")
    (tmp_path / "rows.csv").write_text("1,2\n3,4\n5,6\n7,8\n")
    call = repr(str(tmp_path / "rows.csv")) + ", 2"
    result = migrate(str(path), "read_lines_batch", call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "tf.data.TextLineDataset(filenames)" in result.added
    module = result.load()
    got = _read(lambda: module.read_lines_batch_dataset(str(tmp_path / "rows.csv"), 2))
    assert [tuple(np.asarray(c).tolist() for c in e) for e in got] == [
        ([1, 3], [2, 4]),
        ([5, 7], [6, 8]),
    ]


@pytest.mark.parametrize("use_wrist", [True, False])
def test_the_pose_reader_method_migrates_with_its_counter_and_names(tmp_path, use_wrist):
    """hand3d's shape: a method, the producer in the read call, ``batch_join([tensors])``
    and ``dict(zip(names, tensors))`` after it (``names`` handed out of the map)."""
    path = copy_script(SCRIPT, tmp_path, "pose.py")
    data, records = _database(tmp_path)
    call = f"{data!r}, batch_size=2, use_wrist_coord={use_wrist}"
    result = migrate(str(path), "PoseDbReader.get", call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert result.function == "PoseDbReader.get_dataset"
    assert "enqueue_many: False, the default: one record per element" in result.report()
    assert 'names = per_record_values["names"]' in result.source
    assert "bytes_read += encoding_bytes * kp_xyz_entries" in _per_record_body(result.source)
    module = result.load()
    reader = module.PoseDbReader(data, batch_size=2, use_wrist_coord=use_wrist)
    first = _read(reader.get_dataset)[0]
    assert sorted(first) == ["image", "keypoint_uv", "keypoint_vis", "keypoint_xyz"]
    want_xyz = records[1][0]
    if not use_wrist:
        want_xyz = np.concatenate([0.5 * (want_xyz[:1] + want_xyz[1:2]), want_xyz[1:]])
    np.testing.assert_allclose(first["keypoint_xyz"][1], want_xyz, rtol=1e-6)
    np.testing.assert_allclose(first["keypoint_uv"][1], records[1][1], rtol=1e-6)
    np.testing.assert_allclose(first["image"][1], records[1][2] / 255.0 - 0.5, atol=1e-6)
    np.testing.assert_array_equal(first["keypoint_vis"][1], records[1][3])


def test_plain_values_the_per_record_code_leaves_are_read_after_the_map(tmp_path):
    """``names.append`` and ``offset +=`` in a loop of slices; ``len(names)`` and ``offset``
    returned beside the batch: was a hoisted ``count = len(names)`` (0) and an unbound
    ``offset`` in the map."""
    path = copy_script(SCRIPT, tmp_path, "pose.py")
    data, records = _database(tmp_path)
    result = migrate(str(path), "read_named_parts", call=f"{data!r}, 2", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "(2, 80) compared too" in result.verdict.reason
    assert "per_record_values.update(count=count, offset=offset)" in result.added
    module = result.load()

    def first_batch():
        dataset, count, offset = module.read_named_parts_dataset(data, 2)
        assert (count, offset) == (2, 80)
        return dataset

    batch = _read(first_batch)[0]
    np.testing.assert_allclose(batch["uv"][0], records[0][1].reshape(-1), rtol=1e-6)


def test_a_counter_moved_on_inside_a_block_of_per_record_lines_migrates(tmp_path):
    """The block's lines go into the map; the ``with`` left in place is not a statement
    run out of order (the refusal does not fire)."""
    path = copy_script(SCRIPT, tmp_path, "pose.py")
    data, _ = _database(tmp_path)
    result = migrate(str(path), "read_uv_in_scope", call=f"{data!r}, 2", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()


def test_a_twin_side_tf_error_names_the_users_line(tmp_path, monkeypatch):
    """With the counter hoisted again (the old split), the twin's slices fail; the message
    names the user's statement that made the failing op, not only its node (which of the
    slices past the record's end fails first is the parallel map's choice)."""
    monkeypatch.setattr(map_values, "changes_moved", lambda *a: set())
    path = copy_script(SCRIPT, tmp_path, "pose.py")
    data, _ = _database(tmp_path)
    with pytest.raises(MigrateError) as failed:
        migrate(str(path), "read_pose_batch", call=f"{data!r}, 2", tf1=tf1_mode())
    text = str(failed.value)
    assert "twin" in text and "{{node" in text
    found = re.search(r"is made by the migrated copy of (.+?):(\d+): `(.+?)`", text)
    assert found is not None, text
    assert found.group(1) == str(path)
    with open(path) as f:
        named = f.read().splitlines()[int(found.group(2)) - 1].strip()
    assert named == found.group(3)
    assert "tf.slice(" in named and "bytes_read" in named, named


def test_a_twin_side_tf_error_in_a_method_names_the_users_line(tmp_path, monkeypatch):
    monkeypatch.setattr(map_values, "changes_moved", lambda *a: set())
    path = copy_script(SCRIPT, tmp_path, "pose.py")
    data, _ = _database(tmp_path)
    with pytest.raises(MigrateError) as failed:
        migrate(str(path), "PoseDbReader.get", call=f"{data!r}, batch_size=2", tf1=tf1_mode())
    found = re.search(r"is made by the migrated copy of (.+?):(\d+): `(.+?)`", str(failed.value))
    assert found is not None, str(failed.value)
    assert found.group(1) == str(path)
    with open(path) as f:
        assert f.read().splitlines()[int(found.group(2)) - 1].strip() == found.group(3)
