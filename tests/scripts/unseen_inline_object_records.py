"""The reading module of ``unseen_inline_object_script.py`` (our own code).

Shaped like a public lung-CT block reader's ``TF_Records`` class: built with
the record files, its ``read_records()`` reads one example per step and
returns a dict of decoded tensors, unbatched.
"""

import tensorflow.compat.v1 as tf


class BlockRecords(object):
    def __init__(self, files, side=2):
        self.files = files
        self.side = side

    def read_records(self):
        queue = tf.train.string_input_producer(self.files, shuffle=False)
        _, value = tf.TFRecordReader().read(queue)
        f = tf.parse_single_example(
            value,
            features={
                "block": tf.FixedLenFeature([], tf.string),
                "project": tf.FixedLenFeature([], tf.string),
            },
        )
        ret = {}
        ret["block"] = tf.reshape(tf.decode_raw(f["block"], tf.int16), [self.side] * 2)
        ret["project"] = f["project"]
        return ret
