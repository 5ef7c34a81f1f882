"""Parity tests of the tf.data batching twins against queue_pipeline's legacy functions."""

from __future__ import annotations

import collections
import inspect
import warnings

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import build, dataset_values, drain, new_session
from queue_pipeline import batching as legacy_batching
from queue_pipeline.data import batching as data_batching


def _batch_value(value):
    """A fetched or iterated batch as plain Python: arrays as (nested) *lists*, so a
    batch stays distinguishable from a tuple of components; dicts, sparse triples."""
    if isinstance(value, (tf.SparseTensor, tf.compat.v1.SparseTensorValue)):
        return (
            "sparse",
            _batch_value(value.indices),
            _batch_value(value.values),
            _batch_value(value.dense_shape),
        )
    if isinstance(value, dict):
        return {key: _batch_value(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(_batch_value(v) for v in value)
    if isinstance(value, tf.Tensor):
        value = value.numpy()
    return np.asarray(value).tolist()


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
SHUFFLE_APIS = [api for api in BATCH_APIS if "shuffle" in api]
N, EPOCHS = 13, 2


# --- helpers -------------------------------------------------------------------


def _legacy(fn, seed=None):
    """Batches of the legacy pipeline fn(qp), run with runners until OutOfRange."""
    g, fetch = build(qp, fn, seed=seed)
    return [_batch_value(b) for b in drain(qp, g, fetch)]


def _twin(ds):
    """Batches of a twin Dataset, read as this TF mode's user would."""
    return [_batch_value(b) for b in dataset_values(ds)]


def _graph_twin(make_dataset):
    """Batches of make_dataset() fetched through a one-shot iterator in a Session."""
    g = tf.Graph()
    with g.as_default():
        next_batch = tf.compat.v1.data.make_one_shot_iterator(make_dataset()).get_next()
        out = []
        with new_session(g) as sess:
            with pytest.raises(tf.errors.OutOfRangeError):
                for _ in range(10_000):
                    out.append(_batch_value(sess.run(next_batch)))
    return out


def _examples(batches):
    """The examples (rows) of a list of batches, in order."""
    rows = []
    for b in batches:
        if isinstance(b, dict):
            keys = sorted(b)
            rows += [tuple(zip(keys, r)) for r in zip(*(b[k] for k in keys))]
        elif isinstance(b, tuple):
            rows += list(zip(*b))
        else:
            rows += b
    return rows


def _multiset(batches):
    return collections.Counter(map(repr, _examples(batches)))


def _legacy_source(m, offset=0, n=N):
    """The legacy examples (x, x / 2) for x in range(n), EPOCHS times, in order."""
    x = m.range_input_producer(n, num_epochs=EPOCHS, shuffle=False).dequeue() + offset
    return [x, tf.cast(x, tf.float32) / 2]


def _twin_source(offset=0, n=N):
    """The twin of :func:`_legacy_source`."""
    x = tf.data.Dataset.range(n).repeat(EPOCHS).map(lambda x: tf.cast(x, tf.int32) + offset)
    return x.map(lambda x: (x, tf.cast(x, tf.float32) / 2))


def _call(api, m, inputs, *, keep=True, threads=1, **kwargs):
    """Calls `api` of module m (legacy qp or the twins) with the arguments it takes."""
    args = dict(batch_size=4, allow_smaller_final_batch=True)
    if "shuffle" in api:
        args.update(capacity=20, min_after_dequeue=8, seed=3)
    if api.startswith("maybe"):
        args["keep_input"] = keep
    if "join" not in api:
        args["num_threads"] = threads
    args.update(kwargs)
    return getattr(m, api)(inputs, **args)


def _api_inputs(api):
    """(legacy fn(m), twin Dataset or list) over the same examples for `api`."""
    if "join" in api:
        return (
            lambda m: _call(api, m, [_legacy_source(m), _legacy_source(m, 100)]),
            lambda: _call(api, data_batching, [_twin_source(), _twin_source(100)]),
        )
    return (
        lambda m: _call(api, m, _legacy_source(m)),
        lambda: _call(api, data_batching, _twin_source()),
    )


# --- parity: examples, sequences, structure -------------------------------------


@pytest.mark.parametrize("api", BATCH_APIS)
def test_every_example_once_per_epoch_like_legacy(api):
    legacy_fn, twin_fn = _api_inputs(api)
    legacy, twin = _legacy(legacy_fn), _twin(twin_fn())
    assert _multiset(twin) == _multiset(legacy)
    lists = 2 if "join" in api else 1
    assert len(_examples(twin)) == N * EPOCHS * lists
    assert all(len(b[0]) == 4 for b in twin[:-1])
    if "shuffle" not in api and "join" not in api:
        assert twin == legacy  # one thread, one list: both deterministic


@pytest.mark.parametrize("smaller", [False, True], ids=["drop_tail", "keep_tail"])
@pytest.mark.parametrize("api", ["batch", "batch_join"])
def test_deterministic_sequence_identical_to_legacy(api, smaller):
    inputs = (lambda m: [_legacy_source(m)]) if "join" in api else _legacy_source
    twin_inputs = [_twin_source()] if "join" in api else _twin_source()
    legacy = _legacy(lambda m: getattr(m, api)(inputs(m), 5, allow_smaller_final_batch=smaller))
    twin = _twin(getattr(data_batching, api)(twin_inputs, 5, allow_smaller_final_batch=smaller))
    assert twin == legacy
    assert len(_examples(twin)) == (N * EPOCHS if smaller else 25)


def test_allow_smaller_final_batch_is_inverted_into_drop_remainder():
    ds = tf.data.Dataset.range(7)
    assert _twin(data_batching.batch(ds, 3)) == [[0, 1, 2], [3, 4, 5]]
    assert _twin(data_batching.batch(ds, 3, allow_smaller_final_batch=True)) == [
        [0, 1, 2],
        [3, 4, 5],
        [6],
    ]


STRUCTURES = {  # (legacy tensors, twin Dataset element)
    "tuple": (lambda: [tf.constant(1), tf.zeros([2])], lambda: (tf.constant(1), tf.zeros([2]))),
    "one_component_list": (lambda: [tf.constant("s")], lambda: (tf.constant("s"),)),
    "bare": (lambda: [tf.constant(1.5)], lambda: tf.constant(1.5)),
    "dict": (
        lambda: {"b": tf.ones([3], tf.int64), "a": tf.constant(True)},
        lambda: {"b": tf.ones([3], tf.int64), "a": tf.constant(True)},
    ),
    "one_key_dict": (lambda: {"k": tf.constant(1)}, lambda: {"k": tf.constant(1)}),
}


def _describe_legacy(result):
    if isinstance(result, dict):
        return {k: _describe_legacy(v) for k, v in result.items()}
    if isinstance(result, list):
        return tuple(_describe_legacy(v) for v in result)
    return (result.dtype, result.shape.as_list())


def _describe_spec(spec):
    if isinstance(spec, dict):
        return {k: _describe_spec(v) for k, v in spec.items()}
    if isinstance(spec, tuple):
        return tuple(_describe_spec(v) for v in spec)
    return (spec.dtype, spec.shape.as_list())


@pytest.mark.parametrize("smaller", [False, True], ids=["drop_tail", "keep_tail"])
@pytest.mark.parametrize("structure", list(STRUCTURES))
@pytest.mark.parametrize("api", BATCH_APIS)
def test_structure_dtypes_and_static_shapes_match_legacy(api, structure, smaller):
    legacy_tensors, twin_element = STRUCTURES[structure]
    join = "join" in api
    _, legacy = build(
        qp,
        lambda m: _call(
            api,
            m,
            [legacy_tensors()] if join else legacy_tensors(),
            allow_smaller_final_batch=smaller,
        ),
    )
    ds = tf.data.Dataset.from_tensors(twin_element()).repeat()
    twin = _call(api, data_batching, [ds] if join else ds, allow_smaller_final_batch=smaller)
    assert _describe_spec(twin.element_spec) == _describe_legacy(legacy)
    leading = tf.nest.flatten(twin.element_spec)[0].shape.as_list()[0]
    assert leading == (None if smaller else 4)


def test_tensor_batch_size_static_shape_like_legacy():
    def both(size_fn):
        g, legacy = build(qp, lambda m: m.batch([tf.constant(1)], size_fn()))
        with g.as_default():
            twin = data_batching.batch(tf.data.Dataset.range(7), size_fn())
        assert legacy.shape.as_list() == twin.element_spec.shape.as_list()
        return legacy.shape.as_list()

    assert both(lambda: tf.constant(3)) == [3]
    assert both(lambda: tf.compat.v1.placeholder_with_default(3, [])) == [None]
    twin = data_batching.batch(tf.data.Dataset.range(7), tf.constant(3))
    assert _twin(twin) == [[0, 1, 2], [3, 4, 5]]


# --- dynamic_pad, shapes, enqueue_many, sparse ------------------------------------


def _padded_legacy(m, shapes=None):
    n = m.range_input_producer(5, num_epochs=1, shuffle=False).dequeue()
    return m.batch(
        [tf.range(n), tf.fill([n, 2], n), tf.strings.as_string(n)],
        2,
        shapes=shapes,
        dynamic_pad=True,
        allow_smaller_final_batch=True,
    )


def _padded_twin(shapes=None):
    ds = (
        tf.data.Dataset.range(5)
        .map(lambda n: tf.cast(n, tf.int32))
        .map(lambda n: (tf.range(n), tf.fill([n, 2], n), tf.strings.as_string(n)))
    )
    return data_batching.batch(
        ds, 2, shapes=shapes, dynamic_pad=True, allow_smaller_final_batch=True
    )


@pytest.mark.parametrize("shapes", [None, [[None], [None, 2], []]], ids=["inferred", "given"])
def test_dynamic_pad_matches_legacy(shapes):
    g, legacy_out = build(qp, lambda m: _padded_legacy(m, shapes))
    legacy = [_batch_value(b) for b in drain(qp, g, legacy_out)]
    twin_ds = _padded_twin(shapes)
    assert _twin(twin_ds) == legacy
    assert legacy[1][0] == [[0, 1, 0], [0, 1, 2]]
    assert _describe_spec(twin_ds.element_spec) == _describe_legacy(legacy_out)


def test_shapes_set_static_shapes_and_check_each_example():
    ds = tf.data.Dataset.range(4).map(lambda n: tf.fill([tf.cast(n % 2 + 2, tf.int32)], n))
    assert ds.element_spec.shape.as_list() == [None]
    checked = data_batching.batch(ds, 1, shapes=[[2]])
    assert checked.element_spec.shape.as_list() == [1, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="[Ss]hape"):
        _twin(checked)
    by_key = data_batching.batch(
        ds.map(lambda x: {"x": x}), 2, shapes={"x": [None]}, dynamic_pad=True
    )
    assert _twin(by_key)[1] == {"x": [[2, 2, 0], [3, 3, 3]]}


def test_enqueue_many_unbatches_like_legacy():
    def legacy_fn(m):
        block = m.input_producer(
            tf.reshape(tf.range(12), [3, 4]), num_epochs=1, shuffle=False
        ).dequeue()
        return m.batch([block, block * 2], 5, enqueue_many=True, allow_smaller_final_batch=True)

    blocks = tf.data.Dataset.from_tensor_slices(tf.reshape(tf.range(12), [3, 4]))
    twin = data_batching.batch(
        blocks.map(lambda b: (b, b * 2)), 5, enqueue_many=True, allow_smaller_final_batch=True
    )
    assert _twin(twin) == _legacy(legacy_fn)


def _sparse_of(n):
    """A SparseTensor whose dense shape and contents depend on the int32 scalar n."""
    return tf.SparseTensor(
        indices=tf.reshape(tf.cast(tf.range(n), tf.int64), [-1, 1]),
        values=tf.fill([n], tf.cast(n, tf.float32)),
        dense_shape=tf.reshape(tf.cast(n, tf.int64) + 1, [1]),
    )


@pytest.mark.parametrize("api", ["batch", "batch_join"])
def test_sparse_batches_match_legacy(api):
    def legacy_fn(m):
        n = m.range_input_producer(5, num_epochs=1, shuffle=False).dequeue()
        tensors = [_sparse_of(n), n]
        return getattr(m, api)(
            [tensors] if "join" in api else tensors, 2, allow_smaller_final_batch=True
        )

    ds = (
        tf.data.Dataset.range(5)
        .map(lambda n: tf.cast(n, tf.int32))
        .map(lambda n: (_sparse_of(n), n))
    )
    twin = getattr(data_batching, api)(
        [ds] if "join" in api else ds, 2, allow_smaller_final_batch=True
    )
    legacy = _legacy(legacy_fn)
    assert _twin(twin) == legacy
    assert legacy[1][0] == (
        "sparse",
        [[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]],
        [2.0, 2.0, 3.0, 3.0, 3.0],
        [2, 4],
    )


def test_sparse_enqueue_many_matches_legacy():
    dense = [[1, 0, 2], [0, 0, 3], [4, 0, 0], [0, 5, 0]]

    def legacy_fn(m):
        sparse = tf.sparse.from_dense(tf.constant(dense))
        # One epoch of one input batch, as a producer would deliver it.
        gate = m.range_input_producer(1, num_epochs=1, shuffle=False).dequeue()
        sparse = tf.SparseTensor(sparse.indices, sparse.values + gate, sparse.dense_shape)
        return m.batch([sparse], 3, enqueue_many=True, allow_smaller_final_batch=True)

    twin = data_batching.batch(
        tf.data.Dataset.from_tensors(tf.sparse.from_dense(tf.constant(dense))),
        3,
        enqueue_many=True,
        allow_smaller_final_batch=True,
    )
    assert _twin(twin) == _legacy(legacy_fn)


# --- keep_input --------------------------------------------------------------------


def _keep_legacy(api, m, keep_of):
    x = m.range_input_producer(N, num_epochs=1, shuffle=False).dequeue()
    if "join" in api:
        return _call(api, m, [[x]], keep=keep_of(x))
    return _call(api, m, [x], keep=keep_of(x))


def _numbers():
    return tf.data.Dataset.range(N).map(lambda x: tf.cast(x, tf.int32))


TWIN_KEEPS = {  # (twin Dataset, keep_input): each keeps the multiples of 3
    "predicate": lambda: (_numbers(), lambda x: tf.equal(x % 3, 0)),
    "dict_key": lambda: (_numbers().map(lambda x: {"x": x, "keep": tf.equal(x % 3, 0)}), "keep"),
    "tuple_index": lambda: (_numbers().map(lambda x: (tf.equal(x % 3, 0), x)), 0),
    "negative_index": lambda: (_numbers().map(lambda x: (x, tf.equal(x % 3, 0))), -1),
}


@pytest.mark.parametrize("form", list(TWIN_KEEPS))
@pytest.mark.parametrize("api", [api for api in BATCH_APIS if api.startswith("maybe")])
def test_keep_input_matches_legacy_maybe(api, form):
    legacy = _legacy(lambda m: _keep_legacy(api, m, lambda x: tf.equal(x % 3, 0)))
    ds, keep = TWIN_KEEPS[form]()
    twin = _twin(_call(api, data_batching, [ds] if "join" in api else ds, keep=keep))
    if form == "dict_key":
        twin = [b["x"] for b in twin]  # the keep component is removed
    assert _multiset(twin) == _multiset(legacy)
    assert sorted(_examples(twin)) == [0, 3, 6, 9, 12]
    if "shuffle" not in api:
        assert twin == legacy


def _blocks():
    """Three input batches of 4 rows: (rows, per-row keep, whole-batch keep)."""
    return (
        tf.data.Dataset.range(3)
        .map(lambda i: tf.cast(i, tf.int32))
        .map(
            lambda i: (
                i * 4 + tf.range(4),
                tf.not_equal((i * 4 + tf.range(4)) % 3, 0),
                tf.not_equal(i, 1),
            )
        )
    )


@pytest.mark.parametrize("rank", ["vector", "scalar"])
@pytest.mark.slow
def test_keep_input_with_enqueue_many_matches_legacy(rank):
    def legacy_fn(m):
        i = m.range_input_producer(3, num_epochs=1, shuffle=False).dequeue()
        rows = i * 4 + tf.range(4)
        keep = tf.not_equal(rows % 3, 0) if rank == "vector" else tf.not_equal(i, 1)
        return m.maybe_batch([rows], keep, 3, enqueue_many=True, allow_smaller_final_batch=True)

    ds = _blocks().map(lambda rows, vector, scalar: (rows, vector if rank == "vector" else scalar))
    twin = data_batching.maybe_batch(ds, 1, 3, enqueue_many=True, allow_smaller_final_batch=True)
    legacy = _legacy(legacy_fn)
    assert _twin(twin) == legacy
    expected = [1, 2, 4, 5, 7, 8, 10, 11] if rank == "vector" else [0, 1, 2, 3, 8, 9, 10, 11]
    assert _examples(legacy) == expected


def test_keep_input_bools():
    ds = tf.data.Dataset.range(5)
    assert _twin(data_batching.maybe_batch(ds, True, 2)) == [[0, 1], [2, 3]]
    assert _twin(data_batching.maybe_batch(ds, tf.constant(True), 2)) == [[0, 1], [2, 3]]
    with pytest.warns(UserWarning, match="block forever") as record:
        empty = data_batching.maybe_shuffle_batch(ds, 2, 10, 2, False)
    assert record[0].filename == __file__
    assert _twin(empty) == [] and empty.element_spec.shape.as_list() == [2]


# --- joins ---------------------------------------------------------------------------


def test_batch_join_round_robin_skips_exhausted_inputs_and_ends_with_the_last():
    inputs = [
        tf.data.Dataset.range(5),
        tf.data.Dataset.range(100, 102),
        tf.data.Dataset.range(200, 203),
    ]
    out = _twin(data_batching.batch_join(inputs, 4, allow_smaller_final_batch=True))
    assert _examples(out) == [0, 100, 200, 1, 101, 201, 2, 202, 3, 4]


def test_batch_join_keeps_each_lists_order_like_legacy():
    legacy = _legacy(
        lambda m: m.batch_join(
            [_legacy_source(m), _legacy_source(m, 100)], 3, allow_smaller_final_batch=True
        )
    )
    twin = _twin(
        data_batching.batch_join(
            [_twin_source(), _twin_source(100)], 3, allow_smaller_final_batch=True
        )
    )
    assert _multiset(twin) == _multiset(legacy)
    for rows in (_examples(legacy), _examples(twin)):
        for offset in (0, 100):
            mine = [x - offset for x, _ in rows if offset <= x < offset + 100]
            assert mine == list(range(N)) * EPOCHS


# --- shuffling -----------------------------------------------------------------------


def _shuffled(api, seed, n=600):
    inputs = (tf.data.Dataset.range(n // 2), tf.data.Dataset.range(n // 2, n))
    if "join" not in api:
        inputs = tf.data.Dataset.range(n)
    keep = {"keep_input": True} if api.startswith("maybe") else {}
    return getattr(data_batching, api)(
        list(inputs) if "join" in api else inputs,
        10,
        capacity=200,
        min_after_dequeue=50,
        seed=seed,
        allow_smaller_final_batch=True,
        **keep,
    )


@pytest.mark.parametrize("api", SHUFFLE_APIS)
def test_shuffle_mixes_and_is_reproducible_with_a_seed(api):
    ds = _shuffled(api, seed=7)
    values = np.array(_examples(_twin(ds)))
    assert sorted(values.tolist()) == list(range(600))
    displaced = np.mean(np.abs(values - np.arange(600)))
    assert displaced > 30  # unshuffled: 0; a 200-buffer shuffle: about 100
    assert np.corrcoef(values, np.arange(600))[0, 1] < 0.99
    assert _examples(_twin(_shuffled(api, seed=7))) == values.tolist()


@pytest.mark.v2_only(
    "a second Python iteration over one eager Dataset exists only eagerly; "
    "TF1 mode: test_each_epoch_of_one_iterator_is_reshuffled"
)
@pytest.mark.parametrize("api", SHUFFLE_APIS)
def test_iterating_again_reshuffles(api):
    ds = _shuffled(api, seed=7)
    first = _examples(_twin(ds))
    assert _examples(_twin(ds)) != first  # reshuffled on each iteration
    assert sorted(_examples(_twin(ds))) == sorted(first)


@pytest.mark.parametrize("api", SHUFFLE_APIS)
def test_each_epoch_of_one_iterator_is_reshuffled(api):
    """The Session way: one iterator over repeated epochs draws each epoch afresh."""
    values = _examples(_twin(_shuffled(api, seed=7).repeat(2)))
    first, second = values[:600], values[600:]
    assert sorted(first) == sorted(second) == list(range(600))
    assert first != second


def test_shuffle_buffer_is_capacity_not_min_after_dequeue():
    """An element can leave up to `capacity` - 1 places early (RandomShuffleQueue)."""
    first = _examples(
        _twin(
            data_batching.shuffle_batch(
                tf.data.Dataset.range(1000), 100, capacity=400, min_after_dequeue=10, seed=1
            )
        )
    )[:100]
    assert max(first) > 200  # a buffer of min_after_dequeue (10) would give < 110


# --- threads, decode, modes -----------------------------------------------------------


# In TF1 mode the test's own options() calls run in graph mode, where tf.data warns.
@pytest.mark.filterwarnings("ignore:To make it possible to preserve tf.data options")
@pytest.mark.parametrize("api", ["batch", "shuffle_batch"])
def test_num_threads_makes_the_pipeline_nondeterministic_like_legacy(api):
    legacy_fn = lambda m: _call(api, m, _legacy_source(m), threads=3)  # noqa: E731
    twin = _call(
        api, data_batching, _twin_source(), threads=3, shapes=[[], []]
    )  # `shapes` adds a parallel map
    assert twin.options().deterministic is False
    assert _call(api, data_batching, _twin_source()).options().deterministic is None
    assert _multiset(_twin(twin)) == _multiset(_legacy(legacy_fn))


def test_decode_runs_on_batches_like_decoding_a_legacy_batch():
    lines = [f"{i},{i / 4}".encode() for i in range(7)]
    defaults = [[0], [0.0]]

    def legacy_fn(m):
        line = m.input_producer(tf.constant(lines), num_epochs=1, shuffle=False).dequeue()
        return tf.io.decode_csv(m.batch([line], 3, allow_smaller_final_batch=True), defaults)

    twin = data_batching.batch(
        tf.data.Dataset.from_tensor_slices(lines),
        3,
        allow_smaller_final_batch=True,
        decode=lambda line: tf.io.decode_csv(line, defaults),
    )
    per_example = data_batching.batch(
        tf.data.Dataset.from_tensor_slices(lines).map(
            lambda line: tuple(tf.io.decode_csv(line, defaults))
        ),
        3,
        allow_smaller_final_batch=True,
    )
    assert _twin(twin) == _twin(per_example) == _legacy(legacy_fn)


@pytest.mark.parametrize("api", BATCH_APIS)
def test_graph_mode_one_shot_iterator_matches_eager(api):
    _, twin_fn = _api_inputs(api)
    graph = _graph_twin(twin_fn)
    eager = _twin(twin_fn())
    assert _multiset(graph) == _multiset(eager)
    if "shuffle" not in api:
        assert graph == eager


@pytest.mark.v2_only(
    "Keras 3 `fit` needs TF 2.x behaviour; TF1 mode: test_result_feeds_a_tf1_training_loop"
)
def test_eager_result_feeds_keras_fit():
    x = np.random.RandomState(0).normal(size=(64, 3)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True)))
    batches = data_batching.shuffle_batch(ds, 8, capacity=32, min_after_dequeue=8, seed=1)
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Keras: "shuffle=True ... ignored" for Datasets
        history = model.fit(batches, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2


def test_result_feeds_a_tf1_training_loop():
    """The first migration step of a session script: get_next() in place of the batch."""
    x = np.random.RandomState(0).normal(size=(64, 3)).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.set_random_seed(1)
        ds = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True)))
        batches = data_batching.shuffle_batch(
            ds.repeat(), 8, capacity=32, min_after_dequeue=8, seed=1
        )
        features, target = tf.compat.v1.data.make_one_shot_iterator(batches).get_next()
        weights = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features, weights) - target))
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
    with new_session(g) as sess:
        sess.run(init)
        losses = [sess.run([train, loss])[1] for _ in range(60)]
    assert np.mean(losses[-10:]) < 0.1 * np.mean(losses[:10])


