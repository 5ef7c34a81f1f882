"""Input functions of public TF 1.x trainers, in tf.compat.v1, for test_engine_programs.

Each builds its pipeline in the current graph, as the program wrote it, and
returns what the program trains on; the tests run them natively (the
oracle), on the queue engine and on the dataset engine (``helpers.running``).
"""

from __future__ import annotations

import tensorflow as tf


def im2txt_inputs(files, *, num_epochs=1, is_training=True, summary=True):
    """im2txt's input: its own queue filled by reader runners, 4 preprocessing threads.

    As ``prefetch_input_data`` + ``batch_with_dynamic_pad``: a
    RandomShuffleQueue (FIFOQueue for eval) that ``add_queue_runner`` fills
    from two readers; four dequeues, each parsed and "preprocessed" (thread
    0 adds an image summary), into ``batch_join(dynamic_pad=True)``.
    Returns (images, input_seqs, target_seqs, masks).
    """
    v1 = tf.compat.v1
    filename_queue = v1.train.string_input_producer(
        files, num_epochs=num_epochs, shuffle=is_training, capacity=16, name="filename_queue"
    )
    if is_training:
        values_queue = tf.queue.RandomShuffleQueue(
            capacity=20, min_after_dequeue=4, dtypes=[tf.string], name="random_input_queue"
        )
    else:
        values_queue = tf.queue.FIFOQueue(capacity=20, dtypes=[tf.string], name="fifo_input_queue")
    enqueue_ops = []
    for _ in range(2):
        _, value = v1.TFRecordReader().read(filename_queue)
        enqueue_ops.append(values_queue.enqueue([value]))
    v1.train.add_queue_runner(v1.train.QueueRunner(values_queue, enqueue_ops))
    enqueue_list = []
    for thread_id in range(4):
        serialized = values_queue.dequeue()
        features = v1.parse_single_example(
            serialized,
            {
                "image": tf.io.FixedLenFeature([], tf.string),
                "caption": tf.io.VarLenFeature(tf.int64),
            },
        )
        image = tf.reshape(v1.decode_raw(features["image"], tf.uint8), [2, 2, 1])
        image = tf.cast(image, tf.float32) * (1.0 / 255)
        if summary and thread_id == 0:
            v1.summary.image("final_image", tf.expand_dims(image, 0))
        caption = tf.sparse.to_dense(features["caption"])
        caption_length = tf.expand_dims(tf.shape(caption)[0] - 1, 0)
        input_seq = tf.slice(caption, [0], caption_length)
        target_seq = tf.slice(caption, [1], caption_length)
        indicator = tf.ones(caption_length, dtype=tf.int32)
        enqueue_list.append([image, input_seq, target_seq, indicator])
    return v1.train.batch_join(
        enqueue_list,
        batch_size=3,
        capacity=2 * 3 * 4,
        dynamic_pad=True,
        allow_smaller_final_batch=True,
        name="batch_and_pad",
    )


def own_queue_over_slices(num_dequeues):
    """A program's FIFOQueue filled from slice_input_producer, dequeued `num_dequeues` times."""
    v1 = tf.compat.v1
    (row,) = v1.train.slice_input_producer([tf.range(20)], num_epochs=1, shuffle=False)
    queue = tf.queue.FIFOQueue(8, [tf.int32], shapes=[[]], name="own_queue")
    v1.train.add_queue_runner(v1.train.QueueRunner(queue, [queue.enqueue([row])]))
    lists = [[queue.dequeue() * 10] for _ in range(num_dequeues)]
    return v1.train.batch_join(lists, batch_size=4, allow_smaller_final_batch=True)


def read_batch_examples_inputs(files, *, num_readers=2):
    """tf.contrib.learn's read_batch_examples: read_up_to per reader + batch_join(enqueue_many)."""
    v1 = tf.compat.v1
    filename_queue = v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    examples = []
    for _ in range(num_readers):
        keys, values = v1.TFRecordReader().read_up_to(filename_queue, 4)
        examples.append([keys, values])
    keys, values = v1.train.batch_join(
        examples,
        batch_size=5,
        capacity=20,
        enqueue_many=True,
        allow_smaller_final_batch=True,
        name="read_batch_examples",
    )
    features = v1.parse_example(values, {"label": tf.io.FixedLenFeature([], tf.int64)})
    return keys, features["label"]


def pix2pix_inputs(input_dir, mode):
    """pix2pix's load_examples: WholeFileReader, augmentation when training, a batch."""
    v1 = tf.compat.v1
    paths = sorted(tf.io.gfile.glob(f"{input_dir}/*.raw"))
    with tf.name_scope("load_images"):
        path_queue = v1.train.string_input_producer(
            paths, shuffle=mode == "train", num_epochs=None if mode == "train" else 1
        )
        paths_t, contents = v1.WholeFileReader().read(path_queue)
        image = tf.reshape(tf.cast(v1.decode_raw(contents, tf.uint8), tf.float32), [2, 2, 3])
    if mode == "train":
        image = tf.image.random_flip_left_right(image)
        image = image + v1.random_uniform([], 0.0, 0.01)
    paths_batch, images = v1.train.batch([paths_t, image], batch_size=2)
    return paths_batch, images


def named_batch():
    """range_input_producer -> batch(name=\"my_batch\") of (index, index * 10)."""
    v1 = tf.compat.v1
    queue = v1.train.range_input_producer(7, num_epochs=1, shuffle=False)
    index = queue.dequeue()
    return v1.train.batch([index, index * 10], batch_size=3, name="my_batch")
