"""TF 1.x's fully_connected_reader.py input code, as tf_upgrade_v2 leaves it (2-space indents).

The input functions of TF's MNIST example, written again in their original
style (2-space indents, a separate decode(), comments) for tests/test_migrate.py.
"""
import os.path
import tensorflow as tf


TRAIN_FILE = 'train.tfrecords'
VALIDATION_FILE = 'validation.tfrecords'


def decode(serialized_example):
  features = tf.io.parse_single_example(
      serialized=serialized_example,
      # Defaults are not specified since both keys are required.
      features={
          'image_raw': tf.io.FixedLenFeature([], tf.string),
          'label': tf.io.FixedLenFeature([], tf.int64),
      })

  # Convert from a scalar string tensor (whose single string has
  # length mnist.IMAGE_PIXELS) to a uint8 tensor with shape
  # [mnist.IMAGE_PIXELS].
  image = tf.io.decode_raw(features['image_raw'], tf.uint8)
  image.set_shape((784))

  # Convert from [0, 255] -> [-0.5, 0.5] floats.
  image = tf.cast(image, tf.float32) * (1. / 255) - 0.5

  # Convert label from a scalar uint8 tensor to an int32 scalar.
  label = tf.cast(features['label'], tf.int32)

  return image, label


def read_and_decode(filename_queue):
  reader = tf.compat.v1.TFRecordReader()
  _, serialized_example = reader.read(filename_queue)
  return decode(serialized_example)


def inputs(train_dir, train, batch_size, num_epochs):
  """Reads input data num_epochs times."""
  if not num_epochs: num_epochs = None
  filename = os.path.join(train_dir,
                          TRAIN_FILE if train else VALIDATION_FILE)

  with tf.compat.v1.name_scope('input'):
    filename_queue = tf.compat.v1.train.string_input_producer(
        [filename], num_epochs=num_epochs)

    # Even when reading in multiple threads, share the filename
    # queue.
    image, label = read_and_decode(filename_queue)

    # Shuffle the examples and collect them into batch_size batches.
    # (Internally uses a RandomShuffleQueue.)
    # We run this in two threads to avoid being a bottleneck.
    images, sparse_labels = tf.compat.v1.train.shuffle_batch(
        [image, label], batch_size=batch_size, num_threads=2,
        capacity=1000 + 3 * batch_size,
        # Ensures a minimum of 1000 examples in the queue
        min_after_dequeue=1000)

    return images, sparse_labels
