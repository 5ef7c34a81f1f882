"""The dataset engine: legacy code, unchanged, served by tf.data inside its own graph.

Every test builds the same legacy code under both engines, in fresh graphs,
and checks what a legacy program can observe: the delivered examples (per
epoch multisets, or exact order where both engines are deterministic), the
returned structure and static shapes, the runner collection and the Session
contract (``start_queue_runners``, Coordinator, ``MonitoredTrainingSession``,
``OutOfRangeError``), summaries, the fallback to queues with its reason,
determinism across runs and checkpoint/resume mid-epoch.
"""

from __future__ import annotations

import collections
import importlib
import logging

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import TF, dataset_values, drain, id_label_csv, new_session, session_config
from queue_pipeline import plan
from queue_pipeline._engine import rebuilder as engine_rebuilder
from queue_pipeline._engine import serving as _engine

ENGINES = ("queue", "dataset")


# ---------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory):
    """Three CSV files of 20 rows ``id,label`` with distinct ids."""
    return id_label_csv(tmp_path_factory.mktemp("engine"), rows=20)


def build(engine, fn, *, seed=None):
    """fn() under `engine` in a fresh graph (graph seed `seed`); returns (graph, outputs)."""
    graph = tf.Graph()
    with graph.as_default(), qp.engine(engine):
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        return graph, fn()


def run_both(fn, *, seed=None, max_steps=10_000):
    """{engine: (outputs, batches)} of fn() drained to the end under each engine."""
    out = {}
    for engine in ENGINES:
        graph, outputs = build(engine, fn, seed=seed)
        out[engine] = outputs, drain(qp, graph, outputs, max_steps=max_steps)
        out[engine + " graph"] = graph
    return out


def examples(batches) -> collections.Counter:
    """The multiset of examples (rows of every component) in `batches`."""
    rows = collections.Counter()
    for batch in batches:
        leaves = [np.asarray(x) for x in tf.nest.flatten(batch)]
        for i in range(len(leaves[0])):
            rows[
                tuple(
                    (
                        x.dtype.str,
                        x[i].shape,
                        repr(x[i].tolist()) if x.dtype == object else x[i].tobytes(),
                    )
                    for x in leaves
                )
            ] += 1
    return rows


def served(outputs) -> bool:
    """Whether the dataset engine served `outputs` (a graph: any call in it)."""
    nodes = plan.plan_nodes(outputs) if isinstance(outputs, tf.Graph) else plan.plan_for(outputs)
    return any(node.args.get("engine") == "dataset" for node in nodes)


def spec(outputs):
    """Structure, kinds, dtypes and static shapes of what a batching call returned."""
    return tf.nest.map_structure(
        lambda t: (
            "SparseTensor" if isinstance(t, tf.SparseTensor) else "Tensor",
            t.dtype,
            t.shape.as_list() if t.shape.rank is not None else None,
        ),
        outputs,
    )


def csv_pipeline(files, *, num_epochs=1, shuffle=False, seed=None, threads=1):
    queue = qp.string_input_producer(files, num_epochs=num_epochs, shuffle=shuffle, seed=seed)
    _, line = qp.TextLineReader().read(queue)
    ident, label = tf.io.decode_csv(line, [[0], [0]])
    return qp.shuffle_batch(
        [ident, label],
        6,
        capacity=40,
        min_after_dequeue=10,
        seed=seed,
        num_threads=threads,
        allow_smaller_final_batch=True,
    )


# ----------------------------------------------------------- legacy examples


LEGACY_EXAMPLES = [
    "csv_reading",
    "mnist_tfrecords",
    "preloaded_data",
    "multi_reader_join",
    "detection_dynamic_pad",
    "cifar10_binary",
    "feeding",
]
NO_BATCHING_CALL = {"csv_reading": "one example per run", "feeding": "fed by a py_func"}


