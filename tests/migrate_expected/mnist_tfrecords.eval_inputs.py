def read_and_decode_batch(serialized_example):
    """read_and_decode on a batch of records (batch-then-decode)."""
    features = tf.io.parse_example(serialized_example, features=FEATURES)
    image = tf.io.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([None, IMAGE_PIXELS])
    image = tf.cast(image, tf.float32) * (1.0 / 255)
    label = tf.cast(features["label"], tf.int32)
    return image, label


def eval_inputs_dataset(filename: str, batch_size: int, impl: str = "qp"):
    """The evaluation input: every example of `filename` once, in order.

    Returns:
      ``(images [None, 784] float32, labels [None] int32)``; the last batch
      may be smaller.
    """
    with tf.name_scope("eval_input"):
        filenames = tf.data.Dataset.from_tensor_slices([filename])
        filenames = filenames.repeat(1)
        records = tf.data.TFRecordDataset(filenames)
        dataset = records.batch(batch_size)
        dataset = dataset.map(read_and_decode_batch, num_parallel_calls=tf.data.AUTOTUNE)
        return dataset.prefetch(tf.data.AUTOTUNE)
