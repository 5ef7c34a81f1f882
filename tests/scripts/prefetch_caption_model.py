"""A captioning model's inputs read from a queue its input ops fill and return.

Shaped like tensorflow/models ``im2txt/show_and_tell_model.py``:
``ShowAndTellModel(config, mode)`` makes ``self.reader = tf.TFRecordReader()``;
``build_inputs`` makes placeholders in inference mode, else calls
``input_ops.prefetch_input_data(self.reader, ...)``,
dequeues in ``num_preprocess_threads`` copies of its preprocessing (each
passing ``thread_id`` to ``process_image``) and hands the copies to
``input_ops.batch_with_dynamic_pad``. ``build_id_batches`` is skip-thoughts'
shape: ``dequeue_many(batch_size)`` of the same queue, then a batch parse.
"""

import tensorflow.compat.v1 as tf

import input_ops


class ShowAndTellModel(object):
    def __init__(self, file_pattern, mode="train", batch_size=4):
        self.file_pattern = file_pattern
        self.mode = mode
        self.batch_size = batch_size
        self.reader = tf.TFRecordReader()
        self.num_preprocess_threads = 2

    def is_training(self):
        return self.mode == "train"

    def process_image(self, encoded_image, thread_id=0):
        image = tf.image.decode_jpeg(encoded_image, channels=3)
        image = tf.image.convert_image_dtype(image, dtype=tf.float32)
        if thread_id == 0:
            tf.summary.image("image", tf.expand_dims(image, 0))
        return tf.image.resize_images(image, size=[8, 8])

    def build_inputs(self):
        if self.mode == "inference":
            image_feed = tf.placeholder(dtype=tf.string, shape=[], name="image_feed")
            input_feed = tf.placeholder(dtype=tf.int64, shape=[None], name="input_feed")
            images = tf.expand_dims(self.process_image(image_feed), 0)
            input_seqs = tf.expand_dims(input_feed, 1)
            target_seqs = None
            input_mask = None
        else:
            input_queue = input_ops.prefetch_input_data(
                self.reader,
                self.file_pattern,
                is_training=self.is_training(),
                batch_size=self.batch_size,
                values_per_shard=10,
                input_queue_capacity_factor=2,
                num_reader_threads=1,
            )
            images_and_captions = []
            for thread_id in range(self.num_preprocess_threads):
                serialized_sequence_example = input_queue.dequeue()
                encoded_image, caption = input_ops.parse_sequence_example(
                    serialized_sequence_example,
                    image_feature="image/data",
                    caption_feature="image/caption_ids",
                )
                image = self.process_image(encoded_image, thread_id=thread_id)
                images_and_captions.append([image, caption])
            queue_capacity = 2 * self.num_preprocess_threads * self.batch_size
            images, input_seqs, target_seqs, input_mask = input_ops.batch_with_dynamic_pad(
                images_and_captions, batch_size=self.batch_size, queue_capacity=queue_capacity
            )
        return images, input_seqs, target_seqs, input_mask

    def build_id_batches(self, pattern):
        input_queue = input_ops.prefetch_input_data(
            self.reader,
            pattern,
            is_training=self.is_training(),
            batch_size=self.batch_size,
            values_per_shard=10,
            input_queue_capacity_factor=2,
            num_reader_threads=2,
        )
        serialized = input_queue.dequeue_many(self.batch_size)
        ids = input_ops.parse_example_batch(serialized)
        return ids
