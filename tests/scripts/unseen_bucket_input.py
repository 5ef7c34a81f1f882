"""A speech input bucketing its sequences with ``tf.contrib`` (gone in TF 2.x).

Shaped like a DeepSpeech2 TF 1.x port's deepSpeech_input.py: a
``TFRecordReader`` on ``SequenceExample``s, ``parse_single_sequence_example``,
then ``tf.contrib.training.bucket_by_sequence_length``. Used by
``queue-pipeline migrate tests/scripts/unseen_bucket_input.py:inputs
--call "'FILE', 4"``: refused at the contrib line, with the fix.
"""

import tensorflow.compat.v1 as tf


def inputs(path, batch_size):
    filename_queue = tf.train.string_input_producer([path], num_epochs=1)
    reader = tf.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    context, sequence = tf.parse_single_sequence_example(
        serialized,
        context_features={"seq_len": tf.FixedLenFeature([], tf.int64)},
        sequence_features={"feats": tf.FixedLenSequenceFeature([3], tf.float32)},
    )
    seq_len, (feats,) = tf.contrib.training.bucket_by_sequence_length(
        input_length=tf.cast(context["seq_len"], tf.int32),
        tensors=[sequence["feats"]],
        batch_size=batch_size,
        bucket_boundaries=[4, 8],
        dynamic_pad=True,
    )
    return feats, seq_len
