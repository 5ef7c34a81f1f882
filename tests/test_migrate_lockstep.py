"""migrate on records read from several queues at once (#41): an image and its
mask from two unshuffled producers, zipped (NOTE [ Records read in lockstep ]),
through a helper handed both queues or inline; the refusals with their reasons
(a producer that shuffles, one record reader handed two queues); and a function
returning a training and a validation pipeline's batches. The program
is ``tests/scripts/unseen_paired_masks.py``; run in the suite's TF mode (the
suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


def _program(tmp_path):
    path = tmp_path / "masks.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_paired_masks.py"), path)
    return path


def _pairs(directory, count: int) -> None:
    """`count` PNG images and masks; mask i is all i, so a wrong pairing shows."""
    rng = np.random.default_rng(3)
    (directory / "images").mkdir(parents=True)
    (directory / "masks").mkdir()
    with tf.Graph().as_default():  # either TF mode
        image = tf.compat.v1.placeholder(tf.uint8, [12, 12, None])
        encoded = tf.io.encode_png(image)
        with tf.compat.v1.Session() as sess:
            for i in range(count):
                pixels = rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)
                png = sess.run(encoded, {image: pixels})
                (directory / "images" / f"{i:02d}.png").write_bytes(png)
                png = sess.run(encoded, {image: np.full((12, 12, 1), i, np.uint8)})
                (directory / "masks" / f"{i:02d}.png").write_bytes(png)


@pytest.mark.slow
def test_a_helper_reading_two_queues_becomes_a_zip_and_matches(tmp_path):
    """``read_pair(image_queue, mask_queue)``: one WholeFileReader reads a file of
    each queue per record; the record function takes both values and the
    Dataset zips the two reads; shuffled by shuffle_batch, proven as multisets
    (each image with its own mask)."""
    path = _program(tmp_path)
    _pairs(tmp_path / "data", 12)
    out = tmp_path / "new.py"
    result = migrate(str(path), "inputs", call=f"{str(tmp_path / 'data')!r}, 4, num_epochs=2",
                     out=str(out))  # fmt: skip
    assert result.verdict.status == "MATCH", result.report()
    text = out.read_text()
    assert "def read_pair_record(image_value, mask_value):" in text
    assert "tf.data.Dataset.zip((" in text
    assert "mask_filenames.map(tf.io.read_file)" in text
    assert "WholeFileReader.read (in read_pair)" in result.report()


@pytest.mark.slow
def test_two_readers_inline_are_zipped_and_match_in_order(tmp_path):
    """Two readers, one per queue, in the function itself: the second read zips
    its Dataset with the first; ``batch`` keeps the order, proven exactly."""
    path = _program(tmp_path)
    _pairs(tmp_path / "data", 12)
    out = tmp_path / "new.py"
    result = migrate(str(path), "get_batch", call=f"{str(tmp_path / 'data')!r}, 4", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("ordered"), result.verdict.reason
    text = out.read_text()
    assert "records = tf.data.Dataset.zip((records, mask_raws))" in text
    assert "def per_record(image_raw, mask_raw):" in text
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)  # the migrated module, as a user runs it
    if tf.executing_eagerly():
        images, masks = next(iter(namespace["get_batch_dataset"](str(tmp_path / "data"), 4)))
        assert images.shape == (4, 8, 8, 3)
        assert [int(m[0, 0, 0]) for m in masks.numpy()] == [0, 1, 2, 3]


def test_a_shuffled_queue_read_in_lockstep_is_refused_with_the_fix(tmp_path):
    """A producer of a lockstep read that shuffles (as run: the argument is a
    parameter) pairs at random in the legacy program: refused at the read,
    naming the queue and the fix, nothing written."""
    path = _program(tmp_path)
    _pairs(tmp_path / "data", 6)
    out = tmp_path / "new.py"
    call = f"{str(tmp_path / 'data')!r}, 2, shuffle_masks=True"
    with pytest.raises(MigrateError) as info:
        migrate(str(path), "get_batch", call=call, out=str(out))
    message = str(info.value)
    line = 1 + open(path).read().splitlines().index(
        "    _, mask_raw = mask_reader.read(mask_queue)"
    )
    assert f"masks.py:{line}: cannot migrate" in message
    assert "the producer of `mask_queue` shuffles" in message
    assert "Fix: shuffle=False on the producers read in lockstep" in message
    assert not out.exists()


def test_one_record_reader_handed_two_queues_is_refused(tmp_path):
    """A TFRecordReader keeps reading its current file whichever queue it is
    handed: the pairs depend on the files' sizes, so refused with the fix."""
    path = _program(tmp_path)
    with pytest.raises(MigrateError) as info:
        migrate(str(path), "record_pairs", call="['a.tfrecord'], ['b.tfrecord'], 2", verify=False)
    message = str(info.value)
    assert "one TFRecordReader `reader` reads two queues" in message
    assert "Fix: give each queue a reader of its own" in message


