"""An object-detection reader run as a script (shaped like the small detection
repositories' ``datasets/read.py``): ``read_and_decode(filename_queue,
batch_size)`` reads a TFRecord example, stacks six variable-length box columns
into an ``[n, 6]`` label, and batches with ``dynamic_pad=True`` itself (then
computes a mask nobody returns); the module level, under the main guard, makes
the filename queue with ``match_filenames_once``, calls it and prints batches
in a session loop. Used by ``queue-pipeline migrate
tests/scripts/real_detection_script.py`` (the script's own pipeline).
"""

import tensorflow as tf

IMAGE_SIZE = 4


def read_and_decode(filename_queue, batch_size):
    reader = tf.compat.v1.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    feature = {"image": tf.io.FixedLenFeature([], tf.string)}
    for column in ("xmin", "ymin", "xmax", "ymax", "class", "hard"):
        feature["label_" + column] = tf.io.VarLenFeature(tf.float32)
    features = tf.io.parse_single_example(serialized_example, features=feature)
    image = tf.io.decode_raw(features["image"], tf.float32)
    label = tf.stack(
        [features["label_%s" % x].values for x in ["xmin", "ymin", "xmax", "ymax", "class", "hard"]]
    )
    label = tf.transpose(label, [1, 0])
    image = tf.reshape(image, [IMAGE_SIZE, IMAGE_SIZE, 3])
    images, labels = tf.compat.v1.train.batch(
        [image, label], batch_size=batch_size, capacity=32, num_threads=1, dynamic_pad=True,
        allow_smaller_final_batch=True,
    )  # fmt: skip
    mask = tf.greater(tf.reduce_sum(labels, axis=-1), 1)  # noqa: F841 - as the public code
    return images, labels


if __name__ == "__main__":
    files = tf.compat.v1.train.match_filenames_once("data/boxes-*.tfrecords")
    filename_queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    images, labels = read_and_decode(filename_queue, 3)
    with tf.compat.v1.Session() as sess:
        sess.run(
            [tf.compat.v1.global_variables_initializer(),
             tf.compat.v1.local_variables_initializer()]
        )  # fmt: skip
        coord = tf.compat.v1.train.Coordinator()
        threads = tf.compat.v1.train.start_queue_runners(coord=coord)
        try:
            while True:
                img, lab = sess.run([images, labels])
                print(img.shape, lab.shape)
        except tf.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)
