"""Tests of the producer twins in queue_pipeline.data.producers, against the legacy producers."""

from __future__ import annotations

import collections
import inspect
import warnings

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from queue_pipeline.data import producers
from helpers import assert_produces, build, drain, drain_dataset, elements, new_session, py

NAMES = [
    "input_producer",
    "limit_epochs",
    "match_filenames_once",
    "range_input_producer",
    "slice_input_producer",
    "string_input_producer",
]
WORDS = [f"w{i:02d}" for i in range(20)]


# --------------------------------------------------------------------------- helpers


def in_graph(make, seed=None, limit=10_000):
    """Builds make() in a fresh graph (graph seed `seed`) and drains a one-shot iterator."""
    return [py(value) for value in drain_dataset(make, seed=seed, limit=limit)]


def legacy(make, seed=None):
    """Drains the legacy queue_pipeline pipeline make(qp) (runners, Coordinator)."""
    g, fetch = build(qp, make, seed=seed)
    return [py(x) for x in drain(qp, g, fetch)]


def epochs(sequence, size):
    """`sequence` cut into consecutive epochs of `size` elements."""
    assert len(sequence) % size == 0, (len(sequence), size)
    return [sequence[i : i + size] for i in range(0, len(sequence), size)]


def same_epoch_multisets(a, b, size):
    return [collections.Counter(e) for e in epochs(a, size)] == [
        collections.Counter(e) for e in epochs(b, size)
    ]


# --------------------------------------------------------------------------- surface


@pytest.mark.parametrize("name", NAMES)
def test_signature_equals_legacy(name):
    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

    assert params(getattr(producers, name)) == params(getattr(qp, name))


@pytest.mark.parametrize("name", NAMES)
def test_docstring_names_legacy_twin(name):
    doc = inspect.getdoc(getattr(producers, name))
    assert f"Mirrors `queue_pipeline.{name}`." in doc
    assert "Differences from the legacy function" in doc


def test_all_sorted_and_exported():
    assert producers.__all__ == sorted(producers.__all__) == NAMES


# --------------------------------------------------------------------------- parity


# Each case: make(m) builds the producer with m = qp (legacy, fetch the
# dequeued element) or producers (twin, a Dataset). shuffle=False: the exact
# sequence must match.
def _dequeue(result):
    return result.dequeue() if hasattr(result, "dequeue") else result


ORDERED = {
    "string_1": lambda m: m.string_input_producer(["a", "b", "c"], num_epochs=1, shuffle=False),
    "string_3": lambda m: m.string_input_producer(
        tf.constant(["x", "y"]), num_epochs=3, shuffle=False, capacity=1
    ),
    "string_numpy": lambda m: m.string_input_producer(
        np.array([b"p", b"q"]), num_epochs=2, shuffle=False
    ),
    "input_rows": lambda m: m.input_producer(
        tf.constant([[1, 2], [3, 4], [5, 6]]), num_epochs=2, shuffle=False
    ),
    "input_element_shape": lambda m: m.input_producer(
        np.arange(6.0).reshape(3, 2), element_shape=[2], num_epochs=1, shuffle=False
    ),
    "range_int": lambda m: m.range_input_producer(5, num_epochs=2, shuffle=False),
    "range_int64": lambda m: m.range_input_producer(
        tf.constant(3, tf.int64), num_epochs=1, shuffle=False
    ),
    "slice_two": lambda m: m.slice_input_producer(
        [tf.constant([1, 2, 3]), tf.constant([[1.0], [2.0], [3.0]])], num_epochs=2, shuffle=False
    ),
    "slice_one": lambda m: m.slice_input_producer([["p", "q"]], num_epochs=1, shuffle=False),
    "limit_epochs": lambda m: m.limit_epochs(tf.constant([7, 8]), 3),
}


@pytest.mark.parametrize("case", list(ORDERED))
def test_same_sequence_as_legacy(case):
    make = ORDERED[case]
    want = legacy(lambda m: _dequeue(make(m)))
    if case == "slice_one":  # legacy: a 1-list per step; twin: a 1-tuple
        assert all(isinstance(x, tuple) and len(x) == 1 for x in want)
    assert_produces(make(producers), want)
    assert in_graph(lambda: make(producers)) == want


