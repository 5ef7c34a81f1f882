"""Smoke test of the benchmark harness: it runs and reports; no time is asserted."""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "benchmarks"))

import runner_loop  # noqa: E402


def test_runner_loop_benchmark_quick(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert runner_loop.main(["--runs", "300", "--repeats", "1", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result) >= {"tf QueueRunner", "queue_pipeline QueueRunner", "ratio_tf_over_qp"}
    assert "ratio TF / queue_pipeline" in capsys.readouterr().out


def test_harness_quick_mode_runs_every_variant(tmp_path, capsys):
    """The quick mode (the one the README documents) runs end to end."""
    import run  # benchmarks/run.py

    out = tmp_path / "bench.json"
    assert run.main(["--quick", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["mode"] == "quick" and set(result["workloads"]) == {"W1", "W2", "W3", "W4"}
    for workload, table in result["workloads"].items():
        expected = {v for v in run.VARIANTS if run.applicable(v, workload)}
        assert set(table) == expected
        counts = {row["examples"] for row in table.values()}
        assert len(counts) == 1, (workload, counts)  # every variant read the same epoch
    assert "ratio vs tf_queue_1" in capsys.readouterr().out