@pytest.mark.slow
def test_a_function_returning_two_pipelines_migrates_each_and_a_wrapper(tmp_path):
    """``return train_batch, val_batch`` from two producers (NOTE [ Several
    pipelines a function returns ]): each pipeline is cut out (the other's lines and
    the summary of its batch left out), migrated and proven on its own; the
    wrapper returns both Datasets in the order of the batches; the report's
    lines are the file's."""
    path = _program(tmp_path)
    _pairs(tmp_path / "data", 12)
    out = tmp_path / "new.py"
    result = migrate(str(path), "train_and_val", call=f"{str(tmp_path / 'data')!r}, 2",
                     out=str(out))  # fmt: skip
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("pipeline 1: multiset"), result.verdict.reason
    assert "pipeline 2: ordered" in result.verdict.reason
    text = out.read_text()
    assert text.index("def train_and_val_train_dataset(data_dir, batch_size):") < text.index(
        "def train_and_val_val_dataset(data_dir, batch_size):"
    )
    assert "another pipeline" not in text and "\n\n\n\n" not in text
    assert result.function == "train_and_val_dataset"
    for name in ("train_and_val_train_dataset", "train_and_val_val_dataset", result.function):
        assert f"def {name}(data_dir, batch_size):" in result.added  # what to review
    lines = open(path).read().splitlines()
    batch_line = 1 + next(i for i, t in enumerate(lines) if "val_batch = tf.train.batch(" in t)
    assert f"line {batch_line}: batch" in result.report()
    summary = 1 + next(i for i, t in enumerate(lines) if "tf.summary.image" in t)
    assert any(d.startswith(f"{path}:{summary}:") for d in result.dropped), result.dropped
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)
    if tf.executing_eagerly():
        train, val = namespace["train_and_val_dataset"](str(tmp_path / "data"), 2)
        assert next(iter(train)).shape == (2, 12, 12, 3)
        assert sum(1 for _ in val) == 2  # files 8..11, one epoch, batches of 2


def test_callers_of_a_function_returning_two_pipelines_are_refused_with_the_way(tmp_path):
    path = _program(tmp_path)
    _pairs(tmp_path / "data", 12)
    with pytest.raises(MigrateError, match=r"returns the batches of 2 pipelines.*Fix: migrate "
                       r"without --callers"):  # fmt: skip
        migrate(str(path), "train_and_val", call=f"{str(tmp_path / 'data')!r}, 2", callers=True)


def _shards(directory, names: dict) -> None:
    """TFRecord files of PNG examples: {file name: [(pixels value or None), ...]}."""
    rng = np.random.default_rng(5)
    with tf.Graph().as_default():
        image = tf.compat.v1.placeholder(tf.uint8, [12, 12, 3])
        encoded = tf.io.encode_png(image)
        with tf.compat.v1.Session() as sess:
            for name, values in names.items():
                with tf.io.TFRecordWriter(str(directory / name)) as writer:
                    for value in values:
                        pixels = (
                            rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)
                            if value is None
                            else np.full((12, 12, 3), value, np.uint8)
                        )
                        png = sess.run(encoded, {image: pixels})
                        feature = tf.train.Feature(bytes_list=tf.train.BytesList(value=[png]))
                        example = tf.train.Example(
                            features=tf.train.Features(feature={"image/encoded": feature})
                        )
                        writer.write(example.SerializeToString())


