def _slice_and_batch_dataset(
    input_images, input_labels, num_epochs, batch_size: int, shuffle: bool, seed
):
    """The guide's shared tail: slice one example per step, then batch."""
    variables, load = _in_variables([input_images, input_labels], [tf.float32, tf.uint8])
    records = tf.data.Dataset.from_tensor_slices(tuple(variables))
    if shuffle:
        records = records.shuffle(records.cardinality(), seed=seed)
    records = records.repeat(num_epochs)
    dataset = records.batch(batch_size, drop_remainder=True)

    def per_batch(image, label):
        label = tf.cast(label, tf.int32)
        return image, label

    dataset = dataset.map(per_batch, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE), load


def _in_variables(arrays, dtypes):
    """Each array in a variable a Session loads once: preloaded data in TF1 mode.

    Read in a Session, a Dataset over large graph constants waits for
    Grappler to rewrite them each time its iterator starts; a variable
    initialized once from a placeholder fed with the array does not.

    Args:
      arrays: NumPy arrays (or lists, or constant tensors), one per component.
      dtypes: the dtype of each.

    Returns:
      ``(variables, load)``: the variables, in the order of `arrays`, and
      ``load(sess)``, which runs their initializers with the arrays fed. The
      variables are in no collection (the variables initializers leave them
      alone): run ``load(sess)``, then initialize the Dataset's iterator (an
      initializable one: a one-shot iterator cannot capture a variable).
    """
    values = [
        np.asarray(tf.get_static_value(a) if tf.is_tensor(a) else a, d.as_numpy_dtype)
        for a, d in zip(arrays, dtypes)
    ]
    feeds = [tf.compat.v1.placeholder(d, v.shape) for v, d in zip(values, dtypes)]
    variables = [
        tf.compat.v1.Variable(f, trainable=False, collections=[]) for f in feeds
    ]

    def load(sess):
        sess.run([v.initializer for v in variables], feed_dict=dict(zip(feeds, values)))

    return variables, load


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
