"""Seeded augmentation on the dataset engine: stateless random ops keyed by the record, parallel.

NOTE [ Stateless randomness keyed by the record ] (``_engine/stateless.py``):
in a seeded pipeline each per-record random op becomes its stateless form,
seeded by (op key, record position), and the map runs in parallel. Checked
here: the same batches on every run, at any parallelism, and after a
checkpoint restore as in the uninterrupted run; the same distributions as
TF's own kernels (moments, Kolmogorov-Smirnov, flip frequency, crop offsets,
box areas, shuffles); the sequential map kept where an op has no stateless
form. Run in both TF modes (``--tf1``).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import tensorflow as tf
from helpers import dataset_values, new_session, running

from queue_pipeline._engine import stateless
from queue_pipeline._rebuild import lift

v1 = tf.compat.v1
RECORDS = 48
N = 3000  # draws per distribution test


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """48 TFRecords of 8x8x3 uint8 images, image i holding 4 * i + column."""
    path = tmp_path_factory.mktemp("stateless") / "images.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(RECORDS):
            image = (np.arange(8, dtype=np.uint8)[None, :, None] + 4 * i) * np.ones(
                (8, 1, 3), np.uint8
            )
            writer.write(image.tobytes())
    return str(path)


def _augmented(path, *, seed=1234, py_func=False, epochs=2):
    """The legacy augmentation shape: read, decode, crop, flip, colour, box, noise, batch."""
    if seed is not None:
        v1.set_random_seed(seed)
    files = v1.train.string_input_producer([path], num_epochs=epochs, shuffle=False)
    _, value = v1.TFRecordReader().read(files)
    image = tf.reshape(tf.io.decode_raw(value, tf.uint8), [8, 8, 3])
    image = tf.image.random_crop(image, [6, 6, 3])
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(tf.cast(image, tf.float32), 0.2)
    image = tf.image.random_contrast(image, 0.8, 1.2)
    begin, _, _ = v1.image.sample_distorted_bounding_box(
        tf.shape(image), tf.zeros([1, 0, 4]), min_object_covered=0.1,
        use_image_if_no_bounding_boxes=True, seed=5,  # unseeded in TF whatever the graph seed
    )  # fmt: skip
    noise = v1.random_normal([2])
    if py_func:
        noise = v1.py_func(lambda x: x, [noise], tf.float32, stateful=True)
        noise.set_shape([2])
    return v1.train.batch([image, begin, noise], 8, num_threads=4)


def _read(path, *, steps=None, saver_path=None, restore=None, make=None, **kwargs):
    """Batches of `_augmented` (or of ``make(path, **kwargs)``) on the dataset engine,
    in a fresh graph.

    `steps` batches (else to the end); `saver_path`: save there after them;
    `restore`: restore this checkpoint first.
    """
    with running("dataset"), tf.Graph().as_default() as graph:
        batch = (make or _augmented)(path, **kwargs)
        saver = v1.train.Saver() if (saver_path or restore) else None
        out = []
        with new_session(graph) as sess:
            sess.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
            if restore:
                saver.restore(sess, restore)
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess, coord)
            try:
                while steps is None or len(out) < steps:
                    out.append(sess.run(batch))
            except tf.errors.OutOfRangeError:
                pass
            if saver_path:
                saver.save(sess, saver_path)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return out


def _equal(a, b) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(x, y) for batch_a, batch_b in zip(a, b) for x, y in zip(batch_a, batch_b)
    )


def test_a_seeded_augmentation_maps_in_parallel_and_repeats_itself(records, caplog):
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        first = _read(records)
    second = _read(records)
    assert len(first) == 2 * RECORDS // 8
    assert _equal(first, second)
    (line,) = {r.getMessage() for r in caplog.records if "runs on tf.data" in r.getMessage()}
    assert "parallel, random ops stateless keyed by the record" in line
    for kind in ("RandomUniform", "RandomUniformInt", "RandomStandardNormal"):
        assert kind in line
    assert "sequential" not in line
    # The two epochs of the same records are distorted apart (the position keys the draw).
    images = np.concatenate([batch[0] for batch in first])
    assert not np.array_equal(images[:RECORDS], images[RECORDS:])


def test_another_graph_seed_draws_other_distortions(records):
    assert not _equal(_read(records, seed=1234), _read(records, seed=99))


def test_an_op_without_a_stateless_form_keeps_the_sequential_map(records, caplog):
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        first = _read(records, py_func=True)
    assert _equal(first, _read(records, py_func=True))
    (line,) = {r.getMessage() for r in caplog.records if "runs on tf.data" in r.getMessage()}
    assert "sequential for determinism (PyFunc)" in line


def test_a_restored_run_distorts_the_next_records_as_the_uninterrupted_run(records, tmp_path):
    whole = _read(records)
    head = _read(records, steps=5, saver_path=str(tmp_path / "model"))
    tail = _read(records, restore=str(tmp_path / "model"))
    assert _equal(head, whole[:5])
    assert _equal(tail, whole[5:])


# ------------------------------------------------------------ the keyed region itself


def _region(make):
    """The keyed region of make(x) (x: an int64 scalar source), and TF's own ops' sinks."""
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(7)
        source = v1.placeholder(tf.int64, [])
        sinks = make(source)
    region = lift.lift(sinks, [source])
    keyed = stateless.keyed_region(region)
    assert keyed is not None
    return keyed, graph, sinks, source


def _draws(make, n=N, parallel=tf.data.AUTOTUNE):
    """`n` draws of make's sinks through its keyed region, positions 0..n-1."""
    keyed, _, _, _ = _region(make)

    def one(position):
        return tuple(keyed(position, position=position))

    dataset = tf.data.Dataset.range(n).map(one, num_parallel_calls=parallel, deterministic=True)
    values = dataset_values(dataset, limit=None)
    return [np.stack([v[i] for v in values]) for i in range(len(values[0]))]


