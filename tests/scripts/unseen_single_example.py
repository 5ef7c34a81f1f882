"""Shaped like segmentation readers of TFRecord shards (segnet.tf and its
kind): a helper makes its own producer and reader for one file and returns one
decoded record; the input function calls it for the images and, given a label
file, again for the labels, and batches both (also through a list the label
branch appends to). Two-space indentation, as written."""

import tensorflow.compat.v1 as tf

SIZE = 12


def read_and_decode_single_example(filename):
  filename_queue = tf.train.string_input_producer([filename], num_epochs=None)

  reader = tf.TFRecordReader()
  _, serialized_example = reader.read(filename_queue)

  features = tf.parse_single_example(
    serialized_example,
    features={
      'image/encoded': tf.FixedLenFeature([], tf.string)
    })

  image = features['image/encoded']
  image = tf.cast(tf.image.decode_png(image, 3), tf.float32)
  image /= 255
  image.set_shape([SIZE, SIZE, 3])
  return image


def inputs(batch_size, train_filename, train_labels_filename=None):
  image = read_and_decode_single_example(train_filename)
  if train_labels_filename:
    label = read_and_decode_single_example(train_labels_filename)
    images_batch, labels_batch = tf.train.shuffle_batch(
      [image, label],
      batch_size=batch_size,
      capacity=200,
      min_after_dequeue=100)
    return images_batch, labels_batch
  else:
    return tf.train.shuffle_batch([image], batch_size=batch_size, capacity=200,
                                  min_after_dequeue=100)


def read_shards(filenames):
  filename_queue = tf.train.string_input_producer(filenames)
  reader = tf.TFRecordReader()
  _, serialized_example = reader.read(filename_queue)
  features = tf.parse_single_example(
    serialized_example, features={'image/encoded': tf.FixedLenFeature([], tf.string)})
  return tf.image.decode_png(features['image/encoded'], 3)


def sharded_inputs(batch_size, image_shards, label_shards):
  image = read_shards(image_shards)
  label = read_shards(label_shards)
  image.set_shape([SIZE, SIZE, 3])
  label.set_shape([SIZE, SIZE, 3])
  return tf.train.batch([image, label], batch_size=batch_size)


def inputs_list(batch_size, train_filename, train_labels_filename=None):
  _min_after_dequeue = 16
  _capacity = _min_after_dequeue + 3 * batch_size
  image = read_and_decode_single_example(train_filename)
  _inp = [image]

  if train_labels_filename:
    label = read_and_decode_single_example(train_labels_filename)
    _inp.append(label)

  rs = tf.train.shuffle_batch(_inp, batch_size=batch_size, capacity=_capacity,
                              min_after_dequeue=_min_after_dequeue)

  return rs