@pytest.mark.parametrize("name", LEGACY_EXAMPLES)
def test_every_legacy_example_delivers_the_same_examples_on_both_engines(name):
    module = importlib.import_module(f"legacy_examples.{name}")
    result = run_both(module.legacy)
    (queue_out, queue_batches), (dataset_out, dataset_batches) = result["queue"], result["dataset"]
    assert spec(dataset_out) == spec(queue_out)
    assert len(dataset_batches) == len(queue_batches) > 0
    if name == "csv_reading":
        queue_batches, dataset_batches = (
            [[np.asarray(x)[None] for x in b] for b in batches]
            for batches in (queue_batches, dataset_batches)
        )
    assert examples(dataset_batches) == examples(queue_batches)
    # Programs without a batching call have nothing for the engine to serve.
    assert served(result["dataset graph"]) == (name not in NO_BATCHING_CALL)


def test_training_input_with_num_epochs_delivers_each_example_every_epoch():
    from legacy_examples import mnist_tfrecords

    paths = mnist_tfrecords._compare_files()  # noqa: SLF001 - the bundled files
    result = run_both(lambda: mnist_tfrecords.inputs(paths["t10k"], 40, num_epochs=2, seed=1))
    queue_rows, dataset_rows = (examples(result[e][1]) for e in ENGINES)
    assert served(result["dataset"][0])
    assert dataset_rows == queue_rows
    assert set(dataset_rows.values()) == {2}  # every example once per epoch


# ------------------------------------------------------------- Session contract


def test_runner_collection_holds_one_thread_less_runner(csv_files, caplog):
    graph, outputs = build("dataset", lambda: csv_pipeline(csv_files))
    runners = graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
    assert [type(r).__name__ for r in runners] == ["ServedRunner"]
    assert runners[0].enqueue_ops == []
    assert runners[0].queue.queue_ref.op.name == "shuffle_batch/random_shuffle_queue"
    with graph.as_default(), new_session(graph) as sess, caplog.at_level(logging.WARNING):
        sess.run(tf.compat.v1.local_variables_initializer())  # still works: epochs exist
        coord = qp.Coordinator()
        assert qp.start_queue_runners(sess, coord) == []
        assert tf.compat.v1.train.start_queue_runners(sess, coord) == []  # TF's own
        assert sess.run(outputs)[0].shape == (6,)
        coord.request_stop()
        coord.join([])
    assert "no queue runners" not in caplog.text


def test_end_of_input_is_out_of_range_error_every_time(csv_files):
    graph, outputs = build("dataset", lambda: csv_pipeline(csv_files))
    with graph.as_default(), new_session(graph) as sess:
        sizes = []
        with pytest.raises(tf.errors.OutOfRangeError):
            for _ in range(100):
                sizes.append(len(sess.run(outputs)[0]))
        assert sum(sizes) == 60 and sizes[:-1] == [6] * 9
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(outputs)


def test_monitored_training_session_runs_until_the_end(csv_files):
    graph, outputs = build("dataset", lambda: csv_pipeline(csv_files, num_epochs=2))
    seen = []
    with graph.as_default():
        tf.compat.v1.train.get_or_create_global_step()
        with tf.compat.v1.train.MonitoredTrainingSession(config=session_config()) as sess:
            while not sess.should_stop():
                seen += sess.run(outputs)[0].tolist()
    assert sorted(seen) == sorted(2 * [i * 100 + j for i in range(3) for j in range(20)])


def test_static_structure_and_types_equal_the_queue_engines(csv_files):
    def pipeline():
        queue = qp.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader().read(queue)
        ident, label = tf.io.decode_csv(line, [[0], [0]])
        return {
            "dict": qp.batch({"id": ident, "label": label}, 4),
            "bare": qp.batch(ident, 5, allow_smaller_final_batch=True),
        }

    graphs = {e: build(e, pipeline) for e in ENGINES}
    assert spec(graphs["dataset"][1]) == spec(graphs["queue"][1])
    assert spec(graphs["dataset"][1]["dict"]) == {
        "id": ("Tensor", tf.int32, [4]),
        "label": ("Tensor", tf.int32, [4]),
    }


