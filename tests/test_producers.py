"""Differential tests of the producers against TF's own tf.compat.v1.train ones."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import TF, build, drain, graph_nodes, new_session, session_config, tf1_mode

# Each case builds a producer with `m` (TF's module or queue_pipeline) and
# returns what to fetch per step.
CASES = {
    "string": lambda m: m.string_input_producer(["a", "b", "c"], num_epochs=2, seed=3).dequeue(),
    "string_named_shared": lambda m: m.string_input_producer(
        ["a", "b"], name="Q", shared_name="SN", capacity=7, shuffle=False
    ).dequeue(),
    "string_tensor": lambda m: m.string_input_producer(
        tf.constant(["x", "y"]), num_epochs=1, shuffle=False
    ).dequeue(),
    "range": lambda m: m.range_input_producer(5, num_epochs=1, shuffle=False).dequeue(),
    "range_named": lambda m: m.range_input_producer(
        tf.constant(4, tf.int64), num_epochs=2, seed=1, name="R"
    ).dequeue(),
    "input": lambda m: m.input_producer(
        tf.constant([[1, 2], [3, 4]]), num_epochs=3, shuffle=False, summary_name="s"
    ).dequeue(),
    "input_named": lambda m: m.input_producer(
        tf.constant([[1, 2], [3, 4]]), name="IP", num_epochs=1, seed=5
    ).dequeue(),
    "input_element_shape": lambda m: m.input_producer(
        tf.compat.v1.placeholder_with_default(np.arange(6.0).reshape(3, 2), [None, None]),
        element_shape=[2],
        num_epochs=1,
        shuffle=False,
    ).dequeue(),
    "slice": lambda m: m.slice_input_producer(
        [tf.constant([1, 2, 3]), tf.constant([[1.0], [2.0], [3.0]])], num_epochs=2, shuffle=False
    ),
    "slice_one_named": lambda m: m.slice_input_producer(
        [tf.constant(["p", "q"])], num_epochs=1, seed=2, name="sip"
    ),
    "limit_epochs": lambda m: m.limit_epochs(tf.constant(7), 3),
    "limit_epochs_named": lambda m: m.limit_epochs(tf.constant([1, 2]), 1, name="L"),
}

# Per-step output is deterministic (no shuffle, or a fixed op seed in a graph
# that is node-for-node identical, hence the same kernel seeds).
DETERMINISTIC = list(CASES)


@pytest.mark.parametrize("case", list(CASES))
def test_graph_identical_to_tf(case):
    """Same nodes, op types, inputs, devices and attributes as TF's graph."""
    g_tf, _ = build(TF, CASES[case])
    g_qp, _ = build(qp, CASES[case])
    assert graph_nodes(g_qp) == graph_nodes(g_tf)


@pytest.mark.parametrize("case", list(CASES))
def test_collections_identical_to_tf(case):
    g_tf, _ = build(TF, CASES[case])
    g_qp, _ = build(qp, CASES[case])

    def names(graph, key):
        return [getattr(x, "name", x) for x in graph.get_collection(key)]

    for key in (
        "queue_runners",
        "local_variables",
        "variables",
        "summaries",
        "trainable_variables",
    ):
        assert names(g_qp, key) == names(g_tf, key), key
    for qr_tf, qr_qp in zip(
        g_tf.get_collection("queue_runners"), g_qp.get_collection("queue_runners")
    ):
        assert isinstance(qr_qp, qp.QueueRunner)
        assert [op.name for op in qr_qp.enqueue_ops] == [op.name for op in qr_tf.enqueue_ops]
        assert qr_qp.close_op.name == qr_tf.close_op.name
        assert qr_qp.cancel_op.name == qr_tf.cancel_op.name


@pytest.mark.parametrize("seed", [None, 11])
@pytest.mark.parametrize("case", DETERMINISTIC)
def test_sequence_identical_to_tf(case, seed):
    """Exact output sequence (graph seed set or not), then OutOfRangeError."""
    g_tf, f_tf = build(TF, CASES[case], seed=seed)
    g_qp, f_qp = build(qp, CASES[case], seed=seed)
    steps = 50 if "shared" in case else 10_000  # that one has no num_epochs
    out_tf = drain(TF, g_tf, f_tf, max_steps=steps)
    out_qp = drain(qp, g_qp, f_qp, max_steps=steps)
    np.testing.assert_equal(out_qp, out_tf)


