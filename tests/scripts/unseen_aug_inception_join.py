"""An Inception-style trainer's input: one shared record queue, four distorting threads, batch_join.

Shaped like the ``batch_inputs`` of TF 1.x ImageNet trainers: a filename
producer, the program's own ``RandomShuffleQueue`` filled by two readers
through ``add_queue_runner``, ONE ``dequeue`` whose record is parsed and
distorted by four "preprocessing threads" (each a copy of the ops, with a
thread-dependent resize method and colour ordering):
``sample_distorted_bounding_box`` + slice + resize, ``random_flip_left_right``,
``random_brightness`` / ``saturation`` / ``hue`` / ``contrast``, then
``batch_join``. Each record carries which thread distorted it. It writes its
own data (``--data_dir``: JPEG Examples with a box) and prints ``DIGEST``
(examples, labels, shapes, dtypes), ``STATS`` (per-channel means, their
spread over the examples, examples per thread) and ``HASH`` (the batches'
bytes; equal across runs with ``--seed``).

Usage: unseen_aug_inception_join.py --data_dir DIR [--files N] [--seed N]
"""

import argparse
import hashlib
import os

import numpy as np
import tensorflow.compat.v1 as tf

parser = argparse.ArgumentParser()
parser.add_argument("--data_dir", required=True)
parser.add_argument("--files", type=int, default=8)
parser.add_argument("--per_file", type=int, default=12)
parser.add_argument("--seed", type=int, default=None)
FLAGS = parser.parse_args()

SIZE = 16
THREADS = 4
READERS = 2


def write_data(data_dir, files, per_file):
    rng = np.random.RandomState(2)
    names = []
    with tf.Graph().as_default(), tf.Session() as sess:
        pixels = tf.placeholder(tf.uint8, [None, None, 3])
        encode = tf.image.encode_jpeg(pixels, quality=95)
        for f in range(files):
            name = os.path.join(data_dir, "train-%05d-of-%05d" % (f, files))
            with tf.python_io.TFRecordWriter(name) as writer:
                for i in range(per_file):
                    h, w = rng.randint(20, 40), rng.randint(20, 40)
                    image = np.empty((h, w, 3), np.uint8)
                    for c, level in enumerate((50, 120, 200)):
                        image[..., c] = np.clip(level + rng.randint(-20, 21, (h, w)), 0, 255)
                    y, x = rng.uniform(0, 0.3, 2)
                    feature = {
                        "image/encoded": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[sess.run(encode, {pixels: image})])
                        ),
                        "image/class/label": tf.train.Feature(
                            int64_list=tf.train.Int64List(value=[f * per_file + i])
                        ),
                        "image/object/bbox/xmin": tf.train.Feature(
                            float_list=tf.train.FloatList(value=[x])
                        ),
                        "image/object/bbox/ymin": tf.train.Feature(
                            float_list=tf.train.FloatList(value=[y])
                        ),
                        "image/object/bbox/xmax": tf.train.Feature(
                            float_list=tf.train.FloatList(value=[x + 0.6])
                        ),
                        "image/object/bbox/ymax": tf.train.Feature(
                            float_list=tf.train.FloatList(value=[y + 0.6])
                        ),
                    }
                    example = tf.train.Example(features=tf.train.Features(feature=feature))
                    writer.write(example.SerializeToString())
            names.append(name)
    return names


def parse(serialized):
    sparse = tf.VarLenFeature(tf.float32)
    features = tf.parse_single_example(
        serialized,
        {
            "image/encoded": tf.FixedLenFeature([], tf.string, default_value=""),
            "image/class/label": tf.FixedLenFeature([1], tf.int64, default_value=-1),
            "image/object/bbox/xmin": sparse,
            "image/object/bbox/ymin": sparse,
            "image/object/bbox/xmax": sparse,
            "image/object/bbox/ymax": sparse,
        },
    )
    corners = [
        tf.expand_dims(features["image/object/bbox/" + k].values, 0)
        for k in ("ymin", "xmin", "ymax", "xmax")
    ]
    bbox = tf.transpose(tf.expand_dims(tf.concat(corners, 0), 0), [0, 2, 1])
    label = tf.cast(features["image/class/label"], tf.int32)
    return features["image/encoded"], label, bbox


