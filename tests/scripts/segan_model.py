"""A GAN method whose batches feed its generator, which it returns (copied as ``model.py``).

Shaped like santi-pdp/segan's ``model.py`` ``SEGAN.build_model_single_gpu``:
``read_and_decode(filename_queue, ...)`` of the same file, a ``shuffle_batch``
whose list spans two lines (a backslash-continued target), then the
generator (variables) on the batches, returned. Its tf.data version cannot
return the generator's output: refused with the line that builds it.
"""

import tensorflow.compat.v1 as tf


def read_and_decode(filename_queue, canvas_size):
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    features = tf.parse_single_example(
        serialized,
        features={
            "wav_raw": tf.FixedLenFeature([], tf.string),
            "noisy_raw": tf.FixedLenFeature([], tf.string),
        },
    )
    wave = tf.cast(tf.decode_raw(features["wav_raw"], tf.int32), tf.float32)
    wave.set_shape(canvas_size)
    noisy = tf.cast(tf.decode_raw(features["noisy_raw"], tf.int32), tf.float32)
    noisy.set_shape(canvas_size)
    return wave, noisy


class SEGAN(object):
    def __init__(self, files, batch_size=2, canvas_size=8):
        self.files = files
        self.batch_size = batch_size
        self.canvas_size = canvas_size

    def build_model_single_gpu(self, gpu_idx):
        if gpu_idx == 0:
            filename_queue = tf.train.string_input_producer(self.files)
            self.get_wav, self.get_noisy = read_and_decode(filename_queue, self.canvas_size)
        # fmt: off
        wavbatch, \
        noisybatch = tf.train.shuffle_batch([self.get_wav,
                                             self.get_noisy],
                                            batch_size=self.batch_size,
                                            num_threads=2,
                                            capacity=30,
                                            min_after_dequeue=10)
        # fmt: on
        noisybatch = tf.expand_dims(noisybatch, -1)
        G = self.generator(noisybatch)
        return G

    def generator(self, noisy_w):
        with tf.variable_scope("g_ae", reuse=tf.AUTO_REUSE):
            w = tf.get_variable("w", [1, 1])
            return tf.tensordot(noisy_w, w, 1)
