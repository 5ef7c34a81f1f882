"""Random draws that read no record stay per record, and the proof sees where they are (#41).

monodepth's loader draws ``do_flip = tf.random_uniform([], 0, 1)``, reading no
record, and a per-record ``tf.cond(do_flip > 0.5, ...)`` reads it: TF 1.x draws
it for every record. The migration used to move it out of the mapped
function (one draw per Dataset: every record flipped or none, and no one-shot
iterator), and the proof, every draw pinned to 0.25, said MATCH. NOTE [ A
draw that reads no record ], NOTE [ A draw captured by the map ] and NOTE [
Proving a random, endless input pipeline ]. Run in the suite's TF mode (the
suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import tensorflow as tf

from queue_pipeline._migrate import trace as _trace
from queue_pipeline._migrate import verify as _verify
from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, line_of, tf1_mode

COIN_SCRIPT = """
import tensorflow.compat.v1 as tf


def inputs(path, batch_size):
    queue = tf.train.string_input_producer([path], shuffle=False, num_epochs=1)
    _, line = tf.TextLineReader().read(queue)
    x = tf.string_to_number(line)
    do_flip = tf.random_uniform([], 0, 1)
    y = tf.cond(do_flip > 0.5, lambda: -x, lambda: x)
    return tf.train.batch([y], batch_size)
"""

COIN_SCRIPT_MODULE_LEVEL = """
import tensorflow.compat.v1 as tf

queue = tf.train.string_input_producer(["numbers.txt"], shuffle=False, num_epochs=1)
_, line = tf.TextLineReader().read(queue)
x = tf.string_to_number(line)
do_flip = tf.random_uniform([], 0, 1)
y = tf.cond(do_flip > 0.5, lambda: -x, lambda: x)
batch = tf.train.batch([y], 4)

with tf.Session() as sess:
    sess.run(tf.local_variables_initializer())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord=coord)
    print(sess.run(batch))
    coord.request_stop()
    coord.join(threads)
"""

# The twin as written before the fix: the draw made once, where the Dataset is built.
DRAWN_ONCE = """

def inputs_dataset(path, batch_size):
    records = tf.data.TextLineDataset(tf.data.Dataset.from_tensor_slices([path]))
    do_flip = tf.random_uniform([], 0, 1)

    def per_record(line):
        x = tf.string_to_number(line)
        return tf.cond(do_flip > 0.5, lambda: -x, lambda: x)

    return records.map(per_record).batch(batch_size, drop_remainder=True)
"""

# A twin that never flips: the same as the legacy code wherever the draw is below 0.5.
NEVER_FLIPS = """

def inputs_dataset(path, batch_size):
    records = tf.data.TextLineDataset(tf.data.Dataset.from_tensor_slices([path]))

    def per_record(line):
        x = tf.string_to_number(line)
        do_flip = tf.random_uniform([], 0, 1)
        return tf.cond(do_flip > 1.5, lambda: -x, lambda: x)

    return records.map(per_record).batch(batch_size, drop_remainder=True)
