"""The dataset engine fills queues fed from Python (feed functions) from tf.data.

See NOTE [ Queues fed from Python ] in ``_engine/fed_queues.py``. A queue
filled by a runner whose threads call feed functions (the Estimator-era
``numpy_input_fn`` shape) is run natively (TF's own API, the oracle) and on
the dataset engine, in both TF modes (the suite runs this file with
``--tf1`` too): the same batches, the same end of input.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import tensorflow as tf

from helpers import drain, running, run_script_both_ways
from queue_pipeline._engine import fed_queues

v1 = tf.compat.v1
SERVED = "its feed function, through Dataset.from_generator"
ROWS = 20


class _Feeder:
    """Feeds rows [i, i + 3) of `x` per call, `epochs` times, then OutOfRangeError."""

    def __init__(self, placeholders, x, epochs=2, drop=None):
        self.placeholders, self.x, self.epochs, self.drop = placeholders, x, epochs, drop
        self.start, self.epoch = 0, 0

    def __call__(self):
        if self.epoch >= self.epochs:
            raise tf.errors.OutOfRangeError(None, None, "done")
        index = np.arange(self.start, min(self.start + 3, len(self.x)))
        self.start = index[-1] + 1
        if self.start >= len(self.x):
            self.start, self.epoch = 0, self.epoch + 1
        feed = dict(zip(self.placeholders, [index.astype(np.int64), self.x[index]]))
        if self.drop is not None:
            del feed[self.placeholders[self.drop]]
        return feed


def _feeding_runner_class():
    """A runner calling feed function i before each run of enqueue op i (TF's shape)."""

    class FeedingRunner(v1.train.QueueRunner):  # the class install() put in place, if any
        def __init__(self, queue, enqueue_ops, feed_fns):
            super().__init__(queue, enqueue_ops)
            self._feed_fns = feed_fns

        def _loop(self, sess, op, fn, coord):
            coord.register_thread(threading.current_thread())
            try:
                while not coord.should_stop():
                    sess.run(op, feed_dict=fn())
            except (tf.errors.OutOfRangeError, tf.errors.CancelledError):
                sess.run(self.close_op)
            except Exception as e:  # noqa: BLE001 - reported like TF's runner does
                coord.request_stop(e)

        def create_threads(self, sess, coord=None, daemon=False, start=False):
            threads = [
                threading.Thread(target=self._loop, args=(sess, op, fn, coord), daemon=True)
                for op, fn in zip(self.enqueue_ops, self._feed_fns)
            ]
            for t in threads if start else ():
                t.start()
            return threads

    return FeedingRunner


def _fed_batches(*, mapped: bool, drop=None):
    """(index, x) batches of 4 from a FIFO queue fed from Python, and its feeder."""
    x = np.arange(ROWS * 2, dtype=np.float32).reshape(ROWS, 2)
    index = v1.placeholder(tf.int64, [None], name="index")
    values = v1.placeholder(tf.float32, [None, 2], name="x")
    queue = v1.FIFOQueue(50, [tf.int64, tf.float32], shapes=[[], [2]], name="fed")
    enqueued = [index, values]
    if mapped:  # per-row work between the placeholders and the queue
        enqueued = [index * 10, tf.cast(tf.cast(values, tf.int32) + 1, tf.float32)]
    enqueue = queue.enqueue_many(enqueued)
    feeder = _Feeder([index, values], x, drop=drop)
    v1.train.add_queue_runner(_feeding_runner_class()(queue, [enqueue], [feeder]))
    return queue.dequeue_up_to(4)


@pytest.mark.parametrize("mapped", [False, True], ids=["placeholders", "mapped"])
def test_fed_queue_is_filled_from_tf_data(mapped, caplog):
    def batches(way):
        with running(way):
            g = tf.Graph()
            with g.as_default():
                fetch = _fed_batches(mapped=mapped)
            return [(i.tolist(), v.tolist()) for i, v in drain(v1.train, g, fetch)]

    native = batches("native")
    with caplog.at_level("INFO", logger="queue_pipeline"):
        served = batches("dataset")
    assert served == native
    assert sum(len(i) for i, _ in native) == 2 * ROWS and native[-1][0][-1] == (
        (ROWS - 1) * (10 if mapped else 1)
    )
    assert SERVED in caplog.text and "stays on" not in caplog.text


def test_feed_function_missing_a_placeholder_is_named():
    with running("dataset"):
        g = tf.Graph()
        with g.as_default():
            fetch = _fed_batches(mapped=False, drop=1)
        with pytest.raises(tf.errors.OpError, match=r"did not feed placeholder 'x:0'"):
            drain(v1.train, g, fetch)


@pytest.mark.slow
@pytest.mark.parametrize("args", [[], ["--shuffle", "--threads", "2"]], ids=["fifo", "shuffle"])
def test_numpy_input_trainer_runs_unmodified_on_both_engines(args):
    """tests/scripts/fed_numpy_input.py natively and through `queue-pipeline run`."""
    native, runs = run_script_both_ways(
        "fed_numpy_input.py", lambda way: args, engines=("queue", "dataset")
    )
    assert "rows=%d " % (400 if args else 200) in native.stdout
    for engine, run in runs.items():
        assert (SERVED in run.stderr) == (engine == "dataset"), run.stderr[-2000:]


def test_only_runners_with_feed_functions_are_fed():
    g = tf.Graph()
    with g.as_default():
        queue = v1.FIFOQueue(10, [tf.int64], shapes=[[]])
        enqueue = queue.enqueue_many([v1.placeholder(tf.int64, [None])])
        plain = v1.train.QueueRunner(queue, [enqueue])
        unfed = _feeding_runner_class()(queue, [enqueue], [None])
        fed = _feeding_runner_class()(queue, [enqueue], [len])
    assert fed_queues.feed_functions([plain], [enqueue]) is None
    assert fed_queues.feed_functions([unfed], [enqueue]) is None
    assert fed_queues.feed_functions([fed], [enqueue]) == [len]
    with pytest.raises(TypeError, match="not by one thread with a feed function"):
        fed_queues.feed_functions([fed, plain], [enqueue])
