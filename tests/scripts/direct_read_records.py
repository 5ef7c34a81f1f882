"""A TFRecord inspector and one-example trainer: the reader's value fetched directly.

Shaped like the many public TF 1.x scripts that check a TFRecord file or
train on one example per step (e.g. "TensorFlow-action" Chapter07/p172.py,
tf_read.py of learn_tensorflow): ``string_input_producer`` ->
``TFRecordReader`` -> ``parse_single_example`` -> ``decode_raw`` / ``cast``,
no batching call; ``sess.run([image, label, pixels])`` once per record under
``Coordinator`` + ``start_queue_runners``, until ``OutOfRangeError``. With
``--train``, a linear model trains on ``tf.expand_dims(image, 0)`` and each
step fetches the training op with the label. It writes its own data
(``--data_dir``) and prints one ``DIGEST`` line.

Usage: direct_read_records.py --data_dir DIR [--train] [--epochs N]
"""

import argparse
import hashlib
import os

import numpy as np
import tensorflow.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--data_dir", required=True)
parser.add_argument("--train", action="store_true")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--records", type=int, default=40)
FLAGS = parser.parse_args()

PIXELS = 12


def write_records(data_dir, records):
    os.makedirs(data_dir, exist_ok=True)
    rng = np.random.RandomState(5)
    names = []
    for f in range(2):
        name = os.path.join(data_dir, "part-%d.tfrecords" % f)
        with tf.python_io.TFRecordWriter(name) as writer:
            for i in range(records // 2):
                image = rng.randint(0, 256, size=PIXELS).astype(np.uint8)
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image_raw": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[image.tobytes()])
                            ),
                            "pixels": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=[PIXELS])
                            ),
                            "label": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=[f * 100 + i])
                            ),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        names.append(name)
    return names


def read_and_decode(filename_queue):
    reader = tf.TFRecordReader()
    key, serialized_example = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized_example,
        features={
            "image_raw": tf.FixedLenFeature([], tf.string),
            "pixels": tf.FixedLenFeature([], tf.int64),
            "label": tf.FixedLenFeature([], tf.int64),
        },
    )
    image = tf.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([PIXELS])
    image = tf.cast(image, tf.float32) * (1.0 / 255)
    label = tf.cast(features["label"], tf.int32)
    pixels = tf.cast(features["pixels"], tf.int32)
    return key, image, label, pixels


def main():
    names = write_records(FLAGS.data_dir, FLAGS.records)
    digest = hashlib.sha1()
    steps = 0
    with tf.Graph().as_default():
        filename_queue = tf.train.string_input_producer(
            names, num_epochs=FLAGS.epochs, shuffle=False
        )
        key, image, label, pixels = read_and_decode(filename_queue)
        if FLAGS.train:
            weights = tf.get_variable("weights", [PIXELS, 1], initializer=tf.zeros_initializer())
            prediction = tf.matmul(tf.expand_dims(image, 0), weights)
            loss = tf.reduce_mean(tf.square(prediction - tf.cast(label, tf.float32) / 100.0))
            train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            fetches = [train_op, label]
        else:
            fetches = [key, image, label, pixels]
        config = tf.ConfigProto(operation_timeout_in_ms=60000)
        with tf.Session(config=config) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while not coord.should_stop():
                    values = sess.run(fetches)
                    steps += 1
                    if not FLAGS.train:  # "<file>:<record>", without the directory
                        values[0] = os.path.basename(values[0].decode())
                    for v in values[1:] if FLAGS.train else values:
                        digest.update(np.asarray(v).tobytes())
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
            trained = float(np.round(sess.run(weights).sum(), 4)) if FLAGS.train else 0.0
    print("DIGEST steps=%d data=%s weights=%.4f" % (steps, digest.hexdigest()[:16], trained))


if __name__ == "__main__":
    main()