@pytest.mark.parametrize("num_epochs", [1, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_element_once_per_epoch(num_epochs, shuffle):
    """Unseeded shuffles differ run to run, so compare per-epoch multisets."""
    items = [f"f{i}" for i in range(7)]
    results = {}
    for impl in (TF, qp):
        g, fetch = build(
            impl,
            lambda m: m.string_input_producer(
                items, num_epochs=num_epochs, shuffle=shuffle, capacity=3
            ).dequeue(),
        )
        results[impl] = drain(impl, g, fetch)
    for out in results.values():
        assert len(out) == 7 * num_epochs
        for epoch in range(num_epochs):
            chunk = out[epoch * 7 : (epoch + 1) * 7]
            assert sorted(chunk) == sorted(x.encode() for x in items)
    if not shuffle:
        assert results[qp] == results[TF]


def test_reshuffles_every_epoch():
    g, fetch = build(
        qp, lambda m: m.range_input_producer(20, num_epochs=6, seed=4).dequeue(), seed=1
    )
    out = drain(qp, g, fetch)
    epochs = [tuple(out[i : i + 20]) for i in range(0, 120, 20)]
    assert all(sorted(e) == list(range(20)) for e in epochs)
    assert len(set(epochs)) > 1


def test_summary_values_match_tf():
    values = {}
    for impl in (TF, qp):
        g = tf.Graph()
        with g.as_default():
            q = impl.string_input_producer(["a", "b", "c"], capacity=8, shuffle=False)
            summary = tf.compat.v1.summary.merge_all()
            with new_session(g) as sess:
                sess.run(q.enqueue_many([["x", "y"]]))  # fill by hand, no runner
                proto = tf.compat.v1.Summary.FromString(sess.run(summary))
                values[impl] = [(v.tag, v.simple_value) for v in proto.value]
    assert values[qp] == values[TF] == [("input_producer/fraction_of_8_full", 0.25)]


def test_shared_name_reaches_queue_op():
    with tf.Graph().as_default():
        q = qp.string_input_producer(["a"], shared_name="SN")
        assert q.queue_ref.op.get_attr("shared_name") == b"SN"
        slices = qp.slice_input_producer([tf.constant([1, 2])], shared_name="S2")
        queue_op = slices[0].op.inputs[1].op.inputs[0].op
        assert queue_op.get_attr("shared_name") == b"S2"


def test_cancel_op_is_used_by_runner():
    with tf.Graph().as_default():
        custom = tf.no_op(name="my_cancel")
        qp.string_input_producer(["a"], cancel_op=custom)
        (runner,) = tf.compat.v1.get_collection("queue_runners")
        assert runner.cancel_op is custom


def test_slice_input_producer_returns_list_with_row_shapes():
    with tf.Graph().as_default():
        out = qp.slice_input_producer([tf.zeros([5, 2, 3])])
        assert isinstance(out, list) and len(out) == 1
        assert out[0].shape.as_list() == [2, 3]


def test_limit_epochs_counts_and_resets():
    g = tf.Graph()
    with g.as_default():
        limited = qp.limit_epochs(tf.constant(7), 2)
        assert qp.limit_epochs(limited, None) is limited
        with new_session(g) as sess:
            init = tf.compat.v1.local_variables_initializer()
            sess.run(init)
            assert [sess.run(limited), sess.run(limited)] == [7, 7]
            with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 2"):
                sess.run(limited)
            sess.run(init)
            assert sess.run(limited) == 7


def test_match_filenames_once(tmp_path):
    for name in ("b.txt", "a.txt", "c.dat"):
        (tmp_path / name).write_text("x")
    g = tf.Graph()
    with g.as_default():
        files = qp.match_filenames_once(str(tmp_path / "*.txt"))
        none = qp.match_filenames_once(str(tmp_path / "*.nothing"), name="mfo")
        assert files.name == "matching_filenames:0" and none.name == "mfo:0"
        # TF's shape: [None] for TF 2.x's resource variable, unknown in TF1 mode.
        with tf.Graph().as_default():
            theirs = TF.match_filenames_once(str(tmp_path / "*.txt"))
        assert str(files.shape) == str(theirs.shape)
        assert str(files.shape) == ("<unknown>" if tf1_mode() else "(None,)")
        assert files in tf.compat.v1.local_variables()
        assert not tf.compat.v1.global_variables()
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            assert [f.decode() for f in sess.run(files)] == [
                str(tmp_path / "a.txt"),
                str(tmp_path / "b.txt"),
            ]
            assert sess.run(none).tolist() == []


# --- errors: same types as TF (and TF's text inside ours) --------------------

ERROR_CASES = {
    "empty_list": (
        lambda m: m.string_input_producer([]),
        ValueError,
        "requires a non-null input tensor",
    ),
    "none": (lambda m: m.string_input_producer(None), ValueError, "non-null"),
    "not_strings": (lambda m: m.string_input_producer([1, 2]), TypeError, "string"),
    "matrix": (lambda m: m.string_input_producer([["a"], ["b"]]), ValueError, "not compatible"),
    "scalar": (lambda m: m.string_input_producer("abc"), ValueError, "must have rank at least 1"),
    "epochs_zero": (
        lambda m: m.string_input_producer(["a"], num_epochs=0),
        ValueError,
        "num_epochs must be > 0 not 0",
    ),
    "limit_negative": (
        lambda m: m.limit_epochs(tf.constant(1), -1),
        ValueError,
        "num_epochs must be > 0 not -1",
    ),
    "undefined_shape": (
        lambda m: m.input_producer(tf.compat.v1.placeholder(tf.float32, [None, None])),
        ValueError,
        "must have a fully defined shape",
    ),
    "element_shape_mismatch": (
        lambda m: m.input_producer(tf.zeros([2, 3]), element_shape=[4]),
        ValueError,
        "not compatible",
    ),
    "slice_empty": (
        lambda m: m.slice_input_producer([]),
        ValueError,
        "Expected at least one tensor in slice_input_producer()",
    ),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_tf(case):
    fn, error, text = ERROR_CASES[case]
    for impl in (TF, qp):
        with tf.Graph().as_default(), pytest.raises(error) as info:
            fn(impl)
        assert text in str(info.value), (impl, str(info.value))


def test_numpy_array_of_strings_is_accepted():
    """Deliberate difference: TF raises NumPy's ambiguous-truth ValueError."""
    files = np.array([b"a", b"b"])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="ambiguous"):
        TF.string_input_producer(files)
    g, fetch = build(
        qp, lambda m: m.string_input_producer(files, num_epochs=1, shuffle=False).dequeue()
    )
    assert drain(qp, g, fetch) == [b"a", b"b"]
    with tf.Graph().as_default(), pytest.raises(ValueError, match="non-null"):
        qp.string_input_producer(np.array([], dtype=object))


def test_empty_tensor_fails_in_runner_and_reaches_join():
    """The runtime Assert fails in the runner; join re-raises it (as TF)."""
    for impl in (TF, qp):
        g, fetch = build(
            impl, lambda m: m.string_input_producer(tf.constant([], tf.string)).dequeue()
        )
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-null input tensor"):
            drain(impl, g, fetch, max_steps=5)


def test_uninitialized_epochs_reported_like_tf():
    """Without local init, TF reports the counter: NotFoundError for TF 2.x's
    resource variable, FailedPreconditionError for TF1 mode's ref variable."""
    error = tf.errors.FailedPreconditionError if tf1_mode() else tf.errors.NotFoundError
    for impl in (TF, qp):
        g, fetch = build(impl, lambda m: m.string_input_producer(["a"], num_epochs=1).dequeue())
        with pytest.raises(error, match="limit_epochs/epochs"):
            drain(impl, g, fetch, init=False, max_steps=5)


# --- eager mode ---------------------------------------------------------------

EAGER_BUILDERS = {
    "string_input_producer": lambda m: m.string_input_producer(["a"]),
    "string_input_producer_tensor": lambda m: m.string_input_producer(tf.constant(["a"])),
    "input_producer": lambda m: m.input_producer(tf.constant([1, 2])),
    "range_input_producer": lambda m: m.range_input_producer(3),
    "slice_input_producer": lambda m: m.slice_input_producer([tf.constant([1, 2])]),
    "limit_epochs": lambda m: m.limit_epochs(tf.constant(1), 2),
    "match_filenames_once": lambda m: m.match_filenames_once("*"),
}


@pytest.mark.v2_only(
    "eager execution exists only under TF 2.x defaults; TF1 mode: test_builds_with_no_eager_at_all"
)
@pytest.mark.parametrize("api", list(EAGER_BUILDERS))
def test_eager_raises_graph_mode_required(api):
    assert tf.executing_eagerly()
    with pytest.raises(qp.GraphModeRequiredError) as info:
        EAGER_BUILDERS[api](qp)
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert api.replace("_tensor", "") in message
    assert "tf.Graph().as_default()" in message and "tf.data" in message


@pytest.mark.tf1_only(
    "TF1 mode has no eager execution; TF 2.x: test_eager_raises_graph_mode_required"
)
@pytest.mark.parametrize("api", list(EAGER_BUILDERS))
def test_builds_with_no_eager_at_all(api):
    """A TF1 script builds at the top level, in the default graph, no Graph block."""
    nodes = {}
    for m in (TF, qp):
        with tf.Graph().as_default() as g:  # a fresh "top level" per implementation
            result = EAGER_BUILDERS[api](m)
            tensor = (
                result.queue_ref if hasattr(result, "queue_ref") else tf.nest.flatten(result)[0]
            )
            assert tensor.graph is tf.compat.v1.get_default_graph()
        nodes[m] = graph_nodes(g)
    assert nodes[qp] == nodes[TF]


@pytest.mark.tf1_only("TF1 mode has no eager execution")
def test_top_level_pipeline_runs_in_a_plain_session_like_tf():
    """The TF1 script shape: no Graph block, Session() with no graph argument."""
    out = {}
    for m in (TF, qp):
        with tf.Graph().as_default():  # a fresh "top level" per implementation
            value = m.string_input_producer(["a", "b", "c"], num_epochs=2, shuffle=False).dequeue()
            with tf.compat.v1.Session(config=session_config()) as sess:
                sess.run(tf.compat.v1.local_variables_initializer())
                coord = m.Coordinator()
                threads = m.start_queue_runners(sess=sess, coord=coord)
                got = []
                try:
                    while True:
                        got.append(sess.run(value))
                except tf.errors.OutOfRangeError:
                    pass
                finally:
                    coord.request_stop()
                    coord.join(threads, stop_grace_period_secs=5)
        out[m] = got
    assert out[qp] == out[TF] == [b"a", b"b", b"c"] * 2


def test_eager_python_checks_come_first_as_in_tf():
    with pytest.raises(ValueError, match="non-null"):
        qp.string_input_producer([])
    with pytest.raises(ValueError, match="Expected at least one tensor"):
        qp.slice_input_producer([])


# --- plan nodes ---------------------------------------------------------------


def test_plan_nodes_of_producers():
    with tf.Graph().as_default():
        files = qp.string_input_producer(["a", "b"], num_epochs=2, shuffle=False)
        name = files.dequeue()
        plan = qp.plan_for(name)
        assert plan.kinds == ["string_input_producer"]
        (node,) = plan
        assert node.fills is files and node.outputs == (files,)
        assert node.args["num_epochs"] == 2 and node.args["shuffle"] is False
        assert node.inputs[0].dtype == tf.string

        image, label = qp.slice_input_producer([tf.zeros([4, 2]), tf.range(4)], seed=1)
        doubled = image * 2.0
        plan = qp.plan_for(doubled, label)
        assert plan.kinds == ["slice_input_producer"]
        assert plan.nodes[0].outputs == (image, label)
        assert plan.nodes[0].args["seed"] == 1
        assert "slice_input_producer(" in plan.describe()

        assert len(qp.plan.plan_nodes()) == 2
        assert qp.plan_for(tf.constant(1)).kinds == []


def test_plan_counter_collects_nested_builders():
    with tf.Graph().as_default():
        limited = qp.limit_epochs(tf.constant([1, 2]), 3)
        queue = qp.input_producer(limited, shuffle=False)
        plan = qp.plan_for(queue.dequeue())
        assert plan.kinds == ["limit_epochs", "input_producer"]
        counts = collections.Counter(n.kind for n in qp.plan.plan_nodes())
        assert counts == {"limit_epochs": 1, "input_producer": 1}


def test_string_input_producer_accepts_match_filenames_once_variable(tmp_path):
    """Deliberate difference: the classic idiom fails in TF 2.21's graph mode,
    whose non-null check calls bool() on the resource variable; TF1 mode's ref
    variable works in both."""
    (tmp_path / "a.txt").write_text("x")
    pattern = str(tmp_path / "*.txt")
    if tf1_mode():
        g, fetch = build(
            TF,
            lambda m: m.string_input_producer(
                m.match_filenames_once(pattern), num_epochs=1
            ).dequeue(),
        )
        assert drain(TF, g, fetch) == [str(tmp_path / "a.txt").encode()]
    else:
        with tf.Graph().as_default(), pytest.raises(TypeError):
            TF.string_input_producer(TF.match_filenames_once(pattern))
    g, fetch = build(
        qp,
        lambda m: m.string_input_producer(m.match_filenames_once(pattern), num_epochs=1).dequeue(),
    )
    assert drain(qp, g, fetch) == [str(tmp_path / "a.txt").encode()]
