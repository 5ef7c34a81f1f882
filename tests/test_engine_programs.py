"""The dataset engine engages on the shapes of the classic TF 1.x programs, in both TF modes.

Each case is the input function of a well-known TF 1.x program, written as
it was (Python-int capacities, many preprocessing threads, random
distortions), built under ``queue_pipeline.engine("dataset")``. The engine
must serve it on tf.data with no fallback (no warning on logger
``queue_pipeline``), take the path the case names (vectorized or per-record
map), and deliver what TF's own queue API delivers for the same code: the
per-epoch multiset of examples (exact order where both are deterministic).
The suite runs this file in TF1 mode too (``--tf1``), the mode these
programs were written for.

The second half runs unmodified tf.compat.v1 programs (im2txt's input with
its own queue and four preprocessing threads, also under Supervisor;
tf.contrib.learn's read_up_to + batch_join; pix2pix's train then test with a
default Saver; batches fetched by name) natively, on the queue engine and on
the dataset engine, and compares what each delivers with native TF (#27).
"""

from __future__ import annotations

import collections
import logging

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
import engine_programs
import helpers
from helpers import TF, WAYS, build, drain, running
from queue_pipeline import plan
from queue_pipeline._engine.vectorize.reorder import onednn_enabled

RECORDS = 60


