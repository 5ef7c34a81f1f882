"""What queue_pipeline costs before it is used: imports, the pytest plugin, the CLI.

Being installed must not slow down or clutter anything else: ``import
queue_pipeline`` imports neither TensorFlow nor pytest, pytest's start-up in
any project loads the plugin without TensorFlow, ``queue-pipeline --help``
answers without TensorFlow, and the commands hide TensorFlow's C++ start-up
lines unless asked (NOTE [ TensorFlow's start-up noise ]).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from helpers import tf1_mode
from queue_pipeline import _cli_support

pytest_plugins = ["pytester"]

_HEAVY = ("tensorflow", "keras", "pytest", "numpy")


def _imported_after(code: str) -> list[str]:
    """Top-level packages among _HEAVY that `code` leaves in sys.modules (fresh process)."""
    probe = (
        f"{code}\nimport sys\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(_HEAVY)!r}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    return eval(out.strip().splitlines()[-1])  # a printed list of names


@pytest.mark.one_suite("a fresh interpreter imports the package; no TF mode is set")
def test_importing_the_package_imports_neither_tensorflow_nor_pytest():
    assert _imported_after("import queue_pipeline") == []


@pytest.mark.one_suite("a fresh interpreter imports the package; no TF mode is set")
@pytest.mark.slow
def test_a_public_name_imports_on_first_use():
    assert "tensorflow" in _imported_after("import queue_pipeline as qp\nqp.batch")
    assert "tensorflow" in _imported_after("from queue_pipeline import Coordinator")


def test_an_unknown_name_is_an_attribute_error():
    import queue_pipeline

    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        queue_pipeline.no_such_name  # noqa: B018 - the access is the test
    assert set(queue_pipeline.__all__) <= set(dir(queue_pipeline))


@pytest.mark.one_suite("a fresh interpreter imports the package; no TF mode is set")
def test_loading_the_plugin_module_imports_no_tensorflow():
    assert _imported_after("import queue_pipeline.pytest_plugin") == ["pytest"]


@pytest.mark.one_suite("a fresh interpreter imports the package; no TF mode is set")
@pytest.mark.slow
def test_pytest_start_up_with_the_plugin_installed_imports_no_tensorflow(pytester):
    pytester.makepyfile(
        test_probe=textwrap.dedent("""
        import sys

        def test_plugin_loaded_without_tensorflow(request):
            assert request.config.pluginmanager.has_plugin("queue_pipeline")
            assert "tensorflow" not in sys.modules
    """)
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", timeout=120)
    result.assert_outcomes(passed=1)


@pytest.mark.one_suite("a fresh interpreter imports the package; no TF mode is set")
def test_help_imports_no_tensorflow():
    code = (
        "from queue_pipeline import cli\n"
        "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert "tensorflow" not in _imported_after(code)


def _command(tmp_path, *flags: str) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\nimport tensorflow as tf\n"
        "sys.stderr.write('the script speaks\\n')\nprint('ran')\n"
    )
    run = ["run", "--tf1", str(script)] if tf1_mode() else ["run", str(script)]
    env = {k: v for k, v in os.environ.items() if k != _cli_support.TF_LOGS_ENV}
    return subprocess.run(
        [sys.executable, "-m", "queue_pipeline", *flags, *run],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.slow
def test_commands_hide_tensorflow_start_up_lines(tmp_path):
    done = _command(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n"
    assert "absl::InitializeLog" not in done.stderr and "I0000" not in done.stderr
    assert "the script speaks\n" in done.stderr


@pytest.mark.one_suite("--tf-logs acts before any TF mode is set")
@pytest.mark.slow
def test_tf_logs_shows_them(tmp_path):
    done = _command(tmp_path, "--tf-logs")
    assert done.returncode == 0, done.stderr
    assert "absl::InitializeLog" in done.stderr


def test_quiet_start_up_writes_back_every_other_line(capfd):
    noise = (
        "WARNING: All log messages before absl::InitializeLog() is called are written "
        "to STDERR\n"
        "I0000 00:00:1796127257.618371   19378 port.cc:153] oneDNN custom operations\n"
        "E0000 00:00:1796127260.916639   19378 cuda_platform.cc:52] failed call to cuInit\n"
    )
    kept = (
        "W0000 00:00:1796127260.916639   19378 loader.cc:1] a real warning\n"
        "UserWarning: something the user must see\n"
    )
    with _cli_support.quiet_tf_startup():
        os.write(2, (noise.splitlines(True)[0] + kept.splitlines(True)[0]).encode())
        os.write(2, ("".join(noise.splitlines(True)[1:]) + kept.splitlines(True)[1]).encode())
    assert capfd.readouterr().err == kept
