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
    # run --tf1's own switch to TF1 mode: TF's notice about ref variables is not the script's
    assert "non-resource variables" not in done.stderr


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


# --- what a command prints: its report and its errors, nothing of TF's own --------

_TF_INTERNALS = (
    "WARNING:tensorflow:",  # TF's deprecation notices (tf.get_logger())
    "Instructions for updating:",
    "non-resource variables are not supported in the long term",  # disable_v2_behavior()
    "I0000 ",  # C++ runtime INFO lines (MLIR, TFRecordDataset buffer size, ...)
    "W0000 ",  # and WARNING lines (local_rendezvous aborting, ...)
)


@pytest.mark.one_suite("the migrate subprocess runs with --tf1 in either suite")
@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--tf-logs"]])
def test_migrate_prints_its_report_and_nothing_of_tensorflows_own(tmp_path, flags):
    # TF's own fully_connected_reader.py input code: the legacy side of the proof
    # calls TF's deprecated queue API, so TensorFlow has much to say about it.
    import shutil  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415
    import tensorflow as tf  # noqa: PLC0415

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    shutil.copy(os.path.join(root, "tests", "scripts", "fully_connected_reader.py"), tmp_path)
    rng = np.random.default_rng(0)
    with tf.io.TFRecordWriter(str(tmp_path / "validation.tfrecords")) as writer:
        for _ in range(200):
            feature = {
                "image_raw": tf.train.Feature(
                    bytes_list=tf.train.BytesList(
                        value=[rng.integers(0, 256, 784).astype("uint8").tobytes()]
                    )
                ),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[3])),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    # The command hides TF's C++ lines itself: no TF_CPP_MIN_LOG_LEVEL from the suite.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (_cli_support.TF_LOGS_ENV, "TF_CPP_MIN_LOG_LEVEL")
    }
    done = subprocess.run(
        [sys.executable, "-m", "queue_pipeline", *flags, "migrate", "--tf1"]
        + ["fully_connected_reader.py:inputs", "--call", f"{str(tmp_path)!r}, False, 100, 1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "def inputs_dataset" in done.stdout
    shown = [marker for marker in _TF_INTERNALS if marker in done.stderr]
    if flags:  # --tf-logs: TensorFlow's own output, as TensorFlow writes it
        assert shown[:3] == list(_TF_INTERNALS[:3]), done.stderr
    else:
        assert shown == [], done.stderr
        assert done.stderr.startswith("queue-pipeline migrate: inputs_dataset\n"), done.stderr
        assert "Verify: MATCH" in done.stderr


def test_tf_logs_hidden_hides_tensorflows_notices_for_the_block_only(monkeypatch):
    import logging  # noqa: PLC0415
    import warnings  # noqa: PLC0415

    from queue_pipeline._core import quiet  # noqa: PLC0415

    monkeypatch.delenv(quiet.TF_LOGS_ENV, raising=False)
    logger = logging.getLogger("tensorflow")
    before = logger.level
    options = "To make it possible to preserve tf.data options across serialization boundaries"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet.tf_logs_hidden():
            assert not logger.isEnabledFor(logging.WARNING)
            assert logger.isEnabledFor(logging.ERROR)
            warnings.warn(options, UserWarning, stacklevel=1)
            warnings.warn("the user's own warning", UserWarning, stacklevel=1)
        assert logger.level == before
        warnings.warn(options, UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["the user's own warning", options]
    monkeypatch.setenv(quiet.TF_LOGS_ENV, "1")  # --tf-logs
    with quiet.tf_logs_hidden():
        assert logger.level == before
