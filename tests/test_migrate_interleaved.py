"""migrate on pipelines a function returns inside an object (#41).

NOTE [ Several pipelines in one returned object ]: a peer-CNN-style reader
builds a training and a test pipeline interleaved statement by statement and
returns their batches as attributes of a local class's instances
(``tests/scripts/unseen_interleaved_pipelines.py``); a reader returning a dict
holding a ``SimpleNamespace`` and a tuple; a namedtuple of batching calls'
lists kept whole under names; one pipeline in an object (a summary of its
batch left out); a flat tuple of pipelines split from a list shuffled with
``random`` (built in one run); and the refusals (a statement computing on a
batch it returns in the object, a batch held by no name, a queue in the
object, ``--callers``). Run in the suite's TF mode (the suite runs this file with
``--tf1`` too).
"""

from __future__ import annotations

import random
import textwrap
import types

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, elements, id_label_csv, line_of

pytestmark = pytest.mark.slow

_SIDE = 8  # images are _SIDE x _SIDE x 3, every pixel of image k of class c = 10 * c + k


def _image_folder(directory, classes: int = 3, per_class: int = 8) -> dict[str, tuple]:
    """One sub-folder of PNGs per label; returns path -> (pixels, label)."""
    written = {}
    with tf.Graph().as_default():  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [_SIDE, _SIDE, 3])
        encoded = tf.io.encode_png(pixels)
        with tf.compat.v1.Session() as sess:
            for c in range(classes):
                (directory / str(c)).mkdir(parents=True)
                for k in range(per_class):
                    image = np.full((_SIDE, _SIDE, 3), 10 * c + k, np.uint8)
                    path = directory / str(c) / f"{k:02d}.png"
                    path.write_bytes(sess.run(encoded, {pixels: image}))
                    written[str(path)] = (image, c)
    return written


def _flags(folder) -> object:
    return types.SimpleNamespace(
        image_dir=str(folder), test_size=6, batch_size=4, num_epochs=1, height=_SIDE, width=_SIDE
    )


