"""queue_pipeline._compare.slips: each migration slip is named, near misses are not."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from queue_pipeline._compare import normalize as _normalize
from queue_pipeline._compare import slips
from queue_pipeline.compare import compare

T = 10.0  # seconds per fetch
N, BATCH = 12, 4
RNG = np.random.default_rng(7)
IMAGES = (RNG.integers(0, 256, size=[N, 16, 16, 3]) / 255.0).astype(np.float32)
LABELS = np.arange(N, dtype=np.int64) % 5


def _images(n=6, shape=(8, 8, 3), dtype=np.float32):
    rng = np.random.default_rng(n)
    return [rng.random(shape).astype(dtype) for _ in range(n)]


def _bump(values, eps=1e-2):
    """A near miss: the first value changed by `eps` in one element."""
    values = [v.copy() for v in values]
    values[0].flat[0] += eps
    return values


# --------------------------------------------------------------------------------------
# Unit tests: each per-record detector, positive and a near miss, paired and unpaired.

CASES = {
    "float_rounding": (
        _images(dtype=np.float32),
        lambda x: np.nextafter(x, np.float32(2)),  # one ULP up, as x * (1 / 255) may be
        "float32 rounding in the last bits",
    ),
    "flip_left_right": (_images(), lambda x: x[:, ::-1], "flipped left-right"),
    "flip_up_down": (_images(), lambda x: x[::-1], "flipped up-down"),
    "transpose": (_images(), lambda x: x.transpose(2, 0, 1), "HWC to CHW"),
    "channel_order": (_images(), lambda x: x[..., ::-1], "RGB vs BGR"),
    "off_by_one": (
        [np.array(i, np.int64) for i in range(6)],
        lambda x: np.asarray(x + 1),
        "plus one",
    ),
    "rounding_cast": (
        [np.array([i + 0.7, -i - 0.7], np.float32) for i in range(6)],
        lambda x: np.trunc(x).astype(np.int64),
        "truncated toward zero",
    ),
    "scale_offset": (
        _images(dtype=np.float32),
        lambda x: (x * 2 - 1).astype(np.float32),
        "twin = 2 * legacy - 1",
    ),
}


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("slip", sorted(CASES))
def test_detector_names_its_slip_and_rejects_a_near_miss(slip, paired):
    legacy, fn, words = CASES[slip]
    twin = [fn(x) for x in legacy]
    if not paired:
        twin = twin[::-1]  # order lost: pairs are found through the slip
    detect = slips.ELEMENTWISE[slip]
    found = detect(legacy, twin, paired=paired)
    assert found is not None and words in found, found
    eps = 1 if twin[0].dtype.kind in "iu" else 1e-2
    assert detect(legacy, _bump(twin, eps), paired=paired) is None


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "unpaired"])
@pytest.mark.parametrize("slip", sorted(CASES))
def test_unrelated_values_explain_nothing(slip, paired):
    legacy, fn, _ = CASES[slip]
    if legacy[0].ndim == 3:  # other images, through the same slip
        other = [fn(x) for x in _images(len(legacy) + 1)[1:]]
    else:  # the slip, then 3 more
        other = [np.asarray(fn(x)) + 3 for x in legacy]
    assert slips.ELEMENTWISE[slip](legacy, other, paired=paired) is None


def test_scale_by_255_from_uint8_is_named_as_a_division():
    legacy = _images(dtype=np.float32)
    legacy = [np.round(x * 255).astype(np.uint8) for x in legacy]
    twin = [(x / 255.0).astype(np.float32) for x in legacy]
    assert slips.scale_offset(legacy, twin) == "scaled: twin = legacy / 255"
    assert slips.scale_offset(legacy, twin[::-1], paired=False) == "scaled: twin = legacy / 255"


def test_a_slip_that_changes_nothing_is_not_named_for_float_rounding():
    """Grey images in RGB (R == G == B) one ULP apart: reversing their channels
    changes nothing, so the explanation is the rounding, never "RGB vs BGR"."""
    grey = [np.repeat(x[..., :1], 3, axis=-1) for x in _images()]
    twin = [np.nextafter(x, np.float32(2)) for x in grey]
    explained = slips._explain_records(
        ["[0]"], slips._Records([[x] for x in grey], [[t] for t in twin], True, len(grey))
    )
    assert explained is not None and explained.slip == "float_rounding", explained
    assert slips.float_rounding(grey, [x.copy() for x in grey]) is None  # equal: no slip


def test_channels_of_rgba_keep_alpha_last():
    legacy = _images(shape=(4, 4, 4))
    assert "RGBA vs BGRA" in slips.channels_reversed(legacy, [x[..., [2, 1, 0, 3]] for x in legacy])


def test_identity_and_non_images_are_not_slips():
    legacy = _images()
    assert slips.scale_offset(legacy, [x.copy() for x in legacy]) is None
    vectors = [np.arange(5.0) + i for i in range(4)]
    assert slips.flip_left_right(vectors, [v[::-1] for v in vectors]) is None


def test_tags_keep_the_other_components_equal():
    legacy = _images(4)
    twin = [x[:, ::-1] for x in legacy]
    same = ([0, 1, 2, 3], [0, 1, 2, 3])
    other = ([0, 1, 2, 3], [0, 1, 2, 9])
    assert slips.flip_left_right(legacy, twin, tags=same) is not None
    assert slips.flip_left_right(legacy, twin, tags=other) is None
    assert slips.flip_left_right(legacy, twin[::-1], paired=False, tags=other) is None


def _keys(values):
    return [_normalize.example_key([np.asarray(v)]) for v in values]


def test_order_shifted_positive_and_near_miss():
    legacy = _keys(range(10))
    assert slips.order_shifted(legacy, _keys(range(1, 10))) == 1
    assert slips.order_shifted(legacy, _keys([-1, *range(10)])) == -1
    assert slips.order_shifted(legacy, _keys([1, 2, 3, 4, 5, 6, 7, 8, 0])) is None


def test_final_batch_positive_and_near_miss():
    legacy = _keys(range(10))
    assert slips.final_batch(legacy, legacy[:8], 4, ordered=True) == -2
    assert slips.final_batch(legacy[:8], legacy, 4, ordered=True) == 2
    assert slips.final_batch(legacy, legacy[:8][::-1], 4, ordered=False) == -2
    assert slips.final_batch(legacy, legacy[:8][::-1], 4, ordered=True) is None
    assert slips.final_batch(legacy, legacy[:6], 4, ordered=True) is None  # a whole batch
    assert slips.final_batch(legacy, _keys([*range(7), 99]), 4, ordered=True) is None
    duplicated = _keys([*range(8), 3])
    assert slips.final_batch(legacy[:8], duplicated, 4, ordered=False) is None


def test_a_repeated_epoch_or_a_swap_is_no_slip():
    legacy = _keys(range(10))
    assert slips.order_shifted(legacy, legacy + legacy) is None  # an extra epoch
    two = [np.array(0), np.array(1)]
    assert slips.scale_offset(two, two[::-1]) is None  # any line fits two points


# --------------------------------------------------------------------------------------
# End to end: a 16x16x3 image pipeline (slice_input_producer -> batch) against twins.


def legacy_images():
    image, label = qp.slice_input_producer(
        [tf.constant(IMAGES), tf.constant(LABELS)], num_epochs=1, shuffle=False
    )
    return qp.batch([image, label], BATCH, allow_smaller_final_batch=True)


def _twin(fn=None, label_fn=None, shuffle=False):
    def twin():
        ds = tf.data.Dataset.from_tensor_slices((IMAGES, LABELS))
        if shuffle:
            ds = ds.shuffle(N, seed=1)
        if fn is not None:
            ds = ds.map(lambda x, y: (fn(x), y))
        if label_fn is not None:
            ds = ds.map(lambda x, y: (x, label_fn(y)))
        return ds.batch(BATCH)

    return twin


TWINS = {
    "flip_left_right": (_twin(tf.image.flip_left_right), "[0]", "flipped left-right"),
    "channel_order": (_twin(lambda x: x[..., ::-1]), "[0]", "RGB vs BGR"),
    "scale_offset": (_twin(lambda x: x / 255.0), "[0]", "twin = legacy / 255"),
    "off_by_one": (_twin(label_fn=lambda y: y + 1), "[1]", "plus one"),
}


def test_matching_twin_has_no_explanation():
    r = compare(legacy_images, _twin(), timeout=T)
    assert r.matched, r.render()
    assert r.explanation is None and not r.slips_checked
    assert "explained:" not in r.render() and json.loads(r.to_json())["explanation"] is None


@pytest.mark.parametrize("slip", sorted(TWINS))
def test_report_names_the_slip(slip):
    twin, feature, words = TWINS[slip]
    r = compare(legacy_images, twin, timeout=T)
    assert not r.matched
    e = r.explanation
    assert e is not None, r.render()
    assert (e.slip, e.feature, e.records, e.differing) == (slip, feature, N, N)
    assert words in e.text and f"{N} of {N} differing records" in e.text
    text = r.render()
    assert text.splitlines()[2] == f"explained: {e.text}"
    assert "records were dropped, added or changed" not in text  # the generic hint is replaced
    data = json.loads(r.to_json())
    assert data["explanation"]["slip"] == slip and data["explanation"]["feature"] == feature


def test_flip_is_named_in_a_multiset_comparison():
    r = compare(legacy_images, _twin(tf.image.flip_left_right, shuffle=True), timeout=T)
    assert r.mode == "multiset"
    assert r.explanation is not None and r.explanation.slip == "flip_left_right", r.render()


def test_two_slips_at_once_are_not_explained():
    twin = _twin(tf.image.flip_left_right, label_fn=lambda y: y + 1)
    r = compare(legacy_images, twin, timeout=T)
    assert r.explanation is None and r.slips_checked
    assert "explained: none of the known slips explains it" in r.render()


def test_dropped_final_batch_is_named():
    def twin():
        return tf.data.Dataset.from_tensor_slices((IMAGES[:10], LABELS[:10])).batch(BATCH, True)

    def legacy():
        image, label = qp.slice_input_producer(
            [tf.constant(IMAGES[:10]), tf.constant(LABELS[:10])], num_epochs=1, shuffle=False
        )
        return qp.batch([image, label], BATCH, allow_smaller_final_batch=True)

    r = compare(legacy, twin, timeout=T)
    assert r.explanation is not None and r.explanation.slip == "final_batch", r.render()
    assert "drops the final partial batch of 2" in r.explanation.text


def test_shifted_order_is_named():
    def twin():
        return tf.data.Dataset.from_tensor_slices((IMAGES, LABELS)).skip(1).batch(BATCH)

    r = compare(legacy_images, twin, timeout=T)
    assert r.explanation is not None and r.explanation.slip == "order_shift", r.render()
    assert "shifted by 1" in r.explanation.text
