"""to_dataset(): every plan shape and legacy example, rebuilt and compared with the legacy run.

Each test builds a legacy pipeline in a fresh graph, rebuilds it with
``queue_pipeline.to_dataset`` and checks (1) the rebuilt Dataset's element
structure, dtypes and static shapes equal the legacy outputs' and (2)
``compare`` finds the same examples: in order where both sides are
deterministic, as per-epoch multisets otherwise. The errors for what cannot
be rebuilt, the lifting module's inspectable region and the CLI's
"compare a legacy pipeline with its own rebuild" are tested here too.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorflow as tf

import queue_pipeline as qp
from helpers import dataset_values, new_session, tf1_mode
from queue_pipeline import cli
from queue_pipeline._rebuild import lift as _lift
from queue_pipeline._rebuild import walk as _walk
from queue_pipeline.compare import compare, rebuilt_twin
from queue_pipeline.errors import NotRebuildableError
from queue_pipeline._rebuild.rebuilder import Rebuilder

TIMEOUT = 20

# ------------------------------------------------------------------ data files


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Small files in every format the readers take; {kind: [paths]}."""
    d = tmp_path_factory.mktemp("rebuild")
    out = {"csv": [], "bin": [], "tfrecord": [], "whole": []}
    for i in range(3):
        path = d / f"data{i}.csv"
        path.write_text("a,b\n" + "".join(f"{i * 100 + j},{j % 3}\n" for j in range(7)))
        out["csv"].append(str(path))
        path = d / f"data{i}.bin"
        path.write_bytes(b"HD" + bytes(range(i * 30, i * 30 + 24)))  # 2-byte header, 6 x 4
        out["bin"].append(str(path))
        path = d / f"data{i}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for j in range(5):
                feature = {
                    "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i * 10 + j])),
                    "tags": tf.train.Feature(
                        float_list=tf.train.FloatList(value=[float(k) for k in range(j % 3)])
                    ),
                }
                writer.write(
                    tf.train.Example(
                        features=tf.train.Features(feature=feature)
                    ).SerializeToString()
                )
        out["tfrecord"].append(str(path))
        path = d / f"whole{i}.txt"
        path.write_text("x" * (i + 1))
        out["whole"].append(str(path))
    return out


# ------------------------------------------------------------------ helpers


def _spec_of(outputs):
    """The element_spec a faithful rebuild of `outputs` has (lists become tuples)."""
    if isinstance(outputs, tf.SparseTensor):
        return tf.SparseTensorSpec(outputs.shape, outputs.dtype)
    if isinstance(outputs, tf.Tensor):
        return tf.TensorSpec(outputs.shape, outputs.dtype)
    if isinstance(outputs, dict):
        return {key: _spec_of(value) for key, value in outputs.items()}
    return tuple(_spec_of(value) for value in outputs)


def assert_same_spec(dataset, outputs):
    """Equal structure, dtypes and static shapes; a SparseTensor's may be more specific.

    (The legacy batch of SparseTensors has an unknown static dense shape; the
    rebuilt one knows its batch dimension.)
    """
    got, want = dataset.element_spec, _spec_of(outputs)
    tf.nest.assert_same_structure(got, want)
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
        if isinstance(w, tf.SparseTensorSpec):
            assert isinstance(g, tf.SparseTensorSpec) and g.dtype == w.dtype, (g, w)
            assert w.shape.is_compatible_with(g.shape), (g, w)
            assert g.shape.merge_with(w.shape) == g.shape, (g, w)
        else:
            assert g == w, (got, want)


def rebuild(build, **kwargs):
    """(legacy outputs, rebuilt Dataset) of build() built in a fresh graph."""
    with tf.Graph().as_default():
        outputs = build()
    return outputs, qp.to_dataset(outputs, **kwargs)


def checked_twin(build):
    """A compare twin: rebuilds build() and checks structure, dtypes and static shapes."""

    def twin():
        outputs, dataset = rebuild(build)
        assert_same_spec(dataset, outputs)
        return dataset

    return twin


def assert_rebuild_matches(build, **kwargs):
    report = compare(build, checked_twin(build), timeout=TIMEOUT, **kwargs)
    assert report.matched, report.render()
    return report


# ------------------------------------------------------------------ producers


