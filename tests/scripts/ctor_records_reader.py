"""A segmentation reader: the constructor builds the records, a method batches them.

Shaped like DeepLab-ResNet's ``image_reader.py`` (and the many segmentation
repositories that copied it): a text list of ``image mask`` paths is read in
plain Python, ``ImageReader(data_dir, data_list, input_size, random_scale,
random_mirror, coord)`` makes ``slice_input_producer`` over both lists and
decodes a PNG image (RGB to BGR) and its mask in a module function, keeping
``self.image`` and ``self.label``; ``dequeue(num_elements)`` batches them.
Used by ``queue-pipeline migrate
tests/scripts/ctor_records_reader.py:ImageReader.dequeue --call
'ImageReader(...), 2'``.
"""

import tensorflow as tf


def read_labeled_image_list(data_dir, data_list):
    images, masks = [], []
    with open(data_list) as f:
        for line in f:
            image, mask = line.strip("\n").split(" ")
            images.append(data_dir + image)
            masks.append(data_dir + mask)
    return images, masks


def read_images_from_disk(input_queue, input_size):
    img_contents = tf.io.read_file(input_queue[0])
    label_contents = tf.io.read_file(input_queue[1])
    img = tf.image.decode_png(img_contents, channels=3)
    img_r, img_g, img_b = tf.split(axis=2, num_or_size_splits=3, value=img)
    img = tf.cast(tf.concat(axis=2, values=[img_b, img_g, img_r]), dtype=tf.float32)
    label = tf.image.decode_png(label_contents, channels=1)
    if input_size is not None:
        h, w = input_size
        img = tf.image.resize_with_crop_or_pad(img, h, w)
        label = tf.image.resize_with_crop_or_pad(label, h, w)
    return img, label


class ImageReader(object):
    def __init__(self, data_dir, data_list, input_size, coord):
        self.data_dir = data_dir
        self.data_list = data_list
        self.input_size = input_size
        self.coord = coord
        self.image_list, self.label_list = read_labeled_image_list(self.data_dir, self.data_list)
        self.images = tf.convert_to_tensor(self.image_list, dtype=tf.string)
        self.labels = tf.convert_to_tensor(self.label_list, dtype=tf.string)
        self.queue = tf.compat.v1.train.slice_input_producer(
            [self.images, self.labels], shuffle=input_size is not None, num_epochs=1
        )
        self.image, self.label = read_images_from_disk(self.queue, self.input_size)

    def dequeue(self, num_elements):
        image_batch, label_batch = tf.compat.v1.train.batch(
            [self.image, self.label], num_elements, allow_smaller_final_batch=True
        )
        return image_batch, label_batch
