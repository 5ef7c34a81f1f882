"""The written code's own names never overwrite the user's (#41).

NOTE [ Names the written code binds ]: a depth loader's constructor takes a
parameter ``dataset`` and reads it after its batching call; the written
``dataset = records.batch(...)`` took that name. The program is
``tests/scripts/unseen_dataset_name.py`` (a function, a constructor and a
script whose own code reads ``dataset`` late); run in the suite's TF mode
(the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import subprocess
import sys

import libcst as cst
import pytest
import tensorflow as tf

from queue_pipeline._migrate import generated_names
from queue_pipeline._migrate.api import migrate
from queue_pipeline._migrate.syntax import callee

from helpers import copy_script, elements, tf1_mode

pytestmark = pytest.mark.slow

OFFSET_BATCHES = [[101, 102], [103, 104], [105, 106], [107, 108]]


def _program(tmp_path) -> tuple[str, str]:
    path = copy_script("unseen_dataset_name.py", tmp_path, "loader.py")
    (tmp_path / "values.csv").write_text("".join(f"{v}\n" for v in range(1, 9)))
    return str(path), str(tmp_path / "values.csv")


def test_marks_keep_the_users_names_and_rename_the_written_ones():
    names = frozenset({"dataset"})
    user = generated_names.mark('x = OFFSETS[dataset] + self.dataset  # "dataset"', names)
    assert "self.dataset" in user and user.count("__qp_user_name__") == 2
    text = f"    dataset = records.batch(2)\n    {user}\n    return dataset\n"
    written = generated_names.renamed(text, names, {"dataset_1"})
    assert written == (
        "    dataset_2 = records.batch(2)\n"
        '    x = OFFSETS[dataset] + self.dataset  # "dataset"\n'
        "    return dataset_2\n"
    )


def test_a_fresh_name_is_still_read_as_the_written_codes_own():
    """``records_1.batch(n)`` is a Dataset's batch, not a legacy batching call (a later
    pass would find a second pipeline in it), and ``def per_batch_1(`` a per-batch map."""
    batch = cst.parse_expression("records_1.batch(4)")
    legacy = cst.parse_expression("tf.train.batch([x], 4)")
    assert isinstance(batch, cst.Call) and isinstance(legacy, cst.Call)
    assert callee(batch) == "Dataset.batch" and callee(legacy) == "batch"
    assert generated_names.maps_per_batch("    def per_batch_1(images):\n")
    assert not generated_names.maps_per_batch("    def per_batch_images(images):\n")
    kept = frozenset({"records"})  # the user's `records` is marked, the written one not
    assert generated_names.uses("x = __qp_user_name__records + 1", "records", kept)
    assert not generated_names.uses("records = records.batch(2)", "records", kept)


def test_a_parameter_named_dataset_read_after_the_batching_call_keeps_its_value(tmp_path):
    path, data = _program(tmp_path)
    result = migrate(path, "inputs", call=f"{data!r}, 'small'", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "def inputs_dataset(path, dataset, batch_size=2):" in result.added
    assert "dataset_1 = records.batch(batch_size" in result.added, result.added
    assert "values = values + OFFSETS[dataset]" in result.added
    assert "return dataset_1.prefetch(tf.data.AUTOTUNE)" in result.added
    assert "__qp_user_name__" not in result.source + result.report()
    with tf.Graph().as_default():
        batches = elements(result.load().inputs_dataset(data, "small"))
    assert [list(b) for b in batches] == OFFSET_BATCHES


def test_a_parameter_the_producer_reads_and_the_code_after_the_batches_reads_keeps_it(tmp_path):
    """``scaled(records)``: the file list goes to the producer (its arguments enter the
    written code through the call's bound arguments, marked like its statements) and
    is read after the batching call; the written code's own ``records`` is fresh (was
    `records_1` read before it was bound: UnboundLocalError in the proof)."""
    path, data = _program(tmp_path)
    result = migrate(path, "scaled", call=f"[{data!r}, {data!r}]", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "from_tensor_slices(records)" in result.added, result.added
    assert "records_1 = tf.data.TextLineDataset(" in result.added
    assert "* len(records)" in result.added and "__qp_user_name__" not in result.added
    with tf.Graph().as_default():
        batches = elements(result.load().scaled_dataset([data, data]))
    # the file listed twice: each value times len(records) == 2, both files in turn
    assert [list(b) for b in batches] == [[2 * (v - 100) for v in b] for b in OFFSET_BATCHES] * 2


def test_a_constructor_parameter_named_dataset_keeps_its_value(tmp_path):
    """monodepth's shape: ``__init__(self, ..., dataset, mode)`` reads ``dataset`` later."""
    path, data = _program(tmp_path)
    result = migrate(path, "Loader", call=f"{data!r}, 'small'", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    method = result.source.split("def init_dataset")[1]
    assert "        self.dataset = dataset\n" in method
    assert "dataset_1 = records.batch(batch_size" in method
    assert "self_values = values + OFFSETS[dataset]" in method
    assert "__qp_user_name__" not in result.source + result.report()
    module = result.load()
    with tf.Graph().as_default():
        loader = module.Loader.__new__(module.Loader)
        batches = elements(loader.init_dataset(data, "small"))
    assert [list(b["values"]) for b in batches] == OFFSET_BATCHES
    assert loader.dataset == "small"


def test_a_script_reading_its_own_dataset_after_the_pipeline_prints_the_same(tmp_path):
    """The script's global ``dataset`` (read after the pipeline lines) stays the
    script's: the written lines bind ``dataset_1``, the iterator reads
    ``input_dataset``."""
    _program(tmp_path)
    mode = ["--tf1"] if tf1_mode() else []

    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "queue_pipeline", argv[0], *mode, *argv[1:]],
            capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
        )  # fmt: skip

    done = cli("migrate", "loader.py", "--argv", "values.csv", "--out", "migrated.py")
    assert done.returncode == 0 and "Verify: MATCH" in done.stderr, done.stderr
    written = (tmp_path / "migrated.py").read_text()
    assert '        dataset = "large"\n' not in written  # not indented into the graph block
    assert '    dataset = "large"\n' in written and "dataset_1 = records.batch(2" in written
    assert "offset = values + OFFSETS[dataset]" in written and "__qp_user_name__" not in written
    before, after = cli("run", "loader.py", "values.csv"), cli("run", "migrated.py", "values.csv")
    assert before.returncode == 0 and after.returncode == 0, after.stderr[-3000:]
    assert (
        after.stdout
        == before.stdout
        == "".join(f"large {[v + 900 for v in batch]}\n" for batch in OFFSET_BATCHES)
    )
