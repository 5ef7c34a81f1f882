"""Contour pairs read from TFRecords, the read chosen by how many records a step takes.

A reading helper picks ``read`` or ``read_up_to`` by a Python argument (the
shape of a multi-file loader): one record parsed with
``parse_single_example``, or a chunk parsed with ``parse_example``.
"""

import tensorflow.compat.v1 as tf

FEATURES = {
    "pixels": tf.FixedLenFeature([4], tf.float32),
    "mask": tf.FixedLenFeature([], tf.int64),
}


def load_pair(queue, per_step, scale=1.0):
    """One record (per_step == 1) or a chunk of `per_step` records, decoded."""
    reader = tf.TFRecordReader()
    if per_step == 1:
        _, blob = reader.read(queue)
        parsed = tf.parse_single_example(blob, features=FEATURES)
    else:
        _, blobs = reader.read_up_to(queue, num_records=per_step)
        parsed = tf.parse_example(blobs, features=FEATURES)
    # the pixels scaled, the mask as a float
    pixels = parsed["pixels"] * scale
    mask = tf.cast(parsed["mask"], tf.float32)
    return pixels, mask


def contour_batches(path, batch_size, num_epochs, per_step=1):
    """Batches of (pixels, mask) from one TFRecord file, read in file order."""
    queue = tf.train.string_input_producer([path], num_epochs=num_epochs, shuffle=False)
    pixels, mask = load_pair(queue, per_step, scale=0.5)
    return tf.train.batch([pixels, mask], batch_size=batch_size)


def contour_chunks(path, batch_size, num_epochs, per_step):
    """Batches of (pixels, mask) read `per_step` records at a time."""
    queue = tf.train.string_input_producer([path], num_epochs=num_epochs, shuffle=False)
    pixels, mask = load_pair(queue, per_step)
    return tf.train.batch([pixels, mask], batch_size=batch_size, enqueue_many=True)


def contour_stacks(path, copies, num_epochs):
    """Elements of `copies` records each, every copy read by a reader of its own
    (all of them share the one-file queue), then shuffled in batches."""
    queue = tf.train.string_input_producer([path], num_epochs=num_epochs)
    stacks, masks = [], []
    for _ in range(copies):
        pixels, mask = load_pair(queue, 1)
        stacks += [tf.expand_dims(pixels, 0)]
        masks += [tf.expand_dims(mask, 0)]
    both = [tf.concat(stacks, 0), tf.concat(masks, 0)]
    return tf.train.shuffle_batch(
        both, batch_size=copies, capacity=64, min_after_dequeue=8, enqueue_many=True
    )
