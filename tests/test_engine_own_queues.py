"""The dataset engine fills the program's own queues from tf.data.

See NOTE [ Queues filled from tf.data ] in ``_engine/bridge.py``.

Programs shaped like public TF 1.x code build the queue that hands out their
batches themselves (CIFAR-10's official input: 16 enqueue ops into a
RandomShuffleQueue read with ``dequeue_many``), call TF's own batching and
readers through names bound before ``install()``, or pad sequences in a
PaddingFIFOQueue. Each is run natively (TF's own queue API, the oracle), on
the queue engine and on the dataset engine, in both TF modes (the suite runs
this file with ``--tf1`` too), and must deliver the same examples, with the
queue filled by the engine's one runner.
"""

from __future__ import annotations

import contextlib

import collections
import logging

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import TF, build, drain, new_session, running, run_script_both_ways

RECORDS = 60
v1 = tf.compat.v1


@pytest.fixture(scope="module")
def cifar_files(tmp_path_factory):
    """Two CIFAR-10-like binary files: 1 label byte + 4x4x3 image bytes per record."""
    d = tmp_path_factory.mktemp("own_queue")
    rng = np.random.default_rng(3)
    paths = []
    for f in range(2):
        path = str(d / f"data_batch_{f}.bin")
        rows = rng.integers(0, 256, size=(RECORDS // 2, 49), dtype=np.uint8)
        rows[:, 0] = np.arange(RECORDS // 2) + 30 * f  # every record's label is its own
        rows.tofile(path)
        paths.append(path)
    return paths


def own_queue_inputs(files, *, train, batch_size=6):
    """CIFAR-10's input shape: reader, distortions, the program's own queue, dequeue_many."""
    filename_queue = v1.train.string_input_producer(files, num_epochs=1, shuffle=train)
    _, value = v1.FixedLengthRecordReader(record_bytes=49).read(filename_queue)
    record = v1.decode_raw(value, tf.uint8)
    label = tf.cast(tf.strided_slice(record, [0], [1]), tf.int32)
    image = tf.transpose(tf.reshape(tf.strided_slice(record, [1], [49]), [3, 4, 4]), [1, 2, 0])
    image = tf.cast(image, tf.float32)
    label.set_shape([1])
    if train:
        image = tf.image.random_flip_left_right(v1.random_crop(image, [4, 4, 3]))
        queue = tf.queue.RandomShuffleQueue(40, 10, [tf.float32, tf.int32], [[4, 4, 3], [1]])
        threads = 16
    else:
        image = tf.image.per_image_standardization(image)
        queue = tf.queue.FIFOQueue(40, [tf.float32, tf.int32], [[4, 4, 3], [1]])
        threads = 1
    v1.train.add_queue_runner(
        v1.train.QueueRunner(queue, [queue.enqueue([image, label])] * threads)
    )
    images, labels = queue.dequeue_many(batch_size)
    return images, tf.reshape(labels, [batch_size])


def _bridged(graph) -> list[str]:
    return [
        qr.queue.name
        for qr in graph.get_collection(v1.GraphKeys.QUEUE_RUNNERS)
        if type(qr).__name__ == "BridgeRunner"
    ]


def _run(way, make):
    """(batches, names of the queues the engine filled) of make() built and drained `way`."""
    with running(way):
        graph, outputs = build(TF, lambda _: make())
        batches = drain(TF, graph, outputs)
    return batches, _bridged(graph)


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.slow
def test_the_programs_own_queue_is_filled_from_tf_data(cifar_files, train, caplog):
    make = lambda: own_queue_inputs(cifar_files, train=train)  # noqa: E731
    want, _ = _run("native", make)
    labels = sorted(int(x) for _, b in want for x in b)
    assert labels == list(range(RECORDS))
    for way in ("queue", "dataset"):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="queue_pipeline"):
            got, bridged = _run(way, make)
        assert bridged == (["random_shuffle_queue" if train else "fifo_queue"] * (way == "dataset"))
        assert sorted(int(x) for _, b in got for x in b) == labels, way
        if way == "dataset":
            [line] = [
                r.getMessage() for r in caplog.records if "filled from tf.data" in r.getMessage()
            ]
            assert ("16 enqueue thread(s)" if train else "1 enqueue thread(s)") in line
            assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        if not train:  # one thread into a FIFO queue: TF's order, TF's values
            for (wi, wl), (gi, gl) in zip(want, got):
                np.testing.assert_array_equal(gl, wl)
                np.testing.assert_allclose(gi, wi, rtol=1e-6)


def _tfs_own(files, kind):
    """TF's own producer, reader and batching, as code that bound them before install()."""
    queue = v1.train.string_input_producer(files, num_epochs=2, shuffle=True, seed=3)
    _, value = v1.FixedLengthRecordReader(record_bytes=49).read(queue)
    label = tf.cast(v1.decode_raw(value, tf.uint8)[0], tf.int32)
    if kind == "batch":
        return v1.train.batch([label], 7, num_threads=3, allow_smaller_final_batch=True)
    if kind == "shuffle_batch":
        return v1.train.shuffle_batch([label], 6, 50, 10, num_threads=2, seed=2)
    return v1.train.batch_join([[label], [label * 1000]], 5, allow_smaller_final_batch=True)


@pytest.mark.parametrize("kind", ["batch", "shuffle_batch", "batch_join"])
def test_tfs_own_pipeline_started_by_queue_pipeline_is_filled_from_tf_data(cifar_files, kind):
    """Built with TF's own functions (no install()), started by ours under the dataset engine."""
    results = {}
    for engine in ("queue", "dataset"):
        graph, outputs = build(TF, lambda _: _tfs_own(cifar_files, kind))
        with qp.engine(engine):
            batches = drain(qp, graph, outputs)
        # batch_join's second list holds label * 1000: which list a record went
        # to is up to TF's threads, so the records are counted by label.
        labels = (int(x) if x < 1000 else int(x) // 1000 for b in batches for x in b)
        results[engine] = (collections.Counter(labels), graph)
    (want, _), (got, graph) = results["queue"], results["dataset"]
    assert got == want and sum(want.values()) >= 2 * RECORDS - 6, (got, want)
    assert len(_bridged(graph)) == 1
    runners = graph.get_collection(v1.GraphKeys.QUEUE_RUNNERS)
    assert [type(r).__name__ for r in runners] == ["BridgeRunner"]  # no reader thread left


def _sequences(ragged):
    """A PaddingFIFOQueue of variable-length sequences, padded by dequeue_many."""
    (row,) = qp.slice_input_producer([tf.constant(ragged)], num_epochs=1, shuffle=False)
    sequence = tf.range(row)
    queue = tf.queue.PaddingFIFOQueue(10, [tf.int32], shapes=[[None]])
    v1.train.add_queue_runner(v1.train.QueueRunner(queue, [queue.enqueue([sequence])]))
    return queue.dequeue_many(2)


def test_a_padding_queue_pads_each_batch_as_tfs_does():
    lengths = [3, 1, 4, 1, 5, 2]
    with running("dataset"):
        graph, outputs = build(TF, lambda _: _sequences(lengths))
        batches = drain(TF, graph, outputs)
    assert _bridged(graph) == ["padding_fifo_queue"]
    assert [b.tolist() for b in batches] == [
        [[0, 1, 2], [0, 0, 0]],
        [[0, 1, 2, 3], [0, 0, 0, 0]],
        [[0, 1, 2, 3, 4], [0, 1, 0, 0, 0]],
    ]


def test_a_queue_fed_from_the_training_loop_stays_on_its_runners(caplog):
    """A placeholder fed at each step is state no Dataset holds: one warning, queue kept."""

    def pipeline():
        fed = v1.placeholder(tf.int32, [], name="fed_value")
        queue = tf.queue.FIFOQueue(4, [tf.int32], shapes=[[]])
        v1.train.add_queue_runner(v1.train.QueueRunner(queue, [queue.enqueue([fed + 1])]))
        return fed, queue.dequeue()

    with caplog.at_level(logging.WARNING, logger="queue_pipeline"), running("dataset"):
        graph, (fed, value) = build(TF, lambda _: pipeline())
        with new_session(graph) as sess:
            coord = qp.Coordinator()
            threads = qp.start_queue_runners(sess, coord)
            coord.request_stop()
            # The runner may run its enqueue once before the stop: TF's error for
            # the unfed placeholder then comes back through the Coordinator.
            with contextlib.suppress(tf.errors.InvalidArgumentError):
                coord.join(threads, stop_grace_period_secs=5, ignore_live_threads=True)
    [message] = [r.getMessage() for r in caplog.records if r.name == "queue_pipeline"]
    assert "queue 'fifo_queue'" in message and "stays on its QueueRunners" in message
    assert "'fed_value'" in message and "Placeholder" in message and "Fix:" in message
    assert _bridged(graph) == []


@pytest.mark.slow
def test_a_decode_error_in_a_filled_queue_reaches_the_program(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1,2\n3,4\nnot-a-number,5\n")

    def pipeline():
        queue = v1.train.string_input_producer([str(path)], num_epochs=1, shuffle=False)
        _, line = v1.TextLineReader().read(queue)
        a, b = v1.decode_csv(line, [[0], [0]])
        own = tf.queue.FIFOQueue(10, [tf.int32, tf.int32], shapes=[[], []])
        v1.train.add_queue_runner(v1.train.QueueRunner(own, [own.enqueue([a, b])]))
        return own.dequeue_many(1)

    with running("dataset"):
        graph, outputs = build(TF, lambda _: pipeline())
        assert _bridged(graph) == [] and not graph.finalized
        with pytest.raises(tf.errors.InvalidArgumentError, match="not-a-number|Field 0"):
            drain(TF, graph, outputs)
    assert _bridged(graph) == ["fifo_queue"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_cifar_shaped_trainer_runs_unmodified_on_the_dataset_engine(tmp_path, mode):
    """tests/scripts/own_queue_cifar_trainer.py natively and through `queue-pipeline run`."""
    flags = ["--eval"] if mode == "eval" else []
    _, runs = run_script_both_ways(
        "own_queue_cifar_trainer.py",
        lambda way: ["--data_dir", str(tmp_path / way), *flags],
        engines=("queue", "dataset"),
    )
    assert "is filled from tf.data" not in runs["queue"].stderr
    engine = runs["dataset"]
    queue = "random_shuffle_queue" if mode == "train" else "fifo_queue"
    assert f"queue '{queue}'" in engine.stderr and "is filled from tf.data" in engine.stderr
    assert "stays on" not in engine.stderr


def _join_over_one_row(lists):
    """facenet's read_and_augment_data: `lists` decoding threads over one slice producer's row."""
    images = tf.constant([f"img{i}" for i in range(RECORDS)])
    labels = tf.constant(list(range(RECORDS)))
    filename, label = v1.train.slice_input_producer([images, labels], num_epochs=2, shuffle=True)
    examples = []
    for _ in range(lists):
        # a Python stage per thread, as facenet's random rotation
        length = v1.py_func(lambda s: np.int32(len(s)), [filename], tf.int32, stateful=False)
        length.set_shape([])
        examples.append([length, label])
    return v1.train.batch_join(examples, 7, allow_smaller_final_batch=True)


def test_join_lists_reading_one_row_in_turn_get_each_row_once():
    """Each record goes to one list, as with TF's shared queue: every row once per epoch."""
    want, _ = _run("native", lambda: _join_over_one_row(4))
    got, _ = _run("dataset", lambda: _join_over_one_row(4))
    count = lambda batches: collections.Counter(int(x) for _, b in batches for x in b)  # noqa: E731
    assert count(got) == count(want) == collections.Counter({i: 2 for i in range(RECORDS)})


def _prefetched_batches(files):
    """tf-slim's prefetch_queue shape: a served batch, then a queue of whole batches."""
    queue = v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    common = tf.queue.FIFOQueue(20, [tf.string], shapes=[[]])
    enqueue = []
    for _ in range(2):  # parallel_reader: two readers into one common queue
        _, value = v1.FixedLengthRecordReader(record_bytes=49).read(queue)
        enqueue.append(common.enqueue([value]))
    v1.train.add_queue_runner(v1.train.QueueRunner(common, enqueue))
    label = tf.cast(v1.decode_raw(common.dequeue(), tf.uint8)[0], tf.int32)
    batch = v1.train.batch([label], 6)
    prefetch = tf.queue.FIFOQueue(2, [tf.int32], shapes=[[6]])
    v1.train.add_queue_runner(v1.train.QueueRunner(prefetch, [prefetch.enqueue([batch])]))
    return prefetch.dequeue()


def test_a_prefetch_queue_of_served_batches_is_filled_once(cifar_files):
    want, _ = _run("native", lambda: _prefetched_batches(cifar_files))
    got, bridged = _run("dataset", lambda: _prefetched_batches(cifar_files))
    assert "fifo_queue_1" in bridged
    assert sorted(int(x) for b in got for x in b) == sorted(int(x) for b in want for x in b)
    assert sorted(int(x) for b in want for x in b) == list(range(RECORDS))
