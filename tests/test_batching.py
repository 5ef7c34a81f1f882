"""Differential tests of the eight batching functions against TF's own."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import TF, build, drain, graph_nodes, new_session, tf1_mode


def _sparse():
    return tf.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])


def _bool_placeholder():
    return tf.compat.v1.placeholder(tf.bool, [])


# Each builds a batching stage with `m` (TF or queue_pipeline).
GRAPH_CASES = {
    "batch": lambda m: m.batch([tf.constant(1), tf.zeros([2])], 4),
    "batch_named_threads_smaller": lambda m: m.batch(
        [tf.constant(1), tf.zeros([2])], 4, name="B", num_threads=3, allow_smaller_final_batch=True
    ),
    "batch_tuple": lambda m: m.batch((tf.constant(1), tf.constant("s")), 2),
    "batch_single": lambda m: m.batch([tf.constant(1)], 2),
    "batch_python_values": lambda m: m.batch([1, "string", 2.5], 2),
    "batch_dynamic_pad": lambda m: m.batch(
        [tf.compat.v1.placeholder(tf.int32, [None]), tf.constant("x")], 2, dynamic_pad=True
    ),
    "batch_dict_enqueue_many_shared": lambda m: m.batch(
        {"b": tf.ones([5]), "a": tf.zeros([5, 2])}, 3, enqueue_many=True, shared_name="S"
    ),
    "batch_single_key_dict": lambda m: m.batch({"only": tf.constant(1)}, 2),
    "batch_shapes": lambda m: m.batch(
        [tf.compat.v1.placeholder(tf.float32, [None])], 2, shapes=[[3]]
    ),
    "batch_tensor_batch_size": lambda m: m.batch(
        [tf.constant(1)], tf.compat.v1.placeholder(tf.int32, [])
    ),
    "batch_sparse": lambda m: m.batch([_sparse(), tf.constant(2)], 2),
    "batch_sparse_enqueue_many": lambda m: m.batch([_sparse()], 2, enqueue_many=True),
    "maybe_batch_vector": lambda m: m.maybe_batch(
        [tf.zeros([3, 2]), _sparse()], tf.constant([True, False, True]), 2, enqueue_many=True
    ),
    "maybe_batch_foldable": lambda m: m.maybe_batch([tf.zeros([2])], tf.less(1, 2), 2),
    "maybe_batch_false": lambda m: m.maybe_batch([tf.zeros([2])], False, 2),
    "maybe_batch_dynamic": lambda m: m.maybe_batch([tf.zeros([2])], _bool_placeholder(), 2),
    "maybe_batch_dynamic_many": lambda m: m.maybe_batch(
        [tf.zeros([4, 2])], _bool_placeholder(), 2, enqueue_many=True
    ),
    "batch_join": lambda m: m.batch_join([[tf.constant(1)], [tf.constant(2)], [tf.constant(3)]], 2),
    "batch_join_pad": lambda m: m.batch_join(
        [[tf.compat.v1.placeholder(tf.int32, [None])]] * 2,
        2,
        dynamic_pad=True,
        allow_smaller_final_batch=True,
    ),
    "batch_join_sparse": lambda m: m.batch_join(
        [[_sparse(), tf.constant(1)], [_sparse(), tf.constant(2)]], 2
    ),
    "maybe_batch_join": lambda m: m.maybe_batch_join(
        [{"x": tf.constant(1)}, {"x": tf.constant(2)}], _bool_placeholder(), 2
    ),
    "shuffle_batch": lambda m: m.shuffle_batch([tf.constant(1), tf.zeros([2])], 4, 20, 5, seed=7),
    "shuffle_batch_named": lambda m: m.shuffle_batch(
        {"k": tf.constant(1)},
        4,
        20,
        5,
        num_threads=2,
        allow_smaller_final_batch=True,
        name="SB",
        shared_name="Q",
    ),
    "maybe_shuffle_batch": lambda m: m.maybe_shuffle_batch(
        [tf.zeros([4, 2])], 4, 20, 5, tf.constant([True, False, True, True]), enqueue_many=True
    ),
    "shuffle_batch_join": lambda m: m.shuffle_batch_join(
        [[tf.constant(1)], [tf.constant(2)]], 2, 10, 3
    ),
    "maybe_shuffle_batch_join": lambda m: m.maybe_shuffle_batch_join(
        [[tf.constant(1)], [tf.constant(2)]], 2, 10, 3, True, seed=1
    ),
}


def _signature(result):
    """Structure, type, dtype and static shape of a batching result."""

    def describe(x):
        if isinstance(x, tf.SparseTensor):
            return ("sparse", x.dtype, x.indices.shape.as_list(), x.dense_shape.shape.as_list())
        return (
            type(x).__name__,
            x.dtype,
            x.shape.as_list() if x.shape.ndims is not None else None,
            x.name,
        )

    if isinstance(result, dict):
        return {k: describe(v) for k, v in result.items()}
    if isinstance(result, list):
        return [describe(x) for x in result]
    return describe(result)


@pytest.mark.parametrize("case", list(GRAPH_CASES))
def test_graph_and_result_identical_to_tf(case):
    g_tf, r_tf = build(TF, GRAPH_CASES[case])
    g_qp, r_qp = build(qp, GRAPH_CASES[case])
    assert graph_nodes(g_qp) == graph_nodes(g_tf)
    assert _signature(r_qp) == _signature(r_tf)
    for key in ("queue_runners", "summaries"):
        assert [getattr(x, "name", x) for x in g_qp.get_collection(key)] == [
            getattr(x, "name", x) for x in g_tf.get_collection(key)
        ]
    for qr_tf, qr_qp in zip(
        g_tf.get_collection("queue_runners"), g_qp.get_collection("queue_runners")
    ):
        assert [op.name for op in qr_qp.enqueue_ops] == [op.name for op in qr_tf.enqueue_ops]


# --- run time: every example once per epoch ----------------------------------

N, EPOCHS = 23, 2


def _source(m, offset=0, n=N):
    value = m.range_input_producer(n, num_epochs=EPOCHS, shuffle=False).dequeue()
    return value + offset


def _stage(api, threads, m):
    """`api` over ranges (one per thread for the joins) with the tail kept."""
    common = dict(batch_size=4, allow_smaller_final_batch=True)
    shuffle = dict(capacity=30, min_after_dequeue=5)
    if "join" in api:
        lists = [[_source(m, 1000 * i)] for i in range(threads)]
        keep = {"keep_input": True} if api.startswith("maybe") else {}
        if "shuffle" in api:
            return getattr(m, api)(lists, **common, **shuffle, **keep)
        return getattr(m, api)(lists, capacity=30, **common, **keep)
    tensors = [_source(m)]
    keep = {"keep_input": tf.constant(True)} if api.startswith("maybe") else {}
    if "shuffle" in api:
        return getattr(m, api)(tensors, num_threads=threads, **common, **shuffle, **keep)
    return getattr(m, api)(tensors, num_threads=threads, capacity=30, **common, **keep)


BATCH_APIS = [
    "batch",
    "maybe_batch",
    "batch_join",
    "maybe_batch_join",
    "shuffle_batch",
    "maybe_shuffle_batch",
    "shuffle_batch_join",
    "maybe_shuffle_batch_join",
]


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("api", BATCH_APIS)
def test_every_example_once_per_epoch(impl, api, threads):
    g, fetch = build(impl, lambda m: _stage(api, threads, m))
    batches = drain(impl, g, fetch)
    values = np.concatenate(batches).tolist()
    expected = [
        1000 * i + k for i in range(threads if "join" in api else 1) for k in range(N)
    ] * EPOCHS
    assert collections.Counter(values) == collections.Counter(expected)
    assert all(len(b) == 4 for b in batches[:-1]) and 1 <= len(batches[-1]) <= 4


@pytest.mark.parametrize("smaller", [False, True])
def test_single_thread_batch_sequence_identical_to_tf(smaller):
    out = {}
    for impl in (TF, qp):
        g, fetch = build(
            impl,
            lambda m: m.batch(
                [_source(m), tf.strings.as_string(_source(m))], 5, allow_smaller_final_batch=smaller
            ),
        )
        out[impl] = drain(impl, g, fetch)
    np.testing.assert_equal(out[qp], out[TF])
    assert sum(len(b[0]) for b in out[qp]) == (N * EPOCHS if smaller else 45)


def test_batch_join_keeps_order_within_each_list():
    g, fetch = build(
        qp,
        lambda m: m.batch_join(
            [[_source(m, 0), tf.constant(0)], [_source(m, 1000), tf.constant(1)]],
            3,
            allow_smaller_final_batch=True,
        ),
    )
    out = drain(qp, g, fetch)
    values = np.concatenate([b[0] for b in out])
    lists = np.concatenate([b[1] for b in out])
    for which in (0, 1):
        mine = values[lists == which] - 1000 * which
        assert mine.tolist() == list(range(N)) * EPOCHS


def test_shuffle_batch_mixes_with_fixed_seed():
    g, fetch = build(
        qp,
        lambda m: m.shuffle_batch(
            [m.range_input_producer(200, num_epochs=1, shuffle=False).dequeue()],
            10,
            capacity=120,
            min_after_dequeue=100,
            seed=3,
            allow_smaller_final_batch=True,
        ),
        seed=1,
    )
    values = np.concatenate(drain(qp, g, fetch))
    assert sorted(values.tolist()) == list(range(200))
    displaced = np.mean(np.abs(values - np.arange(200)))
    assert displaced > 10  # an unshuffled stream has 0; a full shuffle about 66
    rank_corr = np.corrcoef(values, np.arange(200))[0, 1]
    assert rank_corr < 0.95


def test_shuffle_batch_join_scrambles_each_list():
    g, fetch = build(
        qp,
        lambda m: m.shuffle_batch_join(
            [[_source(m, 0)], [_source(m, 1000)]],
            4,
            capacity=40,
            min_after_dequeue=20,
            allow_smaller_final_batch=True,
        ),
        seed=5,
    )
    out = drain(qp, g, fetch)
    values = np.concatenate(out)
    first = values[values < 1000]
    assert sorted(first.tolist()) == sorted(list(range(N)) * EPOCHS)
    assert first.tolist() != list(range(N)) * EPOCHS
    assert sum(1 for b in out if (b < 1000).any() and (b >= 1000).any()) > 1


def test_dynamic_pad_matches_tf():
    def stage(m):
        n = m.range_input_producer(5, num_epochs=1, shuffle=False).dequeue()
        ragged = tf.range(n)  # length 0..4
        text = tf.strings.reduce_join(tf.fill([n], "ab"))
        return m.batch(
            [ragged, tf.fill([n, 2], n), text], 2, dynamic_pad=True, allow_smaller_final_batch=True
        )

    out = {}
    for impl in (TF, qp):
        g, fetch = build(impl, stage)
        out[impl] = drain(impl, g, fetch)
    np.testing.assert_equal(out[qp], out[TF])
    assert out[qp][1][0].tolist() == [[0, 1, 0], [0, 1, 2]]
    assert out[qp][2][0].tolist() == [[0, 1, 2, 3]]


def _sparse_stage(m, keep=None):
    n = m.range_input_producer(4, num_epochs=1, shuffle=False).dequeue()
    sparse = tf.SparseTensor(
        indices=tf.reshape(tf.cast(tf.range(n), tf.int64), [-1, 1]),
        values=tf.fill([n], tf.cast(n, tf.float32)),
        dense_shape=tf.reshape(tf.cast(n, tf.int64) + 1, [1]),
    )
    if keep is None:
        return m.batch([sparse, n], 2)
    return m.maybe_batch([sparse, n], keep(n), 2)


def _dense(value):
    if isinstance(value, tf.compat.v1.SparseTensorValue):
        return (value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist())
    return value.tolist()


def test_sparse_batches_match_tf():
    out = {}
    for impl in (TF, qp):
        g, fetch = build(impl, _sparse_stage)
        out[impl] = [[_dense(v) for v in batch] for batch in drain(impl, g, fetch)]
    assert out[qp] == out[TF]
    assert out[qp][1][0] == (
        [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]],
        [2.0, 2.0, 3.0, 3.0, 3.0],
        [2, 4],
    )


def test_sparse_with_dynamic_scalar_keep_input_works():
    """Deliberate difference under TF 2.x: control flow v2 fails to build this
    (spec 1.8.5); TF1 mode's control flow v1 builds it, and both deliver the same."""
    keep = lambda n: tf.equal(n % 2, 1)  # noqa: E731
    if tf1_mode():
        g, fetch = build(TF, lambda m: _sparse_stage(m, keep))
        theirs = drain(TF, g, fetch)
    else:
        with tf.Graph().as_default(), pytest.raises(TypeError, match="sparse_map_op"):
            _sparse_stage(TF, keep)
    g, fetch = build(qp, lambda m: _sparse_stage(m, keep))
    out = drain(qp, g, fetch)
    if tf1_mode():
        assert repr(out) == repr(theirs)
    ((sparse, n),) = out
    assert n.tolist() == [1, 3]
    assert _dense(sparse) == ([[0, 0], [1, 0], [1, 1], [1, 2]], [1.0, 3.0, 3.0, 3.0], [2, 4])


