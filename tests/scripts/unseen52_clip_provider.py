"""Clip batches read through tf-slim's DatasetDataProvider.

A test program for ``queue-pipeline migrate`` (#41, trial 52): the TF-slim
model zoo's input shape (a provider over a slim Dataset, ``provider.get``,
per-record preprocessing, ``tf.train.batch``), with the dataset handed in
(``--call "get_split('train', DIR), 4"``) or described inside.
"""

import tensorflow as tf
import tf_slim as slim

import unseen52_clip_data as clip_data
from unseen52_clip_data import get_split  # noqa: F401 - for --call


def clip_batches(dataset, batch_size=4, readers=1, shuffle=True, capacity=32, seed=None):
    """Batches of (scaled frames, label, clip number) of the slim `dataset`."""
    provider = slim.dataset_data_provider.DatasetDataProvider(
        dataset,
        num_readers=readers,
        common_queue_capacity=capacity,
        common_queue_min=capacity // 2,
        shuffle=shuffle,
        seed=seed,
    )
    [frames, label, clip] = provider.get(["frames", "label", "clip"])
    frames = frames * 2.0 + 1.0
    frames_batch, labels, clips = tf.compat.v1.train.batch(
        [frames, label, clip], batch_size=batch_size, num_threads=1, capacity=4 * batch_size
    )
    return frames_batch, labels, clips


def clip_batches_from(directory, batch_size=4, readers=1, shuffle=True):
    """The train split of `directory` described inside, read by clip_batches."""
    return clip_batches(get_split("train", directory), batch_size, readers, shuffle)


def one_epoch(directory, batch_size, readers=4, shuffle=False):
    """The split described and its provider built in this one function, one epoch."""
    dataset = clip_data.get_split("train", directory)
    provider = slim.dataset_data_provider.DatasetDataProvider(
        dataset, num_readers=readers, shuffle=shuffle, num_epochs=1
    )
    frames, clip = provider.get(["frames", "clip"])
    frames = tf.reshape(frames, [-1])
    return tf.compat.v1.train.batch([frames, clip], batch_size)


def clips_with_keys(dataset, batch_size):
    """The provider's record keys beside the frames (no tf.data counterpart)."""
    provider = slim.dataset_data_provider.DatasetDataProvider(dataset, shuffle=False)
    frames, key = provider.get(["frames", "record_key"])
    key = tf.reshape(key, [])
    return tf.compat.v1.train.batch([frames, key], batch_size)


def clips_of_identity(directory, batch_size):
    """A reader class with no tf.data counterpart (each file name is its one record)."""
    dataset = get_split("train", directory, reader=tf.compat.v1.IdentityReader)
    provider = slim.dataset_data_provider.DatasetDataProvider(dataset, shuffle=False)
    [clip] = provider.get(["clip"])
    return tf.compat.v1.train.batch([clip], batch_size)
