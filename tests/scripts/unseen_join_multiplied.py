"""Join lists written with list multiplication.

Shaped like public TF 1.x input code: one reader decodes a CSV row into an
image (four values) and a label, and the join's lists are that pair
repeated, ``[[image, label]] * num_threads``: each list is one enqueue
thread running the same ops, so the join behaves like ``batch(num_threads=
n)`` over one reader. Beside it a shuffled join of one example dict
repeated (``[example] * n``) and a comprehension of one reading helper.
"""

import tensorflow.compat.v1 as tf

DEFAULTS = [[0.0], [0.0], [0.0], [0.0], [0]]


def read_row(filename_queue):
    reader = tf.TextLineReader()
    _, line = reader.read(filename_queue)
    columns = tf.decode_csv(line, record_defaults=DEFAULTS)
    image = tf.stack(columns[:4]) / 255.0
    return image, columns[4]


def batch_inputs(file_list, batch_size=8, num_threads=4, num_epochs=1):
    filename_queue = tf.train.string_input_producer(file_list, num_epochs=num_epochs, shuffle=False)
    image, label = read_row(filename_queue)
    image_batch, label_batch = tf.train.batch_join(
        [[image, label]] * num_threads, batch_size=batch_size, capacity=4 * batch_size
    )
    return image_batch, label_batch


def shuffled_examples(file_list, batch_size=8, num_epochs=1):
    filename_queue = tf.train.string_input_producer(file_list, num_epochs=num_epochs, seed=11)
    image, label = read_row(filename_queue)
    example = {"image": image, "label": tf.one_hot(label, 3)}
    batch = tf.train.shuffle_batch_join(
        [example] * 3,
        batch_size=batch_size,
        capacity=64,
        min_after_dequeue=16,
        seed=5,
        allow_smaller_final_batch=True,
    )
    return batch["image"], batch["label"]


def comprehension(file_list, batch_size=8, num_epochs=1):
    filename_queue = tf.train.string_input_producer(file_list, num_epochs=num_epochs, shuffle=False)
    rows = [read_row(filename_queue) for _ in range(3)]
    return tf.train.batch_join(rows, batch_size=batch_size)
