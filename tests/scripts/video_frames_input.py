"""Sequences of frames, one record each, collected step by step (copied as ``prediction_input.py``).

Shaped like tensorflow/models ``research/video_prediction/prediction_input.py``
``build_tfrecord_input``: ``image_seq, state_seq, action_seq = [], [], []``,
a loop over the time steps parsing each step's features from the one record
and appending them, ``tf.concat`` of each list, then ``if use_state:`` batch
three sequences and return, ``else:`` batch the frames alone and return.
"""

import tensorflow.compat.v1 as tf

STATE_DIM = 2


def build_tfrecord_input(filenames, sequence_length=3, batch_size=4, use_state=True):
    filename_queue = tf.train.string_input_producer(filenames, shuffle=True)
    reader = tf.TFRecordReader()
    _, serialized_example = reader.read(filename_queue)
    image_seq, state_seq, action_seq = [], [], []
    for i in range(sequence_length):
        image_name = "move/" + str(i) + "/image"
        state_name = "move/" + str(i) + "/state"
        action_name = "move/" + str(i) + "/action"
        if use_state:
            features = {
                image_name: tf.FixedLenFeature([4], tf.float32),
                state_name: tf.FixedLenFeature([STATE_DIM], tf.float32),
                action_name: tf.FixedLenFeature([STATE_DIM], tf.float32),
            }
        else:
            features = {image_name: tf.FixedLenFeature([4], tf.float32)}
        features = tf.parse_single_example(serialized_example, features=features)
        image = tf.reshape(features[image_name], [1, 2, 2, 1])
        image_seq.append(image)
        if use_state:
            state_seq.append(tf.reshape(features[state_name], shape=[1, STATE_DIM]))
            action_seq.append(tf.reshape(features[action_name], shape=[1, STATE_DIM]))
    image_seq = tf.concat(axis=0, values=image_seq)
    if use_state:
        state_seq = tf.concat(axis=0, values=state_seq)
        action_seq = tf.concat(axis=0, values=action_seq)
        [image_batch, action_batch, state_batch] = tf.train.batch(
            [image_seq, action_seq, state_seq], batch_size, num_threads=2, capacity=40
        )
        return image_batch, action_batch, state_batch
    else:
        image_batch = tf.train.batch([image_seq], batch_size, num_threads=2, capacity=40)
        zeros_batch = tf.zeros([batch_size, sequence_length, STATE_DIM])
        return image_batch, zeros_batch, zeros_batch
