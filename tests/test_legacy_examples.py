"""The legacy examples run (smoke mode) and deliver what TF's own API delivers.

Also what every program shares: the ``--tf1`` flag (and its documentation),
the command-line runs in the suite's TF mode, and ``legacy_examples._twin_loop``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from helpers import TF, build, drain, tf1_mode
from legacy_examples import _twin_loop, csv_reading
import queue_pipeline as qp

REPO = pathlib.Path(__file__).resolve().parents[1]
README = (REPO / "legacy_examples" / "README.rst").read_text()


def test_csv_reading_smoke(capsys):
    assert csv_reading.main(["--smoke"]) == 0
    assert "qp: read 20 examples" in capsys.readouterr().out


def test_csv_reading_same_epoch_as_tf(tmp_path):
    files = csv_reading.write_csv_files(str(tmp_path), num_files=2, rows=25)
    out = {}
    for key, impl in (("tf", TF), ("qp", qp)):
        g, fetch = build(
            impl,
            lambda m, key=key: csv_reading.build_legacy(files, key, num_epochs=1, shuffle=False),
        )
        out[key] = drain(impl, g, fetch)
    assert len(out["qp"]) == 50
    np.testing.assert_equal(out["qp"], out["tf"])


@pytest.mark.parametrize("impl", ["qp", "tf"])
def test_csv_reading_run_loop(tmp_path, impl):
    files = csv_reading.write_csv_files(str(tmp_path), num_files=1, rows=10)
    examples = csv_reading.run(files, 15, impl)  # wraps past one epoch
    assert len(examples) == 15
    assert all(features.shape == (4,) for features, _ in examples)


def test_csv_reading_twin_matches_legacy():
    from queue_pipeline import compare

    report = compare.compare(csv_reading.legacy, csv_reading.twin, timeout=20)
    assert report.matched, str(report)
    assert report.to_json()


@pytest.mark.one_suite("a fresh interpreter under TF 2.x defaults in either suite")
@pytest.mark.slow
def test_compare_entry_points_remove_their_bundled_data_at_exit():
    # The entry points write bundled data to a scratch directory once per
    # process; nothing of it may stay in the temporary directory afterwards.
    code = (
        "import os\n"
        "from legacy_examples import csv_reading\n"
        "print(os.path.dirname(csv_reading._compare_files()[0]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    directory = done.stdout.strip().splitlines()[-1]
    assert os.path.basename(directory).startswith("queue_pipeline_csv_")
    assert not os.path.exists(directory)


def test_csv_reading_shuffled_twin_matches_as_multiset(tmp_path):
    from queue_pipeline import compare

    files = csv_reading.write_csv_files(str(tmp_path), num_files=3, rows=7)
    report = compare.compare(
        lambda: csv_reading.build_legacy(files, num_epochs=2),
        lambda: csv_reading.build_twin(files, num_epochs=2, seed=5),
        timeout=20,
    )
    assert report.matched, str(report)


# --- every program: the --tf1 flag, its documentation, the shared twin loop -------------

PROGRAMS = {  # module -> a line its --smoke run prints
    "csv_reading": "qp: read 20 examples",
    "cifar10_binary": "twin (tf.data): 3 batches of [32, 24, 24, 3] images",
    "mnist_tfrecords": "twin (tf.data): 28 steps",
    "preloaded_data": "twin (tf.data): 5 batches of 100",
    "feeding": "twin (tf.data): 30 steps",
    "multi_reader_join": "qp: 2 readers, 5 batches of 32",
    "detection_dynamic_pad": "qp: 3 batches of 4 images",
    "tpu_input_fn": "tf.data: 5 batches; static shapes float32[64, 784], int32[64]",
}


def _module(name):
    return importlib.import_module(f"legacy_examples.{name}")


# Runs each program as ``python -m legacy_examples.NAME --smoke [--tf1]`` does
# (runpy.run_module as __main__, its sys.argv), all in one fresh process: one
# TensorFlow start-up instead of eight. Each program's section begins with a
# marker line; its exit status ends it.
_COMMAND_LINES = """
import runpy, sys
for name in sys.argv[1].split(","):
    sys.argv = [name, "--smoke", *sys.argv[2:3]]
    print(f"=== {name}", flush=True)
    try:
        runpy.run_module(f"legacy_examples.{name}", run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as end:
        status = end.code
    print(f"=== {name} exit {status}", flush=True)
"""


@pytest.mark.slow
def test_every_program_runs_from_the_command_line_in_the_suites_mode():
    # In TF1 mode each program gets --tf1: the suite's env variable alone would
    # leave the subprocess under TF 2.x defaults.
    argv = [sys.executable, "-c", _COMMAND_LINES, ",".join(sorted(PROGRAMS))]
    out = subprocess.run(
        argv + (["--tf1"] if tf1_mode() else []),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    failed = []
    for name, line in PROGRAMS.items():
        printed, _, end = out.stdout.partition(f"=== {name}\n")[2].partition(f"=== {name} exit ")
        status = end.partition("\n")[0]
        if status != "0" or line not in printed:
            failed.append(f"{name}: exit status {status!r}, expected {line!r} in:\n{printed}")
    assert not failed, "\n".join(failed) + out.stderr[-3000:]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_documents_tf1(name):
    module = _module(name)
    assert "--tf1" in module.__doc__ and "[--tf1]" in module.__doc__
    assert "_twin_loop" in inspect.getsource(module.main)
    assert f"``{name}.py``" in README and "--tf1" in README


@pytest.mark.parametrize("tf1", [False, True], ids=["default", "tf1"])
def test_parse_args_enters_tf1_mode_right_after_parsing(monkeypatch, tf1):
    calls = []
    monkeypatch.setattr(tf.compat.v1, "disable_v2_behavior", lambda: calls.append("disable"))
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1)
    args = _twin_loop.parse_args(parser, ["--steps", "3"] + (["--tf1"] if tf1 else []))
    assert (args.steps, args.tf1) == (3, tf1)
    assert calls == (["disable"] if tf1 else [])


def test_program_main_disables_v2_before_building(monkeypatch):
    # A spy: it records how many ops the default graph holds when --tf1 acts,
    # then stops the program (SystemExit) before it builds anything.
    seen = []

    def spy():
        seen.append(len(tf.compat.v1.get_default_graph().get_operations()))
        raise SystemExit(0)

    monkeypatch.setattr(tf.compat.v1, "disable_v2_behavior", spy)
    with tf.Graph().as_default():
        for name in sorted(PROGRAMS):
            with pytest.raises(SystemExit):
                _module(name).main(["--smoke", "--tf1"])
    assert seen == [0] * len(PROGRAMS)


def _counter_loop():
    total = tf.Variable(0.0)
    dataset = tf.data.Dataset.from_tensor_slices(([1.0, 2.0, 3.0], [10.0, 20.0, 30.0]))
    return _twin_loop.Loop(dataset, lambda x, y: total.assign_add(x * y), final=total)


def test_twin_loop_runs_a_step_per_element_and_reads_final():
    # Eagerly under TF 2.x defaults, in a Session in TF1 mode.
    outputs, final = _twin_loop.run(_counter_loop)
    assert [float(v) for v in outputs] == [10.0, 50.0, 140.0] and float(final) == 140.0


def test_twin_loop_uses_a_session_inside_a_graph():
    # Not executing eagerly (both modes): the loop builds in its own graph.
    with tf.Graph().as_default() as g:
        outputs, final = _twin_loop.run(_counter_loop)
        assert g.get_operations() == []
    assert [float(v) for v in outputs] == [10.0, 50.0, 140.0] and float(final) == 140.0


def test_twin_loop_values_reads_every_element_in_order():
    values = _twin_loop.values(lambda: tf.data.Dataset.range(5).batch(2))
    assert [v.tolist() for v in values] == [[0, 1], [2, 3], [4]]


def test_twin_loop_rejects_a_build_without_a_loop():
    with pytest.raises(TypeError, match="`build` must return a _twin_loop.Loop"):
        _twin_loop.run(lambda: tf.data.Dataset.range(2))