CONFIGS = {
    "shapes_and_dynamic_pad": lambda line, ident, label: qp.batch(
        [tf.strings.split(line, ","), label], 4, dynamic_pad=True
    ),
    "sparse": lambda line, ident, label: qp.batch(
        [tf.sparse.from_dense(tf.reshape(label, [1])), ident], 4
    ),
    "maybe_batch_per_record_keep": lambda line, ident, label: qp.maybe_batch(
        [ident, label], tf.equal(label % 2, 0), 3, allow_smaller_final_batch=True
    ),
    "explicit_shapes": lambda line, ident, label: qp.batch([ident, label], 4, shapes=[[], []]),
}


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_batching_options_same_shapes_and_examples(csv_files, config):
    def pipeline():
        queue = qp.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader().read(queue)
        ident, label = tf.io.decode_csv(line, [[0], [0]])
        out = CONFIGS[config](line, ident, label)
        return [tf.sparse.to_dense(x) if isinstance(x, tf.SparseTensor) else x for x in out], out

    graphs = {e: build(e, pipeline) for e in ENGINES}
    assert spec(graphs["dataset"][1][1]) == spec(graphs["queue"][1][1])
    assert served(graphs["dataset"][1][0])
    batches = {e: drain(qp, g, out[0]) for e, (g, out) in graphs.items()}
    assert [b[0].shape for b in batches["dataset"]] == [b[0].shape for b in batches["queue"]]
    assert examples(batches["dataset"]) == examples(batches["queue"])


def test_batch_join_and_a_batch_of_a_served_batch(csv_files):
    def pipeline():
        queue = qp.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        lists = []
        for _ in range(2):
            _, line = qp.TextLineReader().read(queue)
            lists.append(list(tf.io.decode_csv(line, [[0], [0]])))
        joined = qp.batch_join(lists, 4)
        return qp.batch(joined, 5, enqueue_many=True)  # re-batch the batches

    result = run_both(pipeline)
    assert served(result["dataset"][0])
    assert examples(result["dataset"][1]) == examples(result["queue"][1])
    assert sum(examples(result["dataset"][1]).values()) == 60


def test_fill_summaries_keep_tfs_tags_and_report_one(csv_files):
    tags, values = {}, {}
    for engine in ENGINES:
        graph, outputs = build(engine, lambda: csv_pipeline(csv_files))
        with graph.as_default(), new_session(graph) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            summary = tf.compat.v1.Summary.FromString(sess.run(tf.compat.v1.summary.merge_all()))
        tags[engine] = sorted(v.tag for v in summary.value)
        values[engine] = {v.tag: v.simple_value for v in summary.value}
    assert (
        tags["dataset"]
        == tags["queue"]
        == ["input_producer/fraction_of_32_full", "shuffle_batch/fraction_over_10_of_30_full"]
    )
    assert set(values["dataset"].values()) == {1.0}


def test_plan_and_to_dataset_see_through_the_served_call(csv_files):
    graph, outputs = build("dataset", lambda: csv_pipeline(csv_files))
    assert plan.plan_for(outputs).kinds == [
        "string_input_producer",
        "TextLineReader.read",
        "shuffle_batch",
    ]
    dataset = qp.to_dataset(outputs)
    ids = sorted(i for batch, _ in dataset_values(dataset) for i in batch.tolist())
    assert ids == sorted(i * 100 + j for i in range(3) for j in range(20))


def test_default_engine_is_still_the_queue_engine(csv_files):
    graph = tf.Graph()
    with graph.as_default():
        outputs = csv_pipeline(csv_files)
    assert outputs[0].name == "shuffle_batch:0"
    assert {type(r).__name__ for r in graph.get_collection("queue_runners")} == {"QueueRunner"}
    assert not served(outputs)


# ------------------------------------------------------------------- fallback


def _python_pipeline(files):
    queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = qp.TextLineReader().read(queue)
    upper = tf.compat.v1.py_func(lambda s: s.upper(), [line], tf.string, name="shout")
    upper.set_shape([])
    return qp.batch([upper], 5)


