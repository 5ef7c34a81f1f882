"""Reader classes of a video classifier (copied as ``readers.py``).

Shaped like google/youtube-8m's ``readers.py``: ``BaseReader.prepare_reader``
raises NotImplementedError; ``YT8MAggregatedFeatureReader(num_classes,
feature_sizes, feature_names)`` reads a TFRecord with its own
``tf.TFRecordReader()`` in ``prepare_reader(filename_queue)`` and parses a
batch of one with ``prepare_serialized_examples`` (``enqueue_many`` rows), as
its frame-level reader does.
"""

import tensorflow.compat.v1 as tf


class BaseReader(object):
    def prepare_reader(self, unused_filename_queue):
        raise NotImplementedError()


class YT8MAggregatedFeatureReader(BaseReader):
    def __init__(self, num_classes=10, feature_sizes=(4,), feature_names=("mean_rgb",)):
        self.num_classes = num_classes
        self.feature_sizes = list(feature_sizes)
        self.feature_names = list(feature_names)

    def prepare_reader(self, filename_queue):
        reader = tf.TFRecordReader()
        _, serialized_example = reader.read(filename_queue)
        return self.prepare_serialized_examples(tf.expand_dims(serialized_example, 0))

    def prepare_serialized_examples(self, serialized_examples):
        feature_map = {
            "id": tf.FixedLenFeature([], tf.string),
            "labels": tf.VarLenFeature(tf.int64),
        }
        for name, size in zip(self.feature_names, self.feature_sizes):
            feature_map[name] = tf.FixedLenFeature([size], tf.float32)
        features = tf.parse_example(serialized_examples, features=feature_map)
        labels = tf.sparse_to_indicator(features["labels"], self.num_classes)
        labels.set_shape([None, self.num_classes])
        concatenated = tf.concat([features[n] for n in self.feature_names], 1)
        return features["id"], concatenated, labels, tf.ones([tf.shape(serialized_examples)[0]])
