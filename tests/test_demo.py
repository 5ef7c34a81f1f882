"""`queue-pipeline demo`: runs in-process, prints the comparison, throughput and accuracy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from queue_pipeline import cli, demo


@pytest.fixture(scope="module")
def summary():
    return demo.run_demo(epochs=3, seed=1, progress=False)


def test_demo_json_summary(capsys):
    assert demo.main(["--epochs", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is True
    assert result["comparison"]["matched"] is True
    assert result["comparison"]["mode"] == "multiset"
    assert result["comparison"]["legacy"]["examples"] == result["train_examples"] == 1437
    assert "scikit-learn" in result["source"]
    for side in ("legacy", "twin"):
        assert result[side]["examples"] == 2 * 1437
        assert result[side]["test_accuracy"] > 0.5
        assert result[side]["examples_per_second"] > 0


def test_demo_report_shows_source_comparison_throughput_and_accuracy(summary):
    assert summary["ok"]
    text = demo.render(summary)
    assert "scikit-learn's bundled handwritten digits: 1,437 train / 360 test" in text
    assert "queue_pipeline compare: MATCH" in text
    assert "examples/s" in text and "test accuracy" in text
    assert text.rstrip().splitlines()[-1].startswith("OK: both pipelines deliver")
    for side in ("legacy", "twin"):
        assert summary[side]["test_accuracy"] > 0.5
        assert summary[side]["steps"] == -(-3 * 1437 // 64)


def test_demo_subcommand_quiet(capsys, monkeypatch, summary):
    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: summary)
    assert cli.main(["demo", "--quiet", "--epochs", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("OK: ")


def test_demo_mismatch_exits_1(capsys, monkeypatch, summary):
    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: {**summary, "ok": False})
    assert cli.main(["demo", "--quiet"]) == 1
    assert capsys.readouterr().out.startswith("MISMATCH")


def test_demo_bad_epochs_exits_2(capsys):
    assert cli.main(["demo", "--epochs", "0"]) == 2
    assert "--epochs" in capsys.readouterr().err


def test_python_dash_m_demo_help():
    out = subprocess.run([sys.executable, "-m", "queue_pipeline", "demo", "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--epochs" in out.stdout and "--json" in out.stdout and "--quiet" in out.stdout
