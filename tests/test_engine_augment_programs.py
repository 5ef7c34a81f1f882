"""Programs with random per-record augmentation run on the dataset engine as on TF's queues (#46).

``tests/scripts/unseen_aug_*.py`` are shaped like public TF 1.x trainers whose
input distorts every record at random (a segmentation recipe flipping and
scaling an image and its mask together; an Inception-style ``batch_inputs``
with one shared record queue and four distorting threads into
``batch_join``). Each runs natively (TF's own queues) and through
``queue-pipeline run --engine dataset``, in the suite's TF mode. The draws
differ (another generator), so what must match is what does not depend on
them: the ``DIGEST`` line (examples per epoch, labels, shapes, dtypes, masks
that still fit their images), the engine's "runs on tf.data" line, and
per-channel means within a statistical tolerance. With a graph seed the
engine's batches are the same on every run and at any ``num_threads``.
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from helpers import TF, build, drain, run_script_both_ways, running, tf1_mode

v1 = tf.compat.v1
_CLI = (
    "import logging, sys; logging.basicConfig(level=logging.INFO); "
    "from queue_pipeline import cli; sys.exit(cli.main(sys.argv[1:]))"
)


def _line(text: str, tag: str) -> str:
    found = re.findall(rf"^{tag} (.*)$", text, re.M)
    assert len(found) == 1, text[-2000:]
    return found[0]


def _means(text: str) -> list[float]:
    found = re.search(r"mean=([-\d.,]+)", _line(text, "STATS"))
    assert found is not None, text[-2000:]
    return [float(v) for v in found.group(1).split(",")]


def _engine(script: str, *args: str) -> subprocess.CompletedProcess:
    mode = ["--tf1"] if tf1_mode() else []
    path = f"{__file__.rsplit('/', 1)[0]}/scripts/{script}"
    run = subprocess.run(
        [sys.executable, "-c", _CLI, "run", "--engine", "dataset", *mode, path, *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run


# name, the call the engine serves, per-channel tolerance of the mean (the
# scripts' value scales: uint8 pixels, floats in [0, 1]; ~4 standard errors)
CASES = [
    ("unseen_aug_paired_masks.py", "shuffle_batch 'shuffle_batch'", 6.0),
    ("unseen_aug_inception_join.py", "batch_join 'batch_processing/batch_join'", 0.06),
]


@pytest.mark.slow
@pytest.mark.parametrize("script, call, tolerance", CASES, ids=[c[0][11:-3] for c in CASES])
def test_augmenting_program_is_served_with_tfs_examples_and_statistics(
    tmp_path, script, call, tolerance
):
    native, runs = run_script_both_ways(script, lambda way: ["--data_dir", str(tmp_path)])
    engine = runs["dataset"]
    assert f"{call} runs on tf.data" in engine.stderr and "stays on" not in engine.stderr
    want, got = _means(native.stdout), _means(engine.stdout)
    assert len(got) == len(want) == 3
    for w, g in zip(want, got):
        assert abs(w - g) <= tolerance, (want, got)


@pytest.mark.slow
@pytest.mark.parametrize("script, call, tolerance", CASES, ids=[c[0][11:-3] for c in CASES])
def test_seeded_augmenting_program_repeats_its_batches_on_the_engine(
    tmp_path, script, call, tolerance
):
    first = _engine(script, "--data_dir", str(tmp_path), "--seed", "7")
    extra = ["--threads", "4"] if "paired" in script else []  # the program's num_threads
    second = _engine(script, "--data_dir", str(tmp_path), "--seed", "7", *extra)
    assert _line(first.stdout, "HASH") == _line(second.stdout, "HASH")
    assert _line(first.stdout, "DIGEST") == _line(second.stdout, "DIGEST")
    assert f"{call} runs on tf.data" in first.stderr


def _join_over_one_read(path):
    """Inception's batch_inputs in small: four lists over ONE reader value of ONE file."""
    queue = v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = v1.TextLineReader().read(queue)
    number = tf.strings.to_number(line, tf.int32)
    lists = [[number, tf.constant(i)] for i in range(4)]  # the list's "thread id"
    return v1.train.batch_join(lists, batch_size=4, allow_smaller_final_batch=True)


@pytest.mark.xfail(
    strict=True,
    reason="#46: lists sharing one source are split by FILE (Sources.split_sources), so with "
    "fewer files than lists x readers every record goes through list 0; TF deals records",
)
def test_join_lists_sharing_one_read_of_one_file_each_get_records(tmp_path):
    path = tmp_path / "nums.txt"
    path.write_text("".join(f"{i}\n" for i in range(40)))

    def per_list(way):
        with running(way):
            graph, outputs = build(TF, lambda _: _join_over_one_read(str(path)))
            batches = drain(TF, graph, outputs)
        numbers = sorted(int(x) for b, _ in batches for x in b)
        assert numbers == list(range(40))
        return collections.Counter(int(t) for _, tags in batches for t in tags)

    native = per_list("native")
    assert len(native) == 4  # TF's four threads each read some records
    assert len(per_list("dataset")) == 4
