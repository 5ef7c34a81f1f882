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


def test_python_dash_m_runs():
    out = subprocess.run([sys.executable, "-m", "queue_pipeline", "table"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert "shuffle_batch  ->  queue_pipeline.data.shuffle_batch" in out.stdout


def test_readme_table_is_generated_from_the_code():
    import pathlib

    readme = (pathlib.Path(__file__).parents[1] / "README.rst").read_text()
    assert migration.render("rst") in readme, (
        "README.rst's migration table is stale: paste `python -m queue_pipeline "
        "table --format rst` into it")


def test_readme_commands_are_the_demo_and_what_ci_runs():
    import pathlib

    root = pathlib.Path(__file__).parents[1]
    readme = (root / "README.rst").read_text()
    commands = [line.strip() for line in readme.splitlines()
                if line.startswith("    pip install")]
    assert commands[:2] == ["pip install -e '.[examples]' && queue-pipeline demo",
                            "pip install -e '.[test]' && python -m pytest -q -p no:cacheprovider"]
    assert commands[1] in (root / ".ci" / "run").read_text()
