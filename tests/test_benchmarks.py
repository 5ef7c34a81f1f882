"""Smoke tests of the benchmark harness in both TF modes: it runs and reports; no time is asserted.

The in-process quick run measures in the suite's own mode (under ``--tf1`` the
process is in TF1 mode, so the tf.data variants go through a Session); the
subprocess run always passes ``--tf1``, so both suite modes also check a TF1
run of a fresh process, as ``python benchmarks/run.py --tf1`` makes it.
"""

from __future__ import annotations

import copy
import json
import pathlib
import re
import subprocess
import time
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import report  # noqa: E402 - benchmarks/report.py
import runner_loop  # noqa: E402
from helpers import tf1_mode  # noqa: E402

PROGRESS_LINE = re.compile(
    r"^\[\s*(\d+)/(\d+) \d+:\d\d eta \d+:\d\d\] (W\d) (\S+) repeat "
    r"(\d+)/(\d+): [\d,]+/s$",
    re.MULTILINE,
)


def test_runner_loop_benchmark_quick(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert runner_loop.main(["--runs", "300", "--repeats", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result) >= {"tf QueueRunner", "queue_pipeline QueueRunner", "ratio_tf_over_qp"}
    assert "ratio TF / queue_pipeline" in capsys.readouterr().out


def _expected_variants(run, workload):
    return {v for v in run.VARIANTS if run.applicable(v, workload)}


def _check_quick_result(run, result, tf_mode, workloads=("W1", "W2", "W3", "W4")):
    """Every variant of every workload ran, read the same epoch, in `tf_mode`."""
    assert result["mode"] == "quick" and result["tf_mode"] == tf_mode
    assert set(result["workloads"]) == set(workloads)
    for workload, table in result["workloads"].items():
        assert set(table) == _expected_variants(run, workload)
        counts = {row["examples"] for row in table.values()}
        assert len(counts) == 1, (workload, counts)  # every variant read the same epoch
        assert all(row["median"] > 0 for row in table.values())


def _check_progress(run, stderr, stdout, repeats=1, workloads=None):
    """A progress line per (workload, variant, repeat) on stderr, none on stdout."""
    lines = PROGRESS_LINE.findall(stderr)
    measured = {(w, v, int(r)) for _, _, w, v, r, _ in lines}
    expected = {
        (w, v, r)
        for w in workloads or run.WORKLOADS
        for v in _expected_variants(run, w)
        for r in range(1, repeats + 1)
    }
    assert len(lines) == len(expected) and measured == expected
    assert [int(done) for done, *_ in lines] == list(range(1, len(lines) + 1))
    assert not PROGRESS_LINE.search(stdout) and "[bench]" not in stdout


def _check_engine_lines(result, stdout):
    """Each workload's table ends with the engine over hand-written tf.data and over the floor."""
    for workload, table in result["workloads"].items():
        block = stdout.split(f"\n{workload}  (", 1)[1].split("\n\n", 1)[0]
        reference = "tfdata" if workload == "W4" else "tfdata_batch_decode"
        engine = table["qp_dataset_engine"]["median"]
        ratios, steady = block.splitlines()[-2:]
        assert ratios == (
            f"  -> qp_dataset_engine / {reference} = "
            f"{engine / table[reference]['median']:.2f}x, / raw_read = "
            f"{engine / table['raw_read']['median']:.2f}x"
        )
        # the same after each epoch's first step, which is timed apart
        rows = [table[v] for v in ("qp_dataset_engine", reference, "raw_read")]
        for row in rows:
            assert 0 < row["first_step_ms"] and row["steady_median"] > 0
        assert steady == (
            f"  -> steady after the first step: qp_dataset_engine / {reference} = "
            f"{rows[0]['steady_median'] / rows[1]['steady_median']:.2f}x, / raw_read = "
            f"{rows[0]['steady_median'] / rows[2]['steady_median']:.2f}x; first step "
            f"{rows[0]['first_step_ms']:.0f} ms ({reference} {rows[1]['first_step_ms']:.0f} ms)"
        )


@pytest.mark.slow
def test_harness_quick_mode_runs_every_variant(tmp_path, capsys):
    """The quick mode (the one docs/speed.rst documents) runs end to end, in the suite's mode."""
    import run  # benchmarks/run.py

    out = tmp_path / "bench.json"
    assert run.main(["--quick", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    _check_quick_result(run, result, "tf1" if tf1_mode() else "tf2")
    captured = capsys.readouterr()
    assert "ratio vs tf_queue_1" in captured.out
    assert ("TF1 mode" in captured.out.splitlines()[0]) == tf1_mode()
    _check_engine_lines(result, captured.out)
    assert captured.out.rstrip("\n") == report.format_table(report.load(str(out)))
    _check_progress(run, captured.err, captured.out)


# The fresh --tf1 process measures one workload (W2, which has every variant): what
# the process adds is its mode, set by the flag before anything is built; every
# workload in TF1 mode is the in-process quick run's of the TF1 suite.
TF1_RUN_WORKLOADS = ("W2",)


@pytest.fixture(scope="module")
def tf1_quick_run(tmp_path_factory):
    """``python benchmarks/run.py --quick --tf1 --workloads W2 --json FILE`` in a fresh process."""
    out = tmp_path_factory.mktemp("bench_tf1") / "bench_tf1.json"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run.py"), "--quick", "--tf1", "--json", str(out)]
        + ["--workloads", *TF1_RUN_WORKLOADS],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text()), done.stdout, done.stderr, out


@pytest.mark.one_suite("the run is a --tf1 subprocess in either suite")
@pytest.mark.slow
@pytest.mark.xdist_group("bench_tf1_run")  # one worker makes the module's tf1_quick_run
def test_harness_tf1_quick_run_every_variant_with_mode_recorded(tf1_quick_run):
    """``--tf1``: every variant runs with v2 behaviour disabled (tf.data through a
    one-shot iterator in a Session), and the result says so."""
    import run

    result, stdout, stderr, _ = tf1_quick_run
    _check_quick_result(run, result, "tf1", TF1_RUN_WORKLOADS)
    header = stdout.splitlines()[0]
    assert "TF1 mode (disable_v2_behavior)" in header and "ratio vs tf_queue_1" in header
    _check_progress(run, stderr, stdout, workloads=TF1_RUN_WORKLOADS)
    assert "TF1 mode" in stderr.split("[bench]", 1)[1].splitlines()[0]
    _check_engine_lines(result, stdout)


@pytest.mark.slow
def test_harness_child_measures_in_the_suites_mode(tmp_path):
    """The full mode's child process (one measurement, fresh process) gets the
    parent's TF mode: ``--tf1`` is passed on when the parent is in TF1 mode."""
    import run
    import workloads

    run.load_data(str(tmp_path), workloads.QUICK)
    sample = run._run_child(str(tmp_path), "W4", "qp_queue_1")
    assert sample["examples"] == workloads.QUICK.preloaded
    assert sample["seconds"] > 0 and sample["peak_rss_mb"] > 0
    assert sample["tf_mode"] == ("tf1" if tf1_mode() else "tf2")


@pytest.mark.slow  # its fixture is a whole --tf1 benchmark run in a subprocess
@pytest.mark.one_suite("the run is a --tf1 subprocess in either suite")
@pytest.mark.xdist_group("bench_tf1_run")
def test_report_renders_both_modes_side_by_side(tf1_quick_run, tmp_path, capsys):
    """report.py puts a TF 2.x run and a TF1 run side by side, every variant a row,
    with the ratios against tf_queue_1 and hand-written tf.data inside each run."""
    tf1, _, _, tf1_path = tf1_quick_run
    tf2 = copy.deepcopy(tf1)
    tf2["tf_mode"] = "tf2"
    for table in tf2["workloads"].values():
        for row in table.values():
            row["median"] *= 2
    tf2_path = tmp_path / "tf2.json"
    tf2_path.write_text(json.dumps(tf2))
    assert report.main([str(tf2_path), str(tf1_path)]) == 0
    text = capsys.readouterr().out
    assert "TF 2.x defaults, tf.data iterated eagerly" in text
    assert "TF1 mode (disable_v2_behavior), tf.data through a one-shot iterator" in text
    for workload, table in tf1["workloads"].items():
        block = text.split(f"\n{workload}  (", 1)[1].split("\n\n", 1)[0]
        lines = [line.split() for line in block.splitlines()[3:]]
        rows = {cells[0]: cells[1:] for cells in lines if cells[0] != "->"}
        assert set(rows) == set(table)
        engine = [" ".join(cells) for cells in lines if cells[0] == "->" and cells[1] != "steady"]
        steady = [" ".join(cells) for cells in lines if cells[:2] == ["->", "steady"]]
        reference = report.handwritten_reference("qp_dataset_engine", table)
        ratios = [
            f"{table['qp_dataset_engine']['median'] / table[name]['median']:.2f}x"
            for name in (reference, "raw_read")
        ]
        assert engine == [  # the engine over hand-written tf.data and over the floor, per run
            f"-> qp_dataset_engine / {reference} = {ratios[0]}, / raw_read = {ratios[1]} ({label})"
            for label in ("TF 2.x", "TF1")
        ]
        engine_row, hand_row = table["qp_dataset_engine"], table[reference]
        steady_ratio = engine_row["steady_median"] / hand_row["steady_median"]
        assert [line.split(" = ")[1].split(",")[0] for line in steady] == [
            f"{steady_ratio:.2f}x"  # the same ratio after each epoch's first step, per run
        ] * 2
        for variant in table:
            cells = rows[variant]
            assert len(cells) == 7  # (median, x tfq1, x hand) per mode, then tf1/tf2
            assert cells[-1] == "0.50"  # TF1 median / TF 2.x median
            assert cells[1] == cells[4]  # a run's own ratios do not move with its speed
            assert cells[2] == cells[5]
        assert rows["tf_queue_1"][1] == "1.00" and rows["tfdata"][2] == "1.00"
        if "tfdata_batch_decode" in table:
            assert rows["tfdata_batch_decode"][2] == "1.00"
            twin, hand = (table[v]["median"] for v in ("twin_batch_decode", "tfdata_batch_decode"))
            assert rows["twin_batch_decode"][2] == f"{twin / hand:.2f}"


@pytest.mark.parametrize(
    "name",
    sorted(
        p.stem for p in (BENCHMARKS / "results").glob("*.json") if p.with_suffix(".txt").exists()
    ),
)
def test_committed_results_still_render(name):
    """The committed results load with their TF mode (files from before ``tf_mode``
    existed are TF 2.x runs) and render to their committed tables, byte for byte."""
    path = BENCHMARKS / "results" / f"{name}.json"
    result = report.load(str(path))
    assert report.tf_mode(result) == ("tf1" if name.endswith("-tf1") else "tf2")
    assert report.format_table(result) == path.with_suffix(".txt").read_text().rstrip("\n")


@pytest.mark.slow
def test_session_variants_read_tf_data_as_the_legacy_program_does(tmp_path, capsys):
    """``session_*`` (not in the default run): hand-written tf.data through Session.run, and
    the engine's line against it."""
    import run  # benchmarks/run.py

    out = tmp_path / "bench.json"
    variants = ["qp_dataset_engine", "tfdata_batch_decode", "session_tfdata_batch_decode"]
    assert (
        run.main(["--quick", "--workloads", "W2", "--variants", *variants, "--json", str(out)]) == 0
    )
    table = json.loads(out.read_text())["workloads"]["W2"]
    assert set(table) == set(variants)
    assert len({row["examples"] for row in table.values()}) == 1  # the same epoch
    engine, other = table["qp_dataset_engine"], table["session_tfdata_batch_decode"]
    line = capsys.readouterr().out.rstrip("\n").splitlines()[-1]
    assert line == (
        "  -> on the legacy program's API (Session.run): qp_dataset_engine / "
        f"session_tfdata_batch_decode = {engine['median'] / other['median']:.2f}x, steady "
        f"{engine['steady_median'] / other['steady_median']:.2f}x; first step "
        f"{engine['first_step_ms']:.0f} ms (session_tfdata_batch_decode "
        f"{other['first_step_ms']:.0f} ms)"
    )


@pytest.mark.slow
def test_the_clock_starts_on_a_collected_heap_and_counts_full_collections():
    """``clock_start`` collects the set-up's garbage before the clock; a full
    collection that still runs inside the clock is counted in the sample."""
    import gc
    import weakref

    import numpy as np
    import run  # benchmarks/run.py

    class Cycle:
        pass

    def garbage() -> list:
        refs = []
        for _ in range(1000):
            a, b = Cycle(), Cycle()
            a.other, b.other = b, a
            refs.append(weakref.ref(a))
        return refs

    refs = garbage()  # cycles only a collection frees
    start = run.clock_start()
    # the set-up's cycles are gone (other threads' garbage, if any, is not this test's)
    assert not any(ref() is not None for ref in refs)
    steps = iter([[np.zeros(3)], [np.zeros(2)]])

    def step():
        batch = next(steps)
        gc.collect()  # a full collection inside the clock
        return batch

    sample = run.timed_epoch(step, StopIteration, start)
    assert sample["examples"] == 5 and sample["first_examples"] == 3
    assert sample["gc_full"] == 2 and sample["gc_ms"] >= 0.0  # one per batch's step
    summary = run._summarize([dict(sample, peak_rss_mb=1.0)] * 2)
    assert summary["gc_full"] == 4


def test_the_epochs_cpu_time_counts_every_thread_of_the_process():
    """``cpu_seconds`` is the whole process's CPU time inside the clock, its
    other threads' included (where tf.data's and the queues' work runs)."""
    import threading

    import numpy as np
    import run  # benchmarks/run.py

    spent = []

    def burn():
        began = time.thread_time()
        while time.thread_time() - began < 0.05:
            pass
        spent.append(time.thread_time() - began)

    steps = iter([[np.zeros(2)], [np.zeros(2)]])

    def step():
        batch = next(steps)
        worker = threading.Thread(target=burn)
        worker.start()
        worker.join()
        return batch

    start = run.clock_start()
    sample = run.timed_epoch(step, StopIteration, start)
    assert len(spent) == 2
    assert sample["cpu_seconds"] >= sum(spent)
    summary = run._summarize([dict(sample, peak_rss_mb=1.0)])
    assert summary["cpu_us_per_example"] == pytest.approx(1e6 * sample["cpu_seconds"] / 4)


@pytest.mark.slow
@pytest.mark.timeout(300)  # sixteen epochs, each a graph and a Session (a shared machine)
def test_own_queue_quick_run_every_variant_reads_the_same_epoch(tmp_path, capsys):
    """``benchmarks/own_queue.py --quick --in-process``, in the suite's mode: W5 (an own
    RandomShuffleQueue, drop-remainder dequeue_many), W6 (a py_func stage) and W7/W8
    (augmentation, unseeded and seeded) run in every variant, each reading one whole
    epoch; the dataset engine's ``served`` is recorded, whatever it is. (The fresh
    processes of a measuring run: the next test.)"""
    import own_queue  # benchmarks/own_queue.py

    out = tmp_path / "own_queue.json"
    assert own_queue.main(["--quick", "--in-process", "--json", str(out)]) == 0
    stdout = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["mode"] == "quick" and result["repeats"] == 1 and result["in_process"]
    assert result["tf_mode"] == ("tf1" if tf1_mode() else "tf2")
    sizes = result["sizes"]
    records = sizes["cifar_files"] * sizes["cifar_records"]
    augmented = sizes["augment_files"] * sizes["augment_records"]
    expected = {"W5": records // 128 * 128, "W6": sizes["tfrecords"]}
    expected["W7"] = expected["W8"] = augmented // 64 * 64
    assert records % 128 and sizes["tfrecords"] % 128 and augmented % 64  # partial last batches
    assert result["expected_examples"] == expected
    for workload, table in result["workloads"].items():
        assert set(table) == {"tf_queue", "qp_queue", "qp_dataset", "tfdata"}
        for variant, row in table.items():
            assert row["examples_per_epoch"] == [expected[workload]], (workload, variant)
            assert row["median"] > 0
            assert row["cpu_us_per_example"] > 0, (workload, variant)  # the process's CPU time
        assert isinstance(table["qp_dataset"]["served"], bool)
        assert set(result["ratios"][workload]) == {
            "qp_dataset/tf_queue",
            "qp_dataset/tfdata",
            "qp_queue/tf_queue",
        }
        assert f"\n{workload}  ({expected[workload]:,} examples per epoch expected)" in stdout
    assert set(result["workloads"]) == {"W5", "W6", "W7", "W8"}
    for workload in ("W7", "W8"):  # the augmentation workloads are served
        assert result["workloads"][workload]["qp_dataset"]["served"] is True
    assert "one epoch in the run's own process" in stdout.splitlines()[0]


@pytest.mark.tf1_only(
    "the child is passed --tf1 by a TF1 parent; a TF 2.x parent's child runs the same code "
    "in TF's default mode, which the in-process run above measures in the TF 2.x suite"
)
@pytest.mark.slow
@pytest.mark.timeout(300)  # two fresh processes, each importing TensorFlow
def test_own_queue_child_measures_in_a_fresh_process_in_the_suites_mode(tmp_path):
    """A measuring run's child (``own_queue.py --one W V``, a fresh process) gets the
    parent's TF mode, reads the whole epoch, and imports queue_pipeline only for the
    ``qp_*`` variants (``_run_child`` checks both and raises otherwise)."""
    import own_queue

    own_queue.write_data(str(tmp_path), own_queue.QUICK)
    expected = own_queue.expected_examples("W6", own_queue.QUICK)
    for variant in ("tf_queue", "qp_dataset"):
        sample = own_queue._run_child(str(tmp_path), "W6", variant)
        assert sample["examples"] == expected, variant
        assert sample["seconds"] > 0 and sample["peak_rss_mb"] > 0
        assert sample["tf_mode"] == ("tf1" if tf1_mode() else "tf2")
        assert sample["queue_pipeline_imported"] == (variant == "qp_dataset")
    assert isinstance(sample["served"], bool)
