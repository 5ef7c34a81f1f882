"""Programs with random per-record augmentation run on the dataset engine as on TF's queues (#46).

``tests/scripts/unseen_aug_*.py`` are shaped like public TF 1.x trainers whose
input distorts every record at random (a segmentation recipe flipping and
scaling an image and its mask together; an Inception-style ``batch_inputs``
with one shared record queue and four distorting threads into
``batch_join``). Each runs natively (TF's own queues) and through the
console script's ``run --engine dataset``, in the suite's TF mode, all runs
of a test in one process (one TensorFlow start-up). The draws differ
(another generator), so what must match is what does not depend on them:
the ``DIGEST`` line (examples per epoch, labels, shapes, dtypes, masks that
still fit their images), the engine's "runs on tf.data" line, and
per-channel means within five standard errors. With a graph seed the
engine's batches are the same on every run and at any ``num_threads``.

Below them, in small: ``batch_join`` lists sharing one read get its records
dealt in turn, every list some (NOTE [ Records dealt to lists sharing a
source ] in ``_rebuild/dealing.py``), and lists with a reader each over
fewer files than readers read each file once, as TF's do.
"""

from __future__ import annotations

import collections
import json
import logging
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from helpers import TF, build, drain, running, tf1_mode

v1 = tf.compat.v1

# Runs each (way, arguments) of argv[2] (JSON) of the script argv[1] in ONE
# process (one TensorFlow start-up, not one per run): "native" as ``python
# SCRIPT ARGS`` (after disable_v2_behavior in TF1 mode, as --tf1 does), an
# engine through the console script's ``cli.main(["run", "--engine", ...])``.
# Each run's output begins with a marker line on stdout and stderr.
_RUNS = """
import json, logging, runpy, sys
logging.basicConfig(level=logging.INFO)
import tensorflow as tf
from queue_pipeline import cli
script, runs, tf1 = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "tf1"
for i, (way, args) in enumerate(runs):
    for stream in (sys.stdout, sys.stderr):
        print(f"=== run {i}", file=stream, flush=True)
    if way == "native":
        if tf1:
            tf.compat.v1.disable_v2_behavior()
        sys.argv = [script, *args]
        runpy.run_path(script, run_name="__main__")
    else:
        mode = ["--tf1"] if tf1 else []
        status = cli.main(["run", "--engine", way, *mode, script, *args])
        if status:
            sys.exit(status)
"""