def test_dtypes_and_shapes_follow_legacy():
    with tf.Graph().as_default():
        pairs = [
            (qp.range_input_producer(5).dequeue(), producers.range_input_producer(5)),
            (
                qp.range_input_producer(tf.constant(5, tf.int64)).dequeue(),
                producers.range_input_producer(tf.constant(5, tf.int64)),
            ),
            (
                qp.input_producer(tf.zeros([3, 2, 4], tf.float16)).dequeue(),
                producers.input_producer(tf.zeros([3, 2, 4], tf.float16)),
            ),
            (qp.string_input_producer(["a"]).dequeue(), producers.string_input_producer(["a"])),
        ]
        for tensor, ds in pairs:
            assert ds.element_spec == tf.TensorSpec(tensor.shape, tensor.dtype)
        legacy_slices = qp.slice_input_producer([tf.zeros([5, 2, 3]), tf.range(5)])
        spec = producers.slice_input_producer([tf.zeros([5, 2, 3]), tf.range(5)]).element_spec
        assert spec == tuple(tf.TensorSpec(t.shape, t.dtype) for t in legacy_slices)


SHUFFLED = {
    "string": (lambda m, s: m.string_input_producer(WORDS, num_epochs=3, seed=s), len(WORDS)),
    "input": (
        lambda m, s: m.input_producer(tf.reshape(tf.range(40), [20, 2]), num_epochs=3, seed=s),
        20,
    ),
    "range": (lambda m, s: m.range_input_producer(20, num_epochs=3, seed=s), 20),
    "slice": (
        lambda m, s: m.slice_input_producer(
            [tf.range(20), tf.constant(WORDS)], num_epochs=3, seed=s
        ),
        20,
    ),
}


@pytest.mark.parametrize("case", list(SHUFFLED))
def test_shuffled_epochs_are_fresh_permutations_like_legacy(case):
    """Per-epoch multisets equal legacy's; each epoch a new permutation; epochs never mix."""
    make, size = SHUFFLED[case]
    want = legacy(lambda m: _dequeue(make(m, 5)), seed=1)
    got = elements(make(producers, 5))
    assert same_epoch_multisets(got, want, size)
    first, second, third = epochs(got, size)
    assert first != second and second != third  # reshuffled each epoch
    assert sorted(first) != first  # actually shuffled (fixed seed: not flaky)


@pytest.mark.parametrize("case", list(SHUFFLED))
def test_seed_reproducible_across_builds(case):
    make, _ = SHUFFLED[case]
    assert_produces(make(producers, 7), elements(make(producers, 7)))
    assert elements(make(producers, 7)) != elements(make(producers, 8))
    assert in_graph(lambda: make(producers, 7), seed=3) == in_graph(
        lambda: make(producers, 7), seed=3
    )
    assert in_graph(lambda: make(producers, None), seed=3) == in_graph(
        lambda: make(producers, None), seed=3
    )


@pytest.mark.v2_only(
    "tf.random.set_seed is the eager global seed; TF1 mode: graph seeds "
    "in test_seed_reproducible_across_builds"
)
def test_global_seed_makes_eager_shuffle_reproducible():
    def run():
        tf.random.set_seed(42)
        return elements(producers.string_input_producer(WORDS, num_epochs=2))

    try:
        assert run() == run()
    finally:
        tf.random.set_seed(None)


@pytest.mark.v2_only(
    "a second Python iteration over one eager Dataset exists only eagerly; "
    "TF1 mode: test_shuffled_epochs_are_fresh_permutations_like_legacy"
)
def test_iterating_again_reshuffles():
    ds = producers.string_input_producer(WORDS, num_epochs=1, seed=3)
    first, second = elements(ds), elements(ds)
    assert sorted(first) == sorted(second) == [w.encode() for w in WORDS]
    assert first != second


@pytest.mark.parametrize(
    "make, want",
    [
        (lambda: producers.string_input_producer(["a", "b"], shuffle=False), [b"a", b"b"] * 5),
        (lambda: producers.range_input_producer(2, shuffle=False), [0, 1] * 5),
        (lambda: producers.limit_epochs(tf.constant(1)), [1] * 10),
    ],
    ids=["string", "range", "limit_epochs"],
)
def test_num_epochs_none_repeats_forever(make, want):
    assert_produces(make(), want, limit=10)


def test_empty_rows_end_at_once():
    """Deliberate difference: legacy spins forever with no rows and no num_epochs."""
    assert_produces(producers.range_input_producer(0), [])
    assert_produces(producers.input_producer(tf.zeros([0, 2]), num_epochs=2), [])


