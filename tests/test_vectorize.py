"""_vectorize: every batch rule against the per-record region it replaces.

Each case builds a small legacy-style region (a graph whose per-record ops
read placeholder sources), lifts it with ``_lift.lift``, vectorizes it, and
checks that running the vectorized region on batches of records gives,
bitwise, the per-record region's results batched (``map(region).batch(B)``
vs ``batch(B).map(vectorized)``), with static shapes at least as specific.
Refusals name the op, its type and the reason.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import dataset_values, new_session
from queue_pipeline._rebuild import lift as _lift
from queue_pipeline._engine.vectorize import NotVectorizable, VectorizedRegion, vectorize
from queue_pipeline._engine.vectorize.reorder import onednn_enabled, widen_before_transposes

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "benchmarks"))
import workloads  # noqa: E402  (benchmarks/workloads.py)

N = 24  # records per case
BATCH = 5  # the last batch is partial
RNG = np.random.default_rng(0)
NO_AUTOGRAPH = tf.autograph.experimental.do_not_convert


# -------------------------------------------------------------------- helpers


def region_of(fn, *specs) -> _lift.LiftedRegion:
    """Lifts fn(*sources) from a fresh graph; each spec is (dtype, per-record shape)."""
    with tf.Graph().as_default():
        sources = [
            tf.compat.v1.placeholder(dtype, shape, name=f"source{i}")
            for i, (dtype, shape) in enumerate(specs)
        ]
        outputs = tf.nest.flatten(fn(*sources))
        return _lift.lift(outputs, sources)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype == object:
        return a.tolist() == b.tolist()
    return a.tobytes() == b.tobytes()


def _datasets(region, vectorized, records):
    data = tf.data.Dataset.from_tensor_slices(tuple(records))
    per_record = data.map(NO_AUTOGRAPH(lambda *r: tuple(region(*r)))).batch(BATCH)
    batched = data.batch(BATCH).map(NO_AUTOGRAPH(lambda *r: tuple(vectorized(*r))))
    return per_record, batched


def assert_vectorizes(region, records, *, records_shapes=True, **options) -> VectorizedRegion:
    """Vectorizes `region` and checks it against the per-record region, eagerly.

    The batched static shapes must be at least as specific as the per-record
    ones, which also know the records' static shapes (`records_shapes`), or
    else as the region's sinks.
    """
    vectorized = vectorize(region, **options)
    assert isinstance(vectorized, VectorizedRegion), vectorized.describe()
    per_record, batched = _datasets(region, vectorized, records)
    for sink, want, got in zip(region.sinks, per_record.element_spec, batched.element_spec):
        assert want.dtype == got.dtype
        if not records_shapes:
            want = tf.TensorSpec([None] + sink.shape.as_list(), sink.dtype)
        assert want.shape.is_compatible_with(got.shape)
        assert got.shape.merge_with(want.shape) == got.shape, (want.shape, got.shape)
    wants, gots = dataset_values(per_record), dataset_values(batched)
    assert len(wants) == len(gots)
    for want, got in zip(wants, gots):
        for w, g in zip(want, got):
            w, g = np.asarray(w), np.asarray(g)
            assert _same(w, g), (w, g)
    count = len(gots)
    assert count == -(-len(records[0]) // BATCH)
    return vectorized


def assert_refused(region, op_type: str, reason: str, **options) -> NotVectorizable:
    result = vectorize(region, **options)
    assert isinstance(result, NotVectorizable), result.describe()
    assert result.op_type == op_type, result
    assert reason in result.reason, result.reason
    text = result.describe()
    assert repr(result.op_name) in text and op_type in text and result.reason in text
    return result


def floats(*shape, n=N):
    return RNG.standard_normal((n, *shape)).astype(np.float32) * 4


def ints(*shape, n=N, high=10):
    return RNG.integers(-high, high, size=(n, *shape)).astype(np.int32)


def example(**features) -> bytes:
    feature = {}
    for key, value in features.items():
        # dtype=object: numpy's bytes dtype would drop trailing NUL bytes.
        text = len(value) and isinstance(value[0], (bytes, str))
        value = np.asarray(value, dtype=object if text else None)
        if value.dtype.kind in "iu":
            feature[key] = tf.train.Feature(
                int64_list=tf.train.Int64List(value=value.ravel().tolist())
            )
        elif value.dtype.kind == "f":
            feature[key] = tf.train.Feature(
                float_list=tf.train.FloatList(value=value.ravel().tolist())
            )
        else:
            feature[key] = tf.train.Feature(
                bytes_list=tf.train.BytesList(
                    value=[v if isinstance(v, bytes) else str(v).encode() for v in value.ravel()]
                )
            )
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


F32 = (tf.float32, [])
STR = (tf.string, [])


# ---------------------------------------------------------------- parse rules

DENSE = {
    "i": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
    "f": tf.io.FixedLenFeature([3], tf.float32, default_value=[0.5, 1.5, 2.5]),
    "s": tf.io.FixedLenFeature([], tf.string, default_value="none"),
    "m": tf.io.FixedLenFeature([2, 2], tf.int64, default_value=[[1, 2], [3, 4]]),
    "r": tf.io.FixedLenFeature([], tf.string),
}


def _examples(n=N, *, required_only=False):
    out = []
    for j in range(n):
        features = {"r": f"req{j}"}
        if required_only or j % 3:
            features.update(
                i=[j * 7],
                f=RNG.random(3).astype(np.float32),
                s=[f"s{j}".encode()],
                m=np.arange(4) * j,
            )
        elif j % 2:
            features.update(i=[j])  # the others take their defaults
        out.append(example(**features))
    return np.array(out, dtype=object)


def test_parse_single_example_dense_features_with_defaults():
    region = region_of(lambda s: tf.io.parse_single_example(s, DENSE), STR)
    vectorized = assert_vectorizes(region, [_examples()])
    assert any(
        op_type == "ParseExampleV2" and "batch" in rule for _, op_type, rule in vectorized.rules
    )


def test_parse_single_example_missing_required_feature_raises_in_both():
    region = region_of(lambda s: tf.io.parse_single_example(s, DENSE), STR)
    records = [np.array([example(i=[1]), example(r="x")], dtype=object)]
    per_record, batched = _datasets(region, vectorize(region), records)
    for ds in (per_record, batched):
        with pytest.raises(tf.errors.InvalidArgumentError):
            dataset_values(ds)


def test_parse_single_example_unused_sparse_feature_is_parsed_and_dropped():
    features = {"i": tf.io.FixedLenFeature([], tf.int64), "v": tf.io.VarLenFeature(tf.int64)}
    region = region_of(lambda s: tf.io.parse_single_example(s, features)["i"], STR)
    records = [np.array([example(i=[j], v=np.arange(j % 4)) for j in range(N)], dtype=object)]
    assert_vectorizes(region, records)


def test_parse_single_example_used_sparse_feature_is_refused():
    features = {"v": tf.io.VarLenFeature(tf.int64)}
    region = region_of(
        lambda s: tf.sparse.to_dense(tf.io.parse_single_example(s, features)["v"]), STR
    )
    assert_refused(region, "ParseExampleV2", "sparse or ragged feature 'v'")


def test_parse_single_example_sequence_feature_is_refused():
    features = {"q": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True)}
    region = region_of(lambda s: tf.io.parse_single_example(s, features)["q"], STR)
    assert_refused(region, "ParseExampleV2", "FixedLenSequenceFeature")


def test_raw_parse_single_example_op_becomes_parse_example_v2():
    def parse(s):
        return tf.raw_ops.ParseSingleExample(
            serialized=s,
            dense_defaults=[tf.constant(-1, tf.int64), tf.constant([0.5, 1.5, 2.5])],
            num_sparse=0,
            sparse_keys=[],
            dense_keys=["i", "f"],
            sparse_types=[],
            dense_shapes=[[], [3]],
        ).dense_values

    vectorized = assert_vectorizes(region_of(parse, STR), [_examples()])
    assert "ParseSingleExample" in dict((t, r) for _, t, r in vectorized.rules)


def test_parse_example_of_a_per_record_vector():
    region = region_of(lambda s: tf.io.parse_example(s, DENSE), (tf.string, [3]))
    assert_vectorizes(region, [_examples(N * 3).reshape(N, 3)])


# ------------------------------------------------------------------ decoders


def _csv_lines(n=N):
    lines = []
    for j in range(n):
        cells = [str(j), f"{RNG.standard_normal() * 100:.6g}", f"name{j}", str(j * 3)]
        if j % 4 == 1:
            cells[1] = ""  # default
        if j % 5 == 2:
            cells[2] = '"quoted, text"'
        lines.append(",".join(cells))
    return np.array(lines, dtype=object)


CSV_DEFAULTS = [[0], [np.float32(-1.0)], ["?"], np.array([7], np.int64)]


def test_decode_csv_int_float_string_columns_with_defaults():
    region = region_of(lambda line: tf.io.decode_csv(line, CSV_DEFAULTS), STR)
    assert_vectorizes(region, [_csv_lines()])


def test_decode_csv_select_cols_and_per_record_vectors():
    region = region_of(
        lambda lines: tf.io.decode_csv(lines, [[0], ["?"]], select_cols=[0, 2]), (tf.string, [2])
    )
    assert_vectorizes(region, [_csv_lines(N * 2).reshape(N, 2)])


def test_decode_csv_bad_record_raises_in_both():
    region = region_of(lambda line: tf.io.decode_csv(line, CSV_DEFAULTS), STR)
    records = [np.array(["1,2,a,3", "x,2,a,3"], dtype=object)]
    per_record, batched = _datasets(region, vectorize(region), records)
    for ds in (per_record, batched):
        with pytest.raises(tf.errors.InvalidArgumentError):
            dataset_values(ds)


def _mnist(s):
    parsed = tf.io.parse_single_example(s, workloads.FEATURES)
    image = tf.reshape(tf.io.decode_raw(parsed["image_raw"], tf.uint8), [28, 28, 1])
    return tf.cast(image, tf.float32) * (1.0 / 255) - 0.5, tf.cast(parsed["label"], tf.int32)


def _mnist_records(n=N, size=784):
    return np.array(
        [
            example(
                image_raw=[RNG.integers(0, 256, size, dtype=np.uint8).tobytes()], label=[j % 10]
            )
            for j in range(n)
        ],
        dtype=object,
    )


def test_constant_slices_reshapes_and_paddings_become_constants():
    """NOTE [ Static spec vectors ]: a slice, reshape or pad whose spec is a constant
    gets its batch form as one constant, not computed in every batch (no ConcatV2,
    no Shape of the batch); the values are the per-record region's."""

    def fn(record):
        label = record[0]
        image = tf.reshape(record[1:], [2, 3, 2])
        padded = tf.pad(image, [[1, 0], [0, 1], [0, 0]])
        return tf.cast(label, tf.int32), tf.transpose(padded, [1, 2, 0]), tf.slice(record, [2], [4])

    region = region_of(fn, (tf.float32, [13]))
    vectorized = assert_vectorizes(region, [floats(13)])
    ops = {node.op for node in vectorized.graph_def.node}
    assert {"StridedSlice", "Reshape", "Pad", "Slice"} <= ops
    assert not ops & {"ConcatV2", "Shape"}, sorted(ops)


