"""_vectorize of per-record random augmentation: draws per batch, crops, flips, contrast.

NOTE [ Vectorizing a region ] (``_engine/vectorize/api.py``): an unseeded
random draw becomes one draw of ``[B] + shape`` (``random_draws=True``), so
its values are distributed as per record, not equal to any per-record run;
everything else stays bitwise. Checked here: the rules random augmentation
needs (a slice at per-record offsets, a conditional lowered to a select,
contrast with a factor per record, a per-record scalar broadcast over an
image) bitwise against the per-record region, with values from the records
instead of draws; the draws' distributions with fixed bounds (flip
frequency, crop offsets, brightness deltas, contrast factors, independence);
and the augmentation workload (W7) vectorized on the dataset engine, with
the epoch of TF's own queues (a seeded one, W8: ``test_vectorize_keyed.py``).
Both TF modes (``--tf1``).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import tensorflow as tf
from helpers import dataset_values, new_session, running
from test_vectorize import BATCH, NO_AUTOGRAPH, assert_refused, assert_vectorizes, region_of

from queue_pipeline._engine.vectorize import NotVectorizable, VectorizedRegion, vectorize

v1 = tf.compat.v1
RNG = np.random.default_rng(46)
N = 24
DRAWS = 4000  # records per distribution check
Z = 5.0  # bound, in standard deviations, of every statistical check


def _batched(region, records, *, size=DRAWS):
    """The region vectorized with draws, run on `records` in batches of `size`."""
    vectorized = vectorize(region, random_draws=True)
    assert isinstance(vectorized, VectorizedRegion), vectorized.describe()
    data = tf.data.Dataset.from_tensor_slices(tuple(records)).batch(size)
    data = data.map(NO_AUTOGRAPH(lambda *r: tuple(vectorized(*r))))
    batches = dataset_values(data)
    return [np.concatenate([b[k] for b in batches]) for k in range(len(batches[0]))]


def _uniform_counts_ok(values: np.ndarray, low: float, high: float, bins: int = 10) -> None:
    """Each of `bins` equal bins of [low, high] within Z sigma of its expected count."""
    counts, _ = np.histogram(values, bins=bins, range=(low, high))
    assert counts.sum() == values.size, "values outside the range"
    expected = values.size / bins
    sigma = np.sqrt(expected * (1 - 1 / bins))
    assert np.all(np.abs(counts - expected) < Z * sigma), counts


# ------------------------------------------------------------ exact rules


def _offsets(n, limits):
    return np.stack([RNG.integers(0, limit + 1, n) for limit in limits], 1).astype(np.int32)


@pytest.mark.parametrize(
    "case",
    [
        ((7, 6, 3), (5, 3, 3), tf.uint8),  # an inner axis of few offsets: stacked windows
        ((4, 40, 2), (2, 10, 2), tf.float32),  # 31 offsets: gathered columns
        ((9, 5), (4, 5), tf.int64),  # one axis cut
    ],
    ids=["windows", "gathered columns", "rows only"],
)
def test_slice_at_per_record_offsets_is_a_bitwise_gather(case):
    shape, size, dtype = case
    x = (RNG.standard_normal((N, *shape)) * 100).astype(dtype.as_numpy_dtype)
    offsets = _offsets(N, [d - s for d, s in zip(shape, size)])
    region = region_of(lambda x, o: tf.slice(x, o, size), (dtype, shape), (tf.int32, [len(shape)]))
    vectorized = assert_vectorizes(region, [x, offsets])
    cut = [d + 1 for d, (full, s) in enumerate(zip(shape, size)) if s < full]
    assert f"gather at per-record offsets on axes {cut}" in vectorized.describe()


@pytest.mark.parametrize(
    "offset", [[3, 0, 0], [-1, 0, 0], [0, 0, 1]], ids=["past the end", "negative", "kept axis"]
)
def test_slice_at_bad_offsets_raises_in_both(offset):
    x = RNG.integers(0, 256, (N, 7, 6, 3)).astype(np.uint8)
    offsets = _offsets(N, [2, 3, 0])
    offsets[N // 2] = offset
    region = region_of(
        lambda x, o: tf.slice(x, o, [5, 3, 3]), (tf.uint8, [7, 6, 3]), (tf.int32, [3])
    )
    vectorized = vectorize(region)
    data = tf.data.Dataset.from_tensor_slices((x, offsets))
    for ds in (
        data.map(NO_AUTOGRAPH(lambda *r: tuple(region(*r)))).batch(BATCH),
        data.batch(BATCH).map(NO_AUTOGRAPH(lambda *r: tuple(vectorized(*r)))),
    ):
        with pytest.raises(tf.errors.InvalidArgumentError):
            dataset_values(ds)


def test_slice_at_per_record_offsets_of_size_minus_one_is_refused():
    region = region_of(lambda x, o: tf.slice(x, o, [-1, 2]), (tf.int32, [4, 4]), (tf.int32, [2]))
    assert_refused(region, "Slice", "is -1")


def test_contrast_with_a_factor_per_record_is_bitwise_the_kernel():
    images = (RNG.random((N, 9, 7, 3)) * 255 + RNG.uniform(-63, 63, (N, 1, 1, 1))).astype(
        np.float32
    )
    images[::3] = np.round(images[::3])
    factors = RNG.uniform(0.2, 1.8, N).astype(np.float32)
    factors[:3] = [0.0, 1.0, -0.5]
    region = region_of(tf.image.adjust_contrast, (tf.float32, [9, 7, 3]), (tf.float32, []))
    vectorized = assert_vectorizes(region, [images, factors])
    assert "means from the kernel" in vectorized.describe()


def test_contrast_with_one_factor_is_the_kernel_on_the_batch():
    images = (RNG.random((N, 5, 4, 3)) * 255).astype(np.float32)
    region = region_of(lambda x: tf.image.adjust_contrast(x, 1.7), (tf.float32, [5, 4, 3]))
    assert_vectorizes(region, [images])


def test_hue_with_a_factor_per_record_is_refused():
    region = region_of(tf.image.adjust_hue, (tf.float32, [4, 4, 3]), (tf.float32, []))
    assert_refused(region, "AdjustHue", "no batch rule")


def test_brightness_per_record_scalar_broadcasts_over_the_image():
    images = (RNG.random((N, 5, 4, 3)) * 255).astype(np.float32)
    deltas = RNG.uniform(-63, 63, N).astype(np.float32)
    region = region_of(
        lambda x, d: (x + d, x * d, tf.image.adjust_brightness(x, d)),
        (tf.float32, [5, 4, 3]),
        (tf.float32, []),
    )
    assert_vectorizes(region, [images, deltas])


def _flip_if(x, p):
    return tf.cond(p, lambda: tf.reverse(x, [1]), lambda: x)


def test_conditional_on_a_per_record_predicate_is_a_bitwise_select():
    x = RNG.integers(-9, 9, (N, 4, 5, 3)).astype(np.int32)
    flags = RNG.random(N) < 0.5

    def fn(x, p):
        flipped = _flip_if(x, p)
        pair = tf.cond(tf.reduce_max(x) > 5, lambda: (x * 2, -x), lambda: (x - 1, x * 3))
        return flipped, pair

    region = region_of(NO_AUTOGRAPH(fn), (tf.int32, [4, 5, 3]), (tf.bool, []))
    vectorized = assert_vectorizes(region, [x, flags])
    assert "SelectV2" in vectorized.describe()


def test_conditional_with_a_branch_that_may_raise_is_refused():
    def fn(x, p):
        return tf.cond(p, lambda: x[1:3], lambda: x[:2])  # StridedSlice: not safe

    region = region_of(NO_AUTOGRAPH(fn), (tf.int32, [4]), (tf.bool, []))
    result = vectorize(region)
    assert isinstance(result, NotVectorizable)
    assert result.op_type in ("If", "StatelessIf", "Switch", "Merge"), result
    assert "random" not in result.reason, result


def test_conditional_whose_branches_differ_in_shape_is_refused():
    def fn(x, p):
        return tf.cond(p, lambda: tf.transpose(x), lambda: x)

    region = region_of(NO_AUTOGRAPH(fn), (tf.int32, [2, 3]), (tf.bool, []))
    result = vectorize(region)
    assert isinstance(result, NotVectorizable)
    assert result.op_type in ("If", "StatelessIf", "Switch", "Merge"), result


def test_conditional_whose_branches_broadcast_to_another_shape_is_refused():
    def fn(x, p):
        return tf.cond(p, lambda: x * 2, lambda: x + tf.ones([2, 3], tf.int32))

    region = region_of(NO_AUTOGRAPH(fn), (tf.int32, [3]), (tf.bool, []))
    result = vectorize(region)
    assert isinstance(result, NotVectorizable)
    assert result.op_type in ("If", "StatelessIf", "Merge"), result
    assert "branches differ" in result.reason, result


def test_seeded_draws_and_draws_in_a_seeded_pipeline_are_refused():
    seeded = region_of(
        NO_AUTOGRAPH(lambda x: tf.image.random_flip_left_right(x, seed=1)), (tf.float32, [4, 4, 3])
    )
    assert "random" in vectorize(seeded, random_draws=True).reason
    unseeded = region_of(lambda x: x + tf.random.uniform([]), (tf.float32, [3]))
    assert "random" in vectorize(unseeded).reason  # random_draws=False: the engine's seeded case
    assert isinstance(vectorize(unseeded, random_draws=True), VectorizedRegion)


def test_a_draw_whose_shape_depends_on_the_record_is_refused():
    region = region_of(
        lambda x: tf.random.uniform(tf.shape(tf.boolean_mask(x, x > 0))), (tf.float32, [3])
    )
    assert isinstance(vectorize(region, random_draws=True), NotVectorizable)


# ------------------------------------------------------------- distributions


def test_flip_frequency_is_one_half():
    images = np.tile(np.arange(4, dtype=np.float32)[None, None, :, None], (DRAWS, 1, 1, 1))
    region = region_of(NO_AUTOGRAPH(tf.image.random_flip_left_right), (tf.float32, [1, 4, 1]))
    (out,) = _batched(region, [images])
    flipped = out[:, 0, 0, 0] == 3
    assert np.all(flipped | (out[:, 0, 0, 0] == 0))
    np.testing.assert_array_equal(out[flipped], images[flipped][:, :, ::-1])
    assert abs(flipped.mean() - 0.5) < Z * np.sqrt(0.25 / DRAWS)


def test_crop_offsets_are_uniform_over_the_valid_range():
    rows, cols, size = 7, 6, 4
    image = (np.arange(rows)[:, None] * 100 + np.arange(cols)[None, :]).astype(np.int32)
    images = np.tile(image[None, :, :, None], (DRAWS, 1, 1, 1))
    region = region_of(
        NO_AUTOGRAPH(lambda x: tf.image.random_crop(x, [size, size, 1])),
        (tf.int32, [rows, cols, 1]),
    )
    (out,) = _batched(region, [images])
    top, left = out[:, 0, 0, 0] // 100, out[:, 0, 0, 0] % 100
    for i in range(DRAWS)[:50]:
        np.testing.assert_array_equal(
            out[i, :, :, 0], image[top[i] : top[i] + size, left[i] : left[i] + size]
        )
    cells = top * (cols - size + 1) + left
    _uniform_counts_ok(
        cells, 0, (rows - size + 1) * (cols - size + 1), bins=(rows - size + 1) * (cols - size + 1)
    )
    assert abs(np.corrcoef(top, left)[0, 1]) < Z / np.sqrt(DRAWS)


def test_brightness_deltas_are_uniform_and_independent():
    delta = 63.0
    region = region_of(
        NO_AUTOGRAPH(lambda x: tf.image.random_brightness(x, delta)), (tf.float32, [2, 2, 3])
    )
    (out,) = _batched(region, [np.zeros((DRAWS, 2, 2, 3), np.float32)], size=500)
    per_record = out.reshape(DRAWS, -1)
    assert np.all(per_record == per_record[:, :1])  # one delta per record
    deltas = per_record[:, 0]
    assert deltas.min() >= -delta and deltas.max() <= delta
    _uniform_counts_ok(deltas, -delta, delta)
    assert abs(np.corrcoef(deltas[:-1], deltas[1:])[0, 1]) < Z / np.sqrt(DRAWS)


def test_contrast_factors_are_uniform_in_their_range():
    lower, upper = 0.2, 1.8
    image = np.array([0.0, 2.0] * 6, np.float32).reshape(2, 2, 3)  # per-channel mean 1
    region = region_of(
        NO_AUTOGRAPH(lambda x: tf.image.random_contrast(x, lower, upper)), (tf.float32, [2, 2, 3])
    )
    (out,) = _batched(region, [np.tile(image[None], (DRAWS, 1, 1, 1))], size=700)
    deviation = out - 1.0
    factors = deviation.reshape(DRAWS, -1) / (image - 1.0).reshape(1, -1)
    assert np.allclose(factors, factors[:, :1], atol=1e-6)  # one factor per record
    factors = factors[:, 0]
    assert factors.min() >= lower - 1e-6 and factors.max() <= upper + 1e-6
    _uniform_counts_ok(np.clip(factors, lower, upper), lower, upper)


def test_normal_draws_have_unit_moments_per_record():
    region = region_of(lambda x: x + tf.random.normal([2]), (tf.float32, [2]))
    (out,) = _batched(region, [np.zeros((DRAWS, 2), np.float32)])
    assert abs(out.mean()) < Z / np.sqrt(2 * DRAWS)
    assert abs(out.var() - 1) < Z * np.sqrt(2 / (2 * DRAWS))
    assert abs(np.corrcoef(out[:, 0], out[:, 1])[0, 1]) < Z / np.sqrt(DRAWS)


# ---------------------------------------------------------- the dataset engine

SIDE, CROP, RECORDS, AUG_BATCH = 12, 10, 192, 16


@pytest.fixture(scope="module")
def image_records(tmp_path_factory):
    """192 TFRecords of 12x12x3 uint8 images, the channels around 50, 128 and 200."""
    path = tmp_path_factory.mktemp("augment") / "images.tfrecord"
    rng = np.random.default_rng(7)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(RECORDS):
            image = np.array([50, 128, 200]) + rng.integers(-40, 40, (SIDE, SIDE, 3))
            writer.write(image.astype(np.uint8).tobytes())
    return str(path)


def _w7(path, seed=None, batch_seed=None):
    """W7 of benchmarks/own_queue.py, smaller: decode, crop, flip, brightness, contrast."""
    if seed is not None:
        v1.set_random_seed(seed)
    files = v1.train.string_input_producer([path], num_epochs=1)
    _, value = v1.TFRecordReader().read(files)
    image = tf.reshape(tf.io.decode_raw(value, tf.uint8), [SIDE, SIDE, 3])
    image = tf.image.random_crop(image, [CROP, CROP, 3])
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(tf.cast(image, tf.float32), max_delta=10)
    image = tf.image.random_contrast(image, lower=0.5, upper=1.5)
    return v1.train.shuffle_batch(
        [image], AUG_BATCH, capacity=100, min_after_dequeue=50, num_threads=2, seed=batch_seed
    )


def _epoch(way, path, **kwargs):
    with running(way), tf.Graph().as_default() as graph:
        batch = _w7(path, **kwargs)
        out = []
        with new_session(graph) as sess:
            sess.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess, coord)
            try:
                while True:
                    out.append(sess.run(batch))
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return np.concatenate(out)


def _engine_line(caplog) -> str:
    (line,) = {r.getMessage() for r in caplog.records if "runs on tf.data" in r.getMessage()}
    return line


def test_w7_is_vectorized_and_reads_the_epoch_of_tfs_queues(image_records, caplog):
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        served = _epoch("dataset", image_records)
    line = _engine_line(caplog)
    assert "vectorized, decoded once per batch, random ops drawn [B] at a time" in line, line
    assert "RandomUniformInt" in line
    native = _epoch("native", image_records)
    assert served.shape == native.shape == (RECORDS // AUG_BATCH * AUG_BATCH, CROP, CROP, 3)
    for c in range(3):  # a per-record brightness delta of +-10 moves a channel's mean ~0.4
        assert abs(served[..., c].mean() - native[..., c].mean()) < 3.0
        assert abs(served[..., c].std() / native[..., c].std() - 1) < 0.1
    per_image = served.reshape(len(served), -1, 3).mean(1)
    assert per_image.std(0).min() > 1.0  # distorted apart, not one draw per batch