def test_interleaved_pipelines_in_a_local_class_each_become_a_dataset_in_place(tmp_path):
    """Two ``slice_input_producer`` / reading helper / ``tf.train.batch`` chains
    interleaved, returned in a local ``Split`` class: MATCH, each Dataset proven
    at its places; the migrated function returns the same object, each
    pipeline's Dataset at both of its places and the plain attributes kept; the
    records are the files' (was: refused as "a second pipeline")."""
    path = copy_script("unseen_interleaved_pipelines.py", tmp_path, "reader.py")
    images = _image_folder(tmp_path / "imgs")
    call = f"__import__('types').SimpleNamespace(image_dir={str(tmp_path / 'imgs')!r}, "
    call += f"test_size=6, batch_size=4, num_epochs=1, height={_SIDE}, width={_SIDE})"
    result = migrate(str(path), "read_image_batches", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert result.exit_status == 0
    reason = result.verdict.reason
    assert "each of the 2 Datasets it returns compared on its own" in reason
    # compare reads the legacy side's order from its whole graph: the training
    # producer's shuffle makes both multisets (the test order is checked below)
    assert ".train.images, .train.labels: multiset; .test.images, .test.labels: multiset" in reason
    assert "the values beside the batches (3, 18, 4, 3, 6) compared too" in reason
    new = result.added
    assert "tf.train." not in new and new.count("tf.data.Dataset.from_tensor_slices(") == 2
    assert "train_images = train_labels = train_dataset.prefetch(" in new
    assert "data.test.images = test_images" in new and "class Split(object):" in new
    original = path.read_text().splitlines()
    lines = sorted(s.line for s in result.steps if s.legacy == "slice_input_producer")
    assert ["train_files" in original[n - 1] for n in lines] == [False, False]
    assert "train_queue = tf.train.slice_input_producer(" in original[lines[0] - 1]
    assert any("train_records.batch(" in s.replacement for s in result.steps)

    module = result.load()
    random.seed(7)
    data = module.read_image_batches_dataset(_flags(tmp_path / "imgs"))
    assert isinstance(data.train.images, tf.data.Dataset)
    assert data.train.images is data.train.labels
    assert isinstance(data.test.images, tf.data.Dataset)
    assert data.test.images is data.test.labels and data.test.images is not data.train.images
    assert (data.train.num_classes, data.train.size, data.test.size) == (3, 18, 6)
    assert data.train.batch_size == 4

    random.seed(7)  # the function's own shuffle of the list, drawn again
    order = list(range(len(images)))
    random.shuffle(order)
    paths = sorted(images, key=lambda p: (images[p][1], p))
    paths = [paths[i] for i in order]
    expected = [(images[p][0] / 255.0, images[p][1]) for p in paths]
    test = elements(data.test.images)
    assert [len(batch[1]) for batch in test] == [4, 2]  # allow_smaller_final_batch
    got = [(np.array(b[0][i]), b[1][i]) for b in test for i in range(len(b[1]))]
    assert [label for _, label in got] == [label for _, label in expected[:6]]
    for (image, _), (want, _) in zip(got, expected[:6]):
        np.testing.assert_allclose(image, want, rtol=1e-6)
    train = elements(data.train.images)
    assert [len(batch[1]) for batch in train] == [4] * 4  # 18 records, the tail dropped
    firsts = sorted(round(float(np.array(b[0][i])[0, 0, 0]) * 255) for b in train for i in range(4))
    want = sorted(int(images[p][0][0, 0, 0]) for p in paths[6:])
    assert len(set(firsts)) == 16 and set(firsts) <= set(want)


_NAMESPACE_READER = '''
import types

import tensorflow.compat.v1 as tf


def read_columns(train_files, eval_files, batch_size):
    """Training and evaluation columns of id,label CSV files."""
    train_queue = tf.train.string_input_producer(train_files, num_epochs=1, shuffle=False)
    eval_queue = tf.train.string_input_producer(eval_files, num_epochs=1, shuffle=False)
    _, train_line = tf.TextLineReader().read(train_queue)
    _, eval_line = tf.TextLineReader().read(eval_queue)
    train_id, train_label = tf.decode_csv(train_line, record_defaults=[[0], [0]])
    eval_id, eval_label = tf.decode_csv(eval_line, record_defaults=[[0], [0]])
    train_ids, train_labels = tf.train.batch([train_id, train_label], batch_size)
    eval_ids, eval_labels = tf.train.batch(
        [eval_id, eval_label], batch_size, allow_smaller_final_batch=True
    )
    train = types.SimpleNamespace(ids=train_ids, labels=train_labels)
    return {"train": train, "eval": (eval_ids, eval_labels), "files": len(train_files)}
'''


def test_a_dict_holding_a_namespace_and_a_tuple_of_two_pipelines(tmp_path):
    """The same mechanism for a dict of a ``SimpleNamespace`` (its batches by
    attribute) and a tuple, beside a plain count: both Datasets where their
    batches were, in order."""
    path = tmp_path / "columns.py"
    path.write_text(_NAMESPACE_READER)
    files = id_label_csv(tmp_path, files=3, rows=6)
    call = f"{files[:2]!r}, {files[2:]!r}, 4"
    result = migrate(str(path), "read_columns", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert "['train'].ids, ['train'].labels: ordered" in result.verdict.reason
    assert "['eval'][0], ['eval'][1]: ordered" in result.verdict.reason
    out = result.load().read_columns_dataset(files[:2], files[2:], 4)
    assert out["files"] == 2
    assert out["train"].ids is out["train"].labels
    assert out["eval"][0] is out["eval"][1] and out["eval"][0] is not out["train"].ids
    train = elements(out["train"].ids)
    assert [ids for ids, _ in train] == [(0, 1, 2, 3), (4, 5, 100, 101), (102, 103, 104, 105)]
    assert [ids for ids, _ in elements(out["eval"][0])] == [(200, 201, 202, 203), (204, 205)]


_NAMEDTUPLE_READER = """
import collections

import tensorflow.compat.v1 as tf

Splits = collections.namedtuple("Splits", "train test")


def inputs(train_files, test_files, batch_size):
    train_queue = tf.train.string_input_producer(train_files, num_epochs=1, shuffle=False)
    _, train_line = tf.TextLineReader().read(train_queue)
    train_batch = tf.train.batch(tf.decode_csv(train_line, [[0], [0]]), batch_size)
    test_queue = tf.train.string_input_producer(test_files, num_epochs=1, shuffle=False)
    _, test_line = tf.TextLineReader().read(test_queue)
    test_batch = tf.train.batch(
        tf.decode_csv(test_line, [[0], [0]]), batch_size, allow_smaller_final_batch=True
    )
    return Splits(train=train_batch, test=test_batch)
"""


def test_a_namedtuple_of_two_batch_lists_held_by_names(tmp_path):
    """Pipelines one after another, each batching call's list kept whole under a name
    (``train_batch = tf.train.batch(...)``) and returned in a namedtuple: each list's
    place holds its pipeline's Dataset."""
    path = tmp_path / "splits.py"
    path.write_text(_NAMEDTUPLE_READER)
    files = id_label_csv(tmp_path, files=3, rows=6)
    result = migrate(str(path), "inputs", call=f"{files[:2]!r}, {files[2:]!r}, 4")
    assert result.verdict.status == "MATCH", result.report()
    assert "train_batch = train_dataset.prefetch(" in result.added
    out = result.load().inputs_dataset(files[:2], files[2:], 4)
    assert type(out).__name__ == "Splits"
    assert all(isinstance(d, tf.data.Dataset) for d in out)
    assert [ids for ids, _ in elements(out.train)][0] == (0, 1, 2, 3)
    assert [ids for ids, _ in elements(out.test)] == [(200, 201, 202, 203), (204, 205)]


_ONE_PIPELINE = """
import tensorflow.compat.v1 as tf


class Batches(object):
    pass


def inputs(files, batch_size):
    queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(queue)
    ident, label = tf.decode_csv(line, record_defaults=[[0], [0]])
    ids, labels = tf.train.batch([ident, label], batch_size)
    batches = Batches()
    batches.ids = ids
    batches.labels = labels
    batches.size = batch_size
    {extra}
    return batches
"""


def test_one_pipeline_in_an_object(tmp_path):
    """One pipeline is the same mechanism with one Dataset (was: a per-batch map
    returning the object, and a proof that failed on it); a summary of its batch is
    left out and reported with its line."""
    path = tmp_path / "one.py"
    path.write_text(_ONE_PIPELINE.format(extra='tf.summary.histogram("ids", ids)'))
    files = id_label_csv(tmp_path, files=2, rows=4)
    result = migrate(str(path), "inputs", call=f"{files!r}, 4")
    assert result.verdict.status == "MATCH", result.report()
    line = line_of(path, "tf.summary.histogram")
    assert any(f"one.py:{line}: `tf.summary.histogram" in d for d in result.dropped)
    assert "tf.summary.histogram" not in result.added
    assert "batches.ids = ids" in result.added and "return batches" in result.added
    batches = result.load().inputs_dataset(files, 4)
    assert batches.ids is batches.labels and batches.size == 4
    assert [ids for ids, _ in elements(batches.ids)] == [(0, 1, 2, 3), (100, 101, 102, 103)]


def test_computing_on_a_returned_batch_is_refused_at_its_line(tmp_path):
    """A statement reading a batch the object holds for more than storing it: the
    Dataset takes the batch's place there, so it is refused with its line."""
    path = tmp_path / "one.py"
    path.write_text(_ONE_PIPELINE.format(extra="batches.mean = tf.reduce_mean(ids)"))
    files = id_label_csv(tmp_path, files=1, rows=4)
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "inputs", call=f"{files!r}, 4")
    message = str(caught.value)
    assert f"one.py:{line_of(path, 'reduce_mean')}: cannot migrate" in message
    assert "it uses the batches of a pipeline the function returns in an object other " in message
    assert "Fix: move it to the code that reads the batches" in message


def test_callers_of_a_function_returning_an_object_are_refused(tmp_path):
    """--callers rewrites callers that read batches; the object holds Datasets."""
    path = tmp_path / "one.py"
    path.write_text(_ONE_PIPELINE.format(extra=""))
    files = id_label_csv(tmp_path, files=1, rows=4)
    with pytest.raises(MigrateError, match="returns its batches in `batches`, and --callers"):
        migrate(str(path), "inputs", call=f"{files!r}, 4", callers=True)


def test_a_returned_batch_held_by_no_name_is_refused(tmp_path):
    """``batches.ids = tf.train.batch(...)[0]``: no name to bind the Dataset to."""
    source = _ONE_PIPELINE.format(extra="").replace(
        "ids, labels = tf.train.batch([ident, label], batch_size)",
        "both = tf.train.batch([ident, label], batch_size)",
    )
    source = source.replace("batches.ids = ids", "batches.ids = both[0]")
    source = source.replace("batches.labels = labels", "batches.labels = both[1]")
    path = tmp_path / "one.py"
    path.write_text(textwrap.dedent(source))
    files = id_label_csv(tmp_path, files=1, rows=4)
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "inputs", call=f"{files!r}, 4")
    message = str(caught.value)
    assert f"one.py:{line_of(path, 'return batches')}:" in message
    assert "`batches.ids` is held by no local name" in message
    assert "Fix: unpack the batching call's outputs into names" in message


