"""Image batches whose producer and batching call are made by nested helpers.

Shaped like a public CycleGAN data module: ``image_batches(pattern,
batch_size, train=True)`` defines, in each branch of ``if train:``, a
``def files()`` returning a file-name producer (shuffled and endless in
training, one ordered epoch otherwise) and a ``def group(name, image)``
returning the batching call (``shuffle_batch`` / ``batch``), then reads
the files with a ``WholeFileReader``, decodes and scales each PNG, and calls
both. ``image_batches_lambda`` does the same with lambdas, and
``image_batches_returned`` returns the helper's batch directly; ``partial``
defines its helpers in the train branch only (refused). Used by
``queue-pipeline migrate tests/scripts/unseen_nested_stage_helpers.py:image_batches
--call "'imgs/*.png', 2, train=False"``.
"""

import tensorflow.compat.v1 as tf

THREADS = 2


def image_batches(pattern, batch_size, size=8, train=True, epochs=1):
    if train:

        def flip(x):
            return tf.image.flip_left_right(x)

        def files():
            names = tf.train.match_filenames_once(pattern)
            return tf.train.string_input_producer(names, shuffle=True)

        def group(name, image):
            return tf.train.shuffle_batch(
                [name, image],
                batch_size=batch_size,
                num_threads=THREADS,
                capacity=batch_size * 4,
                min_after_dequeue=batch_size * 2,
            )

    else:

        def flip(x):
            return tf.identity(x)

        def files():
            return tf.train.string_input_producer(
                tf.train.match_filenames_once(pattern), num_epochs=epochs, shuffle=False
            )

        def group(name, image):
            return tf.train.batch([name, image], batch_size=batch_size, num_threads=THREADS)

    def scale(image):
        image = flip(image)
        return (tf.cast(image, tf.float32) - 128.0) / 128.0

    name_queue = files()
    name, contents = tf.WholeFileReader().read(name_queue)
    image = tf.image.resize_images(tf.image.decode_png(contents, 3), [size, size])
    names, images = group(name, scale(image))
    return names, images


def image_batches_lambda(pattern, batch_size, size=8, train=True, epochs=1):
    if train:
        files = lambda: tf.train.string_input_producer(  # noqa: E731
            tf.train.match_filenames_once(pattern), shuffle=True
        )
        group = lambda n, x: tf.train.shuffle_batch(  # noqa: E731
            [n, x], batch_size, capacity=batch_size * 4, min_after_dequeue=batch_size * 2
        )
    else:
        files = lambda: tf.train.string_input_producer(  # noqa: E731
            tf.train.match_filenames_once(pattern), num_epochs=epochs, shuffle=False
        )
        group = lambda n, x: tf.train.batch([n, x], batch_size)  # noqa: E731
    name, contents = tf.WholeFileReader().read(files())
    image = tf.cast(
        tf.image.resize_images(tf.image.decode_png(contents, 3), [size, size]), tf.float32
    )
    names, images = group(name, image / 255.0)
    return names, images


def image_batches_returned(pattern, batch_size, size=8, train=True, epochs=1):
    if train:

        def group(name, image):
            return tf.train.shuffle_batch(
                [name, image], batch_size, capacity=batch_size * 4, min_after_dequeue=batch_size
            )

    else:

        def group(name, image):
            return tf.train.batch([name, image], batch_size)

    queue = tf.train.string_input_producer(
        tf.train.match_filenames_once(pattern), num_epochs=epochs, shuffle=False
    )
    name, contents = tf.WholeFileReader().read(queue)
    image = tf.image.resize_images(tf.image.decode_png(contents, 3), [size, size])
    return group(name, image)


def partial(pattern, batch_size, train=True):
    group = None
    if train:

        def group(name, image):
            return tf.train.batch([name, image], batch_size)

    queue = tf.train.string_input_producer(
        tf.train.match_filenames_once(pattern), num_epochs=None, shuffle=False
    )
    name, contents = tf.WholeFileReader().read(queue)
    return group(name, tf.image.resize_images(tf.image.decode_png(contents, 3), [8, 8]))


def tested(pattern, batch_size, train=True):
    if train:

        def group(name, image):
            if batch_size > 1:
                return tf.train.shuffle_batch(
                    [name, image], batch_size, capacity=4 * batch_size, min_after_dequeue=batch_size
                )
            return tf.train.batch([name, image], 1)

    else:

        def group(name, image):
            if batch_size > 1:
                return tf.train.batch([name, image], batch_size)
            return tf.train.batch([name, image], 1)

    queue = tf.train.string_input_producer(tf.train.match_filenames_once(pattern), shuffle=False)
    name, contents = tf.WholeFileReader().read(queue)
    return group(name, tf.image.resize_images(tf.image.decode_png(contents, 3), [8, 8]))


def image_batches_closure(pattern, batch_size, train=True):
    if train:
        shrink = lambda x: tf.image.resize_images(image, [6, 6])  # noqa: E731
        group = lambda n, x: tf.train.shuffle_batch(  # noqa: E731
            [n, x], batch_size, capacity=batch_size * 4, min_after_dequeue=batch_size * 2
        )
    else:
        shrink = lambda x: tf.image.resize_images(image, [4, 4])  # noqa: E731
        group = lambda n, x: tf.train.batch([n, x], batch_size)  # noqa: E731
    queue = tf.train.string_input_producer(tf.train.match_filenames_once(pattern), shuffle=False)
    name, contents = tf.WholeFileReader().read(queue)
    image = tf.image.decode_png(contents, 3)
    return group(name, shrink(tf.image.flip_left_right(image)))
