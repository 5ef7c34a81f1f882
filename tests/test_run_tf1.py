"""`queue-pipeline run --tf1`: scripts written for TF 1.x itself, run on queue_pipeline.

The subprocess tests run the TF1-style scripts in tests/scripts/ as
``python -m queue_pipeline run --tf1 ...`` on both engines, and compare what
they print with the same script run by ``tests/scripts/tf1_native.py``
(``import tensorflow`` aliased to ``tensorflow.compat.v1`` in TF1 mode, with
TensorFlow's own queue API: the oracle). ``--tf1`` puts each subprocess in
TF1 mode itself, so they behave the same in both modes of the suite. The
in-process tests check the alias and the removed-API reports with
``_tf1_script.alias()`` alone, which changes no TF mode; a whole ``--tf1``
run in-process only happens in TF1 mode (it disables v2 behaviour for good).
"""

from __future__ import annotations

import builtins
import concurrent.futures
import os
import pathlib
import subprocess
import sys

import pytest
import tensorflow as tf

import queue_pipeline
from queue_pipeline import cli
from queue_pipeline._scripts import install as _install
from queue_pipeline._scripts import removed as _removed
from queue_pipeline._scripts import tf1 as _tf1_script

# Every test here starts Python subprocesses running scripts (seconds each).
pytestmark = pytest.mark.slow

SCRIPTS = pathlib.Path(__file__).parent / "scripts"
READER = SCRIPTS / "tf1_fully_connected_reader.py"
NATIVE = SCRIPTS / "tf1_native.py"
PROBE = SCRIPTS / "tf1_alias_probe.py"
PROBE_CHECKS = 23
TIMEOUT_S = 180  # for one subprocess
PARALLEL = 3  # subprocesses at a time (2 cores; each holds a TensorFlow)
# A fixture runs up to 7 of them. Every run sets its own mode (``run --tf1``, the
# variable), so the TF1 suite would repeat them unchanged.
_TIMEOUT = pytest.mark.timeout(6 * TIMEOUT_S)
_ONE_SUITE = pytest.mark.one_suite("each subprocess sets its own TF mode")


# The tests of one module fixture run on one xdist worker (pytest.ini's --dist
# loadgroup): each worker that ran one of them would start the fixture's
# subprocesses again.
_READER = pytest.mark.xdist_group("run_tf1_reader_runs")
_OTHER = pytest.mark.xdist_group("run_tf1_other_runs")


def SLOW(test):  # noqa: N802 - used as a marker
    return _ONE_SUITE(_TIMEOUT(test))


RUN_TF1 = ("-m", "queue_pipeline", "run", "--tf1")
SLIM_ERROR = (
    "queue-pipeline run --tf1: error: RemovedAttributeError: `tf.contrib.slim` "
    "was removed in TensorFlow 2.x; use the `tf-slim` package "
    "(`import tf_slim as slim`)."
)


def _env(**extra: str) -> dict[str, str]:
    """This environment without the switches under test, plus `extra`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("QUEUE_PIPELINE_TF1", "QUEUE_PIPELINE_ENGINE")
    }
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.update(extra)
    return env


def _run_all(commands: dict, envs: dict | None = None) -> dict:
    """Runs ``python ARGS...`` for each entry of `commands`, PARALLEL at a time.

    Returns {key: (returncode, stdout, stderr)}. Each process is killed if it
    has not finished within TIMEOUT_S.
    """

    def run(key):
        done = subprocess.run(
            [sys.executable, *commands[key]],
            capture_output=True,
            text=True,
            env=(envs or {}).get(key, _env()),
            timeout=TIMEOUT_S,
        )
        return done.returncode, done.stdout, done.stderr

    with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        return dict(zip(commands, pool.map(run, commands)))


def _ok(key, result) -> tuple[int, str, str]:
    code, out, err = result
    assert code == 0, (key, err[-3000:])
    return result


# --- the classic reader script: --tf1 on both engines vs native TF1 ----------

ENGINES = {
    "native": (str(NATIVE), str(READER)),
    "queue": (*RUN_TF1, str(READER)),
    "dataset": (*RUN_TF1, "--engine", "dataset", str(READER)),
}
IMPL = {
    "native": "impl: tensorflow.python.training.coordinator "
    "tensorflow.python.training.queue_runner_impl",
    "queue": "impl: queue_pipeline.coordinator queue_pipeline.runner",
    "dataset": "impl: queue_pipeline.coordinator queue_pipeline._engine.runners",
}


@pytest.fixture(scope="module")
def reader_runs(tmp_path_factory):
    """The reader script's output for each (order, engine), run side by side."""
    commands = {}
    for order in ("fifo", "shuffle"):
        for engine, argv in ENGINES.items():
            train_dir = tmp_path_factory.mktemp(f"{order}-{engine}")
            commands[order, engine] = [
                *argv,
                "--train_dir",
                str(train_dir),
                *(["--shuffle"] if order == "shuffle" else []),
            ]
    return _run_all(commands)


