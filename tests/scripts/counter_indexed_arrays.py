"""A trainer whose examples are picked by a per-record counter: ``count_up_to`` before a batcher.

Shaped like TF 1.x tests and tutorials that number their examples with a
variable's ``count_up_to(limit)`` (TF's own input tests, "examples seen"
counters): the counter indexes preloaded arrays (``tf.gather``), and the
example goes to ``tf.train.batch`` or, with ``--own_queue``, to the
program's own FIFOQueue filled by a QueueRunner with two enqueue ops and read
with ``dequeue_many``. The counter's limit ends the input
(``OutOfRangeError``). Prints one ``DIGEST`` line: the examples seen (in
order with ``batch``, as a multiset with two enqueue threads) and the
counter's final value.

Usage: counter_indexed_arrays.py [--own_queue] [--epochs N]
"""

import argparse
import hashlib

import numpy as np
import tensorflow.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--own_queue", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch_size", type=int, default=8)
FLAGS = parser.parse_args()

EXAMPLES = 24


def counted_examples(images, labels, limit):
    """One (number, image, label) per run, picked by a counter that stops at `limit`."""
    seen = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="examples_seen")
    number = seen.count_up_to(limit)
    index = number % len(images)
    image = tf.gather(tf.constant(images), index) * (1.0 / 255)
    label = tf.gather(tf.constant(labels), index)
    return seen, [number, image, label]


def batches(example, batch_size):
    if not FLAGS.own_queue:
        return tf.train.batch(example, batch_size=batch_size, capacity=32)
    queue = tf.FIFOQueue(32, [t.dtype for t in example], shapes=[t.shape for t in example])
    enqueue_ops = [queue.enqueue(example) for _ in range(2)]
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, enqueue_ops))
    return queue.dequeue_many(batch_size)


def run():
    rng = np.random.RandomState(1)
    images = rng.randint(0, 256, size=(EXAMPLES, 4, 4)).astype(np.float32)
    labels = np.arange(EXAMPLES, dtype=np.int32) % 3
    seen, example = counted_examples(images, labels, EXAMPLES * FLAGS.epochs)
    number, image, label = batches(example, FLAGS.batch_size)
    w = tf.Variable(tf.zeros([16, 3]), name="w")
    logits = tf.matmul(tf.reshape(image, [-1, 16]), w)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label, logits=logits)
    )
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    out = []
    config = tf.ConfigProto(operation_timeout_in_ms=60000)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            while not coord.should_stop():
                _, n, x = sess.run([train, number, image])
                out.extend(zip(n.tolist(), x.sum(axis=(1, 2)).round(4).tolist()))
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
            coord.join(threads)
        final = sess.run(seen)
    if FLAGS.own_queue:
        out.sort()
    data = hashlib.sha256(repr(out).encode()).hexdigest()[:16]
    print("DIGEST examples=%d data=%s counter=%d" % (len(out), data, final))


def main():
    with tf.Graph().as_default():
        run()


if __name__ == "__main__":
    main()