def _slices(num_epochs=2, shuffle=False, seed=None):
    images = tf.constant(np.arange(40, dtype=np.float32).reshape(10, 4))
    labels = tf.constant(np.arange(10, dtype=np.int64))
    image, label = qp.slice_input_producer(
        [images, labels], num_epochs=num_epochs, shuffle=shuffle, seed=seed
    )
    return image, tf.cast(label, tf.int32) * 3


def test_slice_input_producer_over_constants_in_order():
    report = assert_rebuild_matches(lambda: qp.batch(list(_slices()), 4))
    assert report.mode.startswith("ordered") and report.twin.examples == 20


def test_slice_input_producer_shuffled_gives_each_epoch_once():
    report = assert_rebuild_matches(
        lambda: qp.batch(list(_slices(num_epochs=3, shuffle=True, seed=3)), 5)
    )
    assert report.twin.examples == 30 and len(report.epochs) == 3


def test_slice_input_producer_list_itself():
    report = assert_rebuild_matches(
        lambda: qp.slice_input_producer(
            [tf.constant([[1, 2], [3, 4], [5, 6]]), tf.constant(["a", "b", "c"])],
            num_epochs=1,
            shuffle=False,
        )
    )
    assert report.twin.examples == 3
    _, dataset = rebuild(
        lambda: qp.slice_input_producer([tf.constant([1, 2, 3])], num_epochs=1, shuffle=False)
    )
    assert dataset.element_spec == (tf.TensorSpec([], tf.int32),)  # a list of one
    assert [x[0] for x in dataset_values(dataset)] == [1, 2, 3]


def _over_variable():
    data = tf.compat.v1.Variable(
        np.arange(12, dtype=np.int32).reshape(6, 2), trainable=False, name="preloaded"
    )
    (row,) = qp.slice_input_producer([data], num_epochs=2, shuffle=False)
    return qp.batch([row, tf.reduce_sum(row)], 3)


@pytest.mark.slow
def test_slice_input_producer_over_a_variable_read_once_through_the_session():
    report = compare(_over_variable, timeout=TIMEOUT)  # twin: rebuilt_twin(legacy)
    assert report.matched, report.render()
    assert any("to_dataset" in note for note in report.notes)


def test_preloaded_variable_program_needs_its_session(tmp_path):
    from legacy_examples import preloaded_data

    images = np.arange(60, dtype=np.float32).reshape(15, 4)
    labels = np.arange(15, dtype=np.uint8) % 10
    graph = tf.Graph()
    with graph.as_default():
        batch = preloaded_data.preloaded_variable(
            images, labels, num_epochs=1, shuffle=False, batch_size=5
        )
        outputs, load = list(batch[:2]), batch[2]
    with pytest.raises(NotRebuildableError, match="input/Variable") as info:
        qp.to_dataset(outputs)
    assert "session=" in str(info.value)
    sess = new_session(graph)  # not `with`: that would build the Dataset in `graph`
    try:
        load(sess)
        dataset = qp.to_dataset(outputs, session=sess)
    finally:
        sess.close()
    got = list(dataset_values(dataset))  # the session is closed: values were read once
    assert len(got) == 3
    np.testing.assert_array_equal(np.concatenate([b[0] for b in got]), images)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in got]), labels.astype(np.int32))


def test_range_producer_dequeue_many_and_enqueue_many():
    def build():
        numbers = qp.range_input_producer(12, num_epochs=1, shuffle=False).dequeue_many(3)
        return qp.batch([numbers, numbers * 2], 4, enqueue_many=True)

    assert assert_rebuild_matches(build).twin.examples == 12


def test_a_producer_queue_itself():
    queue_outputs, dataset = rebuild(
        lambda: qp.string_input_producer(["a", "b", "c"], num_epochs=2, shuffle=False)
    )
    assert dataset.element_spec == tf.TensorSpec([], tf.string)
    assert list(dataset_values(dataset)) == [b"a", b"b", b"c"] * 2


def test_input_producer_dequeue():
    def build():
        rows = qp.input_producer(
            tf.constant([[1, 2], [3, 4], [5, 6]]), num_epochs=2, shuffle=False
        ).dequeue()
        return qp.batch([rows], 2)

    assert assert_rebuild_matches(build).twin.examples == 6


