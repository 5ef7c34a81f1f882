"""Reading converted shards back: the emitted tf.data reader, the legacy queue API, a training step.

Both TF modes: the reader's Dataset is read eagerly under TF 2.x defaults and
through a one-shot iterator in a Session in TF1 mode; the demo model trains
one step as graph ops in a Session fed by the reader.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
import tensorflow as tf
from convert_helpers import IN_MEMORY
from helpers import dataset_values, new_session
from PIL import Image

import queue_pipeline as qp
from queue_pipeline import _bundled_data, demo
from queue_pipeline._demo import training as demo_training

DIGITS = 40


@pytest.fixture(scope="module")
def digits_out(tmp_path_factory):
    """Bundled digits as 28x28 grayscale PNGs in ``<digit>/`` folders, converted to 2+1 shards."""
    root = tmp_path_factory.mktemp("digits")
    images, labels = _bundled_data.digits()
    big = _bundled_data._upscale(images[:DIGITS], 28)  # noqa: SLF001 - the demo's own upscale
    made = {}
    for i, (image, label) in enumerate(zip(big, labels[:DIGITS])):
        os.makedirs(root / "png" / str(label), exist_ok=True)
        Image.fromarray(image, "L").save(root / "png" / str(label) / f"{i:03d}.png")
        made[f"{i:03d}.png"] = (image, int(label))
    result = qp.convert(
        f"images:{root / 'png'}",
        str(root / "out"),
        shards="train=2,validation=1",
        split="train=0.75,validation=0.25",
        compression="GZIP",
        beam_options=IN_MEMORY,
    )
    reader = root / "reader.py"
    reader.write_text(result.reader_source())
    return result, reader, made


def _reader_module(path):
    spec = importlib.util.spec_from_file_location("converted_reader", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_graph_if_tf1(make):
    """`make()` eagerly under TF 2.x defaults; in a fresh graph in TF1 mode."""
    if tf.executing_eagerly():
        return make()
    with tf.Graph().as_default():
        return make()


def test_emitted_reader_gives_every_record_once(digits_out):
    result, reader, made = digits_out
    module = _reader_module(reader)
    assert module.COMPRESSION == "GZIP" and module.DIRECTORY == os.path.abspath(result.out)
    seen = []
    for split in ("train", "validation"):
        dataset = _in_graph_if_tf1(
            lambda s=split: module.input_fn(s, 8, shuffle=False, image_size=(28, 28))
        )
        batches = dataset_values(dataset)
        assert sum(len(labels) for _, labels in batches) == result.counts[split]
        seen += [(img, int(lab)) for images, labels in batches for img, lab in zip(images, labels)]
    assert len(seen) == len(made)
    # Labels are 0-based in the reader (the class folders are the digits, sorted), and each
    # image is its PNG re-encoded as JPEG: equal up to JPEG's loss. Each read image is
    # matched to its nearest original; the matching must be one-to-one.
    originals = list(made.values())
    matched = set()
    for image, label in seen:
        assert image.shape == (28, 28, 3) and image.dtype == np.float32
        gray = image.mean(axis=-1) * 255.0
        nearest = int(np.argmin([np.abs(gray - pixels).mean() for pixels, _ in originals]))
        pixels, want = originals[nearest]
        assert label == want
        np.testing.assert_allclose(gray, pixels, atol=40)
        matched.add(nearest)
    assert len(matched) == len(originals)


def test_legacy_queue_api_reads_the_shards(digits_out, tmp_path):
    """queue_pipeline's own string_input_producer -> TFRecordReader -> parse_single_example."""
    result, _, made = digits_out
    files = sorted(os.path.join(result.out, f) for f in result.shards["train"])
    graph = tf.Graph()
    with graph.as_default():
        names = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        options = tf.io.TFRecordOptions(compression_type="GZIP")
        _, serialized = qp.TFRecordReader(options=options).read(names)
        features = tf.io.parse_single_example(
            serialized,
            {
                "image/filename": tf.io.FixedLenFeature([], tf.string),
                "image/class/label": tf.io.FixedLenFeature([], tf.int64),
            },
        )
        batch = qp.batch(
            [features["image/filename"], features["image/class/label"]],
            batch_size=5,
            allow_smaller_final_batch=True,
        )
        init = tf.compat.v1.local_variables_initializer()
    got = []
    with new_session(graph) as sess:
        sess.run(init)
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord=coord)
        try:
            while True:
                names_, labels = sess.run(batch)
                got += list(zip(names_.tolist(), labels.tolist()))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    assert len(got) == result.counts["train"]
    for name, label in got:
        assert made[name.decode()][1] == label - 1  # the record keeps the 1-based label


def test_demo_model_trains_one_step_from_the_shards(digits_out):
    _, reader, _ = digits_out
    module = _reader_module(reader)
    graph = tf.Graph()
    with graph.as_default():
        dataset = module.input_fn("train", 16, seed=1, image_size=(28, 28), drop_remainder=True)
        images, labels = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        flat = tf.reshape(tf.reduce_mean(images, axis=-1), [-1, demo.IMAGE_PIXELS])
        model = demo_training._graph_model(flat, tf.cast(labels, tf.int32), seed=0)  # noqa: SLF001
        init = tf.compat.v1.global_variables_initializer()
    with new_session(graph) as sess:
        sess.run(init)
        _, count, accuracy = sess.run([model.train_op, model.count, model.accuracy])
    assert count == 16 and 0.0 <= accuracy <= 1.0