def _without_impl(out: str) -> list[str]:
    return [line for line in out.splitlines() if not line.startswith("impl:")]


@SLOW
@_READER
@pytest.mark.parametrize("engine", ["queue", "dataset"])
@pytest.mark.parametrize("order", ["fifo", "shuffle"])
def test_reader_script_prints_what_native_tf1_prints(reader_runs, order, engine):
    _, native, _ = _ok((order, "native"), reader_runs[order, "native"])
    _, out, _ = _ok((order, engine), reader_runs[order, engine])
    assert IMPL["native"] in native.splitlines()
    assert IMPL[engine] in out.splitlines()  # queue_pipeline's Coordinator and runners ran
    assert _without_impl(out) == _without_impl(native)
    assert f"tensorflow {tf.__version__} eager False" in native
    assert "Done training for 5 epochs, 15 steps." in native
    assert "records: 24 each seen 5 times" in native
    if order == "fifo":  # the order is fixed: every step's ids and loss are compared
        assert sum(line.startswith("Step ") for line in native.splitlines()) == 15
    else:
        assert "eval loss after is lower: True" in native


# --- the alias, errors and the environment, in subprocesses ------------------


def _csv(tmp_path) -> str:
    path = tmp_path / "numbers.csv"
    path.write_text("".join(f"{i},w{i}\n" for i in range(5)))
    return str(path)


@pytest.fixture(scope="module")
def other_runs(tmp_path_factory):
    """The other subprocess runs of this file, side by side."""
    csv = _csv(tmp_path_factory.mktemp("csv"))
    legacy = str(SCRIPTS / "legacy_csv_batch.py")
    child = str(SCRIPTS / "tf1_env_child.py")
    commands = {
        "probe": (*RUN_TF1, str(PROBE)),
        "probe-dataset": (
            "-m",
            "queue_pipeline",
            "run",
            str(PROBE),
            "--engine",
            "dataset",
            "--tf1",
        ),
        "slim": (*RUN_TF1, str(SCRIPTS / "tf1_slim_model.py")),
        "env-parent": (*RUN_TF1, str(SCRIPTS / "tf1_env_parent.py")),
        "env-only": ("-m", "queue_pipeline", "run", child),
        "compat-queue": (*RUN_TF1, legacy, csv, "--epochs", "2"),
        "compat-dataset": (*RUN_TF1, "--engine", "dataset", legacy, csv, "--epochs", "2"),
    }
    return _run_all(commands, envs={"env-only": _env(QUEUE_PIPELINE_TF1="1")})


@SLOW
@_OTHER
@pytest.mark.parametrize("run", ["probe", "probe-dataset"])
def test_alias_reaches_the_script_and_its_modules_only(other_runs, run):
    _, out, _ = _ok(run, other_runs[run])
    lines = out.splitlines()
    assert not [line for line in lines if line.startswith("FAIL")], out
    assert sum(line.startswith("ok ") for line in lines) == PROBE_CHECKS, out


@SLOW
@_OTHER
def test_contrib_is_reported_with_its_replacement_and_exits_1(other_runs):
    code, out, err = other_runs["slim"]
    assert code == 1, err[-3000:]
    assert err.rstrip().splitlines()[-1] == SLIM_ERROR
    assert "Traceback" in err and 'tf1_slim_model.py", line 9' in err
    assert "slim = tf.contrib.slim" in err
    assert "runpy" not in err  # the runner's frames are cut, as for any script error


