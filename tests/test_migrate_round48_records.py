"""migrate on a constructor that keeps unbatched records as attributes (#41, round 48).

NOTE [ A constructor keeping unbatched records ] in ``_migrate/classes.py``:
a loader's evaluation form reads one record per step and keeps it (with its
flip) as an attribute, with no batching call; it migrates as a function
returning unbatched records does. Run in the suite's TF mode (the suite runs
this file with ``--tf1`` too).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, elements, tf1_mode

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")

pytestmark = pytest.mark.slow


def _images(directory, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(4)
    arrays = [rng.integers(0, 255, (4, 6, 3), dtype=np.uint8) for _ in range(count)]
    with tf.Graph().as_default():  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [4, 6, 3])
        encoded = tf.io.encode_png(pixels)
        with tf.compat.v1.Session() as sess:
            for i, array in enumerate(arrays):
                (directory / f"im{i}.png").write_bytes(sess.run(encoded, {pixels: array}))
    (directory / "list.txt").write_text("".join(f"im{i}.png other\n" for i in range(count)))
    return arrays


def test_a_constructor_keeping_one_record_and_its_flip_migrates(tmp_path):
    """Was refused: "keeps no tensor read from a queue as an attribute"."""
    path = copy_script("unseen_test_mode_loader.py", tmp_path, "loader.py")
    arrays = _images(tmp_path, 5)
    call = f"{str(tmp_path) + '/'!r}, {str(tmp_path / 'list.txt')!r}"
    result = migrate(str(path), "EvalLoader", call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert result.function == "EvalLoader.init_dataset"
    assert "{'image_pair': image_pair}" in result.source
    if tf1_mode() or not tf.executing_eagerly():
        return
    module = result.load()
    loader = module.EvalLoader.__new__(module.EvalLoader)
    dataset = loader.init_dataset(str(tmp_path) + "/", str(tmp_path / "list.txt"))
    got = elements(dataset, limit=5)
    for element, array in zip(got, arrays):
        pair = np.asarray(element["image_pair"])
        assert pair.shape == (2, 4, 6, 3)
        np.testing.assert_allclose(pair[0], array / 255.0, atol=1e-6)
        np.testing.assert_allclose(pair[1], array[:, ::-1] / 255.0, atol=1e-6)


def test_a_constructor_whose_records_a_method_batches_is_refused_naming_it(tmp_path):
    path = copy_script("unseen_test_mode_loader.py", tmp_path, "loader.py")
    (tmp_path / "scores.txt").write_text("1\n2\n3\n")
    with pytest.raises(
        MigrateError, match=r"Scorer\.batches reads them.*loader\.py:Scorer\.batches"
    ):
        migrate(str(path), "Scorer", call=repr(str(tmp_path / "scores.txt")), tf1=tf1_mode())


def _image_masks(directory, count: int) -> None:
    rng = np.random.default_rng(5)
    with tf.Graph().as_default():  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [6, 6, 1])
        encoded = tf.io.encode_png(pixels)
        with tf.compat.v1.Session() as sess:
            for i in range(count):
                for name in (f"s{i}.png", f"s{i}_mask.png"):
                    array = rng.integers(0, 255, (6, 6, 1), dtype=np.uint8)
                    (directory / name).write_bytes(sess.run(encoded, {pixels: array}))


@pytest.mark.parametrize("shuffle", [True, False])
def test_the_untaken_branchs_same_shapes_get_the_same_ensure_shape(tmp_path, shuffle):
    """Was refused at the untaken call: "the run did not build this call" (NOTE [ The
    same shapes in a branch the run did not take ] in ``_migrate/batch_shapes.py``)."""
    path = copy_script("unseen_branch_shapes.py", tmp_path, "unet_input.py")
    _image_masks(tmp_path, 8)
    call = f"{str(tmp_path)!r}, 4, {shuffle}"
    result = migrate(str(path), "inputs", call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert result.source.count("tf.ensure_shape(t0, ([(SIDE, SIDE, 1)] * 2)[0])") == 2


def test_an_untaken_branch_rebinding_its_records_stays_refused(tmp_path):
    path = copy_script("unseen_branch_shapes.py", tmp_path, "unet_input.py")
    text = path.read_text().replace(
        "    else:\n", "    else:\n        mask = tf.image.flip_left_right(mask)\n"
    )
    path.write_text(text)
    _image_masks(tmp_path, 8)
    with pytest.raises(MigrateError, match=r"unet_input\.py:\d+: .*the run did not build"):
        migrate(str(path), "inputs", call=f"{str(tmp_path)!r}, 4, True", tf1=tf1_mode())


@pytest.mark.parametrize("named", [False, True])
def test_a_script_reading_through_a_method_of_an_object_of_another_module(tmp_path, named):
    """``single_blocks = BlockRecords([...]).read_records()`` (or the object held by a
    name first), the class of another module (was: "reads `single_blocks` in
    per_record() ... a bug in migrate"): NOTE [ A method of an object built inline ] in
    ``_migrate/program_files.py``."""
    from test_migrate_script_shapes import _block_records, _migrated_prints_the_same

    copy_script("unseen_inline_object_records.py", tmp_path, "records.py")
    path = copy_script("unseen_inline_object_script.py", tmp_path, "data_test.py")
    inline = 'BlockRecords(["blocks.tfrecord"])'
    if named:
        text = path.read_text().replace(
            f"    single_blocks = {inline}.read_records()\n",
            f"    reader = {inline}\n    single_blocks = reader.read_records()\n",
        )
        assert "reader.read_records()" in text
        path.write_text(text)
    _block_records(tmp_path / "blocks.tfrecord")
    migrated = _migrated_prints_the_same(tmp_path, "data_test.py")
    code = migrated[migrated.index("import tensorflow") :]  # below the docstring
    held = "reader" if named else inline
    assert f"read_records_dataset({held})" in code, code
    assert ".read_records()" not in code and "FIFOQueue" not in code, code
    assert (tmp_path / "records.py").read_text() == open(
        os.path.join(SCRIPTS, "unseen_inline_object_records.py")
    ).read()