def test_dataset_input_rows():
    rows = tf.data.Dataset.range(6).filter(lambda x: tf.equal(x % 2, 0))  # unknown length
    assert_produces(producers.input_producer(rows, num_epochs=2, shuffle=False), [0, 2, 4] * 2)
    got = elements(producers.input_producer(rows, num_epochs=4, seed=2))
    assert [sorted(e) for e in epochs(got, 3)] == [[0, 2, 4]] * 4
    assert len({tuple(e) for e in epochs(got, 3)}) > 1
    known = tf.data.Dataset.from_tensor_slices([[1, 2], [3, 4]])
    assert_produces(
        producers.input_producer(known, num_epochs=1, shuffle=False),
        [
            (1, 2),
            (3, 4),
        ],
    )


# --------------------------------------------------------------------------- match_filenames_once


@pytest.fixture
def files(tmp_path):
    for name in ("b.txt", "a.txt", "c.dat"):
        (tmp_path / name).write_text("x")
    return tmp_path


def test_match_filenames_once_sorted_like_legacy(files):
    pattern = str(files / "*.txt")
    g = tf.Graph()
    with g.as_default():
        variable = qp.match_filenames_once(pattern)
        with new_session(g) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            want = [py(f) for f in sess.run(variable)]
    assert want == [str(files / n).encode() for n in ("a.txt", "b.txt")]
    assert_produces(producers.match_filenames_once(pattern), want)
    assert in_graph(lambda: producers.match_filenames_once(pattern)) == want
    both = [str(files / "*.dat"), pattern]
    assert_produces(
        producers.match_filenames_once(both), sorted([str(files / "c.dat").encode()] + want)
    )


def test_match_filenames_once_globs_when_iterated(files):
    ds = producers.match_filenames_once(str(files / "*.txt"))
    (files / "d.txt").write_text("later")
    assert elements(ds)[-1] == str(files / "d.txt").encode()


def test_match_filenames_once_no_match_names_pattern(files):
    pattern = str(files / "*.nothing")
    ds = producers.match_filenames_once(pattern)
    with pytest.raises(tf.errors.InvalidArgumentError, match="no file matches") as info:
        elements(ds)
    assert pattern in str(info.value)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\*\.nothing"):
        in_graph(lambda: producers.match_filenames_once(pattern))


@pytest.mark.parametrize("num_epochs", [1, 3])
@pytest.mark.slow
def test_string_input_producer_over_match_filenames_once(files, num_epochs):
    pattern = str(files / "*.txt")
    want = legacy(
        lambda m: m.string_input_producer(
            m.match_filenames_once(pattern), num_epochs=num_epochs, shuffle=False
        ).dequeue()
    )

    def twin(shuffle, seed=None):
        return producers.string_input_producer(
            producers.match_filenames_once(pattern),
            num_epochs=num_epochs,
            shuffle=shuffle,
            seed=seed,
        )

    assert_produces(twin(False), want)
    assert in_graph(lambda: twin(False)) == want
    shuffled = elements(twin(True, seed=4))
    assert same_epoch_multisets(shuffled, want, 2)
    assert_produces(twin(True, seed=4), shuffled)
    assert in_graph(lambda: twin(True, seed=4), seed=1) == in_graph(
        lambda: twin(True, seed=4), seed=1
    )


