"""The user's TensorFlow: checked at first use, never replaced by pip.

setup.py names no TensorFlow distribution (extras ``[tensorflow]`` and
``[tensorflow-cpu]`` bring one), so the first name that needs TensorFlow
checks it is there and recent enough; and ``pip install`` into an environment
that has ``tensorflow-cpu`` installs the package alone.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import types

import pytest

import queue_pipeline
from queue_pipeline import cli
from queue_pipeline._core import tf_required

ROOT = pathlib.Path(__file__).parents[1]


@pytest.fixture
def unchecked(monkeypatch):
    """Forgets the process's TensorFlow check, so that the next name checks again."""
    monkeypatch.setattr(tf_required, "_checked", None)
    return monkeypatch


def _hide_tensorflow(monkeypatch):
    # None in sys.modules: `import tensorflow` raises ModuleNotFoundError(name="tensorflow"),
    # exactly as in a Python without it.
    monkeypatch.setitem(sys.modules, "tensorflow", None)


def _old_tensorflow(monkeypatch, version="2.15.1"):
    fake = types.ModuleType("tensorflow")
    fake.__version__ = version  # type: ignore[attr-defined]
    fake.__file__ = "/site-packages/tensorflow/__init__.py"
    monkeypatch.setitem(sys.modules, "tensorflow", fake)


def test_no_tensorflow_is_one_error_naming_the_range_and_the_install_command(unchecked):
    _hide_tensorflow(unchecked)
    with pytest.raises(tf_required.TensorFlowRequiredError) as caught:
        queue_pipeline.__getattr__("shuffle_batch")
    message = str(caught.value)
    assert "TensorFlow >= 2.16 (tested on 2.16.2 and 2.21.0)" in message
    assert "has no TensorFlow" in message
    assert "pip install 'queue_pipeline[tensorflow]'" in message
    assert "'queue_pipeline[tensorflow-cpu]'" in message
    assert isinstance(caught.value, ImportError)  # `except ImportError` guards keep working


def test_too_old_tensorflow_names_the_version_found_and_the_upgrade(unchecked):
    _old_tensorflow(unchecked)
    with pytest.raises(tf_required.TensorFlowRequiredError) as caught:
        queue_pipeline.__getattr__("data")
    message = str(caught.value)
    assert "TensorFlow >= 2.16" in message
    assert "has TensorFlow 2.15.1 from /site-packages/tensorflow/__init__.py" in message
    assert "pip install --upgrade '" in message and ">=2.16'" in message


@pytest.mark.parametrize("version", ["2.16.0", "2.16.2", "2.21.0", "2.22.0rc1", "3.0.0-dev2027"])
def test_supported_versions_pass(unchecked, version):
    _old_tensorflow(unchecked, version)
    assert tf_required.require_tensorflow() is sys.modules["tensorflow"]


def test_tensorflow_free_parts_are_reached_without_the_check(unchecked):
    _hide_tensorflow(unchecked)
    assert queue_pipeline.__getattr__("pytest_plugin").__name__ == "queue_pipeline.pytest_plugin"
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        queue_pipeline.__getattr__("no_such_name")


@pytest.mark.parametrize("as_json", [False, True])
def test_a_command_without_tensorflow_exits_2_with_the_error(unchecked, capsys, as_json):
    _hide_tensorflow(unchecked)
    status = cli.main(["demo", "--quiet"] + (["--json"] if as_json else []))
    out, err = capsys.readouterr()
    assert status == 2
    assert err.startswith("queue-pipeline demo: error: TensorFlowRequiredError: queue_pipeline")
    assert err.count("\n") == 1 and "pip install 'queue_pipeline[tensorflow]'" in err
    if as_json:
        assert "TensorFlow >= 2.16" in json.loads(out)["error"]


def _fake_distribution(site: pathlib.Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("pip\n")


def _run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    # No pip configuration of this machine (extra indexes, find-links, constraints).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, env=env, timeout=300, **kwargs
    )


@pytest.fixture(scope="module")
def tensorflow_cpu_venv(tmp_path_factory):
    """(python, wheels): a venv that has tensorflow-cpu 2.16.2, and the package's wheel.

    The venv's installed distributions are tensorflow-cpu 2.16.2 (the usual CPU
    and CI install), numpy and libcst, as metadata: all that pip's resolver
    reads of them. The wheel is built from a copy of setup.py and what it
    reads, so the work tree gets no build/ directory.
    """
    tmp = tmp_path_factory.mktemp("pip")
    project = tmp / "project"
    (project / "queue_pipeline").mkdir(parents=True)
    for name in (
        "setup.py",
        "README.rst",
        "LICENSE",
        "queue_pipeline/__init__.py",
        "queue_pipeline/_version.py",
    ):
        (project / name).write_bytes((ROOT / name).read_bytes())
    (project / "queue_pipeline" / "py.typed").write_text("")
    wheels = tmp / "wheels"
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index", "--no-build-isolation"]
        + ["-w", wheels, project]
    )
    assert built.returncode == 0, built.stdout + built.stderr
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = pathlib.Path(
        _run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
        ).stdout.strip()
    )
    for name, version in (("tensorflow-cpu", "2.16.2"), ("numpy", "1.26.4"), ("libcst", "1.4.0")):
        _fake_distribution(site, name, version)
    return python, wheels


@pytest.mark.one_suite("pip resolves in a subprocess; no TF mode is involved")
@pytest.mark.slow
@pytest.mark.xdist_group("tensorflow_cpu_venv")  # one worker makes the module's venv
@pytest.mark.parametrize("requirement", ["queue_pipeline", "queue_pipeline[tensorflow-cpu]"])
def test_pip_install_into_a_tensorflow_cpu_venv_installs_the_package_alone(
    tensorflow_cpu_venv, tmp_path, requirement
):
    # Offline (--no-index): a requirement that the venv does not already satisfy
    # would fail the resolution (with today's setup.py before this change:
    # "No matching distribution found for tensorflow>=2.16").
    python, wheels = tensorflow_cpu_venv
    report = tmp_path / "report.json"
    pip = _run(
        [python, "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", wheels]
        + ["--disable-pip-version-check", "--report", report, requirement]
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    installed = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
    assert [name.replace("_", "-") for name in installed] == ["queue-pipeline"]
