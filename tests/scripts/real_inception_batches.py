"""Inception-style batch input behind a preprocessor class (shaped like the many copies of
the official Inception ``image_processing.batch_inputs``, e.g. a CIFAR-10 preprocessor).

``Preprocessor(mode, dataset, image_size, batch_size, num_preprocess_threads,
num_readers).batch_inputs()``: the data files come from a dataset object
(``data_files()``, ``reader()``); in training several readers fill the
program's own ``RandomShuffleQueue`` of serialized examples (evaluation makes
a ``FIFOQueue`` and reads with one reader); ``num_preprocess_threads`` copies
of the parsing code feed ``batch_join``; the batches are cast and reshaped
before they are returned, with an image summary. Used by
``queue-pipeline migrate tests/scripts/real_inception_batches.py:Preprocessor.batch_inputs``.
"""

import glob
import os

import tensorflow as tf

INPUT_QUEUE_MEMORY_FACTOR = 2


class RecordsDataset(object):
    def __init__(self, data_dir, subset="train"):
        self.data_dir = data_dir
        self.subset = subset

    def data_files(self):
        return sorted(glob.glob(os.path.join(self.data_dir, "%s-*" % self.subset)))

    def reader(self):
        return tf.compat.v1.TFRecordReader()


class Preprocessor(object):
    def __init__(self, mode, dataset, image_size, batch_size, num_preprocess_threads=4,
                 num_readers=None):  # fmt: skip
        self.mode = mode
        self.dataset = dataset
        self.image_size = image_size
        self.batch_size = batch_size
        self.num_preprocess_threads = num_preprocess_threads
        self.num_readers = num_readers or (1 if mode == "eval" else 2)

    def batch_inputs(self):
        with tf.name_scope("batch_processing"):
            data_files = self.dataset.data_files()
            if not data_files:
                raise ValueError("No data files found for this dataset")
            if self.mode == "train":
                filename_queue = tf.compat.v1.train.string_input_producer(
                    data_files, shuffle=True, capacity=16
                )
            else:
                filename_queue = tf.compat.v1.train.string_input_producer(
                    data_files, shuffle=False, capacity=1
                )
            min_queue_examples = 8 * INPUT_QUEUE_MEMORY_FACTOR
            if self.mode == "train":
                examples_queue = tf.queue.RandomShuffleQueue(
                    capacity=min_queue_examples + 3 * self.batch_size,
                    min_after_dequeue=min_queue_examples,
                    dtypes=[tf.string],
                )
            else:
                examples_queue = tf.queue.FIFOQueue(
                    capacity=8 + 3 * self.batch_size, dtypes=[tf.string]
                )
            if self.num_readers > 1:
                enqueue_ops = []
                for _ in range(self.num_readers):
                    reader = self.dataset.reader()
                    _, value = reader.read(filename_queue)
                    enqueue_ops.append(examples_queue.enqueue([value]))
                tf.compat.v1.train.queue_runner.add_queue_runner(
                    tf.compat.v1.train.queue_runner.QueueRunner(examples_queue, enqueue_ops)
                )
                example_serialized = examples_queue.dequeue()
            else:
                reader = self.dataset.reader()
                _, example_serialized = reader.read(filename_queue)

            images_and_labels = []
            for thread_id in range(self.num_preprocess_threads):  # noqa: B007 - as Inception
                image, label_index = self.parse_example_proto(example_serialized)
                images_and_labels.append([image, label_index])

            images, label_index_batch = tf.compat.v1.train.batch_join(
                images_and_labels,
                batch_size=self.batch_size,
                capacity=2 * self.num_preprocess_threads * self.batch_size,
            )
            images = tf.cast(images, tf.float32)
            images = tf.reshape(
                images, shape=[self.batch_size, self.image_size, self.image_size, 3]
            )
            tf.compat.v1.summary.image("images", images)
            return images, tf.reshape(label_index_batch, [self.batch_size])

    def parse_example_proto(self, example_serialized):
        features = tf.io.parse_single_example(
            example_serialized,
            features={
                "image": tf.io.FixedLenFeature([], tf.string),
                "label": tf.io.FixedLenFeature([], tf.int64),
            },
        )
        label = tf.cast(features["label"], dtype=tf.int32)
        image = tf.io.decode_raw(features["image"], tf.uint8)
        image = tf.reshape(image, [3, self.image_size, self.image_size])
        image = tf.cast(tf.transpose(image, [1, 2, 0]), tf.float32) / 255.0
        if self.mode == "train":
            image = tf.image.flip_left_right(image)
        return image, label
