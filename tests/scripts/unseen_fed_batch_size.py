"""An input module shaped like a public image classifier's (ShuffleNet-era, TF 1.x).

The file names and the batch size are variables set from placeholders when
the program runs ``init_data`` (fed), the train and the validation batches are
two pipelines chosen by ``tf.cond``, and each file's records are read
``read_up_to`` a chunk at a time and parsed as a batch. migrate refuses
``get_data`` at the batching call, naming the fed ``batch_size``; the batch
helper called with numbers migrates.
"""

import tensorflow.compat.v1 as tf


def get_data(num_classes, image_size, is_training):
    train_file = tf.Variable(
        tf.placeholder(tf.string, [], "train_file"), trainable=False, collections=[]
    )
    val_file = tf.Variable(
        tf.placeholder(tf.string, [], "val_file"), trainable=False, collections=[]
    )
    batch_size = tf.Variable(
        tf.placeholder(tf.int32, [], "batch_size"), trainable=False, collections=[]
    )
    init_data = tf.variables_initializer([train_file, val_file, batch_size])
    train_x, train_y = get_batch(num_classes, train_file, image_size, batch_size)
    val_x, val_y = get_val_batch(num_classes, val_file, image_size, batch_size)
    x_batch, y_batch = tf.cond(is_training, lambda: (train_x, train_y), lambda: (val_x, val_y))
    return init_data, x_batch, y_batch


def get_batch(num_classes, file_name, image_size, batch_size):
    images, targets = images_and_targets(file_name, image_size)
    min_after_dequeue = 40
    num_threads = 2
    capacity = min_after_dequeue + (num_threads + 2) * 8
    x_batch, y_batch = tf.train.shuffle_batch(
        [images, targets], batch_size, capacity, min_after_dequeue, num_threads, enqueue_many=True
    )
    y_batch = tf.one_hot(y_batch, num_classes, axis=1, dtype=tf.float32)
    return x_batch, y_batch


def get_val_batch(num_classes, file_name, image_size, batch_size):
    images, targets = images_and_targets(file_name, image_size)
    x_batch, y_batch = tf.train.batch([images, targets], batch_size, 1, 64, enqueue_many=True)
    y_batch = tf.one_hot(y_batch, num_classes, axis=1, dtype=tf.float32)
    return x_batch, y_batch


def images_and_targets(file_name, image_size):
    filename_queue = tf.train.string_input_producer([file_name])
    reader = tf.TFRecordReader()
    _, serialized = reader.read_up_to(filename_queue, 5)
    features = tf.parse_example(
        serialized,
        {
            "image_raw": tf.FixedLenFeature([], tf.string),
            "target": tf.FixedLenFeature([], tf.int64),
        },
    )
    images = tf.decode_raw(features["image_raw"], tf.uint8)
    targets = tf.cast(features["target"], tf.int32)
    n_images = tf.shape(images)[0]
    images = tf.reshape(images, tf.stack([n_images, image_size, image_size, 3]))
    return tf.cast(images, tf.float32), targets