@SLOW
@_OTHER
def test_tf1_reaches_subprocesses_and_the_variable_alone_turns_it_on(other_runs):
    _, out, _ = _ok("env-parent", other_runs["env-parent"])
    assert "parent: QUEUE_PIPELINE_TF1=1 eager=False" in out
    assert "child: QUEUE_PIPELINE_TF1=1 eager=False fed=3.0" in out  # `run` without --tf1
    _, out, _ = _ok("env-only", other_runs["env-only"])
    assert "child: QUEUE_PIPELINE_TF1=1 eager=False fed=3.0" in out


@SLOW
@_OTHER
@pytest.mark.parametrize("engine", ["queue", "dataset"])
def test_compat_v1_scripts_run_unchanged_under_tf1(other_runs, engine):
    _, out, _ = _ok(engine, other_runs[f"compat-{engine}"])
    rows = sorted(line for line in out.splitlines() if line.startswith("row "))
    assert rows == sorted([f"row {i} w{i}" for i in range(5)] * 2)
    assert "eager: False" in out
    assert f"engine: {'-' if engine == 'queue' else 'dataset'}" in out
    if engine == "queue":
        assert "runners: queue_pipeline.runner" in out


# --- the alias in-process (either TF mode: alias() switches no mode) ---------


def _exec_as(source: str, name: str, file: str) -> dict:
    namespace = {"__name__": name, "__file__": file}
    exec(compile(source, file, "exec"), namespace)
    return namespace


def test_alias_answers_script_code_only_and_is_undone(tmp_path):
    original = builtins.__import__
    real = sys.modules["tensorflow"]
    script = str(tmp_path / "train.py")
    with _tf1_script.alias():
        with _tf1_script.alias():  # nests
            ns = _exec_as(
                "import tensorflow as tf\nimport tensorflow.compat.v1 as v1\n"
                "from tensorflow import train\nimport tensorflow\n",
                "__main__",
                script,
            )
        assert ns["tf"] is ns["tensorflow"] is not real
        assert ns["tf"].placeholder is tf.compat.v1.placeholder
        assert ns["v1"] is tf.compat.v1 and ns["train"] is tf.compat.v1.train
        assert builtins.__import__ is not original  # still the outer alias
        for name, file in [
            ("queue_pipeline.probe", queue_pipeline.__file__),
            ("tensorflow.python.probe", tf.__file__),
            ("probe", os.__file__),  # the standard library
            ("pytest.probe", pytest.__file__),
        ]:  # an installed package
            assert _exec_as("import tensorflow as tf\n", name, file)["tf"] is real, name
    assert builtins.__import__ is original
    assert _exec_as("import tensorflow as tf\n", "__main__", script)["tf"] is real


def test_alias_passes_through_when_wrapped_after_it(tmp_path):
    original = builtins.__import__
    calls = []

    def wrapper(*args):
        calls.append(args[0])
        return inner(*args)

    with _tf1_script.alias():
        inner = builtins.__import__
        builtins.__import__ = wrapper
    script = str(tmp_path / "s.py")
    try:
        assert builtins.__import__ is wrapper  # not ours to remove
        ns = _exec_as("import tensorflow as tf\n", "__main__", script)
        assert ns["tf"] is sys.modules["tensorflow"] and calls == ["tensorflow"]
        with _tf1_script.alias():  # active again below the wrapper, not around it
            assert builtins.__import__ is wrapper
            ns = _exec_as("import tensorflow as tf\n", "__main__", script)
        assert ns["tf"] is not sys.modules["tensorflow"] and len(calls) == 2
    finally:
        builtins.__import__ = original
    with _tf1_script.alias():  # the wrapper is gone: wraps the original again
        assert builtins.__import__ is not original
        assert (
            _exec_as("import tensorflow as tf\n", "__main__", script)["tf"]
            is not (sys.modules["tensorflow"])
        )
    assert builtins.__import__ is original


