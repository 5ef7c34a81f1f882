"""The dataset engine counts per-record counters (``count_up_to``) in the Dataset.

See NOTE [ Per-record counters ] in ``_engine/bridge.py``. A batching call
over a counter (TF's own input tests' shape) is run natively (TF's own API,
the oracle) and on the dataset engine, in both TF modes (the suite runs this
file with ``--tf1`` too): the same batches, the variable at the limit at the
end, ``OutOfRangeError`` at the limit, and a count that starts from the
variable's value when the runners start.
"""

from __future__ import annotations


import pytest
import tensorflow as tf

from helpers import new_session, running, run_script_both_ways

v1 = tf.compat.v1
SERVED = "is filled from tf.data"


def _counted(way, *, start=0, limit=30):
    """(batches, variable after each step, final variable) of batch([counter, ...])."""
    with running(way):
        g = tf.Graph()
        with g.as_default():
            examples = v1.Variable(tf.constant(0, tf.int64), name="examples")
            counter = examples.count_up_to(limit)
            batched = v1.train.batch([counter, tf.cast(counter, tf.float32) * 2.0, "s"], 10)
            with new_session(g) as sess:
                sess.run(v1.global_variables_initializer())
                sess.run(v1.assign(examples, start))
                coord = v1.train.Coordinator()
                threads = v1.train.start_queue_runners(sess, coord)
                out, seen = [], []
                try:
                    for _ in range(10):
                        n, x, s = sess.run(batched)
                        out.append((n.tolist(), x.tolist(), s.tolist()))
                        seen.append(int(sess.run(examples)))
                except tf.errors.OutOfRangeError:
                    out.append("end")
                finally:
                    coord.request_stop()
                    coord.join(threads)
                return out, seen, int(sess.run(examples))


@pytest.mark.parametrize("start", [0, 7])
def test_counter_before_a_batching_call_is_counted_by_the_dataset(start, caplog):
    native, native_seen, native_final = _counted("native", start=start)
    with caplog.at_level("INFO", logger="queue_pipeline"):
        served, served_seen, served_final = _counted("dataset", start=start)
    assert served == native
    assert native[0][0][0] == start and native[-1] == "end"
    assert served_final == native_final == 30
    # The variable runs ahead of what the steps received, on both.
    for seen, batches in ((native_seen, native), (served_seen, served)):
        assert all(s >= b[0][-1] + 1 for s, b in zip(seen, batches[:-1]))
    assert "counts records with" in caplog.text and SERVED in caplog.text
    assert "stays on" not in caplog.text


@pytest.mark.slow
@pytest.mark.parametrize("args", [[], ["--own_queue"]], ids=["batch", "own_queue"])
def test_counter_indexed_trainer_runs_unmodified_on_both_engines(args):
    """tests/scripts/counter_indexed_arrays.py natively and through `queue-pipeline run`."""
    native, runs = run_script_both_ways(
        "counter_indexed_arrays.py", lambda way: args, engines=("queue", "dataset")
    )
    assert "examples=48 " in native.stdout and "counter=48" in native.stdout
    for engine, run in runs.items():
        assert (SERVED in run.stderr) == (engine == "dataset"), run.stderr[-2000:]
        assert "stays on" not in run.stderr


def test_join_of_a_counted_list_and_a_limited_one_keeps_the_counted_order(caplog):
    """TF's batch_join test: (0..34, "a") from a counter, (99, "b") 45 times."""

    def joined(way):
        with running(way):
            g = tf.Graph()
            with g.as_default():
                examples = v1.Variable(tf.constant(0, tf.int64))
                counter = examples.count_up_to(35)
                ninety_nine = v1.train.limit_epochs(tf.constant(99, tf.int64), 45)
                batched = v1.train.batch_join([[counter, "a"], [ninety_nine, "b"]], 5)
                with new_session(g) as sess:
                    sess.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
                    coord = v1.train.Coordinator()
                    threads = v1.train.start_queue_runners(sess, coord)
                    rows = []
                    try:
                        while True:
                            n, s = sess.run(batched)
                            rows.extend(zip(n.tolist(), s.tolist()))
                    except tf.errors.OutOfRangeError:
                        pass
                    finally:
                        coord.request_stop()
                        coord.join(threads)
                    return rows, int(sess.run(examples))

    native, native_final = joined("native")
    with caplog.at_level("INFO", logger="queue_pipeline"):
        served, served_final = joined("dataset")
    for rows in (native, served):
        assert [n for n, s in rows if s == b"a"] == list(range(35))
        assert [n for n, s in rows if s == b"b"] == [99] * 45
    assert served_final == native_final == 35
    assert SERVED in caplog.text and "stays on" not in caplog.text
