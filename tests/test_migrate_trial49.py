"""migrate on three shapes of public programs it got wrong in trial 49 (#41).

An own FIFOQueue filled by several enqueue threads and read with
``dequeue_many`` (the tail it drops is chosen by the threads' timing: a
false DIFFER before); a script whose file name queue the session fills from
a placeholder while its records pass through its own RandomShuffleQueue (a
refusal naming an op, no line, before); an Estimator input_fn factory whose
input function calls a removed ``tf.contrib`` reader ("builds no queue
pipeline", before). Each program is in ``tests/scripts/unseen_*``; run in
the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import types

import pytest

from queue_pipeline._migrate import trace as _trace
from queue_pipeline._migrate import verify as _verify
from queue_pipeline._migrate.api import MigrateError, migrate
from queue_pipeline._migrate.dropped_tails import accepted_tail

from helpers import copy_script, line_of, tf1_mode

pytestmark = pytest.mark.slow

# A twin that loses record 10 (the middle of 30) and so keeps 29 in its last batch.
LOSES_A_MIDDLE_RECORD = """

def read_numbers_dataset(paths, batch_size, num_threads=4):
    records = tf.data.TextLineDataset(tf.data.Dataset.from_tensor_slices(paths))

    def per_record(line):
        (number,) = tf.io.decode_csv(line, record_defaults=[[0]])
        return number, number * 2

    records = records.map(per_record).filter(lambda number, twice: tf.not_equal(number, 10))
    return records.batch(batch_size, drop_remainder=True)
"""


def _numbers(directory, count: int = 30):
    path = directory / "numbers.txt"
    path.write_text("".join(f"{i + 1}\n" for i in range(count)))
    return path


def _fifo_threads(tmp_path):
    path = copy_script("unseen_fifo_threads_tail.py", tmp_path, "reader.py")
    return path, f"[{str(_numbers(tmp_path))!r}], 4"


def test_a_fifo_filled_by_threads_matches_whatever_tail_the_threads_drop(tmp_path):
    """30 records, ``dequeue_many(4)``, 4 enqueue threads: the legacy side drops 2
    records its threads' timing chooses (was: DIFFER in ~40% of runs)."""
    path, call = _fifo_threads(tmp_path)
    for _ in range(2):
        result = migrate(str(path), "read_numbers", call=call, tf1=tf1_mode())
        assert result.verdict.status == "MATCH", result.report()


def test_the_threads_tail_is_accepted_only_near_the_legacy_end(tmp_path):
    """The rule itself, on the traced program: a same-size difference whose legacy
    records lie within the last batch plus one record per thread is the dropped tail
    (and the verdict says so); the same difference in the middle is not."""
    path, call = _fifo_threads(tmp_path)
    module, _ = _trace.load_module(str(path))
    args, kwargs = _trace.parse_call(module, call)
    traced = _trace.trace(module.__file__, "read_numbers", args, kwargs)
    epoch = types.SimpleNamespace(only_in_legacy=1, only_in_twin=1)

    def report(reach):
        return types.SimpleNamespace(
            mode="multiset", counts_equal=True, structure_equal=True, epochs=[epoch],
            tail_reach=reach,
        )  # fmt: skip

    tail = accepted_tail(traced, report((3, 19)))
    assert tail is not None and (tail.size, tail.threads, tail.window) == (4, 4, 8)
    said = tail.described("multiset")
    assert "the tail each side drops, whose records the timing of 4 enqueue threads" in said
    assert accepted_tail(traced, report((19, 1))) is None


def test_a_twin_losing_a_middle_record_still_differs(tmp_path):
    """A filter dropping record 10 keeps the twin's count (29 kept, 28 batched):
    only the legacy side holds 10, far from its end, so no dropped tail explains it."""
    path, call = _fifo_threads(tmp_path)
    module, _ = _trace.load_module(str(path))
    args, kwargs = _trace.parse_call(module, call)
    traced = _trace.trace(module.__file__, "read_numbers", args, kwargs)
    source = path.read_text() + LOSES_A_MIDDLE_RECORD
    migrated = _verify.load_migrated(traced.module, source, None)
    verdict = _verify.verify(traced, migrated, "read_numbers_dataset", args, kwargs)
    assert verdict.status == "DIFFER", verdict.reason
    assert "10" in str(verdict.report)


def test_a_fed_name_queue_before_an_own_shuffle_queue_is_refused_at_the_read(tmp_path):
    """The session fills the file name queue from a placeholder, and the records pass
    through the script's own RandomShuffleQueue (was: "op 'Placeholder' ... is a
    placeholder", no line): the read of the fed queue is refused at its line, as it
    is without the own queue."""
    path = copy_script("unseen_fed_names_own_shuffle.py", tmp_path, "chapter.py")
    (tmp_path / "sizes.csv").write_text("w,h,k\n1,2,0\n3,4,1\n5,6,0\n")
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "", tf1=tf1_mode())
    message = str(e.value)
    read = line_of(path, "reader.read(name_queue)")
    assert f"chapter.py:{read}: cannot migrate `_, row = reader.read(name_queue)`" in message
    assert "no producer of this function filled" in message and "feed_dict" in message
    assert "'Placeholder'" not in message


def test_a_placeholder_an_own_queue_enqueues_is_refused_at_its_line(tmp_path):
    """A refusal found on an own queue's enqueue side names the user's line that
    built the op (was: the op alone)."""
    path = copy_script("unseen_own_queue_fed_scale.py", tmp_path, "scaled.py")
    call = f"[{str(_numbers(tmp_path))!r}], 4"
    with pytest.raises(MigrateError) as e:
        migrate(str(path), "scaled_numbers", call=call, tf1=tf1_mode())
    message = str(e.value)
    assert f"scaled.py:{line_of(path, 'tf.compat.v1.placeholder')} (`scale = " in message
    assert "is a placeholder" in message and "Fix: replace it with the value it is fed" in message


@pytest.mark.parametrize("function", ["make_input_fn", "eval_inputs"])
def test_a_removed_contrib_reader_is_reported_where_it_is_called(tmp_path, function):
    """An input_fn factory's nested function (was: "builds no queue pipeline ... name the
    function that returns the pipeline's tensors") and a plain function through a helper
    report the error at the innermost line of the user's file, with the fix."""
    path = copy_script("unseen_contrib_input_fn.py", tmp_path, "inputs.py")
    with pytest.raises(MigrateError) as e:
        migrate(str(path), function, call="'train.tfrecords', 4", tf1=tf1_mode())
    message = str(e.value)
    line = line_of(path, "batched = tf.contrib" if function == "make_input_fn" else "return tf.c")
    assert f"failed at {path}:{line} (`" in message
    assert "contrib" in message and "AttributeError" in message
    assert "core queue API" in message
    if tf1_mode():  # the TF 1.x alias knows the removed name: its own replacement
        assert "use `tf.data.experimental.make_batched_features_dataset` for" in message
    else:
        assert "or with tf.data directly" in message
    assert "builds no queue pipeline (" not in message and "name the function" not in message
    if function == "make_input_fn":
        assert f"returns the function `_input_fn` ({path}:{line_of(path, 'def _input_fn')})" in (
            message
        )