def test_decode_raw_reshape_cast_scale_mnist_style():
    assert_vectorizes(region_of(_mnist, STR), [_mnist_records()])


def test_decode_raw_with_set_shape_is_checked_at_the_sink():
    def decode(s):  # legacy_examples/mnist_tfrecords.read_and_decode
        parsed = tf.io.parse_single_example(s, workloads.FEATURES)
        image = tf.io.decode_raw(parsed["image_raw"], tf.uint8)
        image.set_shape([784])
        return tf.cast(image, tf.float32) * (1.0 / 255)

    region = region_of(decode, STR)
    assert_vectorizes(region, [_mnist_records()])
    records = [np.concatenate([_mnist_records(3), _mnist_records(2, size=783)])]
    per_record, batched = _datasets(region, vectorize(region), records)
    for ds in (per_record, batched):
        with pytest.raises(tf.errors.InvalidArgumentError):
            dataset_values(ds)


@pytest.mark.parametrize("sizes", [[784] * 4 + [783], [392] * 5], ids=["mixed", "all-short"])
def test_decode_raw_wrong_lengths_raise_in_both(sizes):
    region = region_of(_mnist, STR)
    records = [np.concatenate([_mnist_records(1, size=s) for s in sizes])]
    per_record, batched = _datasets(region, vectorize(region), records)
    for ds in (per_record, batched):
        with pytest.raises(tf.errors.InvalidArgumentError):
            dataset_values(ds)


