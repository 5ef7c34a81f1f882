"""migrate on the trial-52 shapes of names bound twice (#41).

A depth loader's names bound on the record and bound again after the batching
call, its per-batch draws (``tests/scripts/unseen52_seeded_frames.py``): a
draw is matched to the graph by the binding that made the tensor (NOTE [ A
draw that reads no record ]); two producers shuffled with one seed and read in
lockstep are migrated (NOTE [ Queues shuffled alike by one seed ]), others
refused. A CSV session loop binding the per-record names again
(``tests/scripts/unseen52_session_rows.py``): no read of the pipeline (NOTE
[ Names a session loop binds ]); a helper's dequeue of the queue its reader
reads is refused at its line. Run in the suite's TF mode (the suite runs this
file with ``--tf1`` too).
"""

from __future__ import annotations

import os
import shutil

import libcst as cst
import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate.api import MigrateError, migrate
from queue_pipeline._migrate.script_reads import read_before_assigned

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")
TIMEOUT_MS = 20000


def _program(tmp_path, name: str):
    path = tmp_path / f"{name}.py"
    shutil.copy(os.path.join(SCRIPTS, f"unseen52_{name}.py"), path)
    return path


def _function(text: str, name: str) -> str:
    """The source of module-level function `name` in `text`."""
    start = text.index(f"def {name}(")
    end = text.find("\ndef ", start)
    return text[start : end if end >= 0 else len(text)]


def _line(path, text: str) -> int:
    return 1 + open(path).read().splitlines().index(text)


def _strips(directory, count: int = 8) -> str:
    """`count` strips of three 6x6 frames and their calibration lines (fx = 10 + i)."""
    rng = np.random.default_rng(5)
    directory.mkdir(parents=True)
    with tf.Graph().as_default():  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [6, 18, 3])
        encoded = tf.io.encode_png(pixels)
        with tf.compat.v1.Session(
            config=tf.compat.v1.ConfigProto(operation_timeout_in_ms=TIMEOUT_MS)
        ) as sess:
            for i in range(count):
                strip = rng.integers(0, 255, (6, 18, 3), dtype=np.uint8)
                (directory / f"{i:02d}.png").write_bytes(sess.run(encoded, {pixels: strip}))
                calib = [10.0 + i, 0, 3, 0, 10.0 + i, 3, 0, 0, 1]
                (directory / f"{i:02d}_calib.txt").write_text(",".join(map(str, calib)) + "\n")
    return str(directory)


def _rows(directory) -> list[str]:
    directory.mkdir(parents=True)
    files = []
    for f in range(3):
        path = directory / f"r{f}.csv"
        path.write_text("".join(f"{f}.5,{r}.25,{f + r}.0,{(4 * f + r) % 3}\n" for r in range(4)))
        files.append(str(path))
    return files


@pytest.mark.slow
def test_names_bound_again_after_the_batch_with_per_batch_draws_match(tmp_path):
    """``centre, sides = split_strip(...)`` on the record, ``centre = frames[..., :3]``
    after the batching call, the nested jitter drawing per batch: the first binding
    is per-record code without a draw, the jitter a map after ``.batch``; proven with
    the draws pinned on both sides."""
    path = _program(tmp_path, "seeded_frames")
    data = _strips(tmp_path / "frames")
    out = tmp_path / "new.py"
    result = migrate(str(path), "load_strips", call=f"{data!r}, 2", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    assert "pinned" in result.verdict.reason and "RandomUniform" in result.verdict.reason
    text = out.read_text()
    new = _function(text, "load_strips_dataset")
    assert "string_input_producer" not in new and "WholeFileReader" not in new
    assert "def per_batch(" in new
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)  # the migrated module, as a user runs it
    if tf.executing_eagerly():
        centre, sides = next(iter(namespace["load_strips_dataset"](data, 2)))
        assert centre.shape == (2, 5, 5, 3) and sides.shape == (2, 5, 5, 6)


@pytest.mark.slow
def test_producers_shuffled_with_one_seed_are_zipped_and_match(tmp_path):
    """Two producers given one op seed, lists of one length, read one file each per
    record: each Dataset of file names shuffled with that seed, zipped; MATCH."""
    path = _program(tmp_path, "seeded_frames")
    data = _strips(tmp_path / "frames")
    out = tmp_path / "new.py"
    result = migrate(str(path), "load_clips", call=f"{data!r}, 2", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    assert "shuffled alike (one op seed)" in result.report()
    text = out.read_text()
    new = _function(text, "load_clips_dataset")
    assert new.count("seed=seed") >= 2, new
    assert "records = tf.data.Dataset.zip((records, " in new
    assert "def per_batch(" in new and "string_input_producer" not in new
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)
    if tf.executing_eagerly():
        centre, sides, calib = next(iter(namespace["load_clips_dataset"](data, 2)))
        assert centre.shape == (2, 5, 5, 3) and calib.shape == (2, 3, 3)