@pytest.mark.slow
def test_a_helper_making_its_own_records_called_twice_is_zipped(tmp_path):
    """``image = read_and_decode_single_example(f)`` makes its own producer and
    reader (NOTE [ A helper that makes its own records ]): its version returns
    records and the caller batches them; called again for the labels, the two
    Datasets are zipped (was: a second pipeline refused, or a name defined
    nowhere); each branch of the caller's test is kept. Without a label file
    the run does not take the branch that reads it: refused with that reason
    and the way (was: "a second pipeline")."""
    path = tmp_path / "inputs.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_single_example.py"), path)
    _shards(tmp_path, {"train.tfrecords": [None] * 30, "labels.tfrecords": list(range(30))})
    call = f"8, {str(tmp_path / 'train.tfrecords')!r}"
    with pytest.raises(MigrateError, match=r"inputs.py:34: .*a branch this run did not take "
                       r"calls `read_and_decode_single_example`.*\(--call\)"):  # fmt: skip
        migrate(str(path), "inputs", call=call, verify=False)
    call += f", {str(tmp_path / 'labels.tfrecords')!r}"
    out = tmp_path / "new.py"
    result = migrate(str(path), "inputs", call=call, out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    text = out.read_text()
    assert "    records = read_and_decode_single_example_dataset(train_filename)\n" in text
    assert "label_records = read_and_decode_single_example_dataset(train_labels_filename)" in text
    assert "records = tf.data.Dataset.zip((records, label_records))" in text
    helper = text[text.index("def read_and_decode_single_example_dataset") :]
    assert ".batch(" not in helper[: helper.index("\ndef ")]  # records, not batches


def test_a_helper_whose_producer_shuffles_read_in_lockstep_is_refused(tmp_path):
    path = tmp_path / "inputs.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_single_example.py"), path)
    _shards(tmp_path, {f"{k}{i}.tfrecords": [i] * 4 for k in ("a", "b") for i in range(2)})
    images = [str(tmp_path / f"a{i}.tfrecords") for i in range(2)]
    labels = [str(tmp_path / f"b{i}.tfrecords") for i in range(2)]
    with pytest.raises(MigrateError) as info:
        migrate(str(path), "sharded_inputs", call=f"2, {images!r}, {labels!r}")
    message = str(info.value)
    line = 1 + open(path).read().splitlines().index("  label = read_shards(label_shards)")
    assert f"inputs.py:{line}: cannot migrate" in message
    assert "read_shards's string_input_producer shuffles" in message


def test_a_list_the_label_branch_appends_to_keeps_the_append_in_the_branch(tmp_path):
    """``_inp = [image]``, then ``if labels: label = read(...); _inp.append(label)``
    and ``shuffle_batch(_inp, ...)`` (guidj/segnet): the zip's elements stay flat,
    the list is rebuilt from them (``*values``), and the append is mapped inside the
    branch, so a run without labels does not run it (was: the twin crashed)."""
    path = tmp_path / "inputs.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_single_example.py"), path)
    _shards(tmp_path, {"train.tfrecords": [None] * 30, "labels.tfrecords": list(range(30))})
    call = f"4, {str(tmp_path / 'train.tfrecords')!r}, {str(tmp_path / 'labels.tfrecords')!r}"
    out = tmp_path / "new.py"
    result = migrate(str(path), "inputs_list", call=call, out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    text = out.read_text()
    body = text[text.index("def inputs_list_dataset") :]
    assert "lambda first, last: (*first, last)" in body
    branch = body[body.index("    if train_labels_filename:") : body.index("    dataset = ")]
    assert "        def per_record(*values):" in branch and "_inp.append(label)" in branch
    assert "records.map(tuple" not in body
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)
    if tf.executing_eagerly():  # without labels: one component, the image
        (images,) = next(
            iter(namespace["inputs_list_dataset"](4, str(tmp_path / "train.tfrecords")))
        )
        assert images.shape == (4, 12, 12, 3)


def _speech(path, count: int, first: int = 0) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(first, first + count):
            frames = np.arange(2 * (1 + i % 5), dtype=np.float32) + i
            feature = {
                "frames": tf.train.Feature(float_list=tf.train.FloatList(value=frames)),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.slow
def test_a_count_among_the_batches_and_batch_mates_under_a_shuffle(tmp_path, shuffle):
    """``return frames, label, num_examples, length`` (NOTE [ Plain values among the
    batches ]): the version returns the Dataset, its elements the batches in order,
    then the count; proven in order without a shuffle. With the shuffle on, code on
    the padded batches makes each example depend on its batch mates: UNVERIFIED
    with the fix (NOTE [ Examples that depend on their batch mates ]), not a false
    DIFFER; ``--callers`` is refused with the way."""
    path = tmp_path / "provider.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_speech_provider.py"), path)
    paths = [str(tmp_path / f"{k}.tfrecords") for k in range(8)]
    for k, name in enumerate(paths):  # 3 records a file, 4 a batch: batch mates vary
        _speech(name, 3, first=3 * k)
    options = {"paths": paths, "num_examples": 24, "batch_size": 4, "shuffle": shuffle,
               "reverse_time": True}  # fmt: skip
    out = tmp_path / "new.py"
    result = migrate(str(path), "get_split", call=repr(options), out=str(out))
    line = 1 + open(path).read().splitlines().index(
        "    return frames, label, num_examples, length"
    )
    assert any(
        d.startswith(f"{path}:{line}: get_split returns num_examples among its batches")
        for d in result.differences
    ), result.differences
    assert "return dataset.prefetch(tf.data.AUTOTUNE), num_examples" in out.read_text()
    if not shuffle:
        assert result.verdict.status == "MATCH", result.report()
        assert result.verdict.reason.startswith("ordered")
        assert "the values beside the batches (24) compared too" in result.verdict.reason
    else:  # never a false DIFFER; a MATCH only where the shuffles happened to pair alike
        # (the multiset comparison forgives a batch's worth of the shuffled tail)
        assert result.verdict.status in ("UNVERIFIED", "MATCH"), result.report()
        if result.verdict.status == "UNVERIFIED":
            assert result.verdict.reason.startswith("each example depends on its batch mates")
            assert "prove it with the shuffle off (--call), in order" in result.verdict.reason
    with pytest.raises(MigrateError, match=r"returns plain values among its batches"):
        migrate(str(path), "get_split", call=repr(options), callers=True)


