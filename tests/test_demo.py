"""`queue-pipeline demo`: runs in-process, prints the comparison, throughput and accuracy."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import tensorflow as tf

from helpers import tf1_mode
from queue_pipeline import cli, demo

# In TF1 mode a demo subprocess gets --tf1: the suite's env variable alone
# would leave it under TF 2.x defaults.
MODE_ARGS = ["--tf1"] if tf1_mode() else []


# The tests of `summary` run on one xdist worker (pytest.ini's --dist loadgroup),
# which runs the demo once.
SUMMARY = pytest.mark.xdist_group("demo_summary")


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    page = tmp_path_factory.mktemp("demo") / "demo.html"
    return demo.run_demo(epochs=3, seed=1, progress=False, html=page)


@pytest.mark.slow
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


@SUMMARY
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


@SUMMARY
def test_demo_page_has_the_comparison_and_both_training_runs(summary):
    text = open(summary["html"], encoding="utf-8").read()
    assert '<p id="verdict" class="match">MATCH</p>' in text
    assert "http://" not in text and "https://" not in text and "<script" not in text
    assert 'id="images"' in text and 'alt="[0] legacy"' in text  # 784 values drawn 28x28
    assert 'id="training"' in text
    for metric in ("loss", "accuracy"):
        assert f"training {metric} per step" in text
    for side in ("legacy", "twin"):
        curves = summary[side]["curves"]
        assert len(curves["loss"]) == len(curves["accuracy"]) == summary[side]["steps"]
        assert all(-1e-3 <= a <= 1.0 + 1e-3 for a in curves["accuracy"])
        assert curves["loss"][-1] < curves["loss"][0]  # it learns
    assert f"page    {summary['html']}" in demo.render(summary)


@SUMMARY
def test_demo_subcommand_quiet(capsys, monkeypatch, summary):
    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: summary)
    assert cli.main(["demo", "--quiet", "--epochs", "3"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("OK: ")


@SUMMARY
def test_demo_html_option_reaches_run_demo(capsys, monkeypatch, summary, tmp_path):
    seen = {}

    def fake(**kwargs):
        seen.update(kwargs)
        return summary

    monkeypatch.setattr(demo, "run_demo", fake)
    assert cli.main(["demo", "--quiet", "--html", str(tmp_path / "d.html")]) == 0
    assert seen["html"] == str(tmp_path / "d.html")
    capsys.readouterr()


@SUMMARY
def test_demo_mismatch_exits_1(capsys, monkeypatch, summary):
    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: {**summary, "ok": False})
    assert cli.main(["demo", "--quiet"]) == 1
    assert capsys.readouterr().out.startswith("MISMATCH")


def test_demo_bad_epochs_exits_2(capsys):
    assert cli.main(["demo", "--epochs", "0"]) == 2
    assert "--epochs" in capsys.readouterr().err


def test_python_dash_m_demo_help():
    out = subprocess.run(
        [sys.executable, "-m", "queue_pipeline", "demo", "--help", *MODE_ARGS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    for option in ("--epochs", "--json", "--quiet", "--tf1"):
        assert option in out.stdout


@pytest.mark.slow
def test_demo_command_line_runs_in_the_suites_mode():
    out = subprocess.run(
        [sys.executable, "-m", "queue_pipeline", "demo", "--epochs", "1", "--json", *MODE_ARGS],
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["ok"] is True
    twin_chain = demo.TWIN_CHAIN_TF1 if tf1_mode() else demo.TWIN_CHAIN
    assert result["twin"]["pipeline"] == twin_chain
    assert result["twin"]["examples"] == result["legacy"]["examples"] == 1437
    assert result["twin"]["test_accuracy"] > 0.5


@SUMMARY
@pytest.mark.parametrize("flags", [[], ["--tf1"]], ids=["default", "tf1"])
def test_demo_tf1_flag_disables_v2_before_the_demo_runs(monkeypatch, summary, flags):
    calls = []
    monkeypatch.setattr(tf.compat.v1, "disable_v2_behavior", lambda: calls.append("disable"))
    monkeypatch.setattr(demo, "run_demo", lambda **kwargs: calls.append("run") or summary)
    assert cli.main(["demo", "--quiet", *flags]) == 0
    assert calls == (["disable", "run"] if flags else ["run"])


@SUMMARY
@pytest.mark.v2_only(
    "Keras 3 needs eager execution; TF1 mode: test_demo_twin_trains_in_a_session_without_eager"
)
def test_demo_twin_trains_with_keras_fit(summary):
    assert summary["twin"]["pipeline"] == demo.TWIN_CHAIN


def test_demo_twin_trains_in_a_session_without_eager(tmp_path):
    # In TF1 mode, and under TF 2.x inside a graph: graph ops fed by get_next().
    files = demo.prepare_data(str(tmp_path))
    with tf.Graph().as_default():
        twin = demo.train_twin(
            files["train"],
            files["test_images"],
            files["test_labels"],
            epochs=2,
            seed=1,
            progress=False,
            total_steps=45,
            examples_per_epoch=files["train_examples"],
        )
    assert twin["pipeline"] == demo.TWIN_CHAIN_TF1
    assert twin["examples"] == 2 * 1437 and twin["steps"] == -(-2 * 1437 // 64) == 45
    assert twin["test_accuracy"] > 0.5 and twin["examples_per_second"] > 0