def test_a_py_func_stage_runs_in_the_map_with_its_python_function(csv_files, caplog):
    """A ``tf.py_func`` between reader and batch runs in tf.data's map.

    See NOTE [ Lifting a region ].
    """
    calls = []

    def shout(s):
        calls.append(s)
        return s.upper()

    def pipeline():
        queue = qp.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader().read(queue)
        upper = tf.compat.v1.py_func(shout, [line], tf.string, name="shout")
        upper.set_shape([])
        return qp.batch([upper], 5)

    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        graph, outputs = build("dataset", pipeline)
    assert not [
        r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "queue_pipeline"
    ]
    assert outputs.name == "batch:0" and served(outputs)
    assert {type(r).__name__ for r in graph.get_collection("queue_runners")} == {"ServedRunner"}
    rows = drain(qp, graph, outputs)
    assert len(rows) == 12 and rows[0].tolist() == [b"0,0", b"1,1", b"2,2", b"3,3", b"4,0"]
    assert len(calls) == 60  # once per record: the user's own Python function


def test_a_failing_py_func_fails_the_step_as_on_tfs_queues(csv_files):
    def pipeline():
        queue = qp.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader().read(queue)
        upper = tf.compat.v1.py_func(lambda s: 1 / 0, [line], tf.string, name="shout")
        upper.set_shape([])
        return qp.batch([upper], 5)

    graph, outputs = build("dataset", pipeline)
    assert served(outputs)
    with pytest.raises(tf.errors.OpError, match="ZeroDivisionError"):
        drain(qp, graph, outputs)


def _foreign_queue_pipeline():
    queue = tf.queue.FIFOQueue(8, [tf.int32], shapes=[[]])
    # Rows read from a trainable variable, which an optimizer may change while
    # the input runs: nothing a Dataset can hold.
    rows = tf.compat.v1.Variable([1, 2], trainable=True)
    enqueue = [queue.enqueue_many([rows.read_value()])]
    qp.add_queue_runner(qp.QueueRunner(queue, enqueue))
    return qp.batch([queue.dequeue()], 4)


def test_a_queue_filled_like_a_producer_is_read_from_the_graph_as_one():
    """An endless enqueue_many of rows is an input_producer.

    See NOTE [ Stages read from the graph ].
    """

    def pipeline():
        queue = tf.queue.FIFOQueue(8, [tf.int32], shapes=[[]])
        qp.add_queue_runner(qp.QueueRunner(queue, [queue.enqueue_many([tf.constant([1, 2])])]))
        return qp.batch([queue.dequeue()], 4)

    graph, outputs = build("dataset", pipeline)
    assert served(outputs)
    batches = drain(qp, graph, outputs, max_steps=3)
    assert [b.tolist() for b in batches] == [[1, 2, 1, 2]] * 3


def test_a_queue_gathering_several_enqueues_is_interleaved():
    """tf-slim's parallel_reader shape: N plain enqueue ops into one queue, served."""

    def pipeline():
        queue = tf.queue.FIFOQueue(8, [tf.int32], shapes=[[]])
        enqueue = [queue.enqueue([tf.constant(1)]), queue.enqueue([tf.constant(2)])]
        qp.add_queue_runner(qp.QueueRunner(queue, enqueue))
        return qp.batch([queue.dequeue()], 4)

    graph, outputs = build("dataset", pipeline)
    assert served(outputs)
    batches = drain(qp, graph, outputs, max_steps=3)
    assert [b.tolist() for b in batches] == [[1, 2, 1, 2]] * 3


@pytest.mark.parametrize(
    "make,words",
    [
        (_foreign_queue_pipeline, ["Variable", "trainable"]),
    ],
    ids=["foreign_queue"],
)
def test_other_fallbacks_name_their_reason_and_still_deliver(make, words, caplog):
    with caplog.at_level(logging.WARNING, logger="queue_pipeline"):
        graph, outputs = build("dataset", make)
    [record] = [r for r in caplog.records if r.name == "queue_pipeline"]
    assert all(word in record.getMessage() for word in words), record.getMessage()
    assert not served(outputs)
    assert len(drain(qp, graph, outputs, max_steps=3)) == 3


