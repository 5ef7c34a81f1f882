"""Shaped like the image-conversion scripts that read a folder with a WholeFileReader and
name each output after the input: the reader's key (the file name) is batched beside the
decoded image, and the caller writes ``<key>.out`` files.
"""

import os

import tensorflow as tf


def image_batches(pattern, batch_size=3):
    files = sorted(tf.io.gfile.glob(pattern))
    queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    reader = tf.compat.v1.WholeFileReader()
    key, contents = reader.read(queue)
    image = tf.image.decode_png(contents, channels=1)
    image = tf.image.resize(image, [4, 4]) / 255.0
    name = tf.strings.regex_replace(key, r"\.png$", ".out")
    return tf.compat.v1.train.batch(
        [name, image], batch_size=batch_size, allow_smaller_final_batch=True
    )


def convert(pattern, out_dir):
    names, images = image_batches(pattern)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = tf.compat.v1.train.Coordinator()
        threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while not coord.should_stop():
                for n, img in zip(*sess.run([names, images])):
                    path = os.path.join(out_dir, os.path.basename(n.decode()))
                    with open(path, "w") as f:
                        f.write("%.4f\n" % img.mean())
        except tf.errors.OutOfRangeError:
            pass
        finally:
            coord.request_stop()
        coord.join(threads)