def test_sparse_join_with_dynamic_keep_input_shares_one_map():
    def stage(m):
        def one(offset):
            n = m.range_input_producer(3, num_epochs=1, shuffle=False).dequeue()
            sp = tf.SparseTensor([[0]], [n + offset], [1])
            return [sp, n + offset]

        keep = tf.constant(True) if m is TF else tf.reduce_all(tf.ones([2], tf.bool))
        return m.maybe_batch_join([one(0), one(10)], keep, 2, allow_smaller_final_batch=True)

    g, fetch = build(qp, stage)
    out = drain(qp, g, fetch)
    values = sorted(v for sparse, _ in out for v in sparse.values.tolist())
    assert values == [0, 1, 2, 10, 11, 12]


def test_keep_input_filters_examples_and_rows(impl):
    def stage(m):
        n = m.range_input_producer(10, num_epochs=1, shuffle=False).dequeue()
        return m.maybe_batch([n], tf.equal(n % 3, 0), 2, allow_smaller_final_batch=True)

    g, fetch = build(impl, stage)
    assert np.concatenate(drain(impl, g, fetch)).tolist() == [0, 3, 6, 9]

    def rows(m):
        block = m.input_producer(
            tf.reshape(tf.range(12), [3, 4]), num_epochs=1, shuffle=False
        ).dequeue()
        return m.maybe_batch(
            [block], tf.equal(block % 2, 0), 3, enqueue_many=True, allow_smaller_final_batch=True
        )

    g, fetch = build(impl, rows)
    assert np.concatenate(drain(impl, g, fetch)).tolist() == [0, 2, 4, 6, 8, 10]


