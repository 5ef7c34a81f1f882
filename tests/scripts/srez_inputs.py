"""An input function that starts the queue runners itself (copied as ``srez_input.py``).

Shaped like david-gpu/srez's ``srez_input.py`` ``setup_inputs(sess, filenames,
image_size)``: a ``WholeFileReader`` on ``string_input_producer``, random
flips, a crop, ``if crop_size != image_size:`` a resize, a downscaled feature
beside the label, ``tf.train.batch`` with 4 threads, then
``tf.train.start_queue_runners(sess=sess)`` inside the function.
"""

import tensorflow.compat.v1 as tf


def setup_inputs(sess, filenames, image_size=None, batch_size=4):
    if image_size is None:
        image_size = 8
    reader = tf.WholeFileReader()
    filename_queue = tf.train.string_input_producer(filenames)
    key, value = reader.read(filename_queue)
    image = tf.image.decode_jpeg(value, channels=3)
    image.set_shape([None, None, 3])
    image = tf.image.random_flip_left_right(image)
    crop_size = 8
    image = tf.image.crop_to_bounding_box(image, 1, 1, crop_size, crop_size)
    image = tf.reshape(image, [1, crop_size, crop_size, 3])
    image = tf.cast(image, tf.float32) / 255.0
    if crop_size != image_size:
        image = tf.image.resize_area(image, [image_size, image_size])
    downsampled = tf.image.resize_area(image, [image_size // 2, image_size // 2])
    feature = tf.reshape(downsampled, [image_size // 2, image_size // 2, 3])
    label = tf.reshape(image, [image_size, image_size, 3])
    features, labels = tf.train.batch(
        [feature, label], batch_size=batch_size, num_threads=4, capacity=3 * batch_size
    )
    tf.train.start_queue_runners(sess=sess)
    return features, labels
