"""migrate on nested helpers that make a stage, and the advice for an own queue of arrays (#41).

NOTE [ A nested function that makes a stage ]
(``queue_pipeline/_migrate/nested_helpers.py``): a nested ``def`` or lambda of
the migrated function returning a producer or a batch, defined once or once
per branch of ``if train:``, is inlined where it is called, both branches
are written and the branch the run takes is proven; a helper defined in some
branches only is refused at its line with the fix. The programs are
``tests/scripts/unseen_nested_stage_helpers.py`` and
``tests/scripts/unseen_array_queue.py``, migrated in the suite's TF mode (the
suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from helpers import copy_script, line_of, tf1_mode

from queue_pipeline._migrate.api import MigrateError, migrate


def _images(directory, count: int = 6) -> str:
    """`count` small PNG files of distinct colours; their glob pattern."""
    (directory / "imgs").mkdir()
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=20000)
    with tf.Graph().as_default():  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [5, 7, 3])
        encoded = tf.io.encode_png(pixels)
        with tf.compat.v1.Session(config=config) as sess:
            for i in range(count):
                image = np.full((5, 7, 3), 30 * i, dtype=np.uint8)
                image[0, :, 0] = np.arange(7, dtype=np.uint8)  # not symmetric: a flip shows
                png = sess.run(encoded, {pixels: image})
                (directory / "imgs" / f"im{i}.png").write_bytes(png)
    return str(directory / "imgs" / "*.png")


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize(
    "function", ["image_batches", "image_batches_lambda", "image_batches_returned"]
)
def test_nested_stage_helpers_migrate_in_both_branches(tmp_path, function, train):
    path = copy_script("unseen_nested_stage_helpers.py", tmp_path, "data.py")
    pattern = _images(tmp_path)
    # TF's own producer of match_filenames_once with num_epochs runs in TF1 mode only
    epochs = 1 if tf1_mode() else None
    call = f"{pattern!r}, 2, train={train}, epochs={epochs}"
    result = migrate(str(path), function, call=call)
    assert result.verdict.status == "MATCH", result.report()
    new = result.source.split(f"def {function}_dataset")[1].split("\ndef ")[0]
    # both branches written: the shuffled endless one and the ordered epoch
    assert "if train:" in new
    assert ".shuffle(" in new and "repeat(epochs)" in new
    assert "string_input_producer" not in new and "tf.train." not in new

    # the user's function is kept as written, its helpers included
    def user(text: str) -> str:
        return text.split(f"def {function}(")[1].split("\ndef ")[0]

    assert user(result.source) == user(path.read_text())
    text = path.read_text().splitlines()
    start = line_of(path, f"def {function}(")
    batch_line = start + next(
        i for i, line in enumerate(text[start - 1 :]) if "tf.train.batch(" in line
    )
    assert any(s.line == batch_line for s in result.steps), result.report()


def test_nested_helper_defined_in_a_lone_if_migrates_under_its_test(tmp_path):
    path = copy_script("unseen_nested_stage_helpers.py", tmp_path, "data.py")
    pattern = _images(tmp_path)
    result = migrate(str(path), "partial", call=f"{pattern!r}, 2")
    assert result.verdict.status == "MATCH", result.report()
    new = result.source.split("def partial_dataset")[1].split("\ndef ")[0]
    assert "    if train:\n" in new and "dataset = records.batch(batch_size" in new, new
    assert "tf.train." not in new


def test_own_queue_of_arrays_migrates_as_its_slices_repeated(tmp_path):
    """Was refused with advice to write ``from_tensor_slices((a, b)).repeat()`` by hand;
    now written so (NOTE [ A queue filled from arrays in memory ]; run and compared with
    its output in ``tests/test_migrate_array_queues.py``)."""
    path = copy_script("unseen_array_queue.py", tmp_path, "queue_example.py")
    result = migrate(str(path), "")
    assert result.verdict.status == "MATCH", result.report()
    assert "Dataset.from_tensor_slices((features, tf.constant(labels, tf.int32))).repeat()" in (
        result.source
    )
    steps = {s.line: s.legacy for s in result.steps}
    assert steps[line_of(path, "enqueue_op = queue.enqueue_many")] == "FIFOQueue.enqueue_many"


@pytest.mark.parametrize("train", [False, True])
def test_nested_helper_of_another_shape_is_refused_where_the_run_took_it(tmp_path, train):
    path = copy_script("unseen_nested_stage_helpers.py", tmp_path, "data.py")
    pattern = _images(tmp_path)
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "tested", call=f"{pattern!r}, 2, train={train}")
    message = str(e.value)
    first = line_of(path, "def tested(")
    text = path.read_text().splitlines()
    defs = [first + i for i, line in enumerate(text[first:]) if "def group(" in line]
    assert f"{path}:{defs[0 if train else 1] + 1}: cannot migrate `def group(name, image):`" in (
        message
    )
    assert "no loop or test" in message and "Fix:" in message


@pytest.mark.parametrize("train", [False, True])
def test_lambda_reading_a_local_the_map_moves_is_refused_where_the_run_took_it(tmp_path, train):
    path = copy_script("unseen_nested_stage_helpers.py", tmp_path, "data.py")
    pattern = _images(tmp_path)
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "image_batches_closure", call=f"{pattern!r}, 2, train={train}")
    message = str(e.value)
    taken = line_of(path, "resize_images(image, [6, 6])" if train else "[4, 4])")
    assert f"{path}:{taken}: cannot migrate the lambda of image_batches_closure()" in message
    assert "reads `image`" in message and "Fix:" in message and "bug in migrate" not in message