def test_enqueue_many_and_tensor_batch_size():
    g = tf.Graph()
    with g.as_default():
        size = tf.compat.v1.placeholder_with_default(3, [])
        block = qp.input_producer(
            tf.reshape(tf.range(12), [3, 4]), num_epochs=1, shuffle=False
        ).dequeue()
        out = qp.batch([block], size, enqueue_many=True)
        assert out.shape.as_list() == [None]
    values = np.concatenate(drain(qp, g, out)).tolist()
    assert values == list(range(12))


def test_summary_values_match_tf():
    values = {}
    for impl in (TF, qp):
        g = tf.Graph()
        with g.as_default():
            impl.batch([tf.constant(1)], 2, capacity=10)
            impl.shuffle_batch([tf.constant(1)], 2, capacity=20, min_after_dequeue=5)
            merged = tf.compat.v1.summary.merge_all()
            queues = [r.queue for r in tf.compat.v1.get_collection("queue_runners")]
            with new_session(g) as sess:
                for q in queues:
                    sess.run(q.enqueue_many([tf.zeros([8], tf.int32)]))
                proto = tf.compat.v1.Summary.FromString(sess.run(merged))
        values[impl] = sorted((v.tag, round(v.simple_value, 6)) for v in proto.value)
    assert (
        values[qp]
        == values[TF]
        == [("batch/fraction_of_10_full", 0.8), ("shuffle_batch/fraction_over_5_of_15_full", 0.2)]
    )


