"""Shaped like the image-folder readers of many tutorials: ``label`` counts the class
folders while the file list is made, then the same name holds the label tensor that
``slice_input_producer`` returns; the counting differs in an ``if`` / ``elif``.
"""

import os

import tensorflow as tf


def read_images(dataset_path, mode, batch_size):
    imagepaths, labels = list(), list()
    if mode == "file":
        with open(dataset_path) as f:
            data = f.read().splitlines()
        for d in data:
            imagepaths.append(d.split(" ")[0])
            labels.append(int(d.split(" ")[1]))
    elif mode == "folder":
        label = 0
        classes = sorted(next(os.walk(dataset_path))[1])
        for c in classes:
            c_dir = os.path.join(dataset_path, c)
            for sample in sorted(next(os.walk(c_dir))[2]):
                if sample.endswith(".png"):
                    imagepaths.append(os.path.join(c_dir, sample))
                    labels.append(label)
            label += 1
    else:
        raise Exception("Unknown mode.")
    imagepaths = tf.convert_to_tensor(imagepaths, dtype=tf.string)
    labels = tf.convert_to_tensor(labels, dtype=tf.int32)
    image, label = tf.compat.v1.train.slice_input_producer(
        [imagepaths, labels], shuffle=False, num_epochs=1
    )
    image = tf.io.read_file(image)
    image = tf.image.decode_png(image, channels=3)
    image = tf.image.resize(image, [4, 4])
    image = image * 1.0 / 127.5 - 1.0
    X, Y = tf.compat.v1.train.batch(
        [image, label],
        batch_size=batch_size,
        capacity=batch_size * 8,
        num_threads=1,
        allow_smaller_final_batch=True,
    )
    return X, Y