def _run_all(script: str, runs: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    """(stdout, stderr) of each run of `script`, all in one fresh process (see _RUNS)."""
    path = f"{__file__.rsplit('/', 1)[0]}/scripts/{script}"
    argv = [sys.executable, "-c", _RUNS, path, json.dumps(runs), "tf1" if tf1_mode() else "v2"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    sections = []
    for i in range(len(runs)):
        stdout, stderr = (
            text.partition(f"=== run {i}\n")[2].partition(f"=== run {i + 1}\n")[0]
            for text in (out.stdout, out.stderr)
        )
        sections.append((stdout, stderr))
    return sections


def _line(text: str, tag: str) -> str:
    found = re.findall(rf"^{tag} (.*)$", text, re.M)
    assert len(found) == 1, text[-2000:]
    return found[0]


def _stat(text: str, name: str) -> list[float]:
    found = re.search(rf"\b{name}=([-\d.,]+)", _line(text, "STATS"))
    assert found is not None, text[-2000:]
    return [float(v) for v in found.group(1).split(",")]


# name, the call the engine serves, the script's smaller data (each test runs
# in a few seconds: one process, a few dozen examples)
CASES = [
    ("unseen_aug_paired_masks.py", "shuffle_batch 'shuffle_batch'", ["--records", "24"]),
    (
        "unseen_aug_inception_join.py",
        "batch_join 'batch_processing/batch_join'",
        # fewer files than the four preprocessing threads: each still gets records
        ["--files", "2", "--per_file", "16"],
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("script, call, data", CASES, ids=[c[0][11:-3] for c in CASES])
def test_augmenting_program_is_served_with_tfs_examples_and_statistics(
    tmp_path, script, call, data
):
    args = ["--data_dir", str(tmp_path), *data]
    (native, _), (engine, log) = _run_all(script, [("native", args), ("dataset", args)])
    assert _line(engine, "DIGEST") == _line(native, "DIGEST")
    assert f"{call} runs on tf.data" in log and "stays on" not in log
    # Per-channel means within 5 standard errors of their difference (the
    # draws differ: another generator, and TF's threads take records in any order).
    count = int(re.search(r"examples=(\d+)", _line(native, "DIGEST")).group(1))
    want, got = _stat(native, "mean"), _stat(engine, "mean")
    spread = zip(_stat(native, "sd"), _stat(engine, "sd"))
    assert len(got) == len(want) == 3
    for w, g, (a, b) in zip(want, got, spread):
        assert abs(w - g) <= 5 * ((a * a + b * b) / count) ** 0.5, (want, got)
    if "per_thread" in _line(engine, "STATS"):  # every preprocessing thread's copy is used
        assert all(n > 0 for n in _stat(engine, "per_thread")), _line(engine, "STATS")


@pytest.mark.slow
@pytest.mark.parametrize("script, call, data", CASES, ids=[c[0][11:-3] for c in CASES])
def test_seeded_augmenting_program_repeats_its_batches_on_the_engine(tmp_path, script, call, data):
    args = ["--data_dir", str(tmp_path), "--seed", "7", *data]
    extra = ["--threads", "4"] if "paired" in script else []  # the program's num_threads
    (first, log), (second, _) = _run_all(script, [("dataset", args), ("dataset", args + extra)])
    assert _line(first, "HASH") == _line(second, "HASH")
    assert _line(first, "DIGEST") == _line(second, "DIGEST")
    assert f"{call} runs on tf.data" in log


# NOTE [ Records dealt to lists sharing a source ] in _rebuild/dealing.py
COPIES = 4


def _numbers(tmp_path, count: int) -> str:
    path = tmp_path / "nums.txt"
    path.write_text("".join(f"{i}\n" for i in range(count)))
    return str(path)


def _join_over_one_read(path, kind="batch_join", *, seeded=False):
    """Inception's batch_inputs in small: four lists over ONE reader value of ONE file.

    Each list computes a copy-dependent feature of the record (``number * 10
    + copy``), as inception's ``image_preprocessing(..., thread_id=i)`` does.
    """
    queue = v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = v1.TextLineReader().read(queue)
    number = tf.strings.to_number(line, tf.int32)
    lists = []
    for copy in range(COPIES):
        feature = number * 10 + copy
        if seeded:  # a random op per copy: stateless, keyed by the record's position
            lists.append([number, feature, v1.random_uniform([])])
        else:
            lists.append([number, feature])
    if kind == "batch_join":
        return v1.train.batch_join(lists, batch_size=4, allow_smaller_final_batch=True)
    return v1.train.shuffle_batch_join(
        lists, batch_size=4, capacity=40, min_after_dequeue=10, allow_smaller_final_batch=True
    )


def _pairs(way, build_fn, seed=None):
    """The (record, feature) pairs, in order, and the batches, run `way`."""
    with running(way):
        graph, outputs = build(TF, build_fn, seed=seed)
        batches = drain(TF, graph, outputs)
    pairs = [(int(n), int(f)) for b in batches for n, f in zip(b[0], b[1])]
    return pairs, batches


@pytest.mark.parametrize("kind", ["batch_join", "shuffle_batch_join"])
def test_join_lists_sharing_one_read_of_one_file_are_dealt_the_records(tmp_path, kind):
    path = _numbers(tmp_path, 40)
    pairs, _ = _pairs("dataset", lambda _: _join_over_one_read(path, kind))
    assert sorted(n for n, _ in pairs) == list(range(40))  # each record once
    assert all(f // 10 == n for n, f in pairs)
    per_copy = collections.Counter(f % 10 for _, f in pairs)
    assert sorted(per_copy) == list(range(COPIES))
    assert all(40 / (2 * COPIES) <= c <= 2 * 40 / COPIES for c in per_copy.values()), per_copy
    # record k through list k mod N: the round robin of N free threads
    assert all(f % 10 == n % COPIES for n, f in pairs), pairs


@pytest.mark.slow
def test_join_lists_sharing_one_read_use_every_copy_as_tfs_threads_do(tmp_path):
    path = _numbers(tmp_path, 400)  # enough records for each of TF's threads to get some
    for way in ("native", "dataset"):
        pairs, _ = _pairs(way, lambda _: _join_over_one_read(path))
        assert sorted(n for n, _ in pairs) == list(range(400)), way
        assert all(f // 10 == n and f % 10 < COPIES for n, f in pairs), way
        per_copy = collections.Counter(f % 10 for _, f in pairs)
        assert sorted(per_copy) == list(range(COPIES)), (way, per_copy)


def test_seeded_join_lists_sharing_one_read_repeat_their_draws(tmp_path, caplog):
    path = _numbers(tmp_path, 24)
    build_fn = lambda _: _join_over_one_read(path, seeded=True)  # noqa: E731
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        first, batches = _pairs("dataset", build_fn, seed=3)
    assert "(records dealt in turn)" in caplog.text and "stateless keyed" in caplog.text
    again, batches_again = _pairs("dataset", build_fn, seed=3)
    assert first == again and [n for n, _ in first] == list(range(24))
    assert all(f % 10 == n % COPIES for n, f in first)
    draws = [float(x) for b in batches for x in b[2]]
    assert draws == [float(x) for b in batches_again for x in b[2]]
    assert len(set(draws)) == len(draws)  # one draw per record, not one per list


def _join_of_own_readers(path):
    """CIFAR-10's multiple readers: a reader per list over ONE filename queue of ONE file."""
    queue = v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    lists = []
    for copy in range(COPIES):
        _, line = v1.TextLineReader().read(queue)
        number = tf.strings.to_number(line, tf.int32)
        lists.append([number, number * 10 + copy])
    return v1.train.batch_join(lists, batch_size=4, allow_smaller_final_batch=True)


def test_join_of_own_readers_over_fewer_files_than_readers_reads_each_file_once(tmp_path):
    # TF deals FILES to readers (a reader reads the whole file it took), so
    # one file goes through one copy, natively and on the engine alike.
    path = _numbers(tmp_path, 20)
    for way in ("native", "dataset"):
        pairs, _ = _pairs(way, lambda _: _join_of_own_readers(path))
        assert sorted(n for n, _ in pairs) == list(range(20)), way
        assert len({f % 10 for _, f in pairs}) == 1, (way, pairs)