# --- validation ------------------------------------------------------------------


def _ph(shape):
    return tf.compat.v1.placeholder(tf.float32, shape)


ERROR_CASES = {
    "capacity_le_mad": (
        lambda m: m.shuffle_batch([tf.constant(1)], 2, 10, 10),
        ValueError,
        "capacity 10 must be bigger than min_after_dequeue 10",
    ),
    "maybe_capacity_le_mad": (
        lambda m: m.maybe_shuffle_batch([tf.constant(1)], 2, 5, 8, True),
        ValueError,
        "must be bigger than min_after_dequeue",
    ),
    "empty": (lambda m: m.batch([], 2), ValueError, "Expected at least one tensor in batch()"),
    "empty_join": (lambda m: m.batch_join([], 2), ValueError, "Expected at least one set"),
    "dtypes": (
        lambda m: m.batch_join([[tf.constant(1)], [tf.constant(1.0)]], 2),
        TypeError,
        "Expected types to be consistent: int32 vs. float32.",
    ),
    "shapes_conflict": (
        lambda m: m.batch_join([[tf.zeros([2])], [tf.zeros([3])]], 2),
        ValueError,
        "are not compatible",
    ),
    "unknown_rank": (
        lambda m: m.batch([_ph(None)], 2, dynamic_pad=True),
        ValueError,
        "Cannot infer Tensor's rank",
    ),
    "not_fully_defined": (
        lambda m: m.batch([_ph([None, 3])], 2),
        ValueError,
        "All shapes must be fully defined",
    ),
    "shuffle_not_fully_defined": (
        lambda m: m.shuffle_batch([_ph([None])], 2, 10, 2),
        ValueError,
        "All shapes must be fully defined",
    ),
    "explicit_shapes_mismatch": (
        lambda m: m.batch([tf.zeros([2, 3])], 2, shapes=[[4, 3]]),
        ValueError,
        "incompatible",
    ),
    "enqueue_many_scalar": (
        lambda m: m.batch([tf.constant(1)], 2, enqueue_many=True),
        ValueError,
        "must have rank at least 1",
    ),
    "dict_keys": (
        lambda m: m.batch_join([{"a": tf.constant(1)}, {"b": tf.constant(1)}], 2),
        ValueError,
        "All dictionaries in tensors_list must have the same keys",
    ),
    "keep_vector_without_many": (
        lambda m: m.maybe_batch([tf.constant(1)], tf.constant([True]), 2),
        ValueError,
        "`keep_input` cannot be a vector when `enqueue_many=False`",
    ),
    "keep_rank_2": (
        lambda m: m.maybe_batch([tf.zeros([2])], tf.ones([1, 1], tf.bool), 2, enqueue_many=True),
        ValueError,
        "`keep_input` must be 0 or 1 dimensions",
    ),
    "keep_unknown_rank": (
        lambda m: m.maybe_batch([tf.zeros([2])], tf.compat.v1.placeholder(tf.bool), 2),
        ValueError,
        "`keep_input` dimensions must be known at graph construction",
    ),
    "num_threads_zero": (lambda m: m.batch([tf.constant(1)], 2, num_threads=0), ValueError, ""),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_tf(case):
    fn, error, text = ERROR_CASES[case]
    for impl in (TF, qp):
        with tf.Graph().as_default(), pytest.raises(error) as info:
            fn(impl)
        assert text in str(info.value), (impl, str(info.value))


def test_join_capacity_equal_to_mad_is_a_clear_error():
    """Deliberate difference: TF raises ZeroDivisionError (and for capacity <
    min_after_dequeue fails only at run time)."""
    lists = lambda: [[tf.constant(1)], [tf.constant(2)]]  # noqa: E731
    with tf.Graph().as_default(), pytest.raises(ZeroDivisionError):
        TF.shuffle_batch_join(lists(), 2, 10, 10)
    for capacity in (10, 4):
        with tf.Graph().as_default(), pytest.raises(ValueError, match="min_after_dequeue"):
            qp.shuffle_batch_join(lists(), 2, capacity, 10)
        with tf.Graph().as_default(), pytest.raises(ValueError, match="min_after_dequeue"):
            qp.maybe_shuffle_batch_join(lists(), 2, capacity, 10, True)


def test_join_lists_of_different_lengths_is_a_clear_error():
    """Deliberate difference: TF's message talks about SparseTensors (P20)."""
    lists = lambda: [[tf.constant(1), tf.constant(2)], [tf.constant(3)]]  # noqa: E731
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Inconsistent SparseTensors"):
        TF.batch_join(lists(), 2)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="list 0 has 2 and list 1 has 1"):
        qp.batch_join(lists(), 2)


