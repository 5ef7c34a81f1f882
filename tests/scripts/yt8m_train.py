"""The training input of a video classifier, read through a reader object (copied as ``train.py``).

Shaped like google/youtube-8m's ``train.py`` ``get_input_data_tensors(reader,
data_pattern, batch_size, num_epochs, num_readers)``: globs the files, makes
``string_input_producer``, hands the queue to ``reader.prepare_reader`` of the
reader object it was given, ``num_readers`` times, and joins them with
``shuffle_batch_join(..., enqueue_many=True)``.
"""

import tensorflow.compat.v1 as tf

import readers


def get_input_data_tensors(reader, data_pattern, batch_size=8, num_epochs=None, num_readers=1):
    with tf.name_scope("train_input"):
        files = tf.gfile.Glob(data_pattern)
        if not files:
            raise IOError("Unable to find training files. data_pattern='" + data_pattern + "'.")
        filename_queue = tf.train.string_input_producer(files, num_epochs=num_epochs, shuffle=True)
        training_data = [reader.prepare_reader(filename_queue) for _ in range(num_readers)]
        return tf.train.shuffle_batch_join(
            training_data,
            batch_size=batch_size,
            capacity=batch_size * 5,
            min_after_dequeue=batch_size,
            allow_smaller_final_batch=True,
            enqueue_many=True,
        )


def main():
    reader = readers.YT8MAggregatedFeatureReader(num_classes=10)
    return get_input_data_tensors(reader, "train*.tfrecord")
