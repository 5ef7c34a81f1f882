"""migrate on two shapes of public programs it got wrong in trial 50 (#41).

A batching helper that rebinds its own record parameters with the batch
(``text, label = tf.train.shuffle_batch([text, label], ...)``: a raw
IndexError traceback with exit status 1, before); a record handed from the
reading helper to the batching helper as an object whose attributes hold its
tensors ("starts a second pipeline", or the object's name left unbound,
before). And the net under both: an exception migrate did not expect is a
refusal at the user's line being rewritten, exit status 2, never 1. Each
program is in ``tests/scripts/unseen_*``; run in the suite's TF mode (the
suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline import cli
from queue_pipeline._migrate import api as _api
from queue_pipeline._migrate import base as _base
from queue_pipeline._migrate import codegen as _codegen
from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, elements, line_of, tf1_mode

pytestmark = pytest.mark.slow

ROWS = 12


def _csv(directory):
    path = directory / "reviews.csv"
    path.write_text("label,text\n" + "".join(f"{i % 2},review {i}\n" for i in range(ROWS)))
    return path


def _eager() -> bool:
    return not tf1_mode() and tf.executing_eagerly()


@pytest.mark.parametrize("shuffle", [False, True])
def test_a_batching_helper_rebinding_its_record_parameters_matches(tmp_path, shuffle):
    """Was: IndexError in codegen (no record parameter found: the names hold batches
    when the helper returns), a raw traceback with exit status 1."""
    path = copy_script("unseen_helper_rebinds.py", tmp_path, "reviews.py")
    call = f"{str(_csv(tmp_path))!r}, 4, shuffle={shuffle}"
    result = migrate(str(path), "train_batches", call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "def make_batches_dataset(dataset, batch_size, shuffle):" in result.source
    if shuffle or not _eager():
        return
    module = result.load()
    got = elements(module.train_batches_dataset(str(tmp_path / "reviews.csv"), 4))
    assert [list(np.asarray(b[0])) for b in got][0] == [f"review {i}".encode() for i in range(4)]
    assert list(np.asarray(got[-1][1])) == [0, 1, 0, 1]


def test_a_helper_rebinding_one_of_its_record_parameters_matches(tmp_path):
    path = copy_script("unseen_helper_rebinds.py", tmp_path, "reviews.py")
    call = f"{str(_csv(tmp_path))!r}, 3"
    result = migrate(str(path), "eval_batches", call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()


def test_an_internal_error_is_refused_at_the_line_being_rewritten(tmp_path, monkeypatch):
    """NOTE [ An internal error of migrate ]: any exception of migrate's own steps names
    the innermost user's statement being rewritten and says it is a bug in migrate."""
    path = copy_script("unseen_helper_rebinds.py", tmp_path, "reviews.py")
    call = f"{str(_csv(tmp_path))!r}, 4"
    monkeypatch.setattr(_base.Function, "record_params", property(lambda self: []))
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "train_batches", call=call, tf1=tf1_mode())
    message = str(e.value)
    line = line_of(path, "return make_batches(text, label")
    assert f"reviews.py:{line}: cannot migrate `return make_batches(" in message
    assert "IndexError" in message and "bug in migrate" in message


def test_an_internal_error_outside_the_statements_names_the_function(tmp_path, monkeypatch):
    path = copy_script("unseen_helper_rebinds.py", tmp_path, "reviews.py")
    call = f"{str(_csv(tmp_path))!r}, 4"

    def broken(rw):
        raise KeyError("owner")

    monkeypatch.setattr(_codegen, "_drop_unused_record_helpers", broken)
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "train_batches", call=call, tf1=tf1_mode())
    message = str(e.value)
    assert "reviews.py: migrating train_batches() failed inside migrate" in message
    assert "KeyError: 'owner'" in message and "bug in migrate" in message


def test_the_command_exits_2_on_an_exception_migrate_did_not_expect(monkeypatch, capsys):
    """Never 1 (DIFFER's status), never a raw traceback."""

    def broken(*args, **kwargs):
        raise KeyError("element")

    monkeypatch.setattr(_api, "migrate", broken)
    assert cli.main(["migrate", "anything.py:f"]) == 2
    err = capsys.readouterr().err
    assert "migrating anything.py:f failed inside migrate" in err
    assert "KeyError: 'element'" in err and "bug in migrate" in err
    assert "Traceback" not in err


def _records(directory, count: int = 10) -> list[np.ndarray]:
    rng = np.random.default_rng(50)
    images = [rng.integers(0, 255, (4, 4, 1), dtype=np.uint8) for _ in range(count)]
    with tf.io.TFRecordWriter(str(directory / "stars.tfrecords")) as writer:
        for i, image in enumerate(images):
            feature = {
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
                "pixels": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return images


@pytest.mark.parametrize(
    "function, extra", [("inputs", ""), ("inputs", ", shuffle=True"), ("named_inputs", "")]
)
def test_a_record_handed_over_as_an_object_matches(tmp_path, function, extra):
    """NOTE [ A record passed as an object ] (was: "starts a second pipeline", or the
    object's name unbound in the written code); ``inputs`` also makes its queue inside
    the reading helper's call (NOTE [ A queue made in the call that reads it ])."""
    path = copy_script("unseen_record_object_helper.py", tmp_path, "stars.py")
    images = _records(tmp_path)
    call = f"{str(tmp_path / 'stars.tfrecords')!r}, 4{extra}"
    result = migrate(str(path), function, call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "return example.image, example.label" in result.source
    if extra or not _eager():
        return
    module = result.load()
    got = elements(getattr(module, f"{function}_dataset")(str(tmp_path / "stars.tfrecords"), 4))
    assert len(got) == 2
    np.testing.assert_array_equal(np.asarray(got[1][0]), np.stack(images[4:8]))
    assert list(np.asarray(got[1][1])) == [4, 5, 6, 7]


def test_a_record_object_the_helper_computes_on_matches(tmp_path):
    """The helper computes on the object's attributes before batching them: refused
    here before round 51, now its per-record code is mapped over the Dataset
    (NOTE [ A batching helper computing on its records ]; more in
    tests/test_migrate_round51_objects.py)."""
    path = copy_script("unseen_record_object_helper.py", tmp_path, "stars.py")
    _records(tmp_path)
    call = f"{str(tmp_path / 'stars.tfrecords')!r}, 4"
    result = migrate(str(path), "scaled_inputs", call=call, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "image = tf.cast(example_image, tf.float32) / 255.0" in result.source
    assert "return example.label, example.image" in result.source