def test_bare_tensor_is_taken_as_one_element_list():
    """Deliberate difference: TF fails iterating a symbolic tensor (P7)."""
    with tf.Graph().as_default(), pytest.raises(TypeError):
        TF.batch(tf.constant(1), 2)
    with tf.Graph().as_default():
        out = qp.batch(tf.constant(1), 2)
        assert out.shape.as_list() == [2]


@pytest.mark.v2_only(
    "eager execution exists only under TF 2.x defaults; TF1 mode: test_builds_with_no_eager_at_all"
)
@pytest.mark.parametrize("api", BATCH_APIS)
def test_eager_raises_graph_mode_required(api):
    with pytest.raises(qp.GraphModeRequiredError, match=api) as info:
        getattr(qp, api)([tf.constant(1)], 2, 10, 5, True)
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)


@pytest.mark.v2_only(
    "eager execution exists only under TF 2.x defaults; TF1 mode: "
    "test_argument_checks_with_no_eager_at_all"
)
def test_eager_check_comes_before_argument_checks():
    with pytest.raises(qp.GraphModeRequiredError):
        qp.shuffle_batch([tf.constant(1)], 2, capacity=10, min_after_dequeue=10)


@pytest.mark.tf1_only(
    "TF1 mode has no eager execution; TF 2.x: test_eager_raises_graph_mode_required"
)
@pytest.mark.parametrize("api", BATCH_APIS)
def test_builds_with_no_eager_at_all(api):
    """A TF1 script batches at the top level, in the default graph, as TF does."""
    nodes = {}
    for m in (TF, qp):
        with tf.Graph().as_default() as g:  # a fresh "top level" per implementation
            kwargs = {"batch_size": 2}
            if api.startswith("maybe"):
                kwargs["keep_input"] = True
            if "shuffle" in api:
                kwargs.update(capacity=10, min_after_dequeue=5)
            tensors = [[tf.constant(1)]] if "join" in api else [tf.constant(1)]
            result = getattr(m, api)(tensors, **kwargs)
            assert tf.nest.flatten(result)[0].graph is tf.compat.v1.get_default_graph()
            assert g.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
        nodes[m] = graph_nodes(g)
    assert nodes[qp] == nodes[TF]