def _preloaded_var_program(impl, images, labels, *, batch_size=4, num_epochs=1):
    """The shape of TF's fully_connected_preloaded_var.py, on `impl`.

    The variables (``collections=[]``) get their values by feeding their
    initializers after the graph is built, before the runners start.
    Returns the batches read until the end.
    """
    graph = tf.Graph()
    with graph.as_default():
        images_in = tf.compat.v1.placeholder(images.dtype, images.shape)
        labels_in = tf.compat.v1.placeholder(labels.dtype, labels.shape)
        images_var = tf.compat.v1.Variable(images_in, trainable=False, collections=[])
        labels_var = tf.compat.v1.Variable(labels_in, trainable=False, collections=[])
        image, label = impl.slice_input_producer(
            [images_var, labels_var], num_epochs=num_epochs, shuffle=False
        )
        batch = impl.batch([image * 2, label], batch_size)
        init = [
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
        ]
    out = []
    with new_session(graph) as sess:
        sess.run(init)
        sess.run(images_var.initializer, feed_dict={images_in: images})
        sess.run(labels_var.initializer, feed_dict={labels_in: labels})
        coord = impl.Coordinator()
        threads = impl.start_queue_runners(sess=sess, coord=coord)
        try:
            while True:
                out.append(sess.run(batch))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    return graph, batch, out


def test_variables_fed_before_the_runners_start_are_read_then(caplog):
    """fully_connected_preloaded_var: served, and reads the values fed at init time."""
    images = np.arange(24, dtype=np.float32).reshape(12, 2)
    labels = np.arange(12, dtype=np.int64)
    _, _, want = _preloaded_var_program(TF, images, labels)
    with caplog.at_level(logging.WARNING, logger="queue_pipeline"), qp.engine("dataset"):
        graph, batch, got = _preloaded_var_program(qp, images, labels)
    assert served(batch)
    assert not [r for r in caplog.records if r.name == "queue_pipeline"]
    assert [b.tolist() for b, _ in got] == [b.tolist() for b, _ in want]
    assert [b.tolist() for _, b in got] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    # No thread reads the variables: the stand-in runner initializes the iterator.
    assert {type(r).__name__ for r in graph.get_collection("queue_runners")} == {"ServedRunner"}


def test_a_served_variable_pipeline_starts_once_per_session():
    graph = tf.Graph()
    with graph.as_default(), qp.engine("dataset"):
        table = tf.compat.v1.Variable(np.arange(12), trainable=False, name="table")
        outputs = qp.batch(qp.slice_input_producer([table], num_epochs=1, shuffle=False), 4)
    assert served(outputs)
    with graph.as_default(), new_session(graph) as sess:
        sess.run(table.initializer)
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess=sess, coord=coord)
        first = sess.run(outputs).tolist()
        threads += qp.start_queue_runners(sess=sess, coord=coord)  # no restart
        assert [first] + [sess.run(outputs).tolist() for _ in range(2)] == [
            [0, 1, 2, 3],
            [4, 5, 6, 7],
            [8, 9, 10, 11],
        ]
        coord.request_stop()
        coord.join(threads)
    with graph.as_default(), new_session(graph) as sess:  # a new session starts afresh
        sess.run(table.initializer)
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess=sess, coord=coord)
        assert sess.run(outputs).tolist() == [0, 1, 2, 3]
        coord.request_stop()
        coord.join(threads)


def test_a_fallback_gets_back_the_shared_producer_runner(csv_files, caplog):
    def pipeline():
        queue = qp.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader().read(queue)
        served_batch = qp.batch([line], 5)
        _, other = qp.TextLineReader().read(queue)
        # a per-record op reading a trainable variable: no Dataset can hold it
        weight = tf.compat.v1.Variable(1, trainable=True, name="weight")
        shout = tf.strings.join([other, tf.strings.as_string(weight.read_value())])
        return served_batch, qp.batch([shout], 5, allow_smaller_final_batch=True)

    with caplog.at_level(logging.WARNING, logger="queue_pipeline"):
        graph, (first, second) = build("dataset", pipeline)
    assert served(first) and not served(second)
    queues = {
        r.queue.queue_ref.op.name
        for r in graph.get_collection("queue_runners")
        if type(r).__name__ == "QueueRunner"
    }
    assert queues == {"input_producer", "batch_1/fifo_queue"}
    assert sum(len(b) for b in drain(qp, graph, second)) == 60  # the producer is running


