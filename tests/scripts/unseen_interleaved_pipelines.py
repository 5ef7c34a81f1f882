"""A labeled-image reader building its training and test pipelines interleaved.

Shaped like a public peer-CNN image classifier's input module of the TF 1.x
era: the function takes a flags object (``image_dir``, ``test_size``,
``batch_size``, ``num_epochs``, ``height``, ``width``), lists the images of
one sub-folder per label, shuffles the list with Python's ``random`` and splits
off a test set, then builds both pipelines statement by statement side by
side: two ``slice_input_producer`` over the file names and labels, a helper
reading and decoding each file from disk called twice, two ``tf.train.batch``.
The batches are returned as attributes of instances of a class defined inside
the function (``data.train.images``, ``data.test.labels``), beside plain
attributes (the number of classes, each split's size). Used by
``queue-pipeline migrate tests/scripts/unseen_interleaved_pipelines.py:
read_image_batches --call "FLAGS"``: NOTE [ Several pipelines in one returned
object ].
"""

import os
import random

import tensorflow.compat.v1 as tf


def read_image_batches(flags):
    class Split(object):
        pass

    data = Split()
    data.train = Split()
    data.test = Split()

    paths, labels, classes = _list_images(flags.image_dir)
    order = list(range(len(paths)))
    random.shuffle(order)
    paths = [paths[i] for i in order]
    labels = [labels[i] for i in order]
    data.train.num_classes = classes
    data.test.num_classes = classes

    test_paths, train_paths = paths[: flags.test_size], paths[flags.test_size :]
    test_labels, train_labels = labels[: flags.test_size], labels[flags.test_size :]
    data.train.size = len(train_paths)
    data.test.size = len(test_paths)
    print("train: %d images, test: %d images" % (data.train.size, data.test.size))

    train_files = tf.convert_to_tensor(train_paths, dtype=tf.string)
    test_files = tf.convert_to_tensor(test_paths, dtype=tf.string)
    train_classes = tf.convert_to_tensor(train_labels, dtype=tf.int32)
    test_classes = tf.convert_to_tensor(test_labels, dtype=tf.int32)

    train_queue = tf.train.slice_input_producer(
        [train_files, train_classes], num_epochs=flags.num_epochs
    )
    test_queue = tf.train.slice_input_producer(
        [test_files, test_classes], num_epochs=flags.num_epochs, shuffle=False
    )
    train_image, train_label = _image_from_disk(train_queue, flags)
    test_image, test_label = _image_from_disk(test_queue, flags)

    # the list was shuffled already: plain batches
    train_images, train_labels = tf.train.batch(
        [train_image, train_label], batch_size=flags.batch_size
    )
    test_images, test_labels = tf.train.batch(
        [test_image, test_label], batch_size=flags.batch_size, allow_smaller_final_batch=True
    )

    data.train.batch_size = flags.batch_size
    data.train.images = train_images
    data.train.labels = train_labels
    data.test.images = test_images
    data.test.labels = test_labels
    return data


def _list_images(folder):
    paths, labels = [], []
    names = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    for name in names:
        for image in sorted(os.listdir(os.path.join(folder, name))):
            paths.append(os.path.join(folder, name, image))
            labels.append(int(name))
    return paths, labels, len(names)


def _image_from_disk(queue, flags):
    contents = tf.read_file(queue[0])
    image = tf.image.decode_png(contents, channels=3)
    image.set_shape([flags.height, flags.width, 3])
    return tf.cast(image, tf.float32) / 255.0, queue[1]