@pytest.mark.parametrize("calib_seed", ["None", "8"])
def test_producers_not_shuffled_alike_are_refused_at_the_read(tmp_path, calib_seed):
    """No op seed on one producer, or another seed: the legacy pairs are random;
    refused at the second read with the fixes, nothing written."""
    path = _program(tmp_path, "seeded_frames")
    data = _strips(tmp_path / "frames", 4)
    out = tmp_path / "new.py"
    with pytest.raises(MigrateError) as info:
        migrate(str(path), "load_clips", call=f"{data!r}, 2, calib_seed={calib_seed}",
                out=str(out))  # fmt: skip
    message = str(info.value)
    line = _line(path, "    _, calib_line = calib_reader.read(calib_queue)")
    assert f"seeded_frames.py:{line}: cannot migrate" in message
    assert "each queue is shuffled on its own" in message
    assert "or give them all one seed=" in message
    assert not out.exists()


def _aligned_producers(seeds, graph_seed) -> bool:
    """Whether TF's two shuffling string_input_producers of one length give the
    same permutations (two epochs), read in lockstep."""
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.compat.v1.set_random_seed(graph_seed)
        queues = [
            tf.compat.v1.train.string_input_producer(
                [f"{k}{i}" for i in range(6)], num_epochs=2, shuffle=True, seed=s
            )
            for k, s in zip("ab", seeds)
        ]
        pair = [q.dequeue() for q in queues]
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess, coord)
            pairs = []
            try:
                for _ in range(12):
                    pairs.append(sess.run(pair))
            finally:
                coord.request_stop()
                coord.join(threads)
    return all(a[1:] == b[1:] for a, b in pairs)


def test_tf_shuffles_producers_alike_only_with_one_op_seed():
    """The premise of NOTE [ Queues shuffled alike by one seed ], TF as the oracle."""
    assert _aligned_producers((5, 5), None)
    assert _aligned_producers((5, 5), 9)
    assert not _aligned_producers((None, None), 9)
    assert not _aligned_producers((5, 6), None)


def test_datasets_shuffled_with_one_seed_are_alike():
    """tf.data's side of the NOTE: two Datasets of one length, each shuffled per
    epoch with one seed, give the same order at every epoch."""

    def shuffled(first: int):
        data = tf.data.Dataset.from_tensor_slices(list(range(first, first + 6)))
        return data.shuffle(6, seed=5, reshuffle_each_iteration=True).repeat(3)

    both = tf.data.Dataset.zip((shuffled(0), shuffled(100)))
    if tf.executing_eagerly():
        pairs = [(int(a), int(b)) for a, b in both]
    else:
        with tf.Graph().as_default():
            both = tf.data.Dataset.zip((shuffled(0), shuffled(100)))
            pair = tf.compat.v1.data.make_one_shot_iterator(both).get_next()
            config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=TIMEOUT_MS)
            with tf.compat.v1.Session(config=config) as sess:
                pairs = [tuple(sess.run(pair)) for _ in range(18)]
    assert len(pairs) == 18 and all(a + 100 == b for a, b in pairs)
    assert [a for a, _ in pairs[:6]] != [a for a, _ in pairs[6:12]]  # a fresh permutation


@pytest.mark.slow
def test_names_the_session_loop_binds_are_no_reads_and_match(tmp_path):
    """``features, label = sess.run([feature_batch, label_batch])`` in the session's
    loop binds the per-record names again: the pipeline returns its batches only;
    MATCH, and the session code kept without its queue runners."""
    path = _program(tmp_path, "session_rows")
    files = _rows(tmp_path / "rows")
    out = tmp_path / "new.py"
    result = migrate(str(path), "train_rows", call=f"{files!r}, 2", out=str(out))
    assert result.verdict.status == "MATCH", result.report()
    text = out.read_text()
    new = _function(text, "train_rows")
    assert "string_input_producer" not in new and "start_queue_runners" not in new
    assert "features, label = sess.run([feature_batch, label_batch])" in new
    namespace: dict = {}
    exec(compile(text, str(out), "exec"), namespace)
    if not tf.executing_eagerly():
        with tf.Graph().as_default():
            assert namespace["train_rows"](files, 2) == 12


def test_a_dequeue_of_the_queue_a_helper_reads_is_refused_at_its_line(tmp_path):
    """``peeked = file_queue.dequeue()`` beside ``reader.read(file_queue)`` takes file
    names from the reader: refused at its line with the reason, not a crash."""
    path = _program(tmp_path, "session_rows")
    files = _rows(tmp_path / "rows")
    with pytest.raises(MigrateError) as info:
        migrate(str(path), "peek_rows", call=f"{files!r}, 2", out=str(tmp_path / "new.py"))
    message = str(info.value)
    line = _line(path, "    peeked = file_queue.dequeue()")
    assert f"session_rows.py:{line}: cannot migrate `peeked = file_queue.dequeue()`" in message
    assert "takes a file name away from the reader" in message
    assert "bug in migrate" not in message


def test_read_before_assigned_follows_blocks_in_order():
    """NOTE [ Names a session loop binds ]: a loop's own binding before its read is
    no read; a read before it, or in a branch that may not bind, is."""
    code = """
with session() as sess:
    print(sess.run(total))
    try:
        while not coord.should_stop():
            example, label = sess.run([example_batch, label_batch])
            print(example, label)
    except Error:
        pass
    if flag:
        seen = 1
    print(seen, step)
    step = 2
"""
    names = read_before_assigned(list(cst.parse_module(code).body))
    assert names == ["session", "print", "total", "coord", "example_batch", "label_batch",
                     "Error", "flag", "seen", "step"]  # fmt: skip
