"""A decode-heavy TF 1.x training input, as legacy scripts wrote it; for benchmarks/service.py.

string_input_producer over TFRecord files of JPEG images -> TFRecordReader
-> parse_single_example -> decode_jpeg -> random_crop, resize,
random_flip_left_right, random_brightness, per_image_standardization ->
shuffle_batch(128, num_threads=4), in a Coordinator loop. Each JPEG is
384x384x3, cropped to 320x320x3 and resized to 112x112x3 (as ImageNet
inputs shrink a large decoded photo to the model's size): the decode costs
far more than the batch weighs on the wire.

Run with plain ``python`` it is TF's own ``tf.compat.v1.train`` queue API;
under ``queue-pipeline run`` (``--engine dataset``, ``--service``) the same
names are queue_pipeline's. ``--tfdata`` reads
the hand-written tf.data version of the same pipeline instead (one-shot
iterator in TF1 mode). It reads ``--warmup`` batches, then times ``--steps``
batches and prints one JSON line: examples/s and the trainer process's CPU
seconds per 1,000 examples (user + system, from ``resource.getrusage``), which
the workers of a tf.data service do not add to.

Usage: served_input.py FILE... [--steps N] [--warmup N] [--tf1] [--tfdata]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import tensorflow as tf

BATCH = 128
CROP = [320, 320, 3]
SIZE = [112, 112, 3]
FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def _augment(serialized):
    parsed = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.cast(tf.io.decode_jpeg(parsed["image"], channels=3), tf.float32)
    image = tf.image.random_crop(image, CROP)
    image = tf.image.resize(image, SIZE[:2])
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(image, max_delta=63)
    image = tf.image.per_image_standardization(image)
    return image, tf.cast(parsed["label"], tf.int32)


def legacy_batches(files):
    v1 = tf.compat.v1
    queue = v1.train.string_input_producer(files)
    _, serialized = v1.TFRecordReader().read(queue)
    image, label = _augment(serialized)
    image.set_shape(SIZE)
    return v1.train.shuffle_batch(
        [image, label], BATCH, capacity=2_000, min_after_dequeue=1_000, num_threads=4
    )


def tfdata_batches(files):
    dataset = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files)).repeat()
    dataset = tf.data.TFRecordDataset(dataset).map(_augment, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.shuffle(1_000).batch(BATCH, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--tf1", action="store_true")
    parser.add_argument("--tfdata", action="store_true")
    flags = parser.parse_args()
    if flags.tf1:
        tf.compat.v1.disable_v2_behavior()
    if flags.tfdata and tf.executing_eagerly():
        iterator = iter(tfdata_batches(flags.files))
        step = lambda: next(iterator)  # noqa: E731
        stop = lambda: None  # noqa: E731
    else:
        graph = tf.Graph()
        with graph.as_default():
            if flags.tfdata:
                fetch = tf.compat.v1.data.make_one_shot_iterator(
                    tfdata_batches(flags.files)
                ).get_next()
            else:
                fetch = legacy_batches(flags.files)
            sess = tf.compat.v1.Session(
                config=tf.compat.v1.ConfigProto(operation_timeout_in_ms=300_000)
            )
            sess.run([tf.compat.v1.global_variables_initializer(),
                      tf.compat.v1.local_variables_initializer()])  # fmt: skip
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
        step = lambda: sess.run(fetch)  # noqa: E731

        def stop() -> None:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)
            sess.close()

    for _ in range(flags.warmup):
        step()
    cpu, start = _cpu(), time.perf_counter()
    for _ in range(flags.steps):
        step()
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    stop()
    examples = flags.steps * BATCH
    print(json.dumps({"examples_per_s": examples / seconds,
                      "trainer_cpu_s_per_1k": 1_000 * cpu / examples}))  # fmt: skip
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
