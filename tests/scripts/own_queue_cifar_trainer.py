"""A trainer shaped like TF's CIFAR-10 model code: the input fills its own queues.

As ``cifar10_input.py`` + ``cifar10_train.py`` / ``cifar10_eval.py`` of the
TF 1.x models repository: module-level flags, ``read_cifar10`` over a
FixedLengthRecordReader, a train branch (pad, random crop, flip, 16 enqueue
ops into the program's own RandomShuffleQueue) and an eval branch (crop or
pad, standardize, one FIFO queue), both read with ``dequeue_many``; training
under ``MonitoredTrainingSession``, evaluation in a plain Session loop. It
writes its own data (``--data_dir``) and prints one ``DIGEST`` line.

Usage: own_queue_cifar_trainer.py --data_dir DIR [--eval] [--batch_size N]
"""

import argparse
import os

import numpy as np
import tensorflow.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--data_dir", required=True)
parser.add_argument("--batch_size", type=int, default=10)
parser.add_argument("--eval", action="store_true")
parser.add_argument("--records", type=int, default=60)
FLAGS = parser.parse_args()

IMAGE_SIZE = 6
NUM_PREPROCESS_THREADS = 16
LABEL_BYTES, HEIGHT, WIDTH, DEPTH = 1, 8, 8, 3


def write_data(data_dir, records):
    os.makedirs(data_dir, exist_ok=True)
    rng = np.random.RandomState(0)
    names = []
    for f in range(2):
        rows = rng.randint(0, 256, size=(records // 2, 1 + HEIGHT * WIDTH * DEPTH)).astype(np.uint8)
        rows[:, 0] = (np.arange(records // 2) + 10 * f) % 10
        name = os.path.join(data_dir, "data_batch_%d.bin" % (f + 1))
        rows.tofile(name)
        names.append(name)
    return names


def read_cifar10(filename_queue):
    class CIFAR10Record(object):
        pass

    result = CIFAR10Record()
    record_bytes = LABEL_BYTES + HEIGHT * WIDTH * DEPTH
    reader = tf.FixedLengthRecordReader(record_bytes=record_bytes)
    result.key, value = reader.read(filename_queue)
    record = tf.decode_raw(value, tf.uint8)
    result.label = tf.cast(tf.strided_slice(record, [0], [LABEL_BYTES]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record, [LABEL_BYTES], [record_bytes]), [DEPTH, HEIGHT, WIDTH]
    )
    result.uint8image = tf.transpose(depth_major, [1, 2, 0])
    return result


def _generate_image_and_label_batch(image, label, min_queue_examples, batch_size, shuffle):
    if shuffle:
        queue = tf.RandomShuffleQueue(
            capacity=min_queue_examples + 3 * batch_size,
            min_after_dequeue=min_queue_examples,
            dtypes=[tf.float32, tf.int32],
            shapes=[[IMAGE_SIZE, IMAGE_SIZE, 3], [1]],
        )
        threads = NUM_PREPROCESS_THREADS
    else:
        queue = tf.FIFOQueue(
            capacity=min_queue_examples + 3 * batch_size,
            dtypes=[tf.float32, tf.int32],
            shapes=[[IMAGE_SIZE, IMAGE_SIZE, 3], [1]],
        )
        threads = 1
    enqueue_op = queue.enqueue([image, label])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * threads))
    images, label_batch = queue.dequeue_many(batch_size)
    tf.summary.image("images", images)
    return images, tf.reshape(label_batch, [batch_size])


def distorted_inputs(filenames, batch_size):
    filename_queue = tf.train.string_input_producer(filenames, num_epochs=1)
    read_input = read_cifar10(filename_queue)
    reshaped_image = tf.cast(read_input.uint8image, tf.float32)
    padded = tf.image.resize_image_with_crop_or_pad(reshaped_image, HEIGHT + 2, WIDTH + 2)
    distorted_image = tf.random_crop(padded, [IMAGE_SIZE, IMAGE_SIZE, 3])
    distorted_image = tf.image.random_flip_left_right(distorted_image)
    read_input.label.set_shape([1])
    return _generate_image_and_label_batch(
        distorted_image, read_input.label, 20, batch_size, shuffle=True
    )


def inputs(filenames, batch_size):
    filename_queue = tf.train.string_input_producer(filenames, num_epochs=1, shuffle=False)
    read_input = read_cifar10(filename_queue)
    reshaped_image = tf.cast(read_input.uint8image, tf.float32)
    resized_image = tf.image.resize_image_with_crop_or_pad(reshaped_image, IMAGE_SIZE, IMAGE_SIZE)
    float_image = tf.image.per_image_standardization(resized_image)
    read_input.label.set_shape([1])
    return _generate_image_and_label_batch(
        float_image, read_input.label, 20, batch_size, shuffle=False
    )


def train(filenames):
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        images, labels = distorted_inputs(filenames, FLAGS.batch_size)
        weights = tf.get_variable("weights", [IMAGE_SIZE * IMAGE_SIZE * 3, 10])
        logits = tf.matmul(tf.reshape(images, [FLAGS.batch_size, -1]), weights)
        loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
        train_op = tf.train.GradientDescentOptimizer(1e-4).minimize(loss, global_step)
        seen = []
        config = tf.ConfigProto(operation_timeout_in_ms=60000)
        with tf.train.MonitoredTrainingSession(config=config, save_summaries_steps=None) as sess:
            while not sess.should_stop():
                _, batch_labels = sess.run([train_op, labels])
                seen.extend(batch_labels.tolist())
        return len(seen) // FLAGS.batch_size, sorted(seen), None


def evaluate(filenames):
    with tf.Graph().as_default():
        images, labels = inputs(filenames, FLAGS.batch_size)
        config = tf.ConfigProto(operation_timeout_in_ms=60000)
        with tf.Session(config=config) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            seen, pixels, steps = [], 0.0, 0
            try:
                while not coord.should_stop():
                    batch_images, batch_labels = sess.run([images, labels])
                    steps += 1
                    seen.extend(batch_labels.tolist())
                    pixels += float(np.abs(batch_images).sum())
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
                coord.join(threads)
        return steps, seen, round(pixels, 2)


filenames = write_data(FLAGS.data_dir, FLAGS.records)
steps, labels, pixels = (evaluate if FLAGS.eval else train)(filenames)
print("DIGEST steps=%d labels=%s pixels=%s" % (steps, ",".join(map(str, labels)), pixels))