"""


def _numbers(directory, count: int = 40):
    path = directory / "numbers.txt"
    path.write_text("".join(f"{i + 1}\n" for i in range(count)))
    return path


def _proof_of(path, call: str, twin: str):
    """The proof of the hand-written `twin` (``inputs_dataset``) against ``inputs``."""
    module, _ = _trace.load_module(str(path))
    args, kwargs = _trace.parse_call(module, call)
    traced = _trace.trace(module.__file__, "inputs", args, kwargs)
    source = path.read_text() + twin
    migrated = _verify.load_migrated(traced.module, source, None)
    return _verify.verify(traced, migrated, "inputs_dataset", args, kwargs)


def test_a_draw_reading_no_record_is_written_in_the_mapped_function(tmp_path):
    """``do_flip = tf.random_uniform(...)`` goes into ``per_record`` (was: before it,
    drawn once), and the proof takes the cond both ways (0.25, then 0.75)."""
    path = tmp_path / "coin.py"
    path.write_text(COIN_SCRIPT)
    call = f"{str(_numbers(tmp_path))!r}, 4"
    result = migrate(str(path), "inputs", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert "pinned to 0.25 of their range on both sides, then to 0.75" in result.verdict.reason
    written = result.source[result.source.index("def inputs_dataset") :]
    inside = written[written.index("def per_record(") : written.index("records = records.map")]
    assert "do_flip = tf.random_uniform([], 0, 1)" in inside


def test_a_draw_reading_no_record_stays_per_record_in_a_script(tmp_path, monkeypatch):
    """The same rule holds where a script's module level builds the pipeline (the
    inline path shares the statement rewriter)."""
    path = tmp_path / "coin_script.py"
    path.write_text(COIN_SCRIPT_MODULE_LEVEL)
    _numbers(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = migrate(str(path), "")
    assert result.verdict.status == "MATCH", result.report()
    written = result.source
    inside = written[written.index("def per_record(") : written.index("records = records.map")]
    assert "do_flip = tf.random_uniform([], 0, 1)" in inside


def test_the_proof_sees_a_draw_made_once_for_the_whole_dataset(tmp_path):
    """A twin drawing ``do_flip`` once, where the Dataset is built, is DIFFER, naming
    the captured draw (was: MATCH, every draw pinned to the same constant)."""
    path = tmp_path / "coin.py"
    path.write_text(COIN_SCRIPT)
    verdict = _proof_of(path, f"{str(_numbers(tmp_path))!r}, 4", DRAWN_ONCE)
    assert verdict.status == "DIFFER", verdict.reason
    assert "captures a random draw" in verdict.reason
    assert "made once where the Dataset is built" in verdict.reason


def test_the_proof_takes_a_test_on_a_draw_both_ways(tmp_path):
    """A twin that never flips matches the legacy side while every draw is 0.25; the
    second run, at 0.75, flips on the legacy side: DIFFER (was: MATCH)."""
    path = tmp_path / "coin.py"
    path.write_text(COIN_SCRIPT)
    verdict = _proof_of(path, f"{str(_numbers(tmp_path))!r}, 4", NEVER_FLIPS)
    assert verdict.status == "DIFFER", verdict.reason
    assert "pinned to 0.75 of their range" in verdict.reason
    assert "at 0.25 of their range the two sides matched" in verdict.reason


def _stereo_data(directory, pairs: int = 40) -> None:
    """`pairs` PNG pairs, every image a ramp brighter to the right, and ``pairs.txt``."""
    (directory / "data").mkdir()
    ramp = np.linspace(10, 80, 8).astype(np.uint8)
    with tf.Graph().as_default():  # either TF mode
        pixels = tf.compat.v1.placeholder(tf.uint8, [8, 8, 3])
        encoded = tf.io.encode_png(pixels)
        with tf.compat.v1.Session() as sess:
            for i in range(pairs):
                for side in "lr":
                    image = np.broadcast_to(ramp[None, :, None] + i // 4, (8, 8, 3))
                    png = sess.run(encoded, {pixels: np.ascontiguousarray(image)})
                    (directory / "data" / f"{side}{i:02d}.png").write_bytes(png)
    lines = "".join(f"l{i:02d}.png r{i:02d}.png\n" for i in range(pairs))
    (directory / "pairs.txt").write_text(lines)


def _mirrored(left_batches: list) -> tuple[int, int]:
    """(pairs swapped and mirrored, pairs) of one epoch's left images (ramps that fall)."""
    images = np.concatenate(left_batches)
    return int((images[:, 0, 0, 0] > images[:, 0, -1, 0]).sum()), len(images)