def _native(make, n=N):
    """`n` draws of TF's own stateful kernels (the oracle), seeded as `_region`'s."""
    _, graph, sinks, source = _region(make)
    with new_session(graph) as sess:
        values = [sess.run(sinks, {source: i}) for i in range(n)]
    return [np.stack([v[i] for v in values]) for i in range(len(sinks))]


def _ks(sample, cdf) -> float:
    """The Kolmogorov-Smirnov distance of `sample` from `cdf`."""
    x = np.sort(np.asarray(sample, np.float64).ravel())
    f = np.array([cdf(v) for v in x])
    n = len(x)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


def _ks2(a, b) -> float:
    a, b = np.sort(np.ravel(a)), np.sort(np.ravel(b))
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def _normal_cdf(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


# Critical KS distances at alpha = 0.001: one sample of N, two samples of N each.
KS_ONE = 1.95 / math.sqrt(N)
KS_TWO = 1.95 * math.sqrt(2 / N)


def _scalars(x):
    return [
        v1.random_uniform([]),
        v1.random_normal([]),
        v1.truncated_normal([]),
        v1.random_uniform([], 0, 10, dtype=tf.int64),
    ]


def test_the_draws_do_not_depend_on_the_parallelism():
    sequential = _draws(_scalars, n=300, parallel=None)
    parallel = _draws(_scalars, n=300, parallel=8)
    assert all(np.array_equal(a, b) for a, b in zip(sequential, parallel))


def test_uniform_normal_and_truncated_draws_have_tfs_distributions():
    uniform, normal, truncated, integers = _draws(_scalars)
    native = _native(_scalars, n=1000)
    assert abs(uniform.mean() - 0.5) < 4 * math.sqrt(1 / 12 / N)
    assert _ks(uniform, lambda v: min(max(v, 0.0), 1.0)) < KS_ONE
    assert abs(normal.mean()) < 4 / math.sqrt(N) and abs(normal.var() - 1) < 0.1
    assert _ks(normal, _normal_cdf) < KS_ONE
    assert np.all(np.abs(truncated) <= 2) and abs(truncated.var() - 0.774) < 0.05
    counts = np.bincount(integers, minlength=10)
    assert counts.size == 10 and np.all(np.abs(counts - N / 10) < 5 * math.sqrt(N / 10))
    for ours, theirs in zip((uniform, normal, truncated), native[:3]):  # against TF's kernels
        assert _ks2(ours[:1000], theirs) < 1.95 * math.sqrt(2 / 1000)


def _image_ops(x):
    image = tf.cast(tf.reshape(tf.range(4 * 10 * 1), [4, 10, 1]), tf.uint8)
    flipped = tf.image.random_flip_left_right(image)
    crop = tf.image.random_crop(image, [4, 6, 1])
    begin, size, _ = v1.image.sample_distorted_bounding_box(
        [100, 200, 3], tf.zeros([1, 0, 4]), min_object_covered=0.2,
        aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.9],
        use_image_if_no_bounding_boxes=True,
    )  # fmt: skip
    shuffled = v1.random_shuffle(tf.range(5))
    return [flipped[0, 0, 0], crop[0, 0, 0], begin, size, shuffled]