# --- arguments, warnings, errors -------------------------------------------------------


@pytest.mark.parametrize("api", BATCH_APIS)
def test_signature_is_the_legacy_one_plus_keyword_only_options(api):
    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    twin = params(getattr(data_batching, api))
    positional = [p for p in twin if p[1] != inspect.Parameter.KEYWORD_ONLY]
    assert positional == params(getattr(legacy_batching, api))
    assert [p[0] for p in twin if p[1] == inspect.Parameter.KEYWORD_ONLY] == ["decode"]
    assert f"Mirrors `queue_pipeline.{api}`" in getattr(data_batching, api).__doc__


@pytest.mark.parametrize("api", BATCH_APIS)
def test_inert_arguments_warn_at_the_callers_line(api):
    ds = tf.data.Dataset.range(8)
    inputs = [ds] if "join" in api else ds
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _call(api, data_batching, inputs)  # legacy defaults: silent
    with pytest.warns(UserWarning) as record:
        _call(api, data_batching, inputs, shared_name="q", name="B")
    assert sorted(str(w.message).split("`")[1] for w in record) == ["name", "shared_name"]
    assert all(w.filename == __file__ for w in record)


@pytest.mark.parametrize("capacity, mad", [(10, 10), (5, 8)], ids=["equal", "less"])
@pytest.mark.parametrize("api", SHUFFLE_APIS)
def test_capacity_must_exceed_min_after_dequeue(api, capacity, mad):
    ds = tf.data.Dataset.range(8)
    with pytest.raises(
        ValueError,
        match=rf"capacity {capacity} must be bigger than min_after_dequeue {mad}: "
        r"`capacity` must be greater than `min_after_dequeue`",
    ):
        _call(
            api,
            data_batching,
            [ds] if "join" in api else ds,
            capacity=capacity,
            min_after_dequeue=mad,
        )


