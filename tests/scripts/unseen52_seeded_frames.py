"""Shaped like monocular depth loaders: a strip of three frames (left, centre,
right) per PNG file and a calibration line per text file, from two producers
that shuffle with one seed and are read one file of each per record; the strip
split into the centre frame and the side frames (names first bound there),
batched, then jittered per batch by nested functions that draw at random, the
same names bound again from the jittered batch.
"""

import glob
import os

import tensorflow.compat.v1 as tf

FRAME = 6  # each frame is FRAME x FRAME pixels
CROP = 5


def split_strip(strip):
    centre = tf.slice(strip, [0, FRAME, 0], [-1, FRAME, -1])
    left = tf.slice(strip, [0, 0, 0], [-1, FRAME, -1])
    right = tf.slice(strip, [0, 2 * FRAME, 0], [-1, FRAME, -1])
    sides = tf.concat([left, right], axis=2)
    centre.set_shape([FRAME, FRAME, 3])
    sides.set_shape([FRAME, FRAME, 6])
    return centre, sides


def jitter(frames, calib):
    def rescale(frames, calib):
        gain = tf.random_uniform([], 0.9, 1.1)
        return frames * gain, calib * tf.stack([gain, gain, 1.0])[:, None]

    def crop(frames, calib):
        dy = tf.random_uniform([], 0, FRAME - CROP + 1, dtype=tf.int32)
        dx = tf.random_uniform([], 0, FRAME - CROP + 1, dtype=tf.int32)
        frames = tf.image.crop_to_bounding_box(frames, dy, dx, CROP, CROP)
        shift = tf.cast(tf.stack([dx, dy, 0]), tf.float32)[:, None]
        return frames, calib - shift * tf.constant([[0.0, 0.0, 1.0]])

    frames, calib = rescale(frames, calib)
    frames, calib = crop(frames, calib)
    return frames, calib


def _lists(data_dir):
    strips = sorted(glob.glob(os.path.join(data_dir, "*.png")))
    calibs = [p[: -len(".png")] + "_calib.txt" for p in strips]
    return strips, calibs


def load_clips(data_dir, batch_size, seed=7, calib_seed="same"):
    strips, calibs = _lists(data_dir)
    strip_queue = tf.train.string_input_producer(strips, seed=seed, shuffle=True)
    calib_queue = tf.train.string_input_producer(
        calibs, seed=seed if calib_seed == "same" else calib_seed, shuffle=True
    )
    strip_reader = tf.WholeFileReader()
    _, strip_bytes = strip_reader.read(strip_queue)
    strip = tf.image.decode_png(strip_bytes, channels=3)
    centre, sides = split_strip(tf.cast(strip, tf.float32))
    calib_reader = tf.TextLineReader()
    _, calib_line = calib_reader.read(calib_queue)
    columns = tf.decode_csv(calib_line, record_defaults=[[0.0]] * 9)
    calib = tf.reshape(tf.stack(columns), [3, 3])
    sides, centre, calib = tf.train.batch([sides, centre, calib], batch_size=batch_size)
    frames = tf.concat([centre, sides], axis=3)
    frames, calib = jitter(frames, calib)
    centre = frames[:, :, :, :3]
    sides = frames[:, :, :, 3:]
    return centre, sides, calib


def load_strips(data_dir, batch_size):
    strips, _ = _lists(data_dir)
    strip_queue = tf.train.string_input_producer(strips, shuffle=False)
    _, strip_bytes = tf.WholeFileReader().read(strip_queue)
    centre, sides = split_strip(tf.cast(tf.image.decode_png(strip_bytes, channels=3), tf.float32))
    centre, sides = tf.train.batch([centre, sides], batch_size=batch_size)
    frames, _ = jitter(tf.concat([centre, sides], axis=3), tf.eye(3, batch_shape=[batch_size]))
    centre = frames[:, :, :, :3]
    sides = frames[:, :, :, 3:]
    return centre, sides