def distort_color(image, thread_id):
    image = tf.image.random_brightness(image, max_delta=32.0 / 255.0)
    if thread_id % 2 == 0:
        image = tf.image.random_saturation(image, lower=0.5, upper=1.5)
        image = tf.image.random_hue(image, max_delta=0.2)
        image = tf.image.random_contrast(image, lower=0.5, upper=1.5)
    else:
        image = tf.image.random_contrast(image, lower=0.5, upper=1.5)
        image = tf.image.random_saturation(image, lower=0.5, upper=1.5)
        image = tf.image.random_hue(image, max_delta=0.2)
    return tf.clip_by_value(image, 0.0, 1.0)


def distort(encoded, bbox, thread_id):
    image = tf.image.convert_image_dtype(tf.image.decode_jpeg(encoded, channels=3), tf.float32)
    begin, size, _ = tf.image.sample_distorted_bounding_box(
        tf.shape(image),
        bounding_boxes=bbox,
        min_object_covered=0.1,
        aspect_ratio_range=[0.75, 1.33],
        area_range=[0.05, 1.0],
        max_attempts=100,
        use_image_if_no_bounding_boxes=True,
    )
    image = tf.slice(image, begin, size)
    image = tf.image.resize_images(image, [SIZE, SIZE], method=thread_id % 4)
    image.set_shape([SIZE, SIZE, 3])
    image = tf.image.random_flip_left_right(image)
    return distort_color(image, thread_id)


def batch_inputs(files, batch_size):
    with tf.name_scope("batch_processing"):
        filename_queue = tf.train.string_input_producer(
            files, num_epochs=1, shuffle=True, capacity=16
        )
        examples_queue = tf.RandomShuffleQueue(
            capacity=40 + 3 * batch_size, min_after_dequeue=40, dtypes=[tf.string]
        )
        enqueue_ops = []
        for _ in range(READERS):
            _, value = tf.TFRecordReader().read(filename_queue)
            enqueue_ops.append(examples_queue.enqueue([value]))
        tf.train.queue_runner.add_queue_runner(
            tf.train.queue_runner.QueueRunner(examples_queue, enqueue_ops)
        )
        example_serialized = examples_queue.dequeue()
        images_and_labels = []
        for thread_id in range(THREADS):
            encoded, label, bbox = parse(example_serialized)
            image = distort(encoded, bbox, thread_id)
            images_and_labels.append([image, label, tf.constant(thread_id)])
        return tf.train.batch_join(
            images_and_labels,
            batch_size=batch_size,
            capacity=2 * THREADS * batch_size,
            allow_smaller_final_batch=True,
        )


def main():
    graph = tf.Graph()
    with graph.as_default():
        if FLAGS.seed is not None:
            tf.set_random_seed(FLAGS.seed)
        os.makedirs(FLAGS.data_dir, exist_ok=True)
        files = sorted(tf.gfile.Glob(os.path.join(FLAGS.data_dir, "train-*")))
        if not files:
            files = write_data(FLAGS.data_dir, FLAGS.files, FLAGS.per_file)
        images, labels, thread_ids = batch_inputs(files, batch_size=8)

        got, per_example, per_thread, digest = [], [], [0] * THREADS, hashlib.sha256()
        shapes = set()
        with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=60000)) as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            try:
                while True:
                    image_batch, label_batch, thread_batch = sess.run([images, labels, thread_ids])
                    shapes.add(
                        (
                            image_batch.shape[1:],
                            str(image_batch.dtype),
                            label_batch.shape[1:],
                            str(label_batch.dtype),
                        )
                    )
                    digest.update(image_batch.tobytes() + label_batch.tobytes())
                    got += label_batch.ravel().tolist()
                    per_example += list(image_batch.reshape(len(image_batch), -1, 3).mean(1))
                    for t in thread_batch:
                        per_thread[t] += 1
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
        print(
            "DIGEST examples=%d labels=%s shapes=%s"
            % (len(got), sorted(got) == list(range(len(files) * FLAGS.per_file)), sorted(shapes))
        )
        per_example = np.array(per_example, np.float64)
        print(
            "STATS mean=%s sd=%s per_thread=%s"
            % (
                ",".join("%.4f" % v for v in per_example.mean(0)),
                ",".join("%.4f" % v for v in per_example.std(0)),
                ",".join(map(str, per_thread)),
            )
        )
        print("HASH %s" % digest.hexdigest())


main()
