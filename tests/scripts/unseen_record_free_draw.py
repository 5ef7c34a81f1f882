"""A stereo-pair loader whose constructor builds the pipeline, by mode.

Shaped like a depth-estimation data loader of the TF 1.x era: a ``params``
namedtuple of settings, a text file of ``left right`` image paths read by a
``TextLineReader``, each image decoded and resized by a method; in
``train`` mode a coin drawn per pair (``tf.random_uniform([], 0, 1)``, reading
no record tensor) decides through ``tf.cond`` whether the pair is swapped
and mirrored, a second coin whether a method recolours it, and
``shuffle_batch`` keeps the batches as attributes; in ``test`` mode one
image and its mirror are stacked, unbatched. Used by ``queue-pipeline
migrate tests/scripts/unseen_record_free_draw.py:StereoLoader --call
"'DIR/', 'pairs.txt', PARAMS, 'train'"``: NOTE [ A draw that reads no record ].
"""

import collections

import tensorflow.compat.v1 as tf

StereoParams = collections.namedtuple(
    "StereoParams", "height, width, batch_size, num_threads, stereo"
)


class StereoLoader(object):
    """Left and right images of a pair, flipped and recoloured at random for training."""

    def __init__(self, data_path, pairs_file, params, mode):
        self.data_path = data_path
        self.params = params
        self.mode = mode

        self.left_batch = None
        self.right_batch = None

        pair_queue = tf.train.string_input_producer([pairs_file], shuffle=False, num_epochs=1)
        _, line = tf.TextLineReader().read(pair_queue)
        paths = tf.string_split([line]).values

        left = self.load(tf.string_join([self.data_path, paths[0]]))
        right = self.load(tf.string_join([self.data_path, paths[1]]))

        if mode == "train":
            # swap and mirror the pair half of the time
            swap = tf.random_uniform([], 0, 1)
            left_out = tf.cond(swap > 0.5, lambda: tf.image.flip_left_right(right), lambda: left)
            right_out = tf.cond(swap > 0.5, lambda: tf.image.flip_left_right(left), lambda: right)

            recolour = tf.random_uniform([], 0, 1)
            left_out, right_out = tf.cond(
                recolour > 0.5,
                lambda: self.recolour(left_out, right_out),
                lambda: (left_out, right_out),
            )
            left_out.set_shape([None, None, 3])
            right_out.set_shape([None, None, 3])

            capacity = 64 + 4 * params.batch_size
            self.left_batch, self.right_batch = tf.train.shuffle_batch(
                [left_out, right_out], params.batch_size, capacity, 64, params.num_threads
            )
        elif mode == "test":
            pair = tf.stack([left, tf.image.flip_left_right(left)], 0)
            self.left_batch, self.right_batch = tf.train.batch([pair, right], 1)

    def recolour(self, left, right):
        scale = tf.random_uniform([], 0.8, 1.2)
        return tf.clip_by_value(left * scale, 0, 1), tf.clip_by_value(right * scale, 0, 1)

    def load(self, path):
        image = tf.image.decode_png(tf.read_file(path), channels=3)
        image = tf.image.convert_image_dtype(image, tf.float32)
        return tf.image.resize_images(image, [self.params.height, self.params.width])