def test_decode_raw_of_unknown_length_is_refused():
    region = region_of(lambda s: tf.io.decode_raw(s, tf.uint8)[:4], STR)
    assert_refused(region, "DecodeRaw", "byte length")


def test_decode_raw_of_a_fixed_length_source_cifar_style():
    region = region_of(workloads.decode_cifar, STR)
    assert_refused(region, "DecodeRaw", "byte length")
    records = [
        np.array(
            [RNG.integers(0, 256, 3073, dtype=np.uint8).tobytes() for _ in range(N)], dtype=object
        )
    ]
    assert_vectorizes(region, records, fixed_lengths={0: 3073})
    assert_vectorizes(region, records, fixed_lengths={"source0:0": 3073})
    with pytest.raises(ValueError, match="fixed_lengths"):
        vectorize(region, fixed_lengths={"nope:0": 3})


def _cifar_records(n=N):
    return [
        np.array(
            [RNG.integers(0, 256, 3073, dtype=np.uint8).tobytes() for _ in range(n)], dtype=object
        )
    ]


def test_cifar_widening_cast_runs_before_the_transpose_where_onednn_is_on():
    # NOTE [ Widening casts before transposes ]: bitwise the per-record values
    # either way; the graph casts first only where oneDNN transposes floats.
    vectorized = assert_vectorizes(
        region_of(workloads.decode_cifar, STR), _cifar_records(), fixed_lengths={0: 3073}
    )
    ops = {node.name: node for node in vectorized.graph_def.node}
    kinds = sorted(node.op for node in ops.values() if "Transpose" in node.op)
    if onednn_enabled():
        assert kinds == ["ConjugateTranspose"]
        transpose = next(n for n in ops.values() if n.op == "ConjugateTranspose")
        cast = ops[transpose.input[0].partition(":")[0]]
        assert cast.op == "Cast" and ops[cast.input[0].partition(":")[0]].op == "Reshape"
        assert "cast first" in vectorized.describe()
    else:
        assert kinds == ["Transpose"]
        assert "cast first" not in vectorized.describe()


