"""A script batching what its own queue of lines hands out one at a time (#41).

Two readers fill a FIFOQueue of strings (no shapes), a QueueRunner of their
enqueues is registered, ``example = lines.dequeue()`` is decoded and batched
by ``tf.train.batch``; the session sums each batch until the input ends.
"""

import sys

import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

FILES = sys.argv[1:] or ["n0.txt", "n1.txt"]


def decode(line):
    line = tf.reshape(line, [])
    number, label = tf.decode_csv(line, record_defaults=[[0.0], [0]])
    return number * 2.0, label


filename_queue = tf.train.string_input_producer(FILES, num_epochs=1, shuffle=False)
lines = tf.FIFOQueue(100, [tf.string])
enqueue_ops = []
for _ in range(2):
    _, value = tf.TextLineReader().read(filename_queue)
    enqueue_ops.append(lines.enqueue([value]))
tf.train.add_queue_runner(tf.train.QueueRunner(lines, enqueue_ops))
example = lines.dequeue()
numbers, labels = tf.train.batch(
    list(decode(example)), batch_size=3, allow_smaller_final_batch=True
)

with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    seen = []
    try:
        while not coord.should_stop():
            n, y = sess.run([numbers, labels])
            seen += zip(n.tolist(), y.tolist())
    except tf.errors.OutOfRangeError:
        print(len(seen), sorted(seen))
    finally:
        coord.request_stop()
    coord.join(threads)