def _sparse_ds():
    return tf.data.Dataset.from_tensors(tf.sparse.from_dense([[1, 0]]))


ERROR_CASES = {  # name: (call, error type, match)
    "join_dtypes": (
        lambda: data_batching.batch_join(
            [
                tf.data.Dataset.range(3),
                tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32)),
            ],
            2,
        ),
        TypeError,
        "Expected types to be consistent: int64 vs. float32",
    ),
    "join_keys": (
        lambda: data_batching.batch_join(
            [
                tf.data.Dataset.range(3).map(lambda x: {"a": x}),
                tf.data.Dataset.range(3).map(lambda x: {"b": x}),
            ],
            2,
        ),
        ValueError,
        "structure",
    ),
    "join_sparse_vs_dense": (
        lambda: data_batching.shuffle_batch_join(
            [_sparse_ds(), tf.data.Dataset.from_tensors(tf.constant([[1, 0]]))], 2, 10, 2
        ),
        ValueError,
        "Inconsistent SparseTensors",
    ),
    "join_shapes": (
        lambda: data_batching.batch_join(
            [tf.data.Dataset.from_tensors([1, 2]), tf.data.Dataset.from_tensors([1, 2, 3])], 2
        ),
        ValueError,
        "not compatible",
    ),
    "join_empty": (
        lambda: data_batching.batch_join([], 2),
        ValueError,
        "at least one set of tensors",
    ),
    "join_one_dataset": (
        lambda: data_batching.batch_join(tf.data.Dataset.range(3), 2),
        TypeError,
        "list of tf.data.Datasets",
    ),
    "tensors_not_dataset": (
        lambda: data_batching.batch([tf.constant(1)], 2),
        TypeError,
        "`tensors` must be a tf.data.Dataset",
    ),
    "num_threads": (
        lambda: data_batching.batch(tf.data.Dataset.range(3), 2, num_threads=0),
        ValueError,
        "`num_threads`",
    ),
    "dynamic_pad_sparse": (
        lambda: data_batching.batch(_sparse_ds(), 2, dynamic_pad=True),
        TypeError,
        "dynamic_pad",
    ),
    "shapes_length": (
        lambda: data_batching.batch(tf.data.Dataset.range(3).map(lambda x: (x, x)), 2, shapes=[[]]),
        ValueError,
        "one shape per component",
    ),
    "keep_not_bool": (
        lambda: data_batching.maybe_batch(tf.data.Dataset.range(3).map(lambda x: (x, x)), 1, 2),
        TypeError,
        "must be a bool",
    ),
    "keep_missing_key": (
        lambda: data_batching.maybe_batch(
            tf.data.Dataset.range(3).map(lambda x: {"x": x}), "keep", 2
        ),
        ValueError,
        "not a key",
    ),
    "keep_only_component": (
        lambda: data_batching.maybe_batch(tf.data.Dataset.range(3).map(lambda x: x > 1), 0, 2),
        ValueError,
        "names a component",
    ),
    "keep_vector_tensor": (
        lambda: data_batching.maybe_batch(tf.data.Dataset.range(3), tf.constant([True, False]), 2),
        TypeError,
        "keep_input",
    ),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
@pytest.mark.slow
def test_errors_are_clear(case):
    call, error, match = ERROR_CASES[case]
    with pytest.raises(error, match=match):
        call()


def test_non_constant_keep_input_tensor_is_rejected_in_graph_mode():
    with tf.Graph().as_default():
        keep = tf.compat.v1.placeholder(tf.bool, [])
        with pytest.raises(TypeError, match="predicate on one example"):
            data_batching.maybe_batch(tf.data.Dataset.range(3), keep, 2)
