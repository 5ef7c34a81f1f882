"""``fully_connected_preloaded_var.py``'s shape, on tf.compat.v1: the pipeline inline.

``run_training`` builds the preloaded-variable pipeline inside its own
``with tf.Graph().as_default():`` block, then a softmax model, then runs the
guide's Coordinator loop: nothing returns the batch tensors, so
``queue-pipeline migrate FILE.py:run_training`` migrates the pipeline where it
stands (NOTE [ Migrating an inline pipeline ]). Usage: python
preloaded_var_training.py [EPOCHS]
"""

import sys

import numpy as np
import tensorflow as tf

OP_TIMEOUT_MS = 30_000


def training_data(n=24, dim=5):
    rng = np.random.RandomState(0)
    return rng.rand(n, dim).astype(np.float32), rng.randint(0, 3, size=n).astype(np.int64)


def run_training(images, labels, num_epochs=2, batch_size=4):
    """Trains a softmax classifier on preloaded data; returns the losses of its steps."""
    with tf.Graph().as_default():
        with tf.name_scope("input"):
            # Input data, in variables that the graph does not hold
            images_initializer = tf.compat.v1.placeholder(dtype=images.dtype, shape=images.shape)
            labels_initializer = tf.compat.v1.placeholder(dtype=labels.dtype, shape=labels.shape)
            input_images = tf.compat.v1.Variable(
                images_initializer, trainable=False, collections=[]
            )
            input_labels = tf.compat.v1.Variable(
                labels_initializer, trainable=False, collections=[]
            )

            image, label = tf.compat.v1.train.slice_input_producer(
                [input_images, input_labels], num_epochs=num_epochs, shuffle=False
            )
            label = tf.cast(label, tf.int32)
            batch_images, batch_labels = tf.compat.v1.train.batch(
                [image, label], batch_size=batch_size
            )

        weights = tf.compat.v1.get_variable(
            "weights", [images.shape[1], 3], initializer=tf.compat.v1.zeros_initializer()
        )
        logits = tf.matmul(batch_images, weights)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=batch_labels, logits=logits)
        )
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(loss)
        init_op = tf.group(
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
        )

        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=OP_TIMEOUT_MS)
        sess = tf.compat.v1.Session(config=config)
        sess.run(init_op)
        sess.run(input_images.initializer, feed_dict={images_initializer: images})
        sess.run(input_labels.initializer, feed_dict={labels_initializer: labels})

        # Start input enqueue threads.
        coord = tf.compat.v1.train.Coordinator()
        threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)

        losses = []
        try:
            step = 0
            while not coord.should_stop():
                _, loss_value = sess.run([train_op, loss])
                losses.append(round(float(loss_value), 5))
                step += 1
        except tf.errors.OutOfRangeError:
            print("Done training for %d epochs, %d steps." % (num_epochs, step))
        finally:
            # When done, ask the threads to stop.
            coord.request_stop()

        # Wait for threads to finish.
        coord.join(threads)
        sess.close()
        return losses


if __name__ == "__main__":
    print(run_training(*training_data(), num_epochs=int(sys.argv[1]) if sys.argv[1:] else 2))
