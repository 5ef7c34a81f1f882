"""``fully_connected_preloaded.py``'s shape (TF's reading-data how-to), on tf.compat.v1.

The public program loads MNIST into NumPy (``input_data.read_data_sets``),
then, inside ``run_training``'s own graph, holds the arrays as graph
constants pinned to the CPU (``with tf.device("/cpu:0"): input_images =
tf.constant(data_sets.train.images)``), slices
them with ``slice_input_producer`` (shuffled, ``num_epochs``), casts the
label, batches, trains a model and runs the Coordinator loop; nothing returns
the batches, so ``queue-pipeline migrate FILE.py:run_training`` migrates the
pipeline where it stands. Here the data set is made, not downloaded:
``DataSets`` has the public one's ``train.images`` / ``train.labels``
attributes, 1,400 x 784 float32 (4.3 MiB: TF1-mode migrated code holds them in
variables). Usage: python real_preloaded_constant.py [EPOCHS]
"""

import collections
import sys

import numpy as np
import tensorflow as tf

OP_TIMEOUT_MS = 30_000
BATCH_SIZE = 100

DataSet = collections.namedtuple("DataSet", ["images", "labels"])
DataSets = collections.namedtuple("DataSets", ["train", "validation"])


def read_data_sets(n=1400, dim=784):
    rng = np.random.RandomState(0)
    train = DataSet(rng.rand(n, dim).astype(np.float32), rng.randint(0, 10, n).astype(np.uint8))
    return DataSets(train=train, validation=train)


def run_training(data_sets, num_epochs=2):
    """Trains a softmax layer on the preloaded train set; returns (steps, labels seen)."""
    with tf.Graph().as_default():
        with tf.name_scope("input"):
            # Input data, pin to CPU because rest of pipeline is CPU-only
            with tf.device("/cpu:0"):
                input_images = tf.constant(data_sets.train.images)
                input_labels = tf.constant(data_sets.train.labels)

            image, label = tf.compat.v1.train.slice_input_producer(
                [input_images, input_labels], num_epochs=num_epochs
            )
            label = tf.cast(label, tf.int32)
            images, labels = tf.compat.v1.train.batch([image, label], batch_size=BATCH_SIZE)

        weights = tf.compat.v1.get_variable(
            "weights", [784, 10], initializer=tf.compat.v1.zeros_initializer()
        )
        logits = tf.matmul(images, weights)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss)
        label_sum = tf.reduce_sum(labels)
        init_op = tf.group(
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
        )

        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        sess = tf.compat.v1.Session(config=config)
        sess.run(init_op)

        # Start input enqueue threads.
        coord = tf.compat.v1.train.Coordinator()
        threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)

        seen = 0
        try:
            step = 0
            while not coord.should_stop():
                _, total = sess.run([train_op, label_sum])
                seen += int(total)
                step += 1
        except tf.errors.OutOfRangeError:
            print("Done training for %d epochs, %d steps." % (num_epochs, step))
        finally:
            # When done, ask the threads to stop.
            coord.request_stop()

        # Wait for threads to finish.
        coord.join(threads)
        sess.close()
        return step, seen


if __name__ == "__main__":
    print(run_training(read_data_sets(), num_epochs=int(sys.argv[1]) if sys.argv[1:] else 2))