def test_a_queue_in_the_returned_object_is_refused(tmp_path):
    """``batches.queue = queue``: no queue is left in the tf.data version to store."""
    path = tmp_path / "one.py"
    path.write_text(_ONE_PIPELINE.format(extra="batches.queue = queue"))
    files = id_label_csv(tmp_path, files=1, rows=4)
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "inputs", call=f"{files!r}, 4")
    message = str(caught.value)
    assert f"one.py:{line_of(path, 'return batches')}: cannot migrate" in message
    assert "it returns a queue or reader at `batches.queue`" in message
    assert "Fix: keep only the batches" in message


_SPLIT_READER = """
import random

import tensorflow.compat.v1 as tf


def split_inputs(files, batch_size):
    lines = []
    for name in files:
        with open(name) as f:
            lines += f.read().split()
    random.shuffle(lines)
    train_lines, test_lines = lines[4:], lines[:4]
    train_queue = tf.train.input_producer(train_lines, num_epochs=1, shuffle=False)
    test_queue = tf.train.input_producer(test_lines, num_epochs=1, shuffle=False)
    train_line = train_queue.dequeue()
    test_line = test_queue.dequeue()
    train_id, train_label = tf.decode_csv(train_line, [[0], [0]])
    test_id, test_label = tf.decode_csv(test_line, [[0], [0]])
    train_ids, train_labels = tf.train.batch([train_id, train_label], batch_size)
    test_ids, test_labels = tf.train.batch([test_id, test_label], batch_size)
    return train_ids, train_labels, test_ids, test_labels
"""


def test_a_tuple_of_pipelines_split_from_a_shuffled_list_is_built_in_one_run(tmp_path):
    """``return train_ids, train_labels, test_ids, test_labels`` after a list shuffled
    with ``random`` and split: one tf.data version per pipeline would each shuffle
    anew (the test records then overlap the training ones), so the function is
    migrated in place, its Datasets where its batches were, from one split."""
    path = tmp_path / "split.py"
    path.write_text(_SPLIT_READER)
    files = id_label_csv(tmp_path, files=2, rows=6)
    result = migrate(str(path), "split_inputs", call=f"{files!r}, 4")
    assert result.verdict.status == "MATCH", result.report()
    assert "[0], [1]: ordered; [2], [3]: ordered" in result.verdict.reason
    assert "Python's global random state held equal" in result.verdict.reason
    assert "def split_inputs_train_dataset" not in result.source
    out = result.load().split_inputs_dataset(files, 4)
    assert len(out) == 4 and out[0] is out[1] and out[2] is out[3] and out[0] is not out[2]
    train = [i for ids, _ in elements(out[0]) for i in ids]
    test = [i for ids, _ in elements(out[2]) for i in ids]
    assert len(train) == 8 and len(test) == 4
    assert sorted(train + test) == [0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105]
