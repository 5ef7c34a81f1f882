"""migrate on batches kept by `keep_input`, code on the batches under an ``if``, and
repeated, starred and nested unpacking targets (#41).

NOTE [ keep_input as a filter ] (``queue_pipeline/_migrate/kept_inputs.py``):
a ``maybe_*`` call's keep value rides in the element and is filtered on, then
dropped, before the shuffle and the batch. NOTE [ Per-batch code after the
batching call ]: an ``if`` on a Python flag after the batching call moves into
``per_batch`` whole, each branch as written (both values of the flag proven).
NOTE [ Unpacking targets as parameters ]: ``a, b, _, _ = read(...)`` gives
valid parameters. The program is ``tests/scripts/unseen52_kept_records.py``,
migrated in the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import ast
import importlib.util

import pytest
from helpers import copy_script, drain_dataset, line_of, py

from queue_pipeline._migrate.api import MigrateError, migrate
from queue_pipeline._migrate.static_check import check_names

FILES, ROWS = 3, 12


def _csv(directory) -> list[str]:
    """FILES CSV files of ROWS lines ``id,value,class_id,flag``; flag 0 (every third row)
    marks an invalid record."""
    paths = []
    for f in range(FILES):
        path = directory / f"part{f}.csv"
        rows = [f"{f * 100 + r},{(f * 100 + r) * 0.5},{r % 4},{r % 3}" for r in range(ROWS)]
        path.write_text("\n".join(rows) + "\n")
        paths.append(str(path))
    return paths


KEPT = [f * 100 + r for f in range(FILES) for r in range(ROWS) if r % 3]


def _migrated(tmp_path, function: str, call: str):
    path = copy_script("unseen52_kept_records.py", tmp_path, "kept_inputs_prog.py")
    files = _csv(tmp_path)
    result = migrate(str(path), function, call=f"{files!r}, {call}")
    assert result.verdict.status == "MATCH", result.report()
    ast.parse(result.source)  # the written module parses
    new = result.source.split(f"def {function}_dataset")[1].split("\ndef ")[0]
    assert "tf.compat.v1.train" not in new and "maybe_" not in new, new
    written = tmp_path / "written.py"
    written.write_text(result.source)
    spec = importlib.util.spec_from_file_location("kept_written", written)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, files, new, getattr(module, f"{function}_dataset")


@pytest.mark.parametrize("one_hot", [False, True])
@pytest.mark.parametrize("function", ["kept_batches", "kept_shuffled"])
def test_kept_batches_filter_and_keep_the_flag_branches(tmp_path, function, one_hot):
    path, files, new, make = _migrated(tmp_path, function, f"4, one_hot={one_hot}")
    assert "records.filter(lambda values, keep: keep)" in new
    assert "dataset.map(lambda values, keep: values)" in new
    assert new.index(".filter(") < new.index(".batch(")
    if "shuffle" in function:
        assert new.index(".filter(") < new.index(".shuffle(")
    per_batch = new.split("def per_batch(")[1]
    assert "    if one_hot:\n            labels = class_labels(class_ids)\n" in per_batch
    assert "        else:\n            labels = dense_labels(class_labels(class_ids))\n" in (
        per_batch
    )
    assert "pass\n" not in new
    per_record = new.split("def per_record(")[1].split(")")[0]
    params = [p.strip() for p in per_record.split(",")]
    assert len(params) == len(set(params)) == 7 and params[-1] == "_"
    batches = drain_dataset(lambda: make(files, 4, one_hot=one_hot), limit=len(KEPT) // 4)
    ids = sorted(int(round(v * 2)) for b in batches for v in py(b[0][:, 0]))
    if "shuffle" in function:  # the shuffle buffer mixes the endless input's epochs
        assert set(ids) <= set(KEPT) and len(ids) == len(KEPT)
    else:
        assert ids == KEPT  # the invalid records are gone, every valid one is there
    for features, _, labels in batches:
        assert labels.shape == ((4, 4) if one_hot else (4,))
        classes = [(int(round(v * 2)) % 100) % 4 for v in py(features[:, 0])]
        if one_hot:
            assert [row.index(1.0) for row in py(labels)] == classes
        else:
            assert py(labels) == tuple(10 * c for c in classes)


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        ("kept_join_of_one", lambda: KEPT),
        ("kept_whole_inputs", lambda: sorted(KEPT + [i + 1000 for i in KEPT])),
        (
            "kept_rows",
            lambda: sorted(
                [i for i in range(300) if i in KEPT]
                + [f * 100 + r + 1000 for f in range(FILES) for r in range(ROWS) if r % 3 == 0]
            ),
        ),
        ("kept_by_flag", lambda: [f * 100 + r for f in range(FILES) for r in range(ROWS)]),
    ],
)
def test_keep_input_forms_migrate_and_drop_what_tf_drops(tmp_path, function, expected):
    path, files, new, make = _migrated(tmp_path, function, "4")
    assert ".filter(lambda values, keep: keep)" in new
    if function == "kept_whole_inputs":  # a scalar keeps or drops the whole input batch
        assert new.index(".filter(") < new.index(".unbatch()")
    if function == "kept_rows":  # a vector keeps rows
        assert new.index(".unbatch()") < new.index(".filter(")
    want = expected()
    batches = drain_dataset(lambda: make(files, 4), limit=len(want) // 4)
    if function in ("kept_whole_inputs", "kept_rows"):
        ids = sorted(v for b in batches for v in py(b[1]))
    else:
        ids = sorted(int(round(v * 2)) for b in batches for v in py(b[0][:, 0]))
    assert ids == want


def test_keep_input_false_is_refused_at_its_line(tmp_path):
    path = copy_script("unseen52_kept_records.py", tmp_path, "kept_inputs_prog.py")
    files = _csv(tmp_path)
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "kept_none", call=f"{files!r}, 4")
    message = str(e.value)
    line = line_of(path, "[feature, class_id], False, batch_size")
    assert f"{path}:{line}: cannot migrate" in message
    assert "keep_input=False) keeps no record" in message and "blocks forever" in message


def test_keep_input_over_a_join_of_several_lists_is_refused(tmp_path):
    path = copy_script("unseen52_kept_records.py", tmp_path, "kept_inputs_prog.py")
    files = _csv(tmp_path)
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "kept_join_of_two", call=f"{files!r}, 4")
    message = str(e.value)
    start = line_of(path, "def kept_join_of_two(")
    assert f"{path}:{start + 1}: cannot migrate" in message
    assert "join of several lists" in message and "join one list" in message


@pytest.mark.parametrize("double", [False, True])
def test_an_if_on_a_flag_between_read_and_batch_stays_an_if(tmp_path, double):
    path, files, new, make = _migrated(tmp_path, "branch_per_record", f"4, double={double}")
    per_record = new.split("def per_record(")[1].split("records = records.map")[0]
    assert per_record.startswith("feature, *rest):")
    assert "        if double:\n            feature = feature * 2.0\n" in per_record
    assert "        else:\n            feature = feature - 1.0\n" in per_record
    ((first, *_),) = drain_dataset(lambda: make(files, 4, double=double), limit=1)
    values = [0.0, 0.5, 1.0, 1.5]
    assert py(first[:, 0]) == tuple(v * 2.0 if double else v - 1.0 for v in values)


def test_nested_unpacking_targets_become_a_parameter_unpacked(tmp_path):
    path, files, new, make = _migrated(tmp_path, "nested_targets", "4")
    assert "def per_record(value_0, class_id):\n        (feature, mask) = value_0\n" in new
    (first,) = drain_dataset(lambda: make(files, 4), limit=1)
    assert py(first[1]) == (0, 1, 2, 3)


def test_a_migrated_module_that_does_not_parse_names_the_users_function(tmp_path):
    user = "import tensorflow as tf\n\n\ndef inputs(files):\n    return files\n"
    source = (
        user + "\n\ndef inputs_dataset(files):\n    def per_record(a, _, _):\n        return a\n"
    )
    with pytest.raises(MigrateError) as e:
        check_names(source, ["inputs_dataset"], str(tmp_path / "prog.py"), user)
    message = str(e.value)
    assert f"{tmp_path / 'prog.py'}:4: inputs(): the migrated code does not parse" in message
    assert "duplicate argument" in message and "Nothing was written" in message