@pytest.mark.slow
def test_a_loader_flipping_each_pair_at_random_flips_some_pairs_of_an_epoch(tmp_path, monkeypatch):
    """The unseen loader (a class whose constructor builds the pipeline, a ``params``
    namedtuple, ``mode='train'``): the written code makes a one-shot iterator (and
    iterates eagerly under TF 2.x), and an epoch's pairs are swapped one by one at
    random: neither none nor all of the 40 (was: all or none, the coin drawn once;
    the chance of 5 or fewer, or 35 or more, of 40 fair coins is below 1e-6)."""
    path = copy_script("unseen_record_free_draw.py", tmp_path, "stereo_loader.py")
    _stereo_data(tmp_path)
    monkeypatch.chdir(tmp_path)
    call = "'data/', 'pairs.txt', StereoParams(8, 8, 4, 2, False), 'train'"
    result = migrate(str(path), "StereoLoader", call=call)
    assert result.verdict.status == "MATCH", result.report()
    assert "then to 0.75" in result.verdict.reason
    module = result.load()
    loader_class = module.StereoLoader
    params = module.StereoParams(8, 8, 4, 2, False)

    def dataset():
        loader = loader_class.__new__(loader_class)
        return loader.init_dataset("data/", "pairs.txt", params, "train")

    counts = []
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(7)
        element = tf.compat.v1.data.make_one_shot_iterator(dataset()).get_next()
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=60000)
        batches = []
        with tf.compat.v1.Session(config=config) as sess:
            with contextlib.suppress(tf.errors.OutOfRangeError):
                while True:
                    batches.append(sess.run(element)["left_batch"])
        counts.append(_mirrored(batches))
    if not tf1_mode():
        tf.random.set_seed(7)
        counts.append(_mirrored([e["left_batch"].numpy() for e in dataset()]))
    for mirrored, pairs in counts:
        assert pairs == 40
        assert 5 < mirrored < 35, counts


@pytest.mark.slow
def test_a_branch_the_run_did_not_take_that_makes_no_dataset_is_refused(tmp_path, monkeypatch):
    """The public loader's ``elif mode == 'test':`` keeps one unbatched record: the
    written branch made no ``dataset`` where the code after the ``if`` reads it (was:
    written, broken, unchecked). Refused at that line, with the fix (NOTE [ A branch
    that makes no Dataset ])."""
    path = copy_script("unseen_record_free_draw.py", tmp_path, "stereo_loader.py")
    batched = "            self.left_batch, self.right_batch = tf.train.batch([pair, right], 1)\n"
    text = path.read_text()
    assert batched in text
    path.write_text(text.replace(batched, "            self.left_batch = pair\n"))
    _stereo_data(tmp_path, pairs=8)
    monkeypatch.chdir(tmp_path)
    call = "'data/', 'pairs.txt', StereoParams(8, 8, 4, 2, False), 'train'"
    with pytest.raises(MigrateError) as failure:
        migrate(str(path), "StereoLoader", call=call)
    message = str(failure.value)
    assert f"stereo_loader.py:{line_of(path, 'elif mode == ')}:" in message
    assert "the branch `mode == 'test'`, which the run did not take" in message
    assert "Fix: migrate with arguments that take this branch (--call)" in message


def test_a_draw_for_the_code_on_the_batches_stays_in_the_per_batch_map(tmp_path):
    """``noise = tf.random_uniform([4])`` added to the batches after the batching call:
    the legacy graph draws it at every step, so it goes into ``per_batch``."""
    path = tmp_path / "noisy.py"
    path.write_text(
        COIN_SCRIPT.replace("def inputs(path, batch_size):", "def inputs(path):")
        .replace("    do_flip = tf.random_uniform([], 0, 1)\n", "")
        .replace("    y = tf.cond(do_flip > 0.5, lambda: -x, lambda: x)\n", "")
        .replace(
            "    return tf.train.batch([y], batch_size)\n",
            "    batch = tf.train.batch([x], 4)\n"
            "    noise = tf.random_uniform([4], 0, 1)\n"
            "    return batch + noise\n",
        )
    )
    result = migrate(str(path), "inputs", call=repr(str(_numbers(tmp_path))))
    assert result.verdict.status == "MATCH", result.report()
    written = result.source[result.source.index("def inputs_dataset") :]
    last = written[written.rindex("def per_batch(") :]
    assert "noise = tf.random_uniform([4], 0, 1)" in last
