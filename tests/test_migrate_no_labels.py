"""migrate on input functions returning their batches and ``None`` (no labels) (#41).

NOTE [ No labels: a None beside the batches ]: an Estimator input_fn of a
model without labels returns ``features, None``; Estimator takes a Dataset
from an input_fn, so the version returns the Dataset alone, never
``(dataset, None)`` (which Estimator would take as its features). The
program is ``tests/scripts/unseen_no_labels.py``; run in the suite's TF mode
(the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import migrate

from helpers import copy_script, elements, tf1_mode

pytestmark = pytest.mark.slow


def _program(tmp_path, replace: tuple[str, str] | None = None) -> tuple[str, str]:
    path = copy_script("unseen_no_labels.py", tmp_path, "no_labels.py")
    if replace is not None:
        path.write_text(path.read_text().replace(*replace))
    (tmp_path / "values.csv").write_text("".join(f"{v}\n" for v in range(1, 9)))
    return str(path), str(tmp_path / "values.csv")


def _as_estimator_reads(result) -> tuple[object, object]:
    """(features, labels) as an Estimator reads an input_fn's result: a Dataset's
    element is ``(features, labels)`` when a pair, else the features; any other
    result is a ``(features, labels)`` pair, or the features alone."""
    if isinstance(result, tf.data.Dataset):
        element = result.element_spec
        return element if not isinstance(element, tuple) else element[0], (
            element[1] if isinstance(element, tuple) and len(element) == 2 else None
        )
    if isinstance(result, tuple) and len(result) == 2:
        return result
    return result, None


def test_features_and_no_labels_become_a_dataset_of_the_features(tmp_path):
    """``return {"value": values}, None``: ``return dataset.prefetch(...)``, its
    element the dict, as an Estimator's input_fn; the proof compares the dicts."""
    path, data = _program(tmp_path)
    result = migrate(path, "inputs", call=f"{data!r}, 4", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "None" not in result.verdict.reason  # nothing beside the batches compared
    assert "    return dataset.prefetch(tf.data.AUTOTUNE)\n" in result.added, result.added
    (note,) = [d for d in result.differences if "(no labels)" in d]
    assert "returns the Dataset alone" in note and "no_labels.py:" in note
    assert [s.replacement for s in result.steps if s.line == 20] == ["return the Dataset alone"]
    with tf.Graph().as_default():
        dataset = result.load().inputs_dataset(data, 4)
        features, labels = _as_estimator_reads(dataset)
        assert sorted(features) == ["value"] and labels is None
        batches = elements(dataset)
    assert [list(b["value"]) for b in batches] == [[1, 2, 3, 4], [5, 6, 7, 8]]


def test_a_tensor_and_no_labels_become_a_dataset_of_the_tensor(tmp_path):
    path, data = _program(tmp_path, ('return {"value": values}, None', "return values, None"))
    result = migrate(path, "inputs", call=f"{data!r}, 4", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    with tf.Graph().as_default():
        dataset = result.load().inputs_dataset(data, 4)
        assert isinstance(dataset.element_spec, tf.TensorSpec)
        assert [list(b) for b in elements(dataset)] == [[1, 2, 3, 4], [5, 6, 7, 8]]


def test_callers_unpacking_features_and_labels_get_the_features_and_none(tmp_path):
    """``features, labels = inputs(...)`` becomes ``dataset = inputs_dataset(...)``,
    ``features = ...get_next()`` and ``labels = None``; the loop sums the same."""
    path, data = _program(tmp_path)
    result = migrate(path, "inputs", call=f"{data!r}, 4", callers=True, tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    caller = result.source[result.source.index("def total(") :]
    for line in (
        "        dataset = inputs_dataset(path, batch_size)\n",
        "        features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()\n",
        "        labels = None\n",
    ):
        assert line in caller, caller
    assert result.original.total(data, 4) == result.load().total(data, 4) == (36, 2, True)


def test_a_count_beside_the_none_keeps_both_after_the_dataset(tmp_path):
    """Only Nones are left out: ``return features, None, 8`` stays ``(dataset, None, 8)``."""
    path, data = _program(tmp_path, ('{"value": values}, None', '{"value": values}, None, 8'))
    result = migrate(path, "inputs", call=f"{data!r}, 4", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "return dataset.prefetch(tf.data.AUTOTUNE), None, 8\n" in result.added, result.added


@pytest.mark.skipif(
    not hasattr(tf.compat.v1, "estimator"),
    reason="tf.estimator is gone from TensorFlow 2.16+; _as_estimator_reads checks its rule",
)
def test_an_estimator_trains_a_step_on_the_written_input_fn(tmp_path):  # pragma: no cover
    path, data = _program(tmp_path)
    result = migrate(path, "inputs", call=f"{data!r}, 4", tf1=tf1_mode())
    inputs_dataset = result.load().inputs_dataset

    def model_fn(features, labels, mode):
        assert labels is None
        weight = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.ones_initializer())
        loss = tf.reduce_mean(tf.square(weight * tf.cast(features["value"], tf.float32)))
        step = tf.compat.v1.train.get_or_create_global_step()
        train = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss, step)
        return tf.compat.v1.estimator.EstimatorSpec(mode, loss=loss, train_op=train)

    estimator = tf.compat.v1.estimator.Estimator(model_fn, str(tmp_path / "model"))
    estimator.train(lambda: inputs_dataset(data, 4), steps=1)
    assert estimator.get_variable_value("global_step") == 1
