"""Real downstreams of TF's queue API, unmodified, under install() on both engines.

Each test runs the same program three ways -- native TF, ``install()`` on
the queue engine, ``install()`` on the dataset engine -- and compares what
it delivers with native TF's. The programs are TF's own ``Supervisor`` with
its default services (summary thread, step counter, checkpoint thread) and
tf-slim's data layer (``parallel_reader``, ``dataset_data_provider``,
``prefetch_queue``, ``tf_slim.queues``), the best-known library built on
TF's queue API. tf-slim is an optional test dependency (the ``test`` extra
installs it); its tests are skipped without it.
"""

from __future__ import annotations

import collections
import logging
import threading

import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import WAYS, running, session_config

RECORDS = 24


@pytest.fixture(scope="module")
def example_files(tmp_path_factory):
    """Two TFRecord files of tf.train.Examples: ``id`` (int64) and ``text`` (bytes)."""
    d = tmp_path_factory.mktemp("examples")
    paths = []
    for f in range(2):
        path = str(d / f"part-{f}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(RECORDS // 2):
                n = f * 100 + i
                writer.write(
                    tf.train.Example(
                        features=tf.train.Features(
                            feature={
                                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[n])),
                                "text": tf.train.Feature(
                                    bytes_list=tf.train.BytesList(value=[f"row {n}".encode()])
                                ),
                            }
                        )
                    ).SerializeToString()
                )
        paths.append(path)
    return paths