SLIM = "use the `tf-slim` package (`import tf_slim as slim`)."
REPORTS = [
    (
        "attribute",
        "import tensorflow as tf\nslim = tf.contrib.slim\n",
        f"RemovedAttributeError: `tf.contrib.slim` was removed in TensorFlow 2.x; {SLIM}",
    ),
    (
        "method",
        "import tensorflow as tf\ntf.contrib.layers.xavier_initializer()\n",
        "RemovedAttributeError: `tf.contrib.layers.xavier_initializer` was removed in "
        "TensorFlow 2.x; use `tf.glorot_uniform_initializer()`.",
    ),
    (
        "tf_upgrade_v2-rename",
        "import tensorflow as tf\ntf.contrib.data.parallel_interleave\n",
        "RemovedAttributeError: `tf.contrib.data.parallel_interleave` was removed in "
        "TensorFlow 2.x; use `tf.data.experimental.parallel_interleave`.",
    ),
    (
        "no-replacement",
        "import tensorflow as tf\ntf.contrib.training.batch_sequences_with_states\n",
        "RemovedAttributeError: `tf.contrib.training.batch_sequences_with_states` was "
        "removed in TensorFlow 2.x; there is no replacement",
    ),
    (
        "unknown-contrib-module",
        "import tensorflow as tf\ntf.contrib.foo.bar\n",
        "RemovedAttributeError: `tf.contrib.foo` was removed in TensorFlow 2.x with "
        "`tf.contrib`; its modules moved into TensorFlow",
    ),
    (
        "global-step",
        "import tensorflow as tf\n"
        "tf.contrib.framework.get_or_create_global_step()\n",  # cifar10_train.py
        "RemovedAttributeError: `tf.contrib.framework.get_or_create_global_step` was removed "
        "in TensorFlow 2.x; use `tf.train.get_or_create_global_step()`.",
    ),
    (
        "getattr",
        "import tensorflow as tf\ngetattr(tf, 'contrib')\n",
        "RemovedAttributeError: `tf.contrib` was removed in TensorFlow 2.x; its modules",
    ),
    (
        "estimator",
        "import tensorflow as tf\ntf.estimator.Estimator\n",
        "RemovedAttributeError: `tf.estimator.Estimator` was removed in TensorFlow 2.x with "
        "`tf.estimator`; rewrite the model with Keras",
    ),
    (
        "learn",
        "import tensorflow as tf\ntf.contrib.learn.DNNClassifier\n",
        "RemovedAttributeError: `tf.contrib.learn` was removed in TensorFlow 2.x; rewrite "
        "the model with Keras",
    ),
    (
        "missing",
        "import tensorflow as tf\ntf.no_such_thing.x\n",
        "RemovedAttributeError: `tf.no_such_thing` does not exist in TensorFlow 2.x, whose "
        "`tf.compat.v1` is what `import tensorflow` gives under --tf1",
    ),
    (
        "missing-in-submodule",
        "import tensorflow as tf\ntf.train.NoSuchThing\n",
        "RemovedAttributeError: `tf.train.NoSuchThing` does not exist in TensorFlow 2.x",
    ),
    (
        "compat-v1-contrib",
        "import tensorflow.compat.v1 as tf\ntf.contrib.data.Dataset\n",
        "RemovedAttributeError: `tf.contrib.data` was removed in TensorFlow 2.x; use "
        "`tf.data` and `tf.data.experimental`.",
    ),
    (
        "keras2-layers",
        "import tensorflow as tf\ntf.layers.dense\n",
        "RemovedAttributeError: `tf.layers.dense` is a Keras 2 API, and TensorFlow 2.x ships "
        "Keras 3, which has none of TensorFlow 1.x's layers; install the `tf_keras` package",
    ),
    (
        "import",
        "import tensorflow.contrib.slim as slim\n",
        f"RemovedModuleError: `tensorflow.contrib.slim` was removed in TensorFlow 2.x; {SLIM}",
    ),
    (
        "from-import",
        "from tensorflow.contrib import slim\n",
        f"RemovedModuleError: `tensorflow.contrib.slim` was removed in TensorFlow 2.x; {SLIM}",
    ),
    (
        "from-tensorflow-import",
        "from tensorflow import contrib\n",
        "RemovedModuleError: `tensorflow.contrib` was removed in TensorFlow 2.x; its modules",
    ),
    (
        "examples",
        "from tensorflow.examples.tutorials.mnist import input_data\n",
        "RemovedModuleError: `tensorflow.examples.tutorials.mnist` was removed in TensorFlow "
        "2.x; load the arrays with `tf.keras.datasets.mnist.load_data()`",
    ),
    (
        "from-compat-v1-import",
        "from tensorflow.compat.v1 import contrib\n",
        "RemovedModuleError: `tf.contrib` was removed in TensorFlow 2.x; its modules",
    ),
]