@pytest.mark.tf1_only(
    "TF1 mode has no eager execution; TF 2.x: test_eager_check_comes_before_argument_checks"
)
def test_argument_checks_with_no_eager_at_all():
    for m in (TF, qp):
        with pytest.raises(ValueError, match="min_after_dequeue"):
            m.shuffle_batch([tf.constant(1)], 2, capacity=10, min_after_dequeue=10)


# --- shared_name across sessions --------------------------------------------------


def test_shared_name_shares_the_queue_across_sessions():
    server = tf.compat.v1.train.Server.create_local_server()
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=20_000)

    def graph(feed):
        g = tf.Graph()
        with g.as_default():
            if feed:
                value = qp.range_input_producer(8, shuffle=False).dequeue()
            else:
                value = tf.constant(0)  # this side never runs its runner
            out = qp.batch([value], 4, shared_name="shared_batch", capacity=16)
        return g, out

    g_feed, _ = graph(True)
    g_drain, out = graph(False)
    with (
        tf.compat.v1.Session(server.target, graph=g_feed, config=config) as feeder,
        tf.compat.v1.Session(server.target, graph=g_drain, config=config) as drainer,
    ):
        coord = qp.Coordinator()
        with g_feed.as_default():
            threads = qp.start_queue_runners(feeder, coord)
        try:
            got = [drainer.run(out).tolist() for _ in range(2)]
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7]]


# --- plan nodes -------------------------------------------------------------------


def test_plan_of_a_whole_pipeline(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("1,2\n3,4\n")
    with tf.Graph().as_default():
        files = qp.string_input_producer([str(path)], num_epochs=1)
        _, line = qp.TextLineReader().read(files)
        a, b = tf.io.decode_csv(line, [[0], [0]])
        batch = qp.shuffle_batch({"a": a, "b": b}, 2, 10, 2, seed=1)
        plan = qp.plan_for(batch)
        assert plan.kinds == ["string_input_producer", "TextLineReader.read", "shuffle_batch"]
        node = plan.nodes[-1]
        assert node.args["min_after_dequeue"] == 2 and node.args["structure"] == "dict"
        assert node.fills is tf.compat.v1.get_collection("queue_runners")[-1].queue
        assert list(node.inputs) == [a, b]
        assert set(node.outputs) == set(batch.values())


def test_plan_records_the_callers_arguments():
    with tf.Graph().as_default():
        out = qp.batch([tf.zeros([3])], 2, num_threads=2)
        (node,) = qp.plan_for(out)
        assert node.kind == "batch" and node.args["shapes"] is None
        assert node.args["num_threads"] == 2 and node.args["keep_input"] is True
        explicit = qp.batch([tf.compat.v1.placeholder(tf.float32, [None])], 2, shapes=[[3]])
        assert qp.plan_for(explicit).nodes[-1].args["shapes"] == [[3]]
