"""Shaped like pix2pix-tensorflow: ``a = parser.parse_args()`` at module level, a
``load_examples()`` that reads ``a``, a WholeFileReader whose path is batched beside the
decoded image, then module-level checks and a ``main()`` that trains.

``queue-pipeline migrate real_argparse_examples.py:load_examples --argv
'--input_dir DIR'`` parses the program's own argv (not migrate's) into ``a``.
"""

import argparse
import collections
import glob
import os

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--input_dir", help="path to folder containing images")
parser.add_argument("--mode", default="test", choices=["train", "test"])
parser.add_argument("--output_dir", default="out")
parser.add_argument("--batch_size", type=int, default=2)
parser.add_argument("--scale_size", type=int, default=8)
a = parser.parse_args()

CROP_SIZE = 8
Examples = collections.namedtuple("Examples", "paths, inputs, count")

if a.input_dir is None:  # top-level code, as pix2pix has it: never run by migrate
    raise SystemExit("--input_dir is required")
os.makedirs(a.output_dir, exist_ok=True)


def load_examples():
    if a.input_dir is None or not os.path.exists(a.input_dir):
        raise Exception("input_dir does not exist")
    input_paths = sorted(glob.glob(os.path.join(a.input_dir, "*.png")))
    if len(input_paths) == 0:
        raise Exception("input_dir contains no image files")
    with tf.compat.v1.name_scope("load_images"):
        path_queue = tf.compat.v1.train.string_input_producer(
            input_paths, shuffle=a.mode == "train", num_epochs=1
        )
        reader = tf.compat.v1.WholeFileReader()
        paths, contents = reader.read(path_queue)
        raw_input = tf.image.decode_png(contents, channels=3)
        raw_input = tf.image.convert_image_dtype(raw_input, dtype=tf.float32)
        raw_input.set_shape([None, None, 3])
        image = tf.image.resize(raw_input, [a.scale_size, a.scale_size])
        image = image[:CROP_SIZE, :CROP_SIZE, :] * 2 - 1
    paths_batch, inputs_batch = tf.compat.v1.train.batch(
        [paths, image], batch_size=a.batch_size, allow_smaller_final_batch=True
    )
    return paths_batch, inputs_batch


def main():
    paths, inputs = load_examples()
    examples = Examples(paths=paths, inputs=inputs, count=len(os.listdir(a.input_dir)))
    print("examples count = %d" % examples.count)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.local_variables_initializer())
        coord = tf.compat.v1.train.Coordinator()
        threads = tf.compat.v1.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while True:
                for p in sess.run(examples.paths):
                    name = os.path.basename(p.decode())
                    open(os.path.join(a.output_dir, name + ".txt"), "w").close()
        except tf.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)


tf.compat.v1.disable_eager_execution()
main()