# ------------------------------------------------------- determinism, checkpoints


def _noisy_pipeline(files, seed, *, shuffled_pair=False):
    """A seeded random value per record; `shuffled_pair`: from a per-record random_shuffle
    (no batch form), else a uniform draw (drawn per batch, keyed by the batch)."""
    queue = qp.string_input_producer(files, num_epochs=2, seed=seed)
    _, line = qp.TextLineReader().read(queue)
    ident, label = tf.io.decode_csv(line, [[0], [0]])
    if shuffled_pair:
        noise = tf.random.shuffle(tf.stack([ident, 1000 + ident]), seed=seed)[0]
    else:
        noise = tf.random.uniform([], maxval=1000, dtype=tf.int32, seed=seed)
    return qp.shuffle_batch(
        [ident, label + noise],
        7,
        capacity=30,
        min_after_dequeue=10,
        num_threads=2,
        seed=seed,
        allow_smaller_final_batch=True,
    )


@pytest.mark.parametrize("shuffled_pair", [False, True], ids=["per_batch", "per_record"])
@pytest.mark.parametrize(
    "graph_seed,op_seed", [(3, None), (None, 11)], ids=["graph_seed", "op_seed"]
)
def test_seeded_pipelines_repeat_their_order_and_random_values(
    csv_files, graph_seed, op_seed, shuffled_pair
):
    runs = []
    for _ in range(2):
        graph, outputs = build(
            "dataset",
            lambda: _noisy_pipeline(csv_files, op_seed, shuffled_pair=shuffled_pair),
            seed=graph_seed,
        )
        runs.append([tuple(x.tolist() for x in b) for b in drain(qp, graph, outputs)])
    assert runs[0] == runs[1]
    assert sum(len(b[0]) for b in runs[0]) == 120
    ids = [i for b in runs[0] for i in b[0]]
    assert ids != sorted(ids)  # it did shuffle


def test_checkpoint_restores_the_input_position_mid_epoch(csv_files, tmp_path):
    def make():
        graph, outputs = build(
            "dataset", lambda: csv_pipeline(csv_files, num_epochs=2, shuffle=True, seed=5)
        )
        with graph.as_default():
            tf.compat.v1.Variable(1.0, name="weights")
            saver = tf.compat.v1.train.Saver()
            init = tf.compat.v1.global_variables_initializer()
        return graph, outputs, saver, init

    def fetch(sess, outputs, n):
        return [[x.tolist() for x in sess.run(outputs)] for _ in range(n)]

    graph, outputs, saver, init = make()
    with graph.as_default(), new_session(graph) as sess:
        sess.run(init)
        fetch(sess, outputs, 4)  # 24 of 120 examples: mid-epoch, buffer full
        path = saver.save(sess, str(tmp_path / "model"))
        expected = fetch(sess, outputs, 5)
    with graph.as_default(), new_session(graph) as sess:  # same graph, new session
        saver.restore(sess, path)
        assert fetch(sess, outputs, 5) == expected
    graph, outputs, saver, init = make()  # the program rebuilt
    with graph.as_default(), new_session(graph) as sess:
        saver.restore(sess, path)
        assert fetch(sess, outputs, 5) == expected
    fresh = tf.Graph()  # the meta graph, with its thread-less runner
    with fresh.as_default(), new_session(fresh) as sess:
        restorer = tf.compat.v1.train.import_meta_graph(path + ".meta")
        restorer.restore(sess, path)
        names = [t.name for t in tf.nest.flatten(outputs)]
        assert fetch(sess, names, 5) == expected
        coord = qp.Coordinator()
        threads = qp.start_queue_runners(sess, coord)
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)


