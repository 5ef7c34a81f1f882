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
