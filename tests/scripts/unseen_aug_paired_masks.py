"""A segmentation trainer's input: image + mask read together, flipped and scaled together.

Shaped like the FCN / DeepLab recipes of TF 1.x segmentation repositories:
TFRecords of raw ``height``/``width``/``image_raw``/``mask_raw``, decoded to
their own size, one ``random_uniform`` deciding a flip applied to both
through ``tf.cond``, a random scale (``resize_nearest_neighbor`` of both),
``resize_image_with_crop_or_pad`` to a fixed size with the padding masked
out as 255, then ``shuffle_batch`` with two threads. It writes its own data
(``--data_dir``) and prints a ``DIGEST`` line (what must equal TF's own
queues: examples, shapes, dtypes, whether every mask still matches its
image), a ``STATS`` line (per-channel means, compared within a tolerance from
their spread over the examples)
and a ``HASH`` line (the batches' bytes; equal across runs with ``--seed``).

Usage: unseen_aug_paired_masks.py --data_dir DIR [--seed N] [--threads N]
"""

import argparse
import hashlib
import os

import numpy as np
import tensorflow.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--data_dir", required=True)
parser.add_argument("--seed", type=int, default=None)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--records", type=int, default=48)
parser.add_argument("--epochs", type=int, default=2)
FLAGS = parser.parse_args()

SIZE = 24
CLASS = 7


def write_data(path, records):
    """Image channel 0 is 200 where the mask holds CLASS, 40 elsewhere: a flip must move both."""
    rng = np.random.RandomState(1)
    with tf.python_io.TFRecordWriter(path) as writer:
        for _ in range(records):
            h, w = rng.randint(16, 33), rng.randint(16, 33)
            mask = np.zeros((h, w), np.uint8)
            mask[:, : max(1, w // 3)] = CLASS
            image = rng.randint(0, 256, (h, w, 3)).astype(np.uint8)
            image[..., 0] = np.where(mask == CLASS, 200, 40)
            feature = {
                "height": tf.train.Feature(int64_list=tf.train.Int64List(value=[h])),
                "width": tf.train.Feature(int64_list=tf.train.Int64List(value=[w])),
                "image_raw": tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[image.tobytes()])
                ),
                "mask_raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[mask.tobytes()])),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )


def read_pair(filename_queue):
    _, serialized = tf.TFRecordReader().read(filename_queue)
    features = tf.parse_single_example(
        serialized,
        features={
            "height": tf.FixedLenFeature([], tf.int64),
            "width": tf.FixedLenFeature([], tf.int64),
            "image_raw": tf.FixedLenFeature([], tf.string),
            "mask_raw": tf.FixedLenFeature([], tf.string),
        },
    )
    height = tf.cast(features["height"], tf.int32)
    width = tf.cast(features["width"], tf.int32)
    image = tf.reshape(tf.decode_raw(features["image_raw"], tf.uint8), tf.stack([height, width, 3]))
    mask = tf.reshape(tf.decode_raw(features["mask_raw"], tf.uint8), tf.stack([height, width, 1]))
    return image, mask


def flip_together(image, mask):
    coin = tf.random_uniform([], maxval=2, dtype=tf.int32)
    image = tf.cond(tf.equal(coin, 0), lambda: tf.image.flip_left_right(image), lambda: image)
    mask = tf.cond(tf.equal(coin, 0), lambda: tf.image.flip_left_right(mask), lambda: mask)
    return image, mask


def scale_together(image, mask, size):
    shape = tf.to_float(tf.shape(image)[:2])
    scale = tf.reduce_min(size / shape) * tf.random_uniform([1], 0.8, 1.2)
    new = tf.to_int32(tf.round(shape * scale))
    image = tf.squeeze(tf.image.resize_nearest_neighbor(image[None], new), 0)
    mask = tf.squeeze(tf.image.resize_nearest_neighbor(tf.to_int32(mask)[None], new), 0) + 1
    image = tf.image.resize_image_with_crop_or_pad(image, size, size)
    mask = tf.image.resize_image_with_crop_or_pad(mask, size, size)
    mask = mask + tf.to_int32(tf.equal(mask, 0)) * 256 - 1  # padding -> 255
    return image, tf.squeeze(mask, -1)


def inputs(path):
    filename_queue = tf.train.string_input_producer([path], num_epochs=FLAGS.epochs)
    image, mask = read_pair(filename_queue)
    image, mask = flip_together(image, mask)
    image, mask = scale_together(image, mask, SIZE)
    return tf.train.shuffle_batch(
        [image, mask],
        batch_size=4,
        capacity=60,
        min_after_dequeue=20,
        num_threads=FLAGS.threads,
        allow_smaller_final_batch=True,
    )


def main():
    graph = tf.Graph()
    with graph.as_default():
        if FLAGS.seed is not None:
            tf.set_random_seed(FLAGS.seed)
        os.makedirs(FLAGS.data_dir, exist_ok=True)
        path = os.path.join(FLAGS.data_dir, "pairs.tfrecords")
        if not os.path.exists(path):
            write_data(path, FLAGS.records)
        images, masks = inputs(path)

        count, consistent, per_example, digest = 0, 0, [], hashlib.sha256()
        shapes = set()
        with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=60000)) as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while True:
                    image_batch, mask_batch = sess.run([images, masks])
                    shapes.add(
                        (
                            image_batch.shape[1:],
                            str(image_batch.dtype),
                            mask_batch.shape[1:],
                            str(mask_batch.dtype),
                        )
                    )
                    digest.update(image_batch.tobytes() + mask_batch.tobytes())
                    count += len(image_batch)
                    per_example += list(image_batch.reshape(len(image_batch), -1, 3).mean(1))
                    for image, mask in zip(image_batch, mask_batch):
                        inside = mask != 255
                        # channel 0 is 200 exactly where the mask holds CLASS
                        consistent += bool(
                            np.all((image[..., 0][inside] == 200) == (mask[inside] == CLASS))
                        )
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
        print("DIGEST examples=%d consistent=%d shapes=%s" % (count, consistent, sorted(shapes)))
        per_example = np.array(per_example, np.float64)
        print(
            "STATS mean=%s sd=%s"
            % tuple(",".join("%.3f" % v for v in f(per_example, 0)) for f in (np.mean, np.std))
        )
        print("HASH %s" % digest.hexdigest())


main()
