"""Shaped like segmentation programs (SegNet, FCN, pix2pix readers): an image
list and a mask list in two unshuffled producers, one file of each read per
record, by a helper handed both queues or inline with a reader each; and a
function building a training and a validation pipeline and returning both.
"""

import glob
import os

import tensorflow.compat.v1 as tf

IMAGE_SIZE = 12
MIN_AFTER_DEQUEUE = 10


def read_pair(image_queue, mask_queue):
    reader = tf.WholeFileReader()
    _, image_value = reader.read(image_queue)
    _, mask_value = reader.read(mask_queue)
    image = tf.image.decode_png(image_value, channels=3)
    mask = tf.image.decode_png(mask_value, channels=1)
    image = tf.reshape(image, [IMAGE_SIZE, IMAGE_SIZE, 3])
    mask = tf.reshape(mask, [IMAGE_SIZE, IMAGE_SIZE, 1])
    return tf.cast(image, tf.float32) / 255.0, mask


def inputs(data_dir, batch_size, num_epochs=None):
    image_files = sorted(glob.glob(os.path.join(data_dir, "images", "*.png")))
    mask_files = sorted(glob.glob(os.path.join(data_dir, "masks", "*.png")))
    image_queue = tf.train.string_input_producer(image_files, shuffle=False, num_epochs=num_epochs)
    mask_queue = tf.train.string_input_producer(mask_files, shuffle=False, num_epochs=num_epochs)
    image, mask = read_pair(image_queue, mask_queue)
    images, masks = tf.train.shuffle_batch(
        [image, mask],
        batch_size=batch_size,
        capacity=MIN_AFTER_DEQUEUE + 3 * batch_size,
        min_after_dequeue=MIN_AFTER_DEQUEUE,
        num_threads=1,
    )
    return images, masks


def get_batch(data_dir, batch_size, shuffle_masks=False):
    image_list = sorted(glob.glob(os.path.join(data_dir, "images", "*.png")))
    mask_list = sorted(glob.glob(os.path.join(data_dir, "masks", "*.png")))
    image_queue = tf.train.string_input_producer(image_list, shuffle=False)
    mask_queue = tf.train.string_input_producer(mask_list, shuffle=shuffle_masks)
    image_reader = tf.WholeFileReader()
    _, image_raw = image_reader.read(image_queue)
    image = tf.image.decode_png(image_raw, channels=3)
    image = tf.image.resize_images(image, [8, 8])
    mask_reader = tf.WholeFileReader()
    _, mask_raw = mask_reader.read(mask_queue)
    mask = tf.image.decode_png(mask_raw, channels=1)
    mask = tf.image.resize_images(mask, [8, 8], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    image_batch, mask_batch = tf.train.batch(
        [image, mask], batch_size=batch_size, num_threads=1, capacity=16
    )
    return image_batch, mask_batch


def record_pairs(image_records, mask_records, batch_size):
    image_queue = tf.train.string_input_producer(image_records, shuffle=False)
    mask_queue = tf.train.string_input_producer(mask_records, shuffle=False)
    reader = tf.TFRecordReader()
    _, image_record = reader.read(image_queue)
    _, mask_record = reader.read(mask_queue)
    return tf.train.batch([image_record, mask_record], batch_size=batch_size)


def train_and_val(data_dir, batch_size):
    files = sorted(glob.glob(os.path.join(data_dir, "images", "*.png")))
    train_queue = tf.train.string_input_producer(files[:8], shuffle=True)
    val_queue = tf.train.string_input_producer(files[8:], shuffle=False, num_epochs=1)
    reader = tf.WholeFileReader()
    _, train_value = reader.read(train_queue)
    _, val_value = reader.read(val_queue)
    train_image = tf.reshape(
        tf.image.decode_png(train_value, channels=3), [IMAGE_SIZE, IMAGE_SIZE, 3]
    )
    train_image = tf.image.random_flip_left_right(train_image)
    val_image = tf.reshape(tf.image.decode_png(val_value, channels=3), [IMAGE_SIZE, IMAGE_SIZE, 3])
    train_batch = tf.train.shuffle_batch(
        [train_image], batch_size=batch_size, capacity=40, min_after_dequeue=8
    )
    val_batch = tf.train.batch([val_image], batch_size=batch_size)
    tf.summary.image("val", val_batch)
    return train_batch, val_batch
