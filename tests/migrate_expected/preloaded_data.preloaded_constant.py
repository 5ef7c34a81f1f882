def _slice_and_batch_dataset(
    input_images, input_labels, num_epochs, batch_size: int, shuffle: bool, seed
):
    """The guide's shared tail: slice one example per step, then batch."""
    records = tf.data.Dataset.from_tensor_slices((input_images, input_labels))
    if shuffle:
        records = records.shuffle(records.cardinality(), seed=seed)
    records = records.repeat(num_epochs)
    dataset = records.batch(batch_size, drop_remainder=True)

    def per_batch(image, label):
        label = tf.cast(label, tf.int32)
        return image, label

    dataset = dataset.map(per_batch, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def preloaded_constant_dataset(
    images: np.ndarray,
    labels: np.ndarray,
    impl: str = "qp",
    *,
    num_epochs: int | None = None,
    batch_size: int = BATCH_SIZE,
    shuffle: bool = True,
    seed: int | None = None,
):
    """(a) The data as constants in the graph.

    Returns:
      ``(images [batch_size, 784] float32, labels [batch_size] int32)``.
    """
    with tf.name_scope("input"):
        input_images = tf.constant(images)
        input_labels = tf.constant(labels)
        return _slice_and_batch_dataset(
            input_images,
            input_labels,
            num_epochs=num_epochs,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
        )
