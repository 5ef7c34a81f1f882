"""A rebuilt legacy pipeline feeds Keras 3 ``fit`` and tf.data service.

The service tests run an in-process ``DispatchServer`` and two
``WorkerServer``s on localhost (free ports), stopped at module teardown.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import dataset_values, new_session
from queue_pipeline import data

ROWS = 48


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory):
    """3 CSV files of 16 rows: four features and a 0/1 label (the features' sum > 2)."""
    d = tmp_path_factory.mktemp("keras")
    rng = np.random.default_rng(0)
    paths = []
    for i in range(3):
        features = rng.random((ROWS // 3, 4)).round(3)
        lines = [",".join(map(str, row)) + f",{int(row.sum() > 2)}" for row in features]
        path = d / f"part{i}.csv"
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    return paths


def _legacy_csv_batches(files, num_epochs=1):
    """The classic CSV program: producer -> TextLineReader -> decode_csv -> shuffle_batch."""
    queue = qp.string_input_producer(files, num_epochs=num_epochs, seed=1)
    _, line = qp.TextLineReader().read(queue)
    *columns, label = tf.io.decode_csv(line, [[0.0]] * 4 + [[0]])
    return qp.shuffle_batch(
        [tf.stack(columns), label], batch_size=8, capacity=40, min_after_dequeue=10, seed=2
    )


# Keras warns about any Dataset of unknown length (the first epoch ends when it runs out).
@pytest.mark.v2_only(
    "Keras 3 `fit` needs TF 2.x behaviour; TF1 mode: "
    "test_a_session_training_loop_on_a_rebuilt_pipeline"
)
@pytest.mark.filterwarnings("ignore:Your input ran out of data")
@pytest.mark.filterwarnings("ignore:`shuffle=True` was passed")
@pytest.mark.slow
def test_keras_fit_trains_one_epoch_on_a_rebuilt_pipeline(csv_files):
    keras = pytest.importorskip("keras")
    assert int(keras.__version__.split(".")[0]) >= 3
    with tf.Graph().as_default():
        features, labels = _legacy_csv_batches(csv_files)
    dataset = qp.to_dataset((features, labels))
    assert dataset.element_spec == (tf.TensorSpec([8, 4], tf.float32), tf.TensorSpec([8], tf.int32))
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.1),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    before = [w.copy() for w in model.get_weights()]
    history = model.fit(dataset, epochs=1, verbose=0)
    assert len(history.history["loss"]) == 1 and np.isfinite(history.history["loss"][0])
    assert any(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    # One epoch is the legacy num_epochs=1: 48 rows in 6 batches, then the end.
    assert len(dataset_values(dataset)) == ROWS // 8


def test_a_session_training_loop_on_a_rebuilt_pipeline(csv_files):
    """The TF1 way: the rebuilt Dataset's get_next() feeds a Session training loop."""
    with tf.Graph().as_default():
        features, labels = _legacy_csv_batches(csv_files)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        dataset = qp.to_dataset((features, labels))
        assert dataset.element_spec == (
            tf.TensorSpec([8, 4], tf.float32),
            tf.TensorSpec([8], tf.int32),
        )
        x, y = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()

        def dense(name, inputs, units):  # tf.compat.v1.layers needs Keras 2
            w = tf.compat.v1.get_variable(f"{name}/w", [inputs.shape.as_list()[-1], units])
            b = tf.compat.v1.get_variable(f"{name}/b", [units], initializer=tf.zeros_initializer())
            return tf.matmul(inputs, w) + b

        logits = dense("out", tf.nn.relu(dense("hidden", x, 8)), 2)
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(y, logits)
        train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.compat.v1.global_variables_initializer()
        weights = tf.compat.v1.trainable_variables()
    losses = []
    with new_session(graph) as sess:
        sess.run(init)
        before = sess.run(weights)
        with pytest.raises(tf.errors.OutOfRangeError):
            while True:
                losses.append(sess.run([train, loss])[1])
        after = sess.run(weights)
    # One epoch is the legacy num_epochs=1: 48 rows in 6 batches, then the end.
    assert len(losses) == ROWS // 8 and np.all(np.isfinite(losses))
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))


# ------------------------------------------------------------------ tf.data service


# The tests of `service` run on one xdist worker (pytest.ini's --dist loadgroup),
# which starts its servers once.
SERVICE = pytest.mark.xdist_group("rebuild_service")


@pytest.fixture(scope="module")
def service():
    """A dispatcher and two workers on localhost; stopped at teardown."""
    svc = tf.data.experimental.service
    dispatcher = svc.DispatchServer(svc.DispatcherConfig(port=0))
    address = dispatcher.target.split("://")[1]
    workers = []
    try:
        for _ in range(2):
            workers.append(svc.WorkerServer(svc.WorkerConfig(dispatcher_address=address, port=0)))
        yield dispatcher
    finally:
        for worker in workers:
            worker.stop()
        dispatcher.stop()


def _rebuilt_slices(num_epochs=1):
    with tf.Graph().as_default():
        (row,) = qp.slice_input_producer([tf.range(30)], num_epochs=num_epochs, shuffle=False)
        batch = qp.batch([row, row * 2], 4, allow_smaller_final_batch=True)
    return qp.to_dataset(batch)


@SERVICE
def test_service_distributed_epoch_delivers_each_element_once(service):
    dataset = data.distribute(_rebuilt_slices(), service)
    batches = [tuple(c.tolist() for c in b) for b in dataset_values(dataset)]
    rows = sorted(v for first, _ in batches for v in first)
    assert rows == list(range(30))
    assert all([2 * v for v in first] == second for first, second in batches)


@SERVICE
def test_service_with_a_rebuilt_reader_pipeline_and_an_address(service, csv_files):
    with tf.Graph().as_default():
        queue = qp.string_input_producer(csv_files, num_epochs=2, seed=3)
        _, line = qp.TextLineReader().read(queue)
        batch = qp.batch([line], 5, allow_smaller_final_batch=True)
    dataset = data.distribute(
        qp.to_dataset(batch), service.target, processing_mode="distributed_epoch", job_name="lines"
    )
    lines = sorted(v for b in dataset_values(dataset) for v in b.tolist())
    expected = (
        sorted(line.encode() for path in csv_files for line in open(path).read().splitlines()) * 2
    )
    assert lines == sorted(expected)


@SERVICE
def test_service_parallel_epochs_runs_the_whole_pipeline_on_each_worker(service):
    dataset = data.distribute(_rebuilt_slices(), service, processing_mode="parallel_epochs")
    rows = sorted(v for first, _ in dataset_values(dataset) for v in first.tolist())
    assert rows == sorted(list(range(30)) * 2)


def test_distribute_checks_its_arguments():
    dataset = tf.data.Dataset.range(3)
    with pytest.raises(ValueError, match="processing_mode"):
        data.distribute(dataset, "grpc://localhost:1", processing_mode="everywhere")
    with pytest.raises(ValueError, match="service"):
        data.distribute(dataset, "")
    with pytest.raises(TypeError, match="tf.data.Dataset"):
        data.distribute([1, 2], "grpc://localhost:1")
