"""The public surface: exports, signatures equal to TF's, docs, and principle 2.

Principle 2 (DESIGN.md): the package never calls TF's Python input layer. It is
checked twice: statically (no module of the package names it) and at run time
(a whole pipeline runs with TF's input layer replaced by traps).
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import subprocess
import sys

import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import build, drain

PACKAGE_DIR = pathlib.Path(qp.__file__).parent

# Every TF1 name queue_pipeline mirrors, and where TF keeps its original.
TF_NAMES = {
    "Coordinator": tf.compat.v1.train.Coordinator,
    "LooperThread": tf.compat.v1.train.LooperThread,
    "QueueRunner": tf.compat.v1.train.QueueRunner,
    "add_queue_runner": tf.compat.v1.train.add_queue_runner,
    "start_queue_runners": tf.compat.v1.train.start_queue_runners,
    "limit_epochs": tf.compat.v1.train.limit_epochs,
    "input_producer": tf.compat.v1.train.input_producer,
    "string_input_producer": tf.compat.v1.train.string_input_producer,
    "range_input_producer": tf.compat.v1.train.range_input_producer,
    "slice_input_producer": tf.compat.v1.train.slice_input_producer,
    "match_filenames_once": tf.compat.v1.train.match_filenames_once,
    **{
        api: getattr(tf.compat.v1.train, api)
        for api in (
            "batch",
            "batch_join",
            "maybe_batch",
            "maybe_batch_join",
            "shuffle_batch",
            "maybe_shuffle_batch",
            "shuffle_batch_join",
            "maybe_shuffle_batch_join",
        )
    },
    "ReaderBase": tf.compat.v1.ReaderBase,
    "TextLineReader": tf.compat.v1.TextLineReader,
    "FixedLengthRecordReader": tf.compat.v1.FixedLengthRecordReader,
    "TFRecordReader": tf.compat.v1.TFRecordReader,
    "WholeFileReader": tf.compat.v1.WholeFileReader,
    "IdentityReader": tf.compat.v1.IdentityReader,
}


def _parameters(fn):
    """(name, kind, default) of each parameter; annotations are ours alone."""
    fn = inspect.unwrap(fn)
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def _callables(name):
    ours, theirs = getattr(qp, name), TF_NAMES[name]
    if not inspect.isclass(ours):
        return [(name, ours, theirs)]
    pairs = [(f"{name}.__init__", ours.__init__, theirs.__init__)]
    for attr, member in vars(theirs).items():
        if attr.startswith("_") or not hasattr(ours, attr):
            continue
        if callable(member) or isinstance(member, (staticmethod, classmethod)):
            pairs.append((f"{name}.{attr}", getattr(ours, attr), getattr(theirs, attr)))
    return pairs


def test_all_is_sorted_unique_and_importable():
    assert qp.__all__ == sorted(set(qp.__all__))
    for name in qp.__all__:
        assert getattr(qp, name) is not None
    assert isinstance(qp.__version__, str)


@pytest.mark.parametrize("name", sorted(TF_NAMES))
def test_exported_under_tf_name_with_tf_signature(name):
    assert name in qp.__all__
    for label, ours, theirs in _callables(name):
        assert _parameters(ours) == _parameters(theirs), label


@pytest.mark.parametrize("name", sorted(TF_NAMES))
def test_public_methods_and_properties_exist(name):
    theirs = TF_NAMES[name]
    if not inspect.isclass(theirs):
        return
    public = {a for a in dir(theirs) if not a.startswith("_")}
    if issubclass(theirs, tf.compat.v1.ReaderBase):
        public -= set()  # same surface
    missing = {a for a in public if not hasattr(getattr(qp, name), a)}
    # threading.Thread's own API is inherited by both LooperThread classes.
    assert not missing, missing


@pytest.mark.parametrize("name", sorted(qp.__all__))
def test_public_callables_are_documented(name):
    obj = getattr(qp, name)
    if inspect.ismodule(obj):
        assert obj.__doc__
        return
    assert inspect.getdoc(obj), name
    if (
        name in TF_NAMES
        and not name.endswith("Base")
        and name
        not in (
            "Coordinator",
            "LooperThread",
            "QueueRunner",
            "add_queue_runner",
            "start_queue_runners",
        )
    ):
        assert "tf.data equivalent" in inspect.getdoc(obj), name


# --- principle 2: never call TF's Python input layer ---------------------------

FORBIDDEN_MODULES = (
    "tensorflow.python.training.input",
    "tensorflow.python.training.queue_runner_impl",
    "tensorflow.python.training.queue_runner",
    "tensorflow.python.training.coordinator",
    "tensorflow.python.ops.io_ops",
)
FORBIDDEN_ATTRS = {
    "input_producer",
    "string_input_producer",
    "range_input_producer",
    "slice_input_producer",
    "limit_epochs",
    "batch",
    "batch_join",
    "shuffle_batch",
    "shuffle_batch_join",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "QueueRunner",
    "add_queue_runner",
    "start_queue_runners",
    "Coordinator",
    "LooperThread",
    "ReaderBase",
    "TextLineReader",
    "FixedLengthRecordReader",
    "TFRecordReader",
    "WholeFileReader",
    "IdentityReader",
    "LMDBReader",
    "queue_runner",
    "match_filenames_once",
}


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _violations(source: str):
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith(FORBIDDEN_MODULES)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(FORBIDDEN_MODULES):
                found.append(node.module)
            if node.module.startswith("tensorflow"):
                found += [
                    f"{node.module}.{a.name}"
                    for a in node.names
                    if a.name in FORBIDDEN_ATTRS
                    or f"{node.module}.{a.name}".startswith(FORBIDDEN_MODULES)
                ]
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted and dotted.startswith("tf.") and node.attr in FORBIDDEN_ATTRS:
                found.append(dotted)
    return found


def test_checker_catches_input_layer_calls():
    bad = (
        "import tensorflow as tf\n"
        "from tensorflow.python.training import input as tf_input\n"
        "from tensorflow.compat.v1.train import shuffle_batch\n"
        "q = tf.compat.v1.train.string_input_producer(['a'])\n"
        "r = tf.compat.v1.TextLineReader()\n"
        "c = tf.train.Coordinator()\n"
    )
    assert len(_violations(bad)) == 5
    assert _violations("import tensorflow as tf\nq = tf.queue.FIFOQueue(1, tf.int32)\n") == []


@pytest.mark.parametrize("path", sorted(PACKAGE_DIR.rglob("*.py")), ids=lambda p: p.name)
def test_no_module_names_tf_input_layer(path):
    assert _violations(path.read_text()) == []


@pytest.mark.one_suite("a fresh interpreter imports the package; no TF mode is set")
@pytest.mark.one_suite("a fresh interpreter under TF 2.x defaults in either suite")
def test_package_import_loads_no_input_layer_module():
    """Importing queue_pipeline alone pulls in none of TF's legacy input modules
    beyond what `import tensorflow` itself loads."""
    code = (
        "import sys, tensorflow\n"
        "before = set(sys.modules)\n"
        "import queue_pipeline\n"
        "new = set(sys.modules) - before\n"
        f"bad = [m for m in new if m.startswith({FORBIDDEN_MODULES!r})]\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_pipeline_runs_with_tf_input_layer_trapped(monkeypatch, tmp_path):
    """Replace every TF input-layer entry point by a trap; a whole pipeline still runs."""
    from tensorflow.python.ops import io_ops
    from tensorflow.python.training import coordinator, input as tf_input, queue_runner_impl

    def trap(*args, **kwargs):
        raise AssertionError("queue_pipeline called TF's Python input layer")

    for module in (
        tf_input,
        queue_runner_impl,
        coordinator,
        io_ops,
        tf.compat.v1.train,
        tf.compat.v1,
        tf.train,
    ):
        for attr in FORBIDDEN_ATTRS:
            if hasattr(module, attr):
                monkeypatch.setattr(module, attr, trap)
    for cls in (
        queue_runner_impl.QueueRunner,
        coordinator.Coordinator,
        coordinator.LooperThread,
        io_ops.ReaderBase,
    ):
        monkeypatch.setattr(cls, "__init__", trap)

    path = tmp_path / "data.txt"
    path.write_text("1\n2\n3\n")

    def pipeline(m):
        files = m.string_input_producer(
            m.match_filenames_once(str(tmp_path / "*.txt")), num_epochs=2, shuffle=False
        )
        _, line = m.TextLineReader().read(files)
        (index,) = m.slice_input_producer([tf.range(3)], shuffle=False)
        return m.limit_epochs(line, 6), index

    g, fetch = build(qp, pipeline)
    out = drain(qp, g, fetch)
    assert [line for line, _ in out] == [b"1", b"2", b"3"] * 2
    assert [index for _, index in out] == [0, 1, 2] * 2


@pytest.mark.one_suite("a fresh interpreter imports the package; no TF mode is set")
@pytest.mark.one_suite("a fresh interpreter under TF 2.x defaults in either suite")
def test_import_changes_no_global_tensorflow_state():
    """Principle 4: importing the package leaves TF's global behaviour alone."""
    code = (
        "import logging, tensorflow as tf\n"
        "from tensorflow.python.framework import ops\n"
        "def state():\n"
        "    return (tf.executing_eagerly(), tf.compat.v1.resource_variables_enabled(),\n"
        "            tf.compat.v1.control_flow_v2_enabled(), tf.config.functions_run_eagerly(),\n"
        "            ops.get_to_proto_function('queue_runners'),\n"
        "            ops.get_from_proto_function('queue_runners'),\n"
        "            logging.getLogger('tensorflow').level,\n"
        "            tuple(tf.compat.v1.get_default_graph().get_all_collection_keys()),\n"
        "            len(tf.compat.v1.get_default_graph().get_operations()))\n"
        "before = state()\n"
        "import queue_pipeline\n"
        "print(before == state())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "True"
