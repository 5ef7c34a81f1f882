"""Input ops of a captioning model (copied as ``input_ops.py``).

Shaped like tensorflow/models ``im2txt/ops/inputs.py`` (and skip-thoughts'
``ops/input_ops.py``, which copied it): ``prefetch_input_data(reader,
file_pattern, is_training, ...)`` globs the files, makes a filename queue and
its own ``RandomShuffleQueue`` (training) or ``FIFOQueue`` (evaluation), fills
it from N reads of the reader it was given, starts a QueueRunner and returns
the queue (skip-thoughts' FIFOQueue has ``shapes=[[]]``, for its
``dequeue_many``); ``parse_sequence_example`` reads one SequenceExample;
``batch_with_dynamic_pad(images_and_captions, ...)`` loops over the caller's
copies and joins them with dynamic padding; ``parse_example_batch`` parses a
batch of serialized Examples.
"""

import tensorflow.compat.v1 as tf


def parse_sequence_example(serialized, image_feature, caption_feature):
    context, sequence = tf.parse_single_sequence_example(
        serialized,
        context_features={image_feature: tf.FixedLenFeature([], dtype=tf.string)},
        sequence_features={caption_feature: tf.FixedLenSequenceFeature([], dtype=tf.int64)},
    )
    return context[image_feature], sequence[caption_feature]


def prefetch_input_data(
    reader,
    file_pattern,
    is_training,
    batch_size,
    values_per_shard,
    input_queue_capacity_factor=16,
    num_reader_threads=1,
    shard_queue_name="filename_queue",
    value_queue_name="input_queue",
):
    data_files = []
    for pattern in file_pattern.split(","):
        data_files.extend(tf.gfile.Glob(pattern))
    if not data_files:
        tf.logging.fatal("Found no input files matching %s", file_pattern)
    if is_training:
        filename_queue = tf.train.string_input_producer(
            data_files, shuffle=True, capacity=16, name=shard_queue_name
        )
        min_queue_examples = values_per_shard * input_queue_capacity_factor
        capacity = min_queue_examples + 100 * batch_size
        values_queue = tf.RandomShuffleQueue(
            capacity=capacity,
            min_after_dequeue=min_queue_examples,
            dtypes=[tf.string],
            name="random_" + value_queue_name,
        )
    else:
        filename_queue = tf.train.string_input_producer(
            data_files, shuffle=False, capacity=1, name=shard_queue_name
        )
        capacity = values_per_shard + 3 * batch_size
        values_queue = tf.FIFOQueue(
            capacity=capacity, dtypes=[tf.string], shapes=[[]], name="fifo_" + value_queue_name
        )
    enqueue_ops = []
    for _ in range(num_reader_threads):
        _, value = reader.read(filename_queue)
        enqueue_ops.append(values_queue.enqueue([value]))
    tf.train.queue_runner.add_queue_runner(
        tf.train.queue_runner.QueueRunner(values_queue, enqueue_ops)
    )
    tf.summary.scalar(
        "queue/%s/fraction_of_%d_full" % (values_queue.name, capacity),
        tf.cast(values_queue.size(), tf.float32) * (1.0 / capacity),
    )
    return values_queue


def batch_with_dynamic_pad(images_and_captions, batch_size, queue_capacity, add_summaries=True):
    enqueue_list = []
    for image, caption in images_and_captions:
        caption_length = tf.shape(caption)[0]
        input_length = tf.expand_dims(tf.subtract(caption_length, 1), 0)
        input_seq = tf.slice(caption, [0], input_length)
        target_seq = tf.slice(caption, [1], input_length)
        indicator = tf.ones(input_length, dtype=tf.int32)
        enqueue_list.append([image, input_seq, target_seq, indicator])
    images, input_seqs, target_seqs, mask = tf.train.batch_join(
        enqueue_list,
        batch_size=batch_size,
        capacity=queue_capacity,
        dynamic_pad=True,
        name="batch_and_pad",
    )
    return images, input_seqs, target_seqs, mask


def parse_example_batch(serialized):
    features = tf.parse_example(
        serialized, features={"ids": tf.FixedLenFeature([3], dtype=tf.int64)}
    )
    return features["ids"] * 2