@pytest.mark.parametrize("source, expected", [r[1:] for r in REPORTS], ids=[r[0] for r in REPORTS])
def test_removed_apis_are_named_with_their_replacement(tmp_path, source, expected):
    script = tmp_path / "train.py"
    script.write_text(source)
    with _tf1_script.alias(), pytest.raises((AttributeError, ImportError)) as info:
        _exec_as(source, "__main__", str(script))
    explained = _tf1_script.explain(info.value)
    assert explained is not None, info.value
    assert f"{type(explained).__name__}: {explained}".startswith(expected)
    kind = AttributeError if "Attribute" in expected else ImportError
    assert isinstance(info.value, kind) and isinstance(explained, kind)  # scripts' excepts


def test_removed_names_keep_hasattr_and_except_working(tmp_path):
    source = (
        "import tensorflow as tf\n"
        "has_contrib = hasattr(tf, 'contrib')\n"
        "try:\n    import tensorflow.contrib.slim as slim\n"
        "except ImportError:\n    slim = None\n"
    )
    with _tf1_script.alias():
        ns = _exec_as(source, "__main__", str(tmp_path / "s.py"))
    assert ns["has_contrib"] is False and ns["slim"] is None


def test_explain_leaves_other_errors_alone():
    assert _tf1_script.explain(ValueError("bad row")) is None
    assert _tf1_script.explain(ModuleNotFoundError("no numpyx", name="numpyx")) is None
    try:
        object().contrib  # noqa: B018
    except AttributeError as error:
        assert _tf1_script.explain(error) is None


def _resolves(path: str) -> bool:
    obj = tf.compat.v1
    parts = path.split(".")[1:]
    if parts[:2] == ["compat", "v2"]:
        obj, parts = tf.compat.v2, parts[2:]
    try:
        for part in parts:
            obj = getattr(obj, part)
    except AttributeError:
        return False
    return True


@pytest.mark.parametrize("key", sorted(_removed.REMOVED))
def test_every_replacement_named_in_the_table_exists(key):
    import re

    names = re.findall(r"`(tf\.[\w.]+)(?:\(\))?`", _removed.REMOVED[key])
    for name in names:
        if name.startswith(("tf.contrib", "tf.estimator")):
            continue  # the removed names themselves
        assert _resolves(name), (key, name)


@pytest.mark.parametrize(
    "value, on",
    [("", False), ("0", False), ("off", False), ("1", True), ("true", True), ("YES", True)],
)
def test_the_variable_is_a_switch(monkeypatch, value, on):
    monkeypatch.setenv("QUEUE_PIPELINE_TF1", value)
    assert _tf1_script.from_environment() is on


def test_a_bad_variable_stops_the_run_before_it_starts(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("QUEUE_PIPELINE_TF1", "maybe")
    script = tmp_path / "s.py"
    script.write_text("raise SystemExit(5)\n")
    assert cli.main(["run", str(script)]) == 2
    assert "QUEUE_PIPELINE_TF1='maybe' is not a switch" in capsys.readouterr().err


# --- a whole --tf1 run in-process (TF1 mode only) ----------------------------


@pytest.mark.tf1_only("a --tf1 run disables v2 behaviour for the rest of the process")
def test_run_tf1_in_process(capfd, monkeypatch):
    monkeypatch.delenv("QUEUE_PIPELINE_TF1", raising=False)
    original = builtins.__import__
    assert cli.main(["run", "--tf1", str(PROBE)]) == 0
    out = capfd.readouterr().out
    assert "FAIL" not in out and out.count("ok ") == PROBE_CHECKS, out
    assert builtins.__import__ is original
    assert _install._ACTIVE is None and "QUEUE_PIPELINE_TF1" not in os.environ


@pytest.mark.tf1_only("a --tf1 run disables v2 behaviour for the rest of the process")
def test_run_tf1_in_process_reports_a_removed_import(capfd, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import tensorflow as tf\nimport tensorflow.contrib.slim as slim\n")
    assert cli.main(["run", str(script), "--tf1"]) == 1
    err = capfd.readouterr().err
    assert "Traceback" in err and 'train.py", line 2' in err
    assert err.rstrip().splitlines()[-1] == (
        "queue-pipeline run --tf1: error: RemovedModuleError: `tensorflow.contrib.slim` "
        f"was removed in TensorFlow 2.x; {SLIM}"
    )