# ------------------------------------------------------------ vectorized decoding


@pytest.mark.skipif(_engine._vectorizer() is None, reason="no vectorizer module")
def test_vectorized_decoding_shuffles_raw_records_then_decodes_batches(csv_files, caplog):
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        result = run_both(lambda: csv_pipeline(csv_files, num_epochs=2, shuffle=True, seed=2))
    assert "vectorized, decoded once per batch" in caplog.text
    assert examples(result["dataset"][1]) == examples(result["queue"][1])
    ops = result["dataset graph"].get_operations()
    shuffle = next(op for op in ops if op.type.startswith("ShuffleDataset"))
    batch = next(op for op in ops if op.type.startswith("BatchDataset"))
    decode = next(op for op in ops if op.type.startswith("ParallelMapDataset"))
    assert shuffle.get_attr("output_types") == [tf.string]  # the raw lines are shuffled,
    assert batch.get_attr("output_types") == [tf.string]  # batched,
    assert decode.get_attr("output_types") == [tf.int32, tf.int32]  # then decoded,
    assert decode.inputs[0].op is batch  # straight from the batch (no buffer between),
    assert [op.inputs[0].op for op in ops if op.type == "PrefetchDataset"] == [decode]  # once


def test_per_record_path_when_the_vectorizer_is_absent_or_refuses(csv_files, caplog, monkeypatch):
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        build("dataset", lambda: _noisy_pipeline(csv_files, 1, shuffled_pair=True))
    assert "per-record map (" in caplog.text and "RandomShuffle" in caplog.text
    caplog.clear()
    monkeypatch.setattr(_engine, "_vectorizer", lambda: None)
    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        result = run_both(lambda: csv_pipeline(csv_files, num_epochs=1))
    assert "queue_pipeline._engine.vectorize is not available" in caplog.text
    assert examples(result["dataset"][1]) == examples(result["queue"][1])


def test_large_preloaded_arrays_are_gathered_in_memory(monkeypatch, caplog):
    monkeypatch.setattr(engine_rebuilder, "LARGE_ROWS_BYTES", 1_000)
    images = np.arange(3000, dtype=np.float32).reshape(300, 10)
    labels = np.arange(300) % 7

    def pipeline():
        image, label = qp.slice_input_producer(
            [tf.constant(images), tf.constant(labels)], num_epochs=2, shuffle=True, seed=4
        )
        return qp.batch([image, label], 32, allow_smaller_final_batch=True)

    with caplog.at_level(logging.INFO, logger="queue_pipeline"):
        result = run_both(pipeline)
    assert "bytes of preloaded rows gathered in memory" in caplog.text
    assert spec(result["dataset"][0]) == spec(result["queue"][0])
    assert examples(result["dataset"][1]) == examples(result["queue"][1])


@pytest.mark.parametrize("cached", ["on", "off"])
def test_cached_steps_can_be_routed_through_session_run(csv_files, monkeypatch, cached):
    """QUEUE_PIPELINE_CACHED_STEPS=off: every step reaches a wrapper of Session.run."""
    from queue_pipeline._diagnostics import session_hook  # noqa: PLC0415

    monkeypatch.setenv(session_hook.CACHED_STEPS_ENV, cached)

    def pipeline():
        queue = qp.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader().read(queue)
        return qp.batch([line], 5)

    graph, outputs = build("dataset", pipeline)
    assert served(outputs)
    calls = []
    original = tf.compat.v1.Session._run  # noqa: SLF001 - what a profiler wraps

    def profiled(self, handle, fetches, *args, **kwargs):
        calls.append(fetches)
        return original(self, handle, fetches, *args, **kwargs)

    monkeypatch.setattr(tf.compat.v1.Session, "_run", profiled)
    rows = drain(qp, graph, outputs)
    assert len(rows) == 12
    steps = sum(1 for fetches in calls if fetches is outputs)
    assert steps == (13 if cached == "off" else 0), steps
