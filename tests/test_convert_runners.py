"""convert's runner names as users type them (queue_pipeline/_convert/runners.py).

No cluster: what each name resolves to (NOTE [ Runners by name ]), the error
for an unknown one (exit 2 from the command, before anything is written), and
the one-line report of a failed job (NOTE [ A failed job in one line ]).
"""

from __future__ import annotations

import logging

import pytest

from queue_pipeline import cli
from queue_pipeline._convert import command, runners

PATHS = {
    "DirectRunner": "apache_beam.runners.direct.direct_runner.DirectRunner",
    "DaskRunner": "apache_beam.runners.dask.dask_runner.DaskRunner",
    "PortableRunner": "apache_beam.runners.portability.portable_runner.PortableRunner",
    "FlinkRunner": "apache_beam.runners.portability.flink_runner.FlinkRunner",
    "SparkRunner": "apache_beam.runners.portability.spark_runner.SparkRunner",
    "DataflowRunner": "apache_beam.runners.dataflow.dataflow_runner.DataflowRunner",
}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_each_name_users_type_resolves_to_the_class_beam_imports(name):
    options = runners.beam_options(name, ["--x=1"])
    assert options[:2] == ["--x=1", f"--runner={PATHS[name]}"]
    assert runners.runner_name(options) == name
    # the same name after `--`, in any case, with or without "Runner"
    for spelled in (name, name.lower(), name[: -len("Runner")].lower()):
        assert runners.beam_options(None, ["--runner", spelled])[0] == f"--runner={PATHS[name]}"


@pytest.mark.parametrize("name", sorted(PATHS))
def test_beam_imports_each_resolved_path(name):
    import importlib

    module, _, cls = PATHS[name].rpartition(".")
    try:
        found = importlib.import_module(module)
    except ImportError as e:  # an optional extra of Beam's (Dataflow: apache-beam[gcp])
        pytest.skip(f"{module}: {e}")
    assert isinstance(getattr(found, cls), type)


def test_only_the_direct_runner_gets_the_local_defaults_and_verify():
    direct = runners.beam_options(None, [])
    assert runners.is_direct(direct) and runners.runner_name(direct) == "DirectRunner"
    assert any(a.startswith("--direct_running_mode=") for a in direct)
    dask = runners.beam_options("DaskRunner", ["--dask_client_address=h:1"])
    assert not runners.is_direct(dask) and not any("direct_" in a for a in dask)


def test_runner_replaces_a_runner_among_the_beam_options():
    options = runners.beam_options("PortableRunner", ["--runner=DirectRunner", "--job_endpoint=e"])
    assert options == ["--job_endpoint=e", f"--runner={PATHS['PortableRunner']}"]


def test_a_runner_classs_full_path_goes_to_beam_as_given():
    options = runners.beam_options("my_pkg.runners.MyRunner", [])
    assert options == ["--runner=my_pkg.runners.MyRunner"]
    assert runners.runner_name(options) == "my_pkg.runners.MyRunner"
    assert runners.runner_name(runners.beam_options(PATHS["DaskRunner"], [])) == "DaskRunner"


@pytest.mark.parametrize("given", [("Sparkk", []), (None, ["--runner", "Nope"])], ids=str)
def test_an_unknown_name_names_the_argument_the_value_and_the_known_names(given):
    runner, args = given
    with pytest.raises(ValueError, match="`runner`") as raised:
        runners.beam_options(runner, args)
    message = str(raised.value)
    assert repr(runner or "Nope") in message
    for name in PATHS:
        assert name in message


def test_the_command_refuses_an_unknown_runner_with_exit_2_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    out = tmp_path / "out"
    status = cli.main(
        ["convert", f"csv-table:{tmp_path / 't.csv'}", "--out", str(out), "--runner", "Fink"]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert "`--runner`" in err and "'Fink'" in err and "FlinkRunner" in err
    assert not out.exists() or not any(out.iterdir())


def test_a_failed_jobs_traceback_is_reported_in_one_line():
    from queue_pipeline._convert.pipeline import _job_error

    error = RuntimeError(
        "Pipeline job-1 failed in state FAILED: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in f\n    g()\nRuntimeError: Channel closed prematurely.\n'
    )
    text = _job_error(error)
    assert "\n" not in text
    assert text.startswith(
        "RuntimeError: Pipeline job-1 failed in state FAILED: RuntimeError: Channel closed"
    )
    assert "worker pool stopped mid-job" in text
    assert _job_error(ValueError("bad")) == "ValueError: bad"


def test_the_command_hides_the_portable_jobs_logged_traceback_only():
    def record(path, message):
        return logging.LogRecord("root", logging.ERROR, path, 1, "%s", (message,), None)

    beam = "/site-packages/apache_beam/runners/portability/portable_runner.py"
    assert not command._no_job_traceback(record(beam, "Traceback (most recent call last):\n"))
    assert command._no_job_traceback(record(beam, "another message"))
    assert command._no_job_traceback(record(__file__, "Traceback (most recent call last):\n"))
