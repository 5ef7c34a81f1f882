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


def preloaded_variable_dataset(
    images: np.ndarray,
    labels: np.ndarray,
    impl: str = "qp",
    *,
    num_epochs: int | None = None,
    batch_size: int = BATCH_SIZE,
    shuffle: bool = True,
    seed: int | None = None,
):
    """(b) The data in non-trainable variables outside every collection, fed once.

    Returns:
      ``(images, labels, load)``: the batches as in :func:`preloaded_constant`,
      and ``load(sess)``, which runs the two variable initializers with the
      arrays fed to their placeholders (the guide's
      ``sess.run(input_images.initializer, feed_dict=...)``). The global
      variables initializer does not initialize these variables
      (``collections=[]``): call ``load`` after it.
    """
    with tf.name_scope("input"):
        images_initializer = tf.compat.v1.placeholder(dtype=images.dtype, shape=images.shape)
        labels_initializer = tf.compat.v1.placeholder(dtype=labels.dtype, shape=labels.shape)
        input_images = tf.compat.v1.Variable(images_initializer, trainable=False, collections=[])
        input_labels = tf.compat.v1.Variable(labels_initializer, trainable=False, collections=[])
        dataset = _slice_and_batch_dataset(
            input_images,
            input_labels,
            num_epochs=num_epochs,
            batch_size=batch_size,
            shuffle=shuffle,
            seed=seed,
        )

    def load(sess) -> None:
        sess.run(input_images.initializer, feed_dict={images_initializer: images})
        sess.run(input_labels.initializer, feed_dict={labels_initializer: labels})

    return dataset.prefetch(tf.data.AUTOTUNE), load
