"""A regression trainer on NumPy arrays fed to a queue from Python: the numpy_input_fn shape.

Shaped like the Estimator-era programs that keep their own copy of
``numpy_input_fn``'s feeding code (TF 2.16+ ships no Estimator): a
QueueRunner subclass whose thread ``i`` calls feed function ``i`` (a batch
of array rows per call, ``OutOfRangeError`` after ``num_epochs``) before
each ``enqueue_many`` of the placeholders, a FIFO (or, with ``--shuffle``,
random shuffle) queue, ``dequeue_up_to(batch_size)``, and a linear model
trained under ``Coordinator`` + ``start_queue_runners`` until
``OutOfRangeError``. Flags at module level; prints one ``DIGEST`` line (the
rows seen, in order without ``--shuffle``, as a multiset with it).

Usage: fed_numpy_input.py [--shuffle] [--threads N] [--epochs N]
"""

import argparse
import hashlib
import threading

import numpy as np
import tensorflow.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--shuffle", action="store_true")
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch_size", type=int, default=16)
FLAGS = parser.parse_args()


class ArrayFeeder:
    """Feeds batches of rows of `arrays` (with their row index), epoch after epoch."""

    def __init__(self, placeholders, arrays, batch_size, num_epochs, seed=None):
        self._placeholders = placeholders
        self._arrays = arrays
        self._batch_size = batch_size
        self._num_epochs = num_epochs
        self._rows = len(arrays[0])
        self._rng = np.random.RandomState(seed) if seed is not None else None
        self._order = self._new_order()
        self._next = 0
        self._epoch = 0

    def _new_order(self):
        if self._rng is None:
            return np.arange(self._rows)
        return self._rng.permutation(self._rows)

    def __call__(self):
        if self._num_epochs is not None and self._epoch >= self._num_epochs:
            raise tf.errors.OutOfRangeError(None, None, "fed %d epochs" % self._epoch)
        index = self._order[self._next : self._next + self._batch_size]
        self._next += len(index)
        if self._next >= self._rows:
            self._epoch += 1
            self._next = 0
            self._order = self._new_order()
        values = [index.astype(np.int64)] + [a[index] for a in self._arrays]
        return dict(zip(self._placeholders, values))


class FeedingRunner(tf.train.QueueRunner):
    """A queue runner whose thread i runs enqueue op i fed by feed function i."""

    def __init__(self, queue, enqueue_ops, feed_fns):
        super().__init__(queue, enqueue_ops)
        self._feed_fns = feed_fns
        self._live = {}
        self._guard = threading.Lock()

    def _loop(self, sess, enqueue_op, feed_fn, coord):
        coord.register_thread(threading.current_thread())
        try:
            while not coord.should_stop():
                try:
                    sess.run(enqueue_op, feed_dict=feed_fn())
                except (tf.errors.OutOfRangeError, tf.errors.CancelledError):
                    break
        except Exception as e:  # the Coordinator reports it
            coord.request_stop(e)
        finally:
            with self._guard:
                self._live[sess] -= 1
                last = self._live[sess] == 0
            if last:
                try:
                    sess.run(self.close_op)
                except tf.errors.OpError:
                    pass

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        with self._guard:
            if self._live.get(sess, 0) > 0:
                return []
            self._live[sess] = len(self.enqueue_ops)
        threads = [
            threading.Thread(target=self._loop, args=(sess, op, fn, coord), daemon=daemon)
            for op, fn in zip(self.enqueue_ops, self._feed_fns)
        ]
        if start:
            for t in threads:
                t.start()
        return threads


def numpy_input(x, y, batch_size, num_epochs, shuffle, num_threads):
    """(features, labels) batches of arrays `x`, `y`, fed through a queue from Python."""
    with tf.name_scope("numpy_input"):
        placeholders = [
            tf.placeholder(tf.int64, [None], name="index"),
            tf.placeholder(tf.float32, [None, x.shape[1]], name="x"),
            tf.placeholder(tf.float32, [None], name="y"),
        ]
        dtypes = [p.dtype for p in placeholders]
        shapes = [p.shape[1:] for p in placeholders]
        if shuffle:
            queue = tf.RandomShuffleQueue(
                1000, 250, dtypes, shapes=shapes, seed=11, name="fifo_queue"
            )
        else:
            queue = tf.FIFOQueue(1000, dtypes, shapes=shapes, name="fifo_queue")
        threads = num_threads if shuffle else 1
        enqueue_ops = [queue.enqueue_many(placeholders) for _ in range(threads)]
        feeders = [
            ArrayFeeder(placeholders, [x, y], batch_size, num_epochs, seed=i if shuffle else None)
            for i in range(threads)
        ]
        tf.train.add_queue_runner(FeedingRunner(queue, enqueue_ops, feeders))
        index, features, labels = queue.dequeue_up_to(batch_size)
    return {"index": index, "x": features}, labels


def main():
    with tf.Graph().as_default():
        run()


def run():
    rng = np.random.RandomState(3)
    x = rng.rand(100, 3).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.25).astype(np.float32)
    features, labels = numpy_input(
        x, y, FLAGS.batch_size, FLAGS.epochs, FLAGS.shuffle, FLAGS.threads
    )
    w = tf.Variable(tf.zeros([3]), name="w")
    b = tf.Variable(0.0, name="b")
    loss = tf.reduce_mean(tf.square(tf.linalg.matvec(features["x"], w) + b - labels))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    seen, steps = [], 0
    config = tf.ConfigProto(operation_timeout_in_ms=60000)
    with tf.Session(config=config) as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            while not coord.should_stop():
                _, index, batch_x = sess.run([train, features["index"], features["x"]])
                seen.extend(zip(index.tolist(), batch_x.round(5).tolist()))
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads)
        weights = sess.run(w)
    if FLAGS.shuffle:
        seen.sort()
    data = hashlib.sha256(repr(seen).encode()).hexdigest()[:16]
    line = "DIGEST rows=%d data=%s" % (len(seen), data)
    if not FLAGS.shuffle:  # the same batches in the same order: the same weights
        line += " steps=%d weights=%s" % (steps, np.round(weights, 4).tolist())
    print(line)


if __name__ == "__main__":
    main()