def _cast_of_transpose(dtype, to, *, also=None):
    """A graph reading `x` of `dtype`: ``c = cast(t = transpose(x))`` to `to`, and also(t)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(dtype, [2, 3, 4], name="x")
        moved = tf.transpose(x, [0, 2, 1], name="t")
        out = tf.cast(moved, to, name="c")
        if also:
            also(moved)
    return graph, out


def _run_graph_def(graph_def, feed, fetch):
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        with new_session(graph) as sess:
            return sess.run(fetch, {"x:0": feed})


@pytest.mark.parametrize("dtype", [tf.uint8, tf.int8, tf.bool])
def test_widen_before_transposes_is_bitwise_the_same(dtype):
    graph, out = _cast_of_transpose(dtype, tf.float32)
    graph_def = graph.as_graph_def()
    value = RNG.integers(0, 2 if dtype == tf.bool else 100, (2, 3, 4)).astype(dtype.as_numpy_dtype)
    want = _run_graph_def(graph_def, value, out.name)
    assert widen_before_transposes(graph_def, keep=[out.name], enabled=True) == ["t"]
    ops = {node.name: node.op for node in graph_def.node}
    assert ops["c"] == "ConjugateTranspose" and ops["c/before_transpose"] == "Cast"
    assert "t" not in ops
    got = _run_graph_def(graph_def, value, out.name)
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(dict(to=tf.float64), id="not-float32"),
        pytest.param(dict(dtype=tf.int32), id="wide-source"),
        pytest.param(dict(also=lambda t: tf.identity(t, name="other")), id="read-twice"),
        pytest.param(dict(keep_transpose=True), id="an-output"),
        pytest.param(dict(enabled=False), id="disabled"),
    ],
)
def test_widen_before_transposes_leaves_other_graphs_alone(case):
    graph, out = _cast_of_transpose(
        case.get("dtype", tf.uint8), case.get("to", tf.float32), also=case.get("also")
    )
    graph_def = graph.as_graph_def()
    before = graph_def.SerializeToString()
    keep = [out.name] + (["t:0"] if case.get("keep_transpose") else [])
    assert widen_before_transposes(graph_def, keep, enabled=case.get("enabled", True)) == []
    assert graph_def.SerializeToString() == before


def test_widen_before_transposes_keeps_control_inputs():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.uint8, [2, 3], name="x")
        tf.no_op(name="check")
        tf.cast(tf.transpose(x, name="t"), tf.float32, name="c")
    graph_def = graph.as_graph_def()
    next(node for node in graph_def.node if node.name == "t").input.append("^check")
    assert widen_before_transposes(graph_def, ["c:0"], enabled=True) == ["t"]
    cast = next(node for node in graph_def.node if node.name == "c/before_transpose")
    assert any(ref.startswith("^check") for ref in cast.input)


def test_decode_raw_wider_types():
    region = region_of(
        lambda s: tf.reshape(tf.io.decode_raw(s, tf.int16, little_endian=False) + 1, [3]), STR
    )
    assert_vectorizes(region, [np.array([RNG.bytes(6) for _ in range(N)], dtype=object)])


# --------------------------------------------------------------- element-wise


@pytest.mark.parametrize(
    "fn",
    [
        tf.negative,
        tf.abs,
        lambda x: tf.sqrt(tf.abs(x)),
        tf.floor,
        tf.math.ceil,
        tf.round,
        tf.math.rint,
        tf.sign,
        tf.square,
        tf.math.is_nan,
        lambda x: tf.cast(x, tf.int32),
        lambda x: tf.cast(x, tf.float16),
        lambda x: tf.cast(x, tf.bfloat16),
        lambda x: tf.cast(x, tf.float64),
        tf.identity,
        tf.stop_gradient,
        tf.zeros_like,
        tf.ones_like,
    ],
    ids=[
        "neg",
        "abs",
        "sqrt",
        "floor",
        "ceil",
        "round",
        "rint",
        "sign",
        "square",
        "isnan",
        "cast_i32",
        "cast_f16",
        "cast_bf16",
        "cast_f64",
        "identity",
        "stop_gradient",
        "zeros_like",
        "ones_like",
    ],
)
def test_unary_float_ops_are_exact(fn):
    x = floats(7)
    x[::5, 3] = np.nan
    x[1::7, 2] = np.inf
    assert_vectorizes(region_of(NO_AUTOGRAPH(fn), (tf.float32, [7])), [x])


@pytest.mark.parametrize(
    "fn",
    [
        tf.exp,
        lambda x: tf.math.log(tf.abs(x)),
        tf.sigmoid,
        lambda x: tf.pow(x, 1.5),
        tf.math.reciprocal,
    ],
    ids=["exp", "log", "sigmoid", "pow", "reciprocal"],
)
def test_transcendental_float_ops_only_when_inexact_is_allowed(fn):
    region = region_of(NO_AUTOGRAPH(fn), (tf.float32, [7]))
    result = vectorize(region)
    assert isinstance(result, NotVectorizable) and "round differently" in result.reason
    vectorized = vectorize(region, exact=False)
    x = np.abs(floats(7))
    per_record, batched = _datasets(region, vectorized, [x])
    for (want,), (got,) in zip(dataset_values(per_record), dataset_values(batched)):
        np.testing.assert_allclose(want, got, rtol=1e-6)


@pytest.mark.parametrize(
    "case",
    [
        (
            "add chain",
            lambda x: (x + tf.constant([1.1, 2.3, 3.7, 4.9])) + 0.3,
            "AddV2",
            "chain of float additions",
        ),
        ("sub after add", lambda x: (x + 1.5) - 0.25, "Sub", "chain of float additions"),
        ("mul chain", lambda x: (x / 1.1) * 2.3, "Mul", "multiplications or divisions"),
        ("sum of products", lambda x: x * 1.3 + x * 0.7, "AddV2", "sum of products"),
        ("divide by sqrt", lambda x: x / tf.sqrt(tf.abs(x) + 1), "RealDiv", "square root"),
        ("add zero", lambda x: x + tf.zeros([4]), "AddV2", "constant zero"),
        ("add_n", lambda x: tf.math.add_n([x, x, tf.ones([4])]), "AddN", "AddN"),
    ],
    ids=lambda c: c[0],
)
def test_float_arithmetic_grappler_may_regroup_is_refused(case):
    _, fn, op_type, reason = case
    region = region_of(NO_AUTOGRAPH(fn), (tf.float32, [4]))
    assert_refused(region, op_type, reason)
    assert isinstance(vectorize(region, exact=False), VectorizedRegion)


def test_alternating_float_arithmetic_is_exact():
    def fn(x):
        return (
            x * (1 / 255) - 0.5,
            (x - 3.25) / 1.7,
            x * 1.7 + 0.5,
            (x - tf.constant([0.5, 1, 2, 4])) / tf.constant([1.5, 3, 7, 9]),
        )

    assert_vectorizes(region_of(fn, (tf.float32, [4])), [floats(4)])


def test_integer_arithmetic_in_any_grouping():
    def fn(x):
        return (x + 3) + tf.constant([1, 2, 3, 4]), x * 3 * x, tf.math.add_n([x, x, x])

    assert_vectorizes(region_of(fn, (tf.int32, [4])), [ints(4)])


def test_integer_pow_is_exact():
    assert_vectorizes(region_of(lambda x: tf.pow(x, 3), (tf.int32, [4])), [ints(4)])


@pytest.mark.parametrize(
    "case",
    [
        ("batched[3] + scalar", lambda x: x + 2.5, [3]),
        ("batched[3] * const[3]", lambda x: x * tf.constant([1.0, -2.0, 0.5]), [3]),
        ("batched[] + const[4] (rank expanded)", lambda x: x - tf.constant([1.0, 2, 3, 4]), []),
        ("batched[2,3] / const[3]", lambda x: x / tf.constant([1.0, 3.0, 7.0]), [2, 3]),
        ("const[2,1] max batched[3]", lambda x: tf.maximum(tf.constant([[0.0], [1.0]]), x), [3]),
        ("floormod", lambda x: tf.math.floormod(x, 3.0), [4]),
        ("floordiv", lambda x: tf.math.floordiv(x, 0.7), [4]),
        ("squared difference", lambda x: tf.math.squared_difference(x, 1.25), [4]),
        ("less", lambda x: tf.less(x, 0.0), [4]),
        ("equal", lambda x: tf.equal(tf.round(x), 1.0), [4]),
        ("logical and/or", lambda x: tf.logical_or(tf.logical_and(x > 0, x < 2), x < -3), [4]),
        ("minimum clip", lambda x: tf.clip_by_value(x, -1.0, 1.0), [4]),
        ("select_v2", lambda x: tf.where(x > 0, x, tf.constant([0.0, 1, 2, 3])), [4]),
    ],
    ids=lambda c: c[0],
)
def test_binary_broadcasting(case):
    _, fn, shape = case
    assert_vectorizes(region_of(NO_AUTOGRAPH(fn), (tf.float32, shape)), [floats(*shape)])


def test_two_batched_operands_of_different_ranks():
    region = region_of(
        lambda a, b: (a * b, tf.where(a > 0, b, a)), (tf.float32, [2, 3]), (tf.float32, [3])
    )
    assert_vectorizes(region, [floats(2, 3), floats(3)])


def test_select_v1_and_integer_ops():
    def fn(x, c):
        return (
            tf.raw_ops.Select(condition=c, x=x, y=-x),
            tf.bitwise.bitwise_and(x, 6),
            x // 3,
            x % 4,
            tf.truncatediv(x, 3),
        )

    region = region_of(fn, (tf.int32, [3]), (tf.bool, []))
    assert_vectorizes(region, [ints(3), RNG.random(N) > 0.5])


# ------------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    "case",
    [
        ("reshape", lambda x: tf.reshape(x, [3, 4]), [12]),
        ("reshape -1", lambda x: tf.reshape(x, [-1, 2]), [2, 6]),
        ("reshape to scalar", lambda x: tf.reshape(x, []), [1, 1]),
        ("reshape by shape", lambda x: tf.reshape(x, tf.concat([[4], tf.shape(x)[:1]], 0)), [3, 4]),
        ("strided slice", lambda x: x[1:5:2], [12]),
        ("strided slice negative stride", lambda x: x[::-2, 1], [6, 2]),
        ("strided slice shrink", lambda x: x[3], [12]),
        ("strided slice ellipsis newaxis", lambda x: x[..., tf.newaxis, 1:], [2, 3, 4]),
        ("strided slice begin/end masks", lambda x: x[:, 2:], [3, 4]),
        ("slice", lambda x: tf.slice(x, [1, 0], [2, -1]), [3, 4]),
        ("transpose", lambda x: tf.transpose(x, [2, 0, 1]), [2, 3, 4]),
        ("expand dims", lambda x: tf.expand_dims(x, 1), [3, 4]),
        ("expand dims negative", lambda x: tf.expand_dims(x, -1), [3, 4]),
        ("squeeze axes", lambda x: tf.squeeze(x, [0, -1]), [1, 3, 1]),
        ("squeeze all", lambda x: tf.squeeze(x), [1, 3, 1]),
        ("stack with a constant", lambda x: tf.stack([x, tf.ones([3], tf.int32)], axis=1), [3]),
        ("stack negative axis", lambda x: tf.stack([x, x], axis=-1), [3]),
        ("unstack", lambda x: tf.unstack(x, axis=1), [2, 3]),
        (
            "concat with a constant",
            lambda x: tf.concat([x, tf.zeros([2, 1], tf.int32)], -1),
            [2, 3],
        ),
        ("split", lambda x: tf.split(x, 2, axis=1), [2, 4]),
        ("split v", lambda x: tf.split(x, [1, 3], axis=0), [4, 2]),
        ("tile", lambda x: tf.tile(x, [2, 3]), [2, 2]),
        ("pad", lambda x: tf.pad(x, [[1, 0], [0, 2]], constant_values=9), [2, 2]),
        ("mirror pad", lambda x: tf.pad(x, [[1, 1], [1, 1]], mode="REFLECT"), [3, 3]),
        ("reverse", lambda x: tf.reverse(x, [0, -1]), [2, 3]),
        ("flip image", lambda x: tf.image.flip_left_right(x), [4, 5, 3]),
        ("crop or pad image", lambda x: tf.image.resize_with_crop_or_pad(x, 3, 6), [4, 5, 3]),
        ("shape, size, rank", lambda x: (tf.shape(x), tf.size(x), tf.rank(x)), [2, 3]),
        ("ensure shape", lambda x: tf.ensure_shape(tf.reshape(x, [-1]), [6]), [2, 3]),
    ],
    ids=lambda c: c[0],
)
def test_shape_ops(case):
    _, fn, shape = case
    assert_vectorizes(region_of(NO_AUTOGRAPH(fn), (tf.int32, shape)), [ints(*shape)])


def test_unknown_per_record_sizes():
    def fn(x):
        return (tf.reshape(x * 2, [-1, 2]), tf.shape(x), tf.size(x) + x[0], tf.reverse(x, [0])[1:])

    region = region_of(fn, (tf.int32, [None]))
    assert_vectorizes(region, [ints(6)], records_shapes=False)


@pytest.mark.parametrize(
    "case",
    [
        ("sum", lambda x: tf.reduce_sum(x, axis=1), [3, 4]),
        ("prod keepdims", lambda x: tf.reduce_prod(x, axis=-1, keepdims=True), [3, 4]),
        ("max all", lambda x: tf.reduce_max(x), [3, 4]),
        ("mean", lambda x: tf.reduce_mean(x, axis=0), [3, 4]),
        ("all/any", lambda x: (tf.reduce_all(x > 0, 1), tf.reduce_any(x > 5)), [3, 4]),
    ],
    ids=lambda c: c[0],
)
def test_integer_and_boolean_reductions(case):
    _, fn, shape = case
    assert_vectorizes(region_of(NO_AUTOGRAPH(fn), (tf.int32, shape)), [ints(*shape)])


def test_float_reductions_are_refused():
    region = region_of(lambda x: tf.reduce_sum(x, 0), (tf.float32, [4]))
    assert_refused(region, "Sum", "floating-point reduction Sum")
    region = region_of(tf.image.per_image_standardization, (tf.float32, [4, 4, 3]))
    assert isinstance(vectorize(region), NotVectorizable)


@pytest.mark.parametrize(
    "case",
    [
        (
            "constant table, batched indices",
            lambda i: tf.gather(tf.constant(np.arange(40.0).reshape(10, 4)), i),
            (tf.int32, [3]),
        ),
        (
            "constant table, scalar index",
            lambda i: tf.gather(tf.constant(["a", "b", "c", "d"]), tf.abs(i) % 4),
            (tf.int32, []),
        ),
        ("one hot", lambda i: tf.one_hot(tf.abs(i) % 5, 5), (tf.int32, [2])),
        ("one hot axis 0", lambda i: tf.one_hot(tf.abs(i) % 5, 5, axis=0), (tf.int32, [2])),
    ],
    ids=lambda c: c[0],
)
def test_gather_and_one_hot(case):
    _, fn, spec = case
    indices = np.abs(ints(*spec[1])) % 10
    assert_vectorizes(region_of(NO_AUTOGRAPH(fn), spec), [indices])


def test_gather_from_batched_params():
    def fn(x, i):
        return (
            tf.gather(x, [2, 0], axis=1),
            tf.gather(x, i, axis=1, batch_dims=1),
            tf.gather(x, i[0], axis=0),
        )

    region = region_of(fn, (tf.float32, [2, 3]), (tf.int32, [2, 2]))
    assert_vectorizes(region, [floats(2, 3), np.abs(ints(2, 2)) % 2])


def test_gather_on_another_axis_of_a_constant_table_is_refused():
    region = region_of(
        lambda i: tf.gather(tf.constant(np.arange(12).reshape(3, 4)), i, axis=1), (tf.int32, [2])
    )
    assert_refused(region, "GatherV2", "batch axis inside")


# ------------------------------------------------------------------ strings


def test_string_ops():
    def fn(s, n):
        upper = tf.strings.upper(tf.strings.strip(s))
        joined = tf.strings.join([upper, "-", tf.strings.as_string(n)])
        return (
            joined,
            tf.strings.lower(s),
            tf.strings.length(s),
            tf.strings.substr(s, 1, 3),
            tf.strings.regex_replace(s, "[aeiou]", "_"),
            tf.strings.to_number(tf.strings.as_string(n), tf.int64),
            tf.strings.to_hash_bucket_fast(s, 100),
            tf.io.decode_base64(tf.io.encode_base64(s)),
        )

    words = np.array([f"  Word{j} text " for j in range(N)], dtype=object)
    assert_vectorizes(region_of(fn, STR, (tf.int32, [])), [words, ints()])


# ----------------------------------------------------------- sinks, asserts


def test_source_and_constant_sinks():
    region = region_of(lambda x: (x, tf.constant([1, 2]), x + 1), (tf.int32, [2]))
    vectorized = assert_vectorizes(region, [ints(2)])
    assert vectorized.batched == (True, False, True)


def test_variable_read_once_is_an_unbatched_input():
    graph = tf.Graph()
    with graph.as_default():
        table = tf.compat.v1.Variable(np.arange(40).reshape(10, 4), trainable=False)
        index = tf.compat.v1.placeholder(tf.int32, [], name="index")
        scale = tf.compat.v1.Variable(3, trainable=False)
        outputs = [
            tf.gather(table.read_value(), index) * tf.cast(scale, tf.int64),
            tf.identity(scale),
        ]
        with new_session(graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            region = _lift.lift(outputs, [index], session=sess)
    assert region.constants
    vectorized = assert_vectorizes(region, [np.arange(N, dtype=np.int32) % 10])
    assert vectorized.batched == (True, False)


def test_assert_on_each_record():
    region = region_of(_asserted, (tf.int32, [3]))
    vectorized = assert_vectorizes(region, [np.abs(ints(3))])
    assert any(t == "Assert" for _, t, _ in vectorized.rules)
    per_record, batched = _datasets(region, vectorized, [ints(3)])
    for ds in (per_record, batched):
        with pytest.raises(tf.errors.InvalidArgumentError):
            dataset_values(ds)


def _asserted(x):
    with tf.control_dependencies([tf.debugging.Assert(tf.reduce_all(x >= 0), [x])]):
        return x * 2


# ----------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "case",
    [
        ("random crop", lambda x: tf.image.random_crop(x, [2, 2, 3]), "RandomUniform"),
        ("random flip", lambda x: tf.image.random_flip_left_right(x, seed=1), "RandomUniform"),
        ("random uniform", lambda x: x + tf.random.uniform([]), "RandomUniform"),
        (
            "stateless random seeded per record",
            lambda x: x + tf.random.stateless_uniform([], tf.cast(x[0, 0, :2], tf.int32)),
            "StatelessRandom",
        ),
    ],
    ids=lambda c: c[0],
)
def test_per_example_random_ops_are_refused(case):
    _, fn, op_type = case
    region = region_of(NO_AUTOGRAPH(fn), (tf.float32, [4, 4, 3]))
    result = vectorize(region)
    assert isinstance(result, NotVectorizable)
    assert "random" in result.reason and result.op_type.startswith(op_type), result


def test_stateless_random_op_with_constant_seeds_is_the_same_for_every_record():
    region = region_of(lambda x: x * tf.random.stateless_uniform([3], [1, 2]), (tf.float32, [3]))
    assert_vectorizes(region, [floats(3)])


def test_op_without_a_rule_is_refused_by_type():
    region = region_of(lambda x: tf.matmul(x, tf.ones([3, 2])), (tf.float32, [2, 3]))
    result = assert_refused(region, "MatMul", "no batch rule")
    assert "MatMul" in result.describe() and "runs per record" in result.describe()


def test_py_func_is_refused_by_lift():
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [], name="x")
        y = tf.compat.v1.py_func(lambda v: v, [x], tf.float32)
        with pytest.raises(qp.errors.NotRebuildableError, match="PyFunc"):
            _lift.lift([y], [x])


def test_region_without_sources_is_refused():
    region = region_of(lambda: tf.constant(1))
    assert "no source" in vectorize(region).describe()


def test_wrong_arguments():
    vectorized = vectorize(region_of(lambda x: x + 1, (tf.int32, [2])))

    @tf.function
    def call(*args):
        return vectorized(*args)

    with pytest.raises(TypeError, match="expected 1 argument"):
        call(tf.zeros([2, 2], tf.int32), tf.zeros([2], tf.int32))
    with pytest.raises(ValueError, match="must have shape"):
        call(tf.zeros([2, 3], tf.int32))


# ---------------------------------------- workloads, legacy graphs, graph mode


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    sizes = workloads.Sizes(
        csv_files=2, csv_lines=20, tfrecords=30, cifar_files=1, cifar_records=12, preloaded=20
    )
    return workloads.write_data(str(tmp_path_factory.mktemp("vectorize")), sizes)


def _legacy_region(workload, files):
    """The region of the queue_pipeline legacy program, lifted from its reader."""
    with tf.Graph().as_default():
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        if workload == "W1":
            _, value = qp.TextLineReader().read(queue)
            example_ = workloads.decode_csv(value)
        elif workload == "W2":
            _, value = qp.TFRecordReader().read(queue)
            example_ = workloads.decode_example(value)
        else:
            _, value = qp.FixedLengthRecordReader(3073).read(queue)
            example_ = workloads.decode_cifar(value)
        return _lift.lift(list(example_), [value])


@pytest.mark.parametrize("workload", ["W1", "W2", "W3"])
def test_workload_regions_from_legacy_graphs(workload, data):
    region = _legacy_region(workload, data[workload])
    records = [
        np.array(dataset_values(workloads.raw_dataset(workload, data[workload])), dtype=object)
    ]
    fixed = {0: 3073} if workload == "W3" else None
    assert_vectorizes(region, records, fixed_lengths=fixed)


def test_w4_slice_input_producer_region(data):
    images, labels = data["W4"]
    with tf.Graph().as_default():
        image, label = qp.slice_input_producer(
            [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
        )
        region = _lift.lift([image, tf.cast(label, tf.int32)], [image, label])
    assert_vectorizes(region, [images, labels])


def test_in_a_users_graph_dataset_map_and_session():
    region = region_of(_mnist, STR)
    vectorized = vectorize(region)
    records = _mnist_records(12)
    graph = tf.Graph()
    with graph.as_default():
        data = tf.data.Dataset.from_tensor_slices(records)
        per_record = data.map(NO_AUTOGRAPH(lambda r: tuple(region(r)))).batch(BATCH)
        batched = data.batch(BATCH).map(NO_AUTOGRAPH(lambda r: tuple(vectorized(r))))
        fetches = [
            tf.compat.v1.data.make_one_shot_iterator(ds).get_next() for ds in (per_record, batched)
        ]
        direct = vectorized(tf.constant(records))  # straight in the graph, no Dataset
        assert direct[0].shape.as_list() == [12, 28, 28, 1]
    with new_session(graph) as sess:
        for _ in range(3):
            want, got = sess.run(fetches)
            for w, g in zip(want, got):
                assert _same(w, g)
        image, label = sess.run(direct)
    assert image.shape == (12, 28, 28, 1) and label.shape == (12,)


def test_static_batch_size_is_kept():
    vectorized = vectorize(region_of(_mnist, STR))
    data = tf.data.Dataset.from_tensor_slices(_mnist_records(10)).batch(BATCH, drop_remainder=True)
    spec = data.map(NO_AUTOGRAPH(lambda r: tuple(vectorized(r)))).element_spec
    assert [s.shape.as_list() for s in spec] == [[BATCH, 28, 28, 1], [BATCH]]


def test_describe_lists_each_op_and_its_rule():
    text = vectorize(region_of(_mnist, STR)).describe()
    assert "ParseExampleV2" in text and "DecodeRaw" in text and "reshape to [B]" in text


def test_a_tf1_while_loop_in_the_region_is_refused_not_walked_forever():
    """``tf.map_fn`` in TF1 mode builds a v1 while loop, whose back edge
    (NextIteration -> Merge) is a cycle of the GraphDef: the vectorizer's walk
    terminates and refuses the loop's ops (it used to loop forever)."""
    was_v2 = tf.compat.v1.control_flow_v2_enabled()  # False in the --tf1 suite
    with tf.Graph().as_default():
        tf.compat.v1.disable_control_flow_v2()
        try:
            record = tf.compat.v1.placeholder(tf.float32, [4], name="source0")
            doubled = tf.map_fn(lambda e: e * 2.0, record)
            region = _lift.lift([doubled], [record])
        finally:
            if was_v2:
                tf.compat.v1.enable_control_flow_v2()
    assert any(node.op == "NextIteration" for node in region.graph_def.node)
    assert isinstance(vectorize(region), NotVectorizable)