@pytest.mark.slow
def test_match_filenames_once_globs_when_iterated(files):
    pattern = os.path.join(os.path.dirname(files["csv"][0]), "data*.csv")

    def build():
        names = qp.match_filenames_once(pattern)
        queue = qp.string_input_producer(names, num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader(skip_header_lines=1).read(queue)
        return qp.batch([line], 3)

    _, dataset = rebuild(build)  # no session needed: the glob is the twin's
    assert len(dataset_values(dataset)) == 7
    report = compare(build, timeout=TIMEOUT)  # legacy side: local init runs the glob
    assert report.matched, report.render()


@pytest.mark.slow
def test_limit_epochs_and_two_stages_zipped(files):
    def build():
        counted = qp.limit_epochs(tf.constant([1, 2]), num_epochs=5)
        queue = qp.string_input_producer(files["csv"][:1], num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader(skip_header_lines=1).read(queue)
        return qp.batch([counted * 10, line], 2, allow_smaller_final_batch=True)

    report = assert_rebuild_matches(build)
    assert report.twin.examples == 5  # limit_epochs ends it, as in the legacy run

    def build_slices_and_lines():
        image, label = _slices(num_epochs=1)
        queue = qp.string_input_producer(files["csv"][:1], num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader(skip_header_lines=1).read(queue)
        return qp.batch([image[0] + tf.cast(label, tf.float32), line], 3)

    assert assert_rebuild_matches(build_slices_and_lines).twin.examples == 6


# ------------------------------------------------------------------ readers


def _csv(files, num_epochs=2):
    queue = qp.string_input_producer(files["csv"], num_epochs=num_epochs, shuffle=False)
    key, line = qp.TextLineReader(skip_header_lines=1).read(queue)
    a, b = tf.io.decode_csv(line, [[0], [0]])
    return key, a, b


READERS = {
    "text_line": lambda f: qp.batch(list(_csv(f)), 4),
    "fixed_length": lambda f: _fixed_length(f),
    "tfrecord": lambda f: _tfrecord(f),
    "whole_file": lambda f: _whole_file(f),
    "identity": lambda f: _identity(f),
    "read_up_to": lambda f: _read_up_to(f),
}


def _fixed_length(files):
    queue = qp.string_input_producer(files["bin"], num_epochs=2, shuffle=False)
    _, record = qp.FixedLengthRecordReader(4, header_bytes=2).read(queue)
    values = tf.cast(tf.io.decode_raw(record, tf.uint8), tf.int32)
    values.set_shape([4])
    return qp.batch([values, tf.reduce_sum(values)], 3)


def _tfrecord(files):
    queue = qp.string_input_producer(files["tfrecord"], num_epochs=2, shuffle=False)
    _, serialized = qp.TFRecordReader().read(queue)
    features = tf.io.parse_single_example(
        serialized,
        {"id": tf.io.FixedLenFeature([], tf.int64), "tags": tf.io.VarLenFeature(tf.float32)},
    )
    return qp.batch({"id": features["id"], "tags": features["tags"]}, 5)


def _whole_file(files):
    queue = qp.string_input_producer(files["whole"], num_epochs=2, shuffle=False)
    name, contents = qp.WholeFileReader().read(queue)
    return qp.batch([name, tf.strings.length(contents)], 2)


def _identity(files):
    queue = qp.string_input_producer(["u", "vv", "www"], num_epochs=2, shuffle=False)
    key, value = qp.IdentityReader().read(queue)
    return qp.batch([key, tf.strings.length(value)], 2)


def _read_up_to(files):
    queue = qp.string_input_producer(files["csv"], num_epochs=1, shuffle=False)
    _, lines = qp.TextLineReader(skip_header_lines=1).read_up_to(queue, 3)
    a, b = tf.io.decode_csv(lines, [[0], [0]])
    return qp.batch([a, b], 4, enqueue_many=True, allow_smaller_final_batch=True)


@pytest.mark.parametrize("kind", sorted(READERS))
def test_each_reader_with_its_decoder(files, kind):
    report = assert_rebuild_matches(lambda: READERS[kind](files))
    assert report.mode.startswith("ordered")


@pytest.mark.parametrize("kind", ["text_line", "read_up_to"])
def test_graphs_without_diagnostics_rebuild_alike(files, kind):
    def build():
        with qp.tf_faithful():  # no *_qp_guard ops: TF's graph node for node
            return READERS[kind](files)

    with tf.Graph().as_default() as graph:
        build()
    assert not any("_qp_guard" in op.name for op in graph.get_operations())
    assert_rebuild_matches(build)


def test_reader_key_and_value_themselves(files):
    report = assert_rebuild_matches(
        lambda: qp.TextLineReader().read(
            qp.string_input_producer(files["csv"][:2], num_epochs=1, shuffle=False)
        )
    )
    assert report.twin.examples == 16


def test_unused_keys_are_not_built(files):
    graph = tf.Graph()
    with graph.as_default():
        _, a, b = _csv(files)
        batch = qp.batch([a, b], 4)
    rebuilder = Rebuilder(graph)
    stream = rebuilder.rebuild(batch)
    assert stream.dataset.element_spec == (tf.TensorSpec([4], tf.int32),) * 2
    ((role, region),) = [r for r in rebuilder.regions if r[0].startswith("batch")]
    assert [s.name for s in region.sources] == [_csv_value_name(graph)]


def _csv_value_name(graph):
    node = next(n for n in qp.plan.plan_nodes(graph) if n.kind == "TextLineReader.read")
    return node.outputs[1].name


# ------------------------------------------------------------------ batching


def test_shuffle_batch_with_num_epochs_delivers_each_epoch(files):
    report = assert_rebuild_matches(
        lambda: qp.shuffle_batch(
            list(_csv(files, num_epochs=2)[1:]),
            3,
            capacity=20,
            min_after_dequeue=5,
            seed=1,
            num_threads=2,
            allow_smaller_final_batch=True,
        )
    )
    assert report.mode.startswith("multiset") and report.twin.examples == 42


@pytest.mark.parametrize("allow_smaller", [False, True])
def test_allow_smaller_final_batch(files, allow_smaller):
    report = assert_rebuild_matches(
        lambda: qp.batch(
            list(_csv(files, num_epochs=1)[1:]), 4, allow_smaller_final_batch=allow_smaller
        )
    )
    assert report.twin.examples == (21 if allow_smaller else 20)


def test_dynamic_pad(files):
    def build():
        queue = qp.string_input_producer(files["csv"], num_epochs=1, shuffle=False)
        _, line = qp.TextLineReader(skip_header_lines=1).read(queue)
        digits = tf.strings.bytes_split(tf.strings.regex_replace(line, ",", ""))
        return qp.batch(
            [tf.strings.to_number(digits, tf.int32), line],
            4,
            dynamic_pad=True,
            allow_smaller_final_batch=True,
        )

    assert assert_rebuild_matches(build).twin.examples == 21


def test_maybe_batch_with_a_per_record_keep_input(files):
    def build():
        _, a, b = _csv(files, num_epochs=1)
        return qp.maybe_batch([a, b], tf.equal(b, 1), 2, allow_smaller_final_batch=True)

    report = assert_rebuild_matches(build)
    assert report.twin.examples == 6  # rows 1 and 4 of each file have b == 1


def test_maybe_batch_enqueue_many_with_a_keep_vector():
    def build():
        numbers = qp.range_input_producer(10, num_epochs=1, shuffle=False).dequeue_many(5)
        return qp.maybe_batch(
            [numbers],
            tf.equal(numbers % 2, 0),
            2,
            enqueue_many=True,
            allow_smaller_final_batch=True,
        )

    _, dataset = rebuild(build)
    assert [x.tolist() for x in dataset_values(dataset)] == [[0, 2], [4, 6], [8]]
    assert_rebuild_matches(build)


def test_maybe_shuffle_batch_with_a_constant_keep_input(files):
    assert_rebuild_matches(
        lambda: qp.maybe_shuffle_batch(
            list(_csv(files, num_epochs=1)[1:]),
            3,
            30,
            5,
            keep_input=True,
            allow_smaller_final_batch=True,
        )
    )


@pytest.mark.slow
def test_batch_join_lifts_each_list_separately(files):
    def build():
        lists = []
        for i, offset in enumerate((0, 1000)):
            queue = qp.string_input_producer(files["csv"][i : i + 1], num_epochs=1, shuffle=False)
            _, line = qp.TextLineReader(skip_header_lines=1).read(queue)
            a, b = tf.io.decode_csv(line, [[0], [0]])
            lists.append([a + offset, b])
        return qp.batch_join(lists, 2, allow_smaller_final_batch=True)

    _, dataset = rebuild(build)
    values = sorted(int(v) for a, _ in dataset_values(dataset) for v in a)
    assert values == list(range(7)) + list(range(1100, 1107))
    assert assert_rebuild_matches(build).twin.examples == 14


@pytest.mark.parametrize("readers", [2, 4])
@pytest.mark.slow
def test_readers_sharing_one_filename_queue_read_each_file_once(files, readers):
    def build():
        queue = qp.string_input_producer(files["csv"], num_epochs=2, shuffle=True, seed=4)
        lists = []
        for _ in range(readers):  # 4 readers, 3 files: one reader gets none
            _, line = qp.TextLineReader(skip_header_lines=1).read(queue)
            lists.append(list(tf.io.decode_csv(line, [[0], [0]])))
        return qp.shuffle_batch_join(
            lists, 3, capacity=30, min_after_dequeue=5, allow_smaller_final_batch=True
        )

    report = assert_rebuild_matches(build)
    assert report.twin.examples == 42


def test_dict_structure_and_a_downstream_op_on_the_batch(files):
    def build():
        _, a, b = _csv(files, num_epochs=1)
        batch = qp.batch({"a": a, "b": b}, 4)
        return {"a": batch["a"], "sum": tf.reduce_sum(batch["b"])}

    outputs, dataset = rebuild(build)
    assert dataset.element_spec == {
        "a": tf.TensorSpec([4], tf.int32),
        "sum": tf.TensorSpec([], tf.int32),
    }
    assert_rebuild_matches(build)


def test_per_record_control_flow_comes_with_its_functions(files):
    def build():
        _, a, b = _csv(files, num_epochs=1)
        signed = tf.cond(tf.equal(b, 0), lambda: -a, lambda: a)
        squares = tf.map_fn(lambda x: x * x, tf.stack([a, b]))
        return qp.batch([signed, squares], 3)

    assert assert_rebuild_matches(build).twin.examples == 21


# ------------------------------------------------------------------ graph mode


def test_called_inside_a_graph_builds_the_dataset_there(files):
    with tf.Graph().as_default():
        batch = qp.batch(list(_csv(files, num_epochs=1)[1:]), 4)
    eager = [tuple(x.tolist() for x in b) for b in dataset_values(qp.to_dataset(batch))]
    target = tf.Graph()
    with target.as_default():
        dataset = qp.to_dataset(batch)
        assert dataset._variant_tensor.graph is target  # noqa: SLF001
        fetch = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    got = []
    with new_session(target) as sess:
        try:
            while True:
                got.append(tuple(x.tolist() for x in sess.run(fetch)))
        except tf.errors.OutOfRangeError:
            pass
    assert got == eager and len(got) == 5


# ------------------------------------------------------------------ errors


def test_py_func_is_not_rebuildable(files):
    def build():
        _, a, b = _csv(files)
        doubled = tf.compat.v1.py_func(lambda x: x * 2, [a], tf.int32, name="twice")
        return qp.batch([doubled, b], 2, shapes=[[], []])

    with pytest.raises(NotRebuildableError, match=r"'twice' \(type PyFunc\).*Python func") as info:
        rebuild(build)
    assert info.value.op_type == "PyFunc" and isinstance(info.value, ValueError)


@pytest.mark.parametrize("how", ["trainable", "assigned"])
def test_a_changing_variable_is_not_rebuildable(files, how):
    def build():
        _, a, b = _csv(files)
        scale = tf.compat.v1.Variable(2, trainable=how == "trainable", name="scale")
        if how == "assigned":
            scale.assign_add(1, name="bump")
        return qp.batch([a * scale, b], 2)

    match = "trainable" if how == "trainable" else "written by op 'bump'"
    kind = "VariableV2" if tf1_mode() else "VarHandleOp"  # a ref variable in TF1 mode
    with pytest.raises(NotRebuildableError, match=rf"'scale' \(type {kind}\).*{match}"):
        rebuild(build)


def test_a_fixed_variable_in_a_per_record_op_is_read_once(files):
    graph = tf.Graph()
    with graph.as_default():
        _, a, b = _csv(files, num_epochs=1)
        scale = tf.compat.v1.Variable(3, trainable=False, name="scale")
        batch = qp.batch([a * scale, b], 7)
    with pytest.raises(NotRebuildableError, match=r"\['scale'\].*session="):
        qp.to_dataset(batch)
    sess = new_session(graph)
    try:
        sess.run(scale.initializer)
        dataset = qp.to_dataset(batch, session=sess)
    finally:
        sess.close()
    first = dataset_values(dataset, limit=1)[0]
    assert first[0].tolist() == [0, 3, 6, 9, 12, 15, 18]


def test_ref_variables_are_read_once_too():
    graph = tf.Graph()
    with graph.as_default():
        data = tf.compat.v1.Variable(
            np.arange(6, dtype=np.int32).reshape(3, 2),
            trainable=False,
            use_resource=False,
            name="rows",
        )
        scale = tf.compat.v1.Variable(10, trainable=False, use_resource=False, name="k")
        (row,) = qp.slice_input_producer([data], num_epochs=1, shuffle=False)
        batch = qp.batch([row * scale], 3)
        init = tf.compat.v1.variables_initializer([data, scale])
    assert data.op.type == "VariableV2"
    sess = new_session(graph)
    try:
        sess.run(init)
        dataset = qp.to_dataset(batch, session=sess)
    finally:
        sess.close()
    assert [b.tolist() for b in dataset_values(dataset)] == [[[0, 10], [20, 30], [40, 50]]]


def test_a_queue_filled_like_a_producer_is_read_from_the_graph():
    """An endless enqueue_many of rows is an input_producer.

    See NOTE [ Stages read from the graph ].
    """

    def build():
        queue = tf.queue.FIFOQueue(10, tf.int32, shapes=[[]], name="handmade")
        qp.add_queue_runner(qp.QueueRunner(queue, [queue.enqueue_many([[1, 2, 3]])]))
        return qp.batch([queue.dequeue() * 2], 2)

    _, dataset = rebuild(build)
    assert [b.tolist() for b in dataset_values(dataset, limit=3)] == [[2, 4], [6, 2], [4, 6]]


def test_a_queue_filled_otherwise_is_refused_by_name():
    def build():
        queue = tf.queue.FIFOQueue(10, tf.int32, shapes=[[]], name="handmade")
        queue_2 = tf.queue.FIFOQueue(10, tf.int32, shapes=[[]], name="other")
        enqueue = [queue.enqueue_many([queue_2.dequeue_many(2)])]
        qp.add_queue_runner(qp.QueueRunner(queue, enqueue))
        return qp.batch([queue.dequeue() * 2], 2)

    with pytest.raises(
        NotRebuildableError, match=r"'other_DequeueMany' \(type QueueDequeueManyV2\)"
    ):
        rebuild(build)


def _lines_of(reader=tf.compat.v1.TextLineReader, **reader_args):
    """A program's input function taking TF's own reader class as an argument."""

    def build():
        queue = tf.compat.v1.train.string_input_producer(files_csv, num_epochs=1, shuffle=False)
        _, line = reader(**reader_args).read(queue)
        return tf.compat.v1.train.batch([line], 2, allow_smaller_final_batch=True)

    files_csv: list = []
    return build, files_csv


@pytest.mark.parametrize("skip", [0, 1])
def test_a_reader_of_tfs_own_is_read_from_the_graph(files, skip):
    build, files_csv = _lines_of(skip_header_lines=skip)
    files_csv.extend(files["csv"])
    _, dataset = rebuild(build)
    lines = [x for b in dataset_values(dataset) for x in b.tolist()]
    body = [f"{i * 100 + j},{j % 3}".encode() for i in range(3) for j in range(7)]
    if skip:
        assert lines == body
    else:
        assert sorted(lines) == sorted(body + [b"a,b"] * 3)


def test_placeholders_and_pipelines_without_a_plan():
    def build():
        x = tf.compat.v1.placeholder(tf.int32, [], name="fed")
        (i,) = qp.slice_input_producer([tf.range(4)], num_epochs=1)
        return qp.batch([i + x], 2)

    with pytest.raises(NotRebuildableError, match=r"'fed' \(type Placeholder\).*feed"):
        rebuild(build)
    with pytest.raises(NotRebuildableError, match="nothing upstream"):
        rebuild(lambda: tf.constant(1) + 1)
    with pytest.raises(TypeError, match="outputs"):
        qp.to_dataset(42)


def test_session_on_another_graph_is_rejected():
    with tf.Graph().as_default():
        batch = qp.batch(list(_slices()), 2)
    other = tf.Graph()
    with new_session(other) as sess, pytest.raises(ValueError, match="another graph"):
        qp.to_dataset(batch, session=sess)


# ------------------------------------------------------------------ the lifted region


def test_lifted_region_is_inspectable_and_skips_guards():
    graph = tf.Graph()
    with graph.as_default():
        source = tf.compat.v1.placeholder(tf.string, [], name="value")
        with tf.name_scope("read_qp_guard"):
            check = tf.debugging.Assert(True, ["guard"], name="check")
            with tf.control_dependencies([check]):
                guarded = tf.identity(source, name="value")
        length = tf.strings.length(guarded)
        user_check = tf.debugging.assert_non_negative(length, name="user_check")
        with tf.control_dependencies([user_check]):
            doubled = tf.identity(length * 2, name="doubled")
    region = _lift.lift([doubled], [source])
    names = [op.name for op in region.ops]
    assert "doubled" in names and not any("_qp_guard/" in n for n in names)
    assert any(n.startswith("user_check") for n in names)  # a liftable control input
    assert region.aliases[guarded.name] is source
    assert {node.name for node in region.graph_def.node} == set(names)
    assert "sources: ['value:0']" in region.describe()
    values = tf.data.Dataset.from_tensor_slices(["ab", "abcd"]).map(lambda s: region(s)[0])
    assert list(dataset_values(values)) == [4, 8]
    with pytest.raises(TypeError, match="expected 1 argument"):
        region()


def test_find_sources_stops_at_sources_and_identities():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant([1, 2], name="a")
        b = tf.identity(tf.identity(a))
        c = b + tf.constant(1)
    assert _walk.find_sources([c], lambda t: t.name == "a:0") == [a]


# ------------------------------------------------------------------ the CLI


def test_cli_compare_with_its_own_rebuild(capsys):
    assert cli.main(["compare", "legacy_examples.csv_reading:legacy", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["matched"] is True
    assert any("to_dataset" in note for note in report["notes"])


def test_cli_names_the_op_that_cannot_be_rebuilt(capsys):
    assert cli.main(["compare", "legacy_examples.feeding:legacy"]) == 2
    assert "'next_batch' (type PyFunc)" in capsys.readouterr().err


def test_rebuilt_twin_is_a_twin_callable():
    twin = rebuilt_twin(lambda: qp.batch(list(_slices(num_epochs=1)), 5))
    assert [b[1].tolist() for b in dataset_values(twin())] == [
        [0, 3, 6, 9, 12],
        [15, 18, 21, 24, 27],
    ]


# ------------------------------------------------------------------ legacy_examples


EXAMPLES = [
    "csv_reading",
    "mnist_tfrecords",
    "preloaded_data",
    "multi_reader_join",
    "detection_dynamic_pad",
    "cifar10_binary",
]


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.slow
def test_every_legacy_example_rebuilt_and_compared(name):
    import importlib

    module = importlib.import_module(f"legacy_examples.{name}")
    assert_rebuild_matches(module.legacy)


@pytest.mark.slow
def test_mnist_training_input_shuffle_batch_num_epochs(tmp_path):
    from legacy_examples import mnist_tfrecords

    paths = mnist_tfrecords._compare_files()  # noqa: SLF001 - the bundled files
    report = assert_rebuild_matches(
        lambda: mnist_tfrecords.inputs(paths["t10k"], 40, num_epochs=2, seed=1)
    )
    assert report.mode.startswith("multiset") and report.twin.examples == 720


def test_cifar10_distorted_training_input_structure():
    from legacy_examples import cifar10_binary

    data_dir = cifar10_binary._compare_dir()  # noqa: SLF001 - the bundled files
    outputs, dataset = rebuild(
        lambda: cifar10_binary.distorted_inputs(data_dir, 8, num_threads=2, verbose=False)
    )
    assert dataset.element_spec == _spec_of(outputs)
    ((images, labels),) = dataset_values(dataset, limit=1)
    assert images.shape == (8, 24, 24, 3) and set(labels.tolist()) <= set(range(10))
    # per_image_standardization was lifted with the random distortions.
    np.testing.assert_allclose(images.mean(axis=(1, 2, 3)), 0, atol=1e-3)


def test_feeding_example_names_its_py_func():
    from legacy_examples import feeding

    with pytest.raises(NotRebuildableError, match="next_batch"):
        rebuild(feeding.legacy)