def test_flips_crops_boxes_and_shuffles_have_tfs_distributions():
    flipped, crop, begin, size, shuffled = _draws(_image_ops)
    share = float(np.mean(flipped == 9))  # the last column came first
    assert abs(share - 0.5) < 4 * math.sqrt(0.25 / N)
    offsets = np.bincount(crop, minlength=5)  # 10 columns cropped to 6: offset 0..4
    assert offsets.size == 5 and np.all(np.abs(offsets - N / 5) < 5 * math.sqrt(N / 5))
    area = size[:, 0] * size[:, 1] / (100 * 200)
    aspect = size[:, 1] / size[:, 0]
    assert np.all(area >= 0.1 - 0.02) and np.all(area <= 0.9 + 0.02)
    assert np.all(aspect >= 0.5 - 0.05) and np.all(aspect <= 2.0 + 0.05)
    assert np.all(begin[:, :2] + size[:, :2] <= [100, 200])
    assert np.all(np.sort(shuffled, axis=1) == np.arange(5))
    first = np.bincount(shuffled[:, 0], minlength=5)
    assert np.all(np.abs(first - N / 5) < 5 * math.sqrt(N / 5))
    native = _native(_image_ops, n=1000)
    native_area = native[3][:, 0] * native[3][:, 1] / (100 * 200)
    assert _ks2(area[:1000], native_area) < 1.95 * math.sqrt(2 / 1000)


def _shuffled(path, seed, rows=False):
    """A shuffle_batch of distorted images with each record's key: one epoch.

    `rows`: the image's rows shuffled too (``RandomShuffle`` has no batch form).
    """
    if seed is not None:
        v1.set_random_seed(seed)
    files = v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    key, value = v1.TFRecordReader().read(files)
    image = tf.reshape(tf.io.decode_raw(value, tf.uint8), [8, 8, 3])
    image = tf.image.random_flip_left_right(tf.image.random_crop(image, [6, 6, 3]))
    if rows:
        image = v1.random_shuffle(image)
    return v1.train.shuffle_batch([image, key], 8, capacity=20, min_after_dequeue=10, num_threads=2)


@pytest.mark.parametrize("rows", [False, True], ids=["vectorized", "per-record"])
@pytest.mark.parametrize("seed", [None, 5])
def test_a_shuffle_batch_shuffles_the_raw_records_then_maps_them(records, seed, rows, caplog):
    """NOTE [ Records shuffled before their map ]: every record once, seeded runs repeat.

    The region draws per batch and is vectorized (the raw records are
    shuffled, then batched, then distorted a batch at a time); seeded, its
    draws are stateless, keyed by the batch (NOTE [ Seeded draws keyed by
    the batch ]). With `rows` it has no batch form: the raw records are
    shuffled, then mapped per record (seeded: keyed by the record)."""
    runs = []
    for _ in range(2):
        with caplog.at_level(logging.INFO, logger="queue_pipeline"):
            with running("dataset"), tf.Graph().as_default() as graph:
                batch = _shuffled(records, seed, rows)
                with new_session(graph) as sess:
                    sess.run(v1.local_variables_initializer())
                    coord = v1.train.Coordinator()
                    threads = v1.train.start_queue_runners(sess, coord)
                    out = []
                    try:
                        while True:
                            out.append(sess.run(batch))
                    except tf.errors.OutOfRangeError:
                        pass
                    coord.request_stop()
                    coord.join(threads, stop_grace_period_secs=5)
        runs.append(out)
    for out in runs:
        keys = [key for _, batch_keys in out for key in batch_keys]  # "file:offset"
        assert len(keys) == len(set(keys)) == RECORDS
    assert _equal(runs[0], runs[1]) == (seed is not None)
    line = next(r.getMessage() for r in caplog.records if "runs on tf.data" in r.getMessage())
    if rows:
        assert "RandomShuffle" in line and "mapped after the shuffle" in line, line
        assert ("stateless keyed by the record" in line) == (seed is not None), line
    else:
        assert "vectorized, decoded once per batch, random ops drawn" in line, line
        assert ("stateless keyed by the batch" in line) == (seed is not None), line


def test_random_ops_inside_a_tf1_while_loop_keep_the_sequential_map():
    """The loop's frames would need the position passed in: ``Enter`` is named."""
    was_v2 = v1.control_flow_v2_enabled()  # False in the --tf1 suite
    with tf.Graph().as_default():
        v1.disable_control_flow_v2()
        try:
            v1.set_random_seed(3)
            record = v1.placeholder(tf.float32, [4])
            _, out = tf.while_loop(
                lambda i, a: i < 3, lambda i, a: (i + 1, a + v1.random_uniform([4])), [0, record]
            )
            region = lift.lift([out], [record])
        finally:
            if was_v2:
                v1.enable_control_flow_v2()
    assert "Enter" in stateless.unkeyable_ops(region)
    assert stateless.keyed_region(region) is None