def test_string_input_producer_empty_dataset_fails_when_iterated():
    empty = tf.data.Dataset.from_tensor_slices(["a"]).filter(lambda x: False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-null input tensor"):
        elements(producers.string_input_producer(empty))
    static_empty = tf.data.Dataset.from_tensor_slices(tf.zeros([0], tf.string))
    if tf.executing_eagerly():  # the length is static: refused when built
        with pytest.raises(ValueError, match="non-null input tensor"):
            producers.string_input_producer(static_empty)
    else:  # in a graph no Dataset length is static: refused when iterated
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-null input tensor"):
            elements(producers.string_input_producer(static_empty))


def test_infinite_dataset_input_is_refused():
    infinite = tf.data.Dataset.range(3).repeat()
    if tf.executing_eagerly():  # the length is static: refused when built
        with pytest.raises(ValueError, match="must be a finite Dataset"):
            producers.input_producer(infinite)
    else:  # in a graph: refused when iterated, never an endless collected epoch
        with pytest.raises(tf.errors.InvalidArgumentError, match="must be a finite Dataset"):
            elements(producers.input_producer(infinite))


# --------------------------------------------------------------------------- errors and warnings

ERRORS = {
    "empty_list": (
        lambda: producers.string_input_producer([]),
        ValueError,
        "requires a non-null input tensor",
    ),
    "none": (lambda: producers.string_input_producer(None), ValueError, "non-null"),
    "empty_array": (
        lambda: producers.string_input_producer(np.array([], dtype=object)),
        ValueError,
        "non-null",
    ),
    "empty_tensor": (
        lambda: producers.string_input_producer(tf.constant([], tf.string)),
        ValueError,
        "non-null",
    ),
    "not_strings": (lambda: producers.string_input_producer([1, 2]), TypeError, "string"),
    "matrix": (
        lambda: producers.string_input_producer([["a"], ["b"]]),
        ValueError,
        "string_tensor",
    ),
    "scalar": (lambda: producers.string_input_producer("abc"), ValueError, "rank at least 1"),
    "dataset_of_ints": (
        lambda: producers.string_input_producer(tf.data.Dataset.range(3)),
        TypeError,
        "string_tensor",
    ),
    "string_epochs_zero": (
        lambda: producers.string_input_producer(["a"], num_epochs=0),
        ValueError,
        "num_epochs",
    ),
    "input_epochs_negative": (
        lambda: producers.input_producer([1], num_epochs=-1),
        ValueError,
        "num_epochs",
    ),
    "range_epochs_zero": (
        lambda: producers.range_input_producer(3, num_epochs=0),
        ValueError,
        "num_epochs",
    ),
    "slice_epochs_zero": (
        lambda: producers.slice_input_producer([[1]], num_epochs=0),
        ValueError,
        "num_epochs",
    ),
    "limit_negative": (
        lambda: producers.limit_epochs(tf.constant(1), -1),
        ValueError,
        "num_epochs",
    ),
    "element_shape_mismatch": (
        lambda: producers.input_producer(tf.zeros([2, 3]), element_shape=[4]),
        ValueError,
        "element_shape",
    ),
    "input_scalar": (
        lambda: producers.input_producer(tf.constant(1.0)),
        ValueError,
        "rank at least 1",
    ),
    "range_not_int": (lambda: producers.range_input_producer(2.5), TypeError, "limit"),
    "slice_empty": (
        lambda: producers.slice_input_producer([]),
        ValueError,
        "Expected at least one tensor",
    ),
    "slice_mismatch": (
        lambda: producers.slice_input_producer([[1, 2, 3], [1, 2]]),
        ValueError,
        "first dimensions",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_name_api_and_argument(case):
    make, error, text = ERRORS[case]
    with pytest.raises(error, match=text) as info:
        make()
    assert "queue_pipeline.data." in str(info.value) or case == "not_strings"


def test_undefined_row_shape_needs_element_shape_in_graph():
    with tf.Graph().as_default():
        rows = tf.compat.v1.placeholder(tf.float32, [None, None])
        with pytest.raises(ValueError, match="fully defined shape"):
            producers.input_producer(rows)
        ds = producers.input_producer(rows, element_shape=[3], shuffle=False)
        assert ds.element_spec.shape.as_list() == [3]


def test_dynamic_empty_tensor_fails_when_iterated():
    """As legacy's run-time Assert (there, in the runner thread)."""
    g = tf.Graph()
    with g.as_default():
        strings = tf.compat.v1.placeholder(tf.string, [None])
        ds = producers.string_input_producer(strings, shuffle=False)
        iterator = tf.compat.v1.data.make_initializable_iterator(ds)
        fetch = iterator.get_next()
    with new_session(g) as sess:
        sess.run(iterator.initializer, {strings: ["a", "b"]})
        assert [sess.run(fetch) for _ in range(3)] == [b"a", b"b", b"a"]
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-null input tensor"):
            sess.run(iterator.initializer, {strings: []})
            sess.run(fetch)


INERT = {
    "string_input_producer": (
        lambda **kw: producers.string_input_producer(["a"], **kw),
        ["shared_name", "name", "cancel_op"],
    ),
    "input_producer": (
        lambda **kw: producers.input_producer([1], **kw),
        ["shared_name", "summary_name", "name", "cancel_op"],
    ),
    "range_input_producer": (
        lambda **kw: producers.range_input_producer(2, **kw),
        ["shared_name", "name"],
    ),
    "slice_input_producer": (
        lambda **kw: producers.slice_input_producer([[1]], **kw),
        ["shared_name", "name"],
    ),
    "limit_epochs": (lambda **kw: producers.limit_epochs(1, **kw), ["name"]),
    "match_filenames_once": (lambda **kw: producers.match_filenames_once("*", **kw), ["name"]),
}


@pytest.mark.parametrize("api", list(INERT))
def test_inert_arguments_warn_and_defaults_do_not(api):
    make, args = INERT[api]
    for arg in args:
        with pytest.warns(UserWarning, match=f"{api}: the `{arg}` argument"):
            make(**{arg: "x"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make()
        if api not in ("limit_epochs", "match_filenames_once"):
            make(capacity=3)  # a buffering knob: accepted silently