def _ids():
    return collections.Counter(f * 100 + i for f in range(2) for i in range(RECORDS // 2))


def _parse(serialized):
    v1 = tf.compat.v1
    features = v1.parse_single_example(
        serialized,
        {"id": tf.io.FixedLenFeature([], tf.int64), "text": tf.io.FixedLenFeature([], tf.string)},
    )
    return features["id"], features["text"]


# ------------------------------------------------------------------- Supervisor


def _supervised_training(files, logdir, *, step_counter):
    """A Supervisor program with its default services on; returns (ids, steps, services).

    The TF 1.x shape: a global step, a summary, a queue pipeline into a tiny
    model, ``Supervisor(logdir=...)`` with its summary, step-counter and
    checkpoint threads (short intervals so that each one runs), and
    ``managed_session`` looping until the input ends. Without
    `step_counter` the model counts steps in a local variable, so that the
    Supervisor finds no global step and starts no step counter.
    """
    v1 = tf.compat.v1
    ids, step_value = [], None
    with tf.Graph().as_default():
        if step_counter:
            global_step = v1.train.get_or_create_global_step()
        else:
            global_step = v1.Variable(
                0, trainable=False, name="steps", collections=[v1.GraphKeys.LOCAL_VARIABLES]
            )
        filenames = v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
        _, serialized = v1.TFRecordReader().read(filenames)
        example_id, _ = _parse(serialized)
        batch = v1.train.batch([example_id], batch_size=4, allow_smaller_final_batch=True)
        weight = v1.get_variable("w", [], initializer=v1.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.cast(batch, tf.float32) * 0.01 - weight))
        v1.summary.scalar("weight", weight)  # the summary thread must not take batches
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
        sv = v1.train.Supervisor(logdir=logdir, save_summaries_secs=0.05, save_model_secs=0.05)
        with sv.managed_session(config=session_config()) as sess:
            services = sorted(
                {
                    type(t).__name__
                    for t in threading.enumerate()
                    if type(t).__name__.startswith("SV")
                }
            )
            while not sv.should_stop():
                try:
                    _, value = sess.run([train, batch])
                except tf.errors.OutOfRangeError:
                    break
                ids += value.tolist()
            step_value = sess.run(global_step)
    return ids, step_value, services


@pytest.mark.tf1_only(
    "under TF 2.x defaults TF's own Supervisor services fail natively: "
    "their threads see eager execution (the step counter calls .numpy() "
    "on the graph's global step, the checkpoint thread's Saver refuses "
    "graph variables); TF 2.x: test_install's Supervisor test"
)
@pytest.mark.parametrize("way", WAYS)
def test_supervisor_with_its_default_services_like_native(way, example_files, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="queue_pipeline"), running(way):
        ids, step, services = _supervised_training(
            example_files, str(tmp_path / "sv"), step_counter=True
        )
    assert collections.Counter(ids) == _ids()
    assert step == RECORDS // 4
    assert services == ["SVStepCounterThread", "SVSummaryThread", "SVTimerCheckpointThread"]
    assert tf.compat.v1.train.latest_checkpoint(str(tmp_path / "sv"))
    assert not [r for r in caplog.records if r.name == "queue_pipeline"]  # no fallback


# ---------------------------------------------------------------------- tf-slim


def _slim():
    return pytest.importorskip("tf_slim")


def _drain_with(driver, fetch, logdir):
    """Runs `fetch` to its end with tf-slim's QueueRunners or a plain Supervisor."""
    v1 = tf.compat.v1
    out = []
    if driver == "slim_queues":
        slim = _slim()
        init = [v1.global_variables_initializer(), v1.local_variables_initializer()]
        with v1.Session(config=session_config()) as sess:
            sess.run(init)
            with slim.queues.QueueRunners(sess):
                try:
                    while True:
                        out.append(sess.run(fetch))
                except tf.errors.OutOfRangeError:
                    pass
        return out
    sv = v1.train.Supervisor(logdir=logdir, save_summaries_secs=0, save_model_secs=0)
    with sv.managed_session(config=session_config()) as sess:
        while not sv.should_stop():
            try:
                out.append(sess.run(fetch))
            except tf.errors.OutOfRangeError:
                break
    return out


def _provider_pipeline(files, *, shuffle):
    """DatasetDataProvider (parallel_read, 2 readers) -> batch -> prefetch_queue."""
    slim = _slim()
    from tf_slim.data import dataset, dataset_data_provider, prefetch_queue, tfexample_decoder

    decoder = tfexample_decoder.TFExampleDecoder(
        {"id": tf.io.FixedLenFeature([], tf.int64), "text": tf.io.FixedLenFeature([], tf.string)},
        {"id": tfexample_decoder.Tensor("id"), "text": tfexample_decoder.Tensor("text")},
    )
    source = dataset.Dataset(
        data_sources=files,
        reader=tf.compat.v1.TFRecordReader,
        decoder=decoder,
        num_samples=RECORDS,
        items_to_descriptions={},
    )
    provider = dataset_data_provider.DatasetDataProvider(
        source,
        num_readers=2,
        shuffle=shuffle,
        num_epochs=1,
        common_queue_capacity=32,
        common_queue_min=8,
        seed=1,
    )
    example_id, text = provider.get(["id", "text"])
    batch = tf.compat.v1.train.batch([example_id, text], 4)  # 24 records: full batches
    del slim
    return prefetch_queue.prefetch_queue(batch, capacity=2).dequeue()


def _single_pass_pipeline(files):
    """parallel_reader.single_pass_read -> parse -> batch."""
    _slim()
    from tf_slim.data import parallel_reader

    _, serialized = parallel_reader.single_pass_read(files, tf.compat.v1.TFRecordReader)
    example_id, text = _parse(serialized)
    return tf.compat.v1.train.batch([example_id, text], 4, allow_smaller_final_batch=True)


SLIM_CASES = {
    "provider_in_order": lambda files: _provider_pipeline(files, shuffle=False),
    "provider_shuffled": lambda files: _provider_pipeline(files, shuffle=True),
    "single_pass_read": _single_pass_pipeline,
}


@pytest.mark.parametrize("driver", ["slim_queues", "supervisor"])
@pytest.mark.parametrize("case", list(SLIM_CASES))
@pytest.mark.slow
def test_tf_slim_data_layer_delivers_what_native_tf_does(
    case, driver, example_files, tmp_path, caplog
):
    """Also: the dataset engine serves tf-slim's pipelines (parallel_reader's gathering
    queue included) without falling back to queues."""
    results = {}
    for way in WAYS:
        caplog.clear()
        with (
            caplog.at_level(logging.INFO, logger="queue_pipeline"),
            running(way),
            tf.Graph().as_default(),
        ):
            fetch = SLIM_CASES[case](example_files)
            batches = _drain_with(driver, fetch, str(tmp_path / way))
        log = [r for r in caplog.records if r.name == "queue_pipeline"]
        assert not [r.getMessage() for r in log if r.levelno >= logging.WARNING]
        if way == "dataset":
            assert any("runs on tf.data" in r.getMessage() for r in log)
        results[way] = collections.Counter(
            (int(i), bytes(t)) for ids, texts in batches for i, t in zip(ids, texts)
        )
    want = collections.Counter((n, f"row {n}".encode()) for n in _ids().elements())
    assert results["native"] == want
    assert results["queue"] == want
    assert results["dataset"] == want


# ------------------------------------------------------------ TF's internal helpers


def test_internal_helpers_of_the_input_module_stay_tfs():
    """Code written against tensorflow.python.training.input keeps TF's private helpers."""
    from tensorflow.python.training import input as before

    helpers = {
        name: vars(before)[name]
        for name in vars(before)
        if name.startswith("_") and not name.startswith("__") and callable(vars(before)[name])
    }
    assert {"_as_tensor_list", "_as_original_type", "_store_sparse_tensors"} <= set(helpers)
    with qp.install():
        from tensorflow.python.training import input as during

        assert during.batch is qp.batch  # the public API is routed
        for name, helper in helpers.items():
            assert getattr(during, name) is helper, name
        with tf.Graph().as_default():
            tensors = {"b": tf.constant(1), "a": tf.constant([2.0])}
            listed = during._as_tensor_list(tensors)
            assert [t.dtype for t in listed] == [tf.float32, tf.int32]  # sorted keys
            assert during._as_original_type(tensors, listed) == {"a": listed[0], "b": listed[1]}
        assert before.batch is not qp.batch  # TF's own module is never changed
