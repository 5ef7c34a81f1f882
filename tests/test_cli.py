"""The command line: `python -m queue_pipeline` and the `queue-pipeline` script."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from queue_pipeline import cli
from queue_pipeline.data import migration


@pytest.mark.parametrize("fmt", ["text", "rst", "json"])
def test_table_prints_the_migration_table(capsys, fmt):
    assert cli.main(["table", "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert out == migration.render(fmt)
    for row in migration.MIGRATIONS:
        assert row.legacy in out


def test_table_json_is_valid():
    rows = json.loads(migration.render("json"))
    assert [r["legacy"] for r in rows] == [m.legacy for m in migration.MIGRATIONS]
    assert all(r["twin"].startswith("queue_pipeline.data.") for r in rows)


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["no-such-command"])
    assert info.value.code == 2


@pytest.mark.one_suite("`python -m queue_pipeline table` sets no TF mode")
@pytest.mark.slow
def test_python_dash_m_runs():
    out = subprocess.run(
        [sys.executable, "-m", "queue_pipeline", "table"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0
    assert "shuffle_batch  ->  queue_pipeline.data.shuffle_batch" in out.stdout


def test_docs_table_is_generated_from_the_code():
    import pathlib

    page = (pathlib.Path(__file__).parents[1] / "docs" / "guides" / "twins.rst").read_text()
    assert migration.render("rst") in page, (
        "docs/guides/twins.rst's migration table is stale: paste `python -m queue_pipeline "
        "table --format rst` into it"
    )


def test_readme_commands_are_the_demo_and_what_ci_runs():
    import pathlib

    root = pathlib.Path(__file__).parents[1]
    readme = (root / "README.rst").read_text()
    commands = [line.strip() for line in readme.splitlines() if line.startswith("    pip install")]
    assert commands[:2] == [
        "pip install -e '.[tensorflow,examples]' && queue-pipeline demo",
        "pip install -e '.[tensorflow,test]' && ruff check . && ruff format --check . && mypy"
        " && python -m pytest -q -p no:cacheprovider -n 2"
        " && python -m pytest -q -p no:cacheprovider -n 2 --tf1",
    ]
    assert commands[1] in (root / ".ci" / "run").read_text()


# --- `run`'s own flags: --engine and --tf1, before or right after the script ----


@pytest.fixture
def recorded_run(monkeypatch, tmp_path):
    """Replaces the run itself; returns (script, calls), each call (engine, tf1, args)."""
    import contextlib

    from queue_pipeline._scripts import install as _install
    from queue_pipeline._scripts import tf1 as _tf1_script

    calls = []
    state = {"tf1": False}

    @contextlib.contextmanager
    def tf1_mode():
        state["tf1"] = True
        try:
            yield
        finally:
            state["tf1"] = False

    def run_script(script, args, *, engine=None, service=None, job_name=None):
        calls.append((engine, state["tf1"], list(args)))
        if service is not None:  # run --service (tests/test_service_run.py runs it)
            calls.append((service, job_name))
        return 0

    monkeypatch.setattr(_tf1_script, "tf1_mode", tf1_mode)  # no TF mode switch here
    monkeypatch.setattr(_install, "run_script", run_script)
    monkeypatch.delenv("QUEUE_PIPELINE_TF1", raising=False)
    script = tmp_path / "train.py"
    script.write_text("")
    return str(script), calls


RUN_FLAGS = [
    ("plain", ["S", "a"], (None, False, ["a"])),
    ("tf1-before", ["--tf1", "S", "a"], (None, True, ["a"])),
    ("tf1-after", ["S", "--tf1", "a"], (None, True, ["a"])),
    ("both-after", ["S", "--engine", "dataset", "--tf1", "x"], ("dataset", True, ["x"])),
    ("both-after-swapped", ["S", "--tf1", "--engine=dataset", "x"], ("dataset", True, ["x"])),
    (
        "both-before",
        ["--engine", "dataset", "--tf1", "S", "--engine", "q"],
        ("dataset", True, ["--engine", "q"]),
    ),
    ("second-tf1-is-the-scripts", ["--tf1", "S", "--tf1"], (None, True, ["--tf1"])),
    ("not-leading", ["S", "a", "--tf1"], (None, False, ["a", "--tf1"])),
    ("engine-without-value", ["S", "--engine"], (None, False, ["--engine"])),
    ("engines-is-the-scripts", ["S", "--engines", "--tf1"], (None, False, ["--engines", "--tf1"])),
]


@pytest.mark.parametrize(
    "argv, expected", [r[1:] for r in RUN_FLAGS], ids=[r[0] for r in RUN_FLAGS]
)
def test_run_takes_engine_and_tf1_before_or_right_after_the_script(recorded_run, argv, expected):
    script, calls = recorded_run
    argv = [script if a == "S" else a for a in argv]
    assert cli.main(["run", *argv]) == 0
    assert calls == [expected]


@pytest.mark.parametrize("value, tf1", [("1", True), ("0", False), ("", False)])
def test_run_reads_queue_pipeline_tf1(recorded_run, monkeypatch, value, tf1):
    script, calls = recorded_run
    monkeypatch.setenv("QUEUE_PIPELINE_TF1", value)
    assert cli.main(["run", script]) == 0
    assert calls == [(None, tf1, [])]


def test_run_tf1_reports_a_removed_api_as_its_replacement(recorded_run, monkeypatch, capsys):
    import tensorflow as tf

    from queue_pipeline._scripts import install as _install

    script, _ = recorded_run
    try:
        tf.compat.v1.contrib  # noqa: B018 - what a TF 1.x script does
    except AttributeError as e:
        error = e

    def failing(*args, **kwargs):
        raise _install.ScriptError(error, "Traceback (most recent call last):\n...\n")

    monkeypatch.setattr(_install, "run_script", failing)
    assert cli.main(["run", "--tf1", script]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback")
    assert (
        err.rstrip()
        .splitlines()[-1]
        .startswith(
            "queue-pipeline run --tf1: error: RemovedAttributeError: `tf.contrib` was removed "
            "in TensorFlow 2.x; its modules moved into TensorFlow"
        )
    )
    assert cli.main(["run", script]) == 1  # without --tf1: the script's own error
    last = capsys.readouterr().err.rstrip().splitlines()[-1]
    assert last.startswith("queue-pipeline run: error: AttributeError: module ")
    assert last.endswith("has no attribute 'contrib'")


def test_run_help_documents_tf1(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    assert "--tf1" in out and "QUEUE_PIPELINE_TF1" in out and "tensorflow.compat.v1" in out


@pytest.mark.parametrize("command", ["migrate", "convert"])
@pytest.mark.parametrize("value", ["--input_dir=data", "--input_dir data", "-v"])
def test_a_program_argument_starting_with_a_dash_is_taken_as_the_value(command, value):
    """`--argv '--flag=value'` (one token starting with --) is the program's, not an option."""
    rest = ["--out", "out"] if command == "convert" else []
    argv = [command, "f.py:inputs", "--argv", value, *rest]
    args = cli.build_parser().parse_args(cli.joined_values(argv))
    assert args.argv == value


def test_run_hands_its_scripts_arguments_over_untouched():
    argv = ["run", "s.py", "--argv", "--x=1"]
    assert cli.joined_values(argv) == argv
