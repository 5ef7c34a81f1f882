def read_and_decode_batch(serialized_example):
    """read_and_decode on a batch of records (batch-then-decode)."""
    features = tf.io.parse_example(serialized_example, features=FEATURES)
    image = tf.io.decode_raw(features["image_raw"], tf.uint8)
    image.set_shape([None, IMAGE_PIXELS])
    image = tf.cast(image, tf.float32) * (1.0 / 255)
    label = tf.cast(features["label"], tf.int32)
    return image, label


def inputs_dataset(
    filename: str,
    batch_size: int,
    num_epochs: int | None,
    impl: str = "qp",
    *,
    seed: int | None = None,
):
    """The classic training input: shuffled batches for `num_epochs` epochs.

    Returns:
      ``(images [batch_size, 784] float32, labels [batch_size] int32)``; the
      last, partial batch is dropped (its dequeue raises OutOfRangeError).
    """
    with tf.name_scope("input"):
        filenames = tf.data.Dataset.from_tensor_slices([filename])
        filenames = filenames.repeat(num_epochs)
        records = tf.data.TFRecordDataset(filenames)
        dataset = records.shuffle(MIN_AFTER_DEQUEUE + 3 * batch_size, seed=seed)
        dataset = dataset.batch(batch_size, drop_remainder=True)
        dataset = dataset.map(read_and_decode_batch, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