@pytest.fixture(scope="module")
def tfrecord_files(tmp_path_factory):
    """Two TFRecord files of MNIST-like examples: 784-byte ``image_raw``, int64 ``label``."""
    d = tmp_path_factory.mktemp("mnist")
    rng = np.random.default_rng(0)
    paths = []
    for f in range(2):
        path = str(d / f"train{f}.tfrecords")
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(RECORDS // 2):
                image = rng.integers(0, 256, 784, dtype=np.uint8)
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image_raw": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[image.tobytes()])
                            ),
                            "label": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=[f * 100 + i])
                            ),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def cifar_files(tmp_path_factory):
    """Two CIFAR-10 binary batches of 1 label byte + 3,072 image bytes per record."""
    d = tmp_path_factory.mktemp("cifar")
    rng = np.random.default_rng(1)
    paths = []
    for f in range(2):
        path = str(d / f"data_batch_{f + 1}.bin")
        records = rng.integers(0, 256, size=(RECORDS // 2, 3073), dtype=np.uint8)
        records[:, 0] = np.arange(RECORDS // 2) % 10
        records.tofile(path)
        paths.append(path)
    return paths


# ------------------------------------------------------------- the programs, as written


def mnist_inputs(m, files, batch_size=10, num_epochs=1):
    """fully_connected_reader.py's inputs(): TFRecordReader -> parse -> shuffle_batch."""
    filename_queue = m.string_input_producer(files, num_epochs=num_epochs)
    reader = m.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    features = tf.compat.v1.parse_single_example(
        serialized_example,
        features={
            "image_raw": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64),
        },
    )
    image = tf.compat.v1.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([784])
    image = tf.cast(image, tf.float32) * (1.0 / 255) - 0.5
    label = tf.cast(features["label"], tf.int32)
    return m.shuffle_batch(
        [image, label],
        batch_size=batch_size,
        num_threads=2,
        capacity=1000 + 3 * batch_size,
        min_after_dequeue=1000,
        allow_smaller_final_batch=True,
    )


def read_cifar10(m, filename_queue):
    """cifar10_input.py's read_cifar10(), verbatim in substance."""
    label_bytes, height, width, depth = 1, 32, 32, 3
    image_bytes = height * width * depth
    reader = m.FixedLengthRecordReader(record_bytes=label_bytes + image_bytes)
    _, value = reader.read(filename_queue)
    record_bytes = tf.compat.v1.decode_raw(value, tf.uint8)
    label = tf.cast(tf.strided_slice(record_bytes, [0], [label_bytes]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record_bytes, [label_bytes], [label_bytes + image_bytes]),
        [depth, height, width],
    )
    return label, tf.transpose(depth_major, [1, 2, 0])


def cifar10_distorted_inputs(m, files, batch_size=8):
    """cifar10_input.py's distorted_inputs(): random crop, flip, brightness, contrast."""
    filename_queue = m.string_input_producer(files, num_epochs=1)
    label, uint8image = read_cifar10(m, filename_queue)
    reshaped_image = tf.cast(uint8image, tf.float32)
    distorted_image = tf.image.random_crop(reshaped_image, [24, 24, 3])
    distorted_image = tf.image.random_flip_left_right(distorted_image)
    distorted_image = tf.image.random_brightness(distorted_image, max_delta=63)
    distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8)
    float_image = tf.image.per_image_standardization(distorted_image)
    float_image.set_shape([24, 24, 3])
    label.set_shape([1])
    min_queue_examples = int(RECORDS * 0.4)
    images, label_batch = m.shuffle_batch(
        [float_image, label],
        batch_size=batch_size,
        num_threads=16,
        capacity=min_queue_examples + 3 * batch_size,
        min_after_dequeue=min_queue_examples,
        allow_smaller_final_batch=True,
    )
    return images, tf.reshape(label_batch, [-1])


def cifar10_eval_inputs(m, files, batch_size=8):
    """cifar10_input.py's inputs(eval_data=True): central crop, batch in order."""
    filename_queue = m.string_input_producer(files, num_epochs=1, shuffle=False)
    label, uint8image = read_cifar10(m, filename_queue)
    reshaped_image = tf.cast(uint8image, tf.float32)
    resized_image = tf.image.resize_with_crop_or_pad(reshaped_image, 24, 24)
    float_image = tf.image.per_image_standardization(resized_image)
    float_image.set_shape([24, 24, 3])
    label.set_shape([1])
    images, label_batch = m.batch(
        [float_image, label],
        batch_size=batch_size,
        num_threads=1,
        capacity=1000 + 3 * batch_size,
        allow_smaller_final_batch=True,
    )
    return images, tf.reshape(label_batch, [-1])


def cifar10_eval_scaled_inputs(m, files, batch_size=8):
    """cifar10_input.py's inputs(eval_data=True) as many forks have it: scaled, not standardized.

    The byte image is transposed, then cast: the engine's batch form casts
    first where oneDNN is on (NOTE [ Widening casts before transposes ]).
    """
    filename_queue = m.string_input_producer(files, num_epochs=1, shuffle=False)
    label, uint8image = read_cifar10(m, filename_queue)
    reshaped_image = tf.cast(uint8image, tf.float32)
    resized_image = tf.image.resize_with_crop_or_pad(reshaped_image, 24, 24)
    float_image = resized_image * (1.0 / 255)
    label.set_shape([1])
    images, label_batch = m.batch(
        [float_image, label], batch_size=batch_size, num_threads=1, allow_smaller_final_batch=True
    )
    return images, tf.reshape(label_batch, [-1])


def preloaded_inputs(m, batch_size=7):
    """fully_connected_preloaded.py: slice_input_producer over constants -> batch."""
    images = np.arange(RECORDS * 4, dtype=np.float32).reshape(RECORDS, 4)
    labels = np.arange(RECORDS, dtype=np.int64)
    image, label = m.slice_input_producer(
        [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
    )
    return m.batch(
        [image, tf.cast(label, tf.int32)], batch_size=batch_size, allow_smaller_final_batch=True
    )


# ------------------------------------------------------------------------- checks


def _served_on_dataset(make, caplog):
    """Builds make(qp) under the dataset engine; returns (graph, outputs, path log)."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="queue_pipeline"), qp.engine("dataset"):
        graph, outputs = build(qp, make)
    records = [r for r in caplog.records if r.name == "queue_pipeline"]
    warnings = [r.getMessage() for r in records if r.levelno >= logging.WARNING]
    assert not warnings, warnings  # no fallback
    assert any(node.args.get("engine") == "dataset" for node in plan.plan_for(outputs))
    return graph, outputs, " ".join(r.getMessage() for r in records)


def _rows(batches, component):
    return collections.Counter(
        row.tobytes() for batch in batches for row in np.asarray(batch[component])
    )


CASES = {
    "mnist_reader": (mnist_inputs, "tfrecord_files", "vectorized", (1,)),
    # Unseeded distortions draw per batch; per_image_standardization's float Mean
    # reads the draws, so a last-bit difference is allowed there (NOTE [ Vectorizing
    # a region ]).
    "cifar10_distorted": (cifar10_distorted_inputs, "cifar_files", "vectorized", (1,)),
    # per_image_standardization's float Mean could round differently batched.
    "cifar10_eval": (cifar10_eval_inputs, "cifar_files", "per-record map", (0, 1)),
    "cifar10_eval_scaled": (cifar10_eval_scaled_inputs, "cifar_files", "vectorized", (0, 1)),
    "preloaded_constants": (preloaded_inputs, None, "vectorized", (0, 1)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_classic_input_function_runs_on_tf_data_like_tfs_queues(case, request, caplog):
    inputs, fixture, path, compared = CASES[case]
    args = (request.getfixturevalue(fixture),) if fixture else ()
    make = lambda m: inputs(m, *args)  # noqa: E731
    graph, outputs, log = _served_on_dataset(make, caplog)
    assert path in log, log
    got = drain(qp, graph, outputs)
    tf_graph, tf_outputs = build(TF, make)
    want = drain(TF, tf_graph, tf_outputs)
    assert [tuple(x.shape.as_list()) for x in outputs] == [
        tuple(x.shape.as_list()) for x in tf_outputs
    ]
    assert sum(len(b[1]) for b in got) == sum(len(b[1]) for b in want) == RECORDS
    for component in compared:  # the distorted images are random on both sides
        assert _rows(got, component) == _rows(want, component), component
    if case == "cifar10_eval_scaled":  # NOTE [ Widening casts before transposes ]
        ops = {n.op for f in graph.as_graph_def().library.function for n in f.node_def}
        assert ("ConjugateTranspose" in ops) == onednn_enabled(), ops
    if case in ("cifar10_eval", "cifar10_eval_scaled", "preloaded_constants"):  # in order
        for g, w in zip(got, want):
            assert g[0].tobytes() == w[0].tobytes() and np.array_equal(g[1], w[1])


@pytest.mark.parametrize("saved_with", [True, False], ids=["saved-swapped", "saved-unswapped"])
@pytest.mark.slow
def test_input_position_restores_across_the_cast_first_swap(
    saved_with, cifar_files, tmp_path, monkeypatch
):
    # Whether the swap is made depends on the process's oneDNN setting; a run
    # resumed with the other setting must find its input position.
    from queue_pipeline._engine.vectorize import reorder

    def make(swap):
        monkeypatch.setattr(reorder, "onednn_enabled", lambda: swap)
        with qp.engine("dataset"):
            graph, outputs = build(qp, lambda m: cifar10_eval_scaled_inputs(m, cifar_files, 4))
        with graph.as_default():
            tf.compat.v1.Variable(1.0, name="weights")
            saver = tf.compat.v1.train.Saver()
            init = tf.compat.v1.global_variables_initializer()
        functions = graph.as_graph_def().library.function
        swapped = any(n.op == "ConjugateTranspose" for f in functions for n in f.node_def)
        assert swapped == swap
        return graph, outputs, saver, init

    graph, outputs, saver, init = make(saved_with)
    with graph.as_default(), helpers.new_session(graph) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(outputs)
        path = saver.save(sess, str(tmp_path / "model"))
        expected = [sess.run(outputs) for _ in range(3)]
    graph, outputs, saver, _ = make(not saved_with)
    with graph.as_default(), helpers.new_session(graph) as sess:
        saver.restore(sess, path)
        got = [sess.run(outputs) for _ in range(3)]
    for g, w in zip(got, expected):
        assert g[0].tobytes() == w[0].tobytes() and np.array_equal(g[1], w[1])


def cifar10_eval_divided_inputs(m, files, batch_size=8):
    """cifar10_eval_scaled_inputs with ``/ 255.0`` for ``* (1.0 / 255)``, as other forks do."""
    filename_queue = m.string_input_producer(files, num_epochs=1, shuffle=False)
    label, uint8image = read_cifar10(m, filename_queue)
    float_image = tf.cast(uint8image, tf.float32) / 255.0
    label.set_shape([1])
    return m.batch(
        [float_image, label], batch_size=batch_size, num_threads=1, allow_smaller_final_batch=True
    )


@pytest.mark.xfail(
    strict=True,
    reason="known difference: in a Session, Grappler's constant folding turns a float "
    "division by a constant that follows a cast into a multiplication by its reciprocal "
    "(TF's own queues deliver x * (1/255)); in tf.data's map functions it stays a true "
    "division, so the dataset engine's images differ from TF's in the last bit of some "
    "pixels (a hostile test of a CIFAR trainer: pixel sums 15361428.791 against .188)",
)
def test_division_by_a_constant_delivers_tfs_bits(cifar_files, caplog):
    make = lambda m: cifar10_eval_divided_inputs(m, cifar_files)  # noqa: E731
    graph, outputs, _ = _served_on_dataset(make, caplog)
    got = drain(qp, graph, outputs)
    tf_graph, tf_outputs = build(TF, make)
    want = drain(TF, tf_graph, tf_outputs)
    assert len(got) == len(want)
    assert all(np.array_equal(g[1], w[1]) for g, w in zip(got, want))  # the same records
    assert all(g[0].tobytes() == w[0].tobytes() for g, w in zip(got, want))


# --------------------------------------------- unmodified programs, on every engine
#
# Programs of the shapes of public TF 1.x trainers, written against TF's own
# tf.compat.v1 API and run unmodified natively (the oracle), on the queue
# engine and on the dataset engine (``helpers.running``). What each delivers
# is compared with what native TF delivers. The programs are in
# tests/engine_programs.py.

CAPTIONS = 12


@pytest.fixture(scope="module")
def caption_files(tmp_path_factory):
    """Two TFRecord files of im2txt-like examples: a 2x2 ``image`` (4 raw bytes), a ``caption``.

    Captions have 2 to 6 word ids; the first id is the record's number.
    """
    d = tmp_path_factory.mktemp("captions")
    paths = []
    for f in range(2):
        path = str(d / f"train-{f:05d}-of-00002")
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(CAPTIONS // 2):
                n = f * 100 + i
                caption = [n] + [n % 7 + k for k in range(1 + i % 5)]
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[bytes([n % 256] * 4)])
                            ),
                            "caption": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=caption)
                            ),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths


def _caption_rows(batches):
    """The multiset of (input, target) sequences, each cut at its mask."""
    rows = collections.Counter()
    for _, inputs, targets, masks in batches:
        for i, t, m in zip(inputs, targets, masks):
            n = int(np.sum(m))
            rows[(tuple(i[:n].tolist()), tuple(t[:n].tolist()))] += 1
    return rows


def _run_native_way(way, make, **drain_args):
    """Builds `make()` in a fresh graph run the `way` given; drains it with TF's API."""
    with running(way):
        graph, outputs = build(TF, lambda _: make())
        served = any(n.args.get("engine") == "dataset" for n in plan.plan_for(outputs))
        batches = drain(TF, graph, outputs, **drain_args)
    return batches, served, graph


@pytest.mark.parametrize("is_training", [True, False])
@pytest.mark.slow
def test_im2txt_input_delivers_every_caption_on_every_engine(caption_files, is_training):
    make = lambda: engine_programs.im2txt_inputs(caption_files, is_training=is_training)  # noqa: E731
    want, _, _ = _run_native_way("native", make)
    assert sum(_caption_rows(want).values()) == CAPTIONS
    for way in ("queue", "dataset"):
        got, served, _ = _run_native_way(way, make)
        assert served == (way == "dataset"), way
        assert _caption_rows(got) == _caption_rows(want), way
        assert [b[1].shape[0] for b in got] == [b[1].shape[0] for b in want], way


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.slow
def test_im2txt_under_supervisor_keeps_its_own_queue_filled(caption_files, way, tmp_path):
    """The summary of one preprocessing thread reads the program's own queue: it is filled.

    Under the dataset engine batch_join is served on tf.data while the
    program's queue stays for the image summary, which Supervisor's summary
    thread (and this test) runs; Supervisor starts each runner itself, and
    the engine fills that queue from tf.data in place of its reader runners.
    """
    v1 = tf.compat.v1
    with running(way), tf.Graph().as_default():
        images, _, targets, _ = engine_programs.im2txt_inputs(caption_files, num_epochs=None)
        summary = v1.summary.merge_all()
        global_step = v1.Variable(
            0,
            name="global_step",
            trainable=False,
            use_resource=False,
            collections=[v1.GraphKeys.GLOBAL_VARIABLES, v1.GraphKeys.GLOBAL_STEP],
        )
        train = v1.assign_add(global_step, 1)
        supervisor = v1.train.Supervisor(
            logdir=str(tmp_path),
            save_summaries_secs=0.05,
            save_model_secs=0,
            # TF's summary thread reads the global step eagerly under TF 2.x
            # behaviour (a native TF limit): it runs without one there.
            global_step=global_step if helpers.tf1_mode() else None,
        )
        with supervisor.managed_session(config=helpers.session_config()) as sess:
            for _ in range(8):
                _, value = sess.run([train, targets])
                assert value.shape[0] == 3
            assert sess.run(summary)  # would time out on an unfilled queue
            supervisor.request_stop()
        assert supervisor.coord.joined
        queues = {
            qr.queue.name: type(qr).__name__
            for qr in tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
        }
        if way == "dataset":
            # The program's queue is filled from tf.data by one runner of the
            # engine's (NOTE [ Queues filled from tf.data ]): no reader runs.
            assert queues.get("random_input_queue") == "BridgeRunner", queues
            assert "filename_queue" not in queues, queues
        else:
            # The program's queue and the filename queue its readers need stay filled.
            assert {"random_input_queue", "filename_queue"} <= set(queues), queues


@pytest.mark.parametrize("num_dequeues", [1, 2])
@pytest.mark.slow
def test_own_queue_read_by_several_dequeues_delivers_each_row_once(num_dequeues, caplog):
    """Rows split between the dequeues by their slice producer: served, every row once."""
    make = lambda: engine_programs.own_queue_over_slices(num_dequeues)  # noqa: E731
    want, _, _ = _run_native_way("native", make)
    rows = sorted(int(x) for b in want for x in np.ravel(b))
    assert rows == [10 * i for i in range(20)]
    for way in ("queue", "dataset"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="queue_pipeline"):
            got, served, _ = _run_native_way(way, make)
        assert sorted(int(x) for b in got for x in np.ravel(b)) == rows, way
        if way == "dataset":
            # Two dequeues take turns at the queue: each gets a share of the
            # producer's rows (NOTE [ Queues no builder recorded ]).
            assert served
            falls_back = [r.getMessage() for r in caplog.records if "stays on" in r.getMessage()]
            assert not falls_back, falls_back


@pytest.mark.slow
def test_contrib_read_up_to_and_batch_join_on_every_engine(tfrecord_files):
    make = lambda: engine_programs.read_batch_examples_inputs(tfrecord_files)  # noqa: E731
    want, _, _ = _run_native_way("native", make)
    labels = collections.Counter(int(x) for _, b in want for x in b)
    assert sum(labels.values()) == RECORDS
    for way in ("queue", "dataset"):
        got, _, _ = _run_native_way(way, make)
        assert collections.Counter(int(x) for _, b in got for x in b) == labels, way
        assert collections.Counter(k for b, _ in got for k in b) == collections.Counter(
            k for b, _ in want for k in b
        ), way


@pytest.fixture(scope="module")
def image_dirs(tmp_path_factory):
    """pix2pix-like train/ and test/ folders of 8 "images" (12 raw bytes each)."""
    root = tmp_path_factory.mktemp("pix2pix")
    for split, count in (("train", 8), ("test", 5)):
        (root / split).mkdir()
        for i in range(count):
            (root / split / f"{i:03d}.raw").write_bytes(bytes([i + (split == "test") * 50] * 12))
    return root


def _pix2pix(way, image_dirs, checkpoint):
    """Trains 3 steps (default Saver, save), then tests from the checkpoint; returns both."""
    v1 = tf.compat.v1
    with running(way), tf.Graph().as_default():
        _, images = engine_programs.pix2pix_inputs(image_dirs / "train", "train")
        generator = v1.get_variable("generator", [], initializer=v1.zeros_initializer())
        step = v1.assign_add(generator, 1.0 + 0.0 * tf.reduce_mean(images))
        saver = v1.train.Saver(max_to_keep=1)
        with helpers.new_session(v1.get_default_graph()) as sess:
            sess.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess, coord)
            for _ in range(3):
                sess.run(step)
            saver.save(sess, f"{checkpoint}/model", global_step=3)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    with running(way), tf.Graph().as_default():
        paths, images = engine_programs.pix2pix_inputs(image_dirs / "test", "test")
        generator = v1.get_variable("generator", [], initializer=v1.zeros_initializer())
        saver = v1.train.Saver(max_to_keep=1)
        with helpers.new_session(v1.get_default_graph()) as sess:
            sess.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
            saver.restore(sess, v1.train.latest_checkpoint(checkpoint))
            coord = v1.train.Coordinator()
            threads = v1.train.start_queue_runners(sess, coord)
            restored, delivered = sess.run(generator), []
            try:
                while True:
                    delivered.append(sess.run([paths, images]))
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return restored, delivered


@pytest.mark.slow
def test_pix2pix_train_then_test_with_a_default_saver(image_dirs, tmp_path, caplog):
    """The test pipeline differs from the training one under the same names: it restores."""
    want_value, want = _pix2pix("native", image_dirs, tmp_path / "native")
    assert want_value == 3.0 and len(want) == 2  # 5 test images, batches of 2
    for way in ("queue", "dataset"):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="queue_pipeline"):
            value, got = _pix2pix(way, image_dirs, tmp_path / way)
        assert value == want_value, way
        assert [p.tolist() for p, _ in got] == [p.tolist() for p, _ in want], way
        assert all(np.array_equal(g, w) for (_, g), (_, w) in zip(got, want)), way
        notes = [r for r in caplog.records if "no input position" in r.getMessage()]
        assert len(notes) == (1 if way == "dataset" else 0), way


@pytest.mark.parametrize("way", WAYS)
def test_batches_fetched_by_tfs_tensor_names(way):
    """``my_batch:K`` is the batch on every engine, as a program fetching by name expects."""
    with running(way):
        graph, outputs = build(TF, lambda _: engine_programs.named_batch())
        assert [t.name for t in outputs] == ["my_batch:0", "my_batch:1"]
        by_name = [graph.get_tensor_by_name(f"my_batch:{k}") for k in (0, 1)]
        batches = drain(TF, graph, by_name)
    assert [b[0].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5]]
    assert all(np.array_equal(b[1], b[0] * 10) for b in batches)