@pytest.mark.slow
def test_read_up_to_reads_each_files_records_in_chunks(tmp_path):
    """``read_up_to(queue, n)`` (NOTE [ read_up_to as per-file chunks ]): each file's
    records batched by n, the last chunk of a file partial, then the chunk's parse
    and an ``enqueue_many`` batch: proven in order (5-record files, n=3); a CSV's
    header skipped per file, shuffled (was: refused)."""
    path = tmp_path / "chunks.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_chunked_reader.py"), path)
    files = []
    for k in range(3):
        files.append(str(tmp_path / f"{k}.tfrecords"))
        with tf.io.TFRecordWriter(files[-1]) as writer:
            for i in range(5):
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=[k, i])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[10 * k + i])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    out = tmp_path / "new.py"
    result = migrate(str(path), "chunked_inputs", call=f"{files!r}, 4", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    assert result.verdict.reason.startswith("ordered")
    assert "filenames.flat_map(lambda f: tf.data.TFRecordDataset(f).batch(chunk))" in (
        out.read_text()
    )
    csvs = []
    for k in range(2):
        csvs.append(str(tmp_path / f"{k}.csv"))
        rows = "".join(f"{10 * k + i},{i / 2}\n" for i in range(7))
        open(csvs[-1], "w").write("a,b\n" + rows)
    result = migrate(str(path), "csv_chunks", call=f"{csvs!r}, 3", verify=True)
    assert result.verdict.status == "MATCH", result.report()
    assert "lambda f: tf.data.TextLineDataset(f).skip(1).batch(4)" in result.source


@pytest.mark.slow
def test_a_batch_size_the_session_feeds_is_refused_at_the_batching_call(tmp_path):
    """ShuffleNet's shape: the batch size is a variable set from a placeholder when
    the program runs its initializer; a Dataset's batch size is fixed when it is
    built, so ``get_data`` is refused at the batching call naming ``batch_size``
    (was: "it builds the model on the batches" at the line after it). The batch
    helper called with a number migrates and MATCHes."""
    path = tmp_path / "input_utils.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_fed_batch_size.py"), path)
    records = str(tmp_path / "train.tfrecords")
    rng = np.random.default_rng(3)
    with tf.io.TFRecordWriter(records) as writer:
        for i in range(23):
            feature = {
                "image_raw": tf.train.Feature(
                    bytes_list=tf.train.BytesList(
                        value=[rng.integers(0, 255, 2 * 2 * 3, dtype=np.uint8).tobytes()]
                    )
                ),
                "target": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 4])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    line = 1 + next(
        i
        for i, text in enumerate(path.read_text().splitlines())
        if "tf.train.shuffle_batch(" in text
    )
    call = '4, 2, tf.compat.v1.placeholder_with_default(True, [], "is_training")'
    with pytest.raises(MigrateError, match=rf":{line}: .*shuffle_batch's `batch_size` is read"):
        migrate(str(path), "get_data", call=call)
    result = migrate(str(path), "get_batch", call=f"4, {records!r}, 2, 4", verify=True)
    assert result.verdict.status == "MATCH", result.report()


def test_a_producers_rows_dequeued_beside_a_read_are_zipped_with_the_records(tmp_path):
    """A style index dequeued per image from ``range_input_producer(n)`` beside a reading
    helper's image: the index rows are the record's first source and the helper's
    records are zipped with them (was: "a bug in migrate", the dequeue kept). With the
    producers shuffling, the pairs are random: refused at the read with the fix."""
    path = tmp_path / "style_input.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_style_index.py"), path)
    files = []
    for i in range(5):
        files.append(str(tmp_path / f"f{i}.txt"))
        open(files[-1], "w").write("x" * (i + 1))
    out = tmp_path / "new.py"
    result = migrate(str(path), "style_input", call=f"{files!r}, 2, shuffle=False", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    assert "records = index_files\n" in out.read_text()
    assert "tf.data.Dataset.zip((records, " in out.read_text()
    line = 1 + next(
        i for i, text in enumerate(path.read_text().splitlines()) if "read_file(file_queue)" in text
    )
    with pytest.raises(MigrateError, match=rf":{line}: .*the producer of `index_queue` shuffles"):
        migrate(str(path), "style_input", call=f"{files!r}, 2")
