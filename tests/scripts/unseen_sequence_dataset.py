"""A class whose constructor keeps its batches, reusing the feature specs' names.

Shaped like jimfleming/recurrent-entity-networks' entity_networks/dataset.py:
``context_features, sequence_features = tf.parse_single_sequence_example(...,
context_features=context_features, sequence_features=sequence_features)``
reads the two spec dicts and rebinds their names to the parsed tensors.
"""

import tensorflow.compat.v1 as tf


class Dataset(object):
    def __init__(self, filenames, batch_size, shuffle=False):
        self._size = 24
        filename_queue = tf.train.string_input_producer(filenames, shuffle=shuffle)
        capacity = self._size + 10 * batch_size
        reader = tf.TFRecordReader()
        _, serialized = reader.read(filename_queue)
        sequence_features = {"story": tf.FixedLenSequenceFeature([], dtype=tf.int64)}
        context_features = {"answer": tf.FixedLenFeature([], dtype=tf.int64)}
        context_features, sequence_features = tf.parse_single_sequence_example(
            serialized, context_features=context_features, sequence_features=sequence_features
        )
        story = tf.reshape(sequence_features["story"], [2, 3])
        answer = context_features["answer"]
        if shuffle:
            self.story_batch, self.answer_batch = tf.train.shuffle_batch(
                [story, answer], batch_size=batch_size, min_after_dequeue=self._size,
                capacity=capacity,
            )  # fmt: skip
        else:
            self.story_batch, self.answer_batch = tf.train.batch(
                [story, answer], batch_size=batch_size, capacity=capacity
            )
