def read_cifar10_record(value):
    """Reads and parses one example from CIFAR-10 binary files."""
    result = CIFAR10Record()
    result.height, result.width, result.depth = HEIGHT, WIDTH, DEPTH
    record_bytes = tf.io.decode_raw(value, tf.uint8)
    result.label = tf.cast(tf.strided_slice(record_bytes, [0], [LABEL_BYTES]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record_bytes, [LABEL_BYTES], [LABEL_BYTES + IMAGE_BYTES]),
        [result.depth, result.height, result.width],
    )
    result.uint8image = tf.transpose(depth_major, [1, 2, 0])
    return result


def _generate_image_and_label_batch_dataset(
    dataset,
    min_queue_examples: int,
    batch_size: int,
    shuffle: bool,
):
    """Batches of ``(images [batch_size, 24, 24, 3], labels [batch_size])``."""
    if shuffle:
        dataset = dataset.shuffle(min_queue_examples + 3 * batch_size)
        dataset = dataset.batch(batch_size, drop_remainder=True)
    else:
        dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(
        lambda images, label_batch: (images, tf.reshape(label_batch, [batch_size]))
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def distorted_inputs_dataset(
    data_dir: str,
    batch_size: int,
    impl: str = "qp",
    *,
    num_threads: int = NUM_PREPROCESS_THREADS,
    verbose: bool = True,
):
    """Distorted training input, shuffled, repeating forever."""
    filenames = train_files(data_dir)
    _check_files(filenames)
    files = tf.data.Dataset.from_tensor_slices(filenames)
    files = files.shuffle(files.cardinality())
    files = files.repeat()
    with tf.name_scope("data_augmentation"):
        records = tf.data.FixedLengthRecordDataset(files, RECORD_BYTES)
        height, width = IMAGE_SIZE, IMAGE_SIZE
        min_queue_examples = int(num_examples(filenames) * MIN_FRACTION_OF_EXAMPLES_IN_QUEUE)
        if verbose:
            print(f"Filling queue with {min_queue_examples} CIFAR images before starting to train.")

    def per_record(value):
        read_input = read_cifar10_record(value)
        reshaped_image = tf.cast(read_input.uint8image, tf.float32)
        distorted_image = tf.image.random_crop(reshaped_image, [height, width, 3])
        distorted_image = tf.image.random_flip_left_right(distorted_image)
        distorted_image = tf.image.random_brightness(distorted_image, max_delta=63)
        distorted_image = tf.image.random_contrast(distorted_image, lower=0.2, upper=1.8)
        float_image = tf.image.per_image_standardization(distorted_image)
        float_image.set_shape([height, width, 3])
        read_input.label.set_shape([1])
        return float_image, read_input.label

    records = records.map(per_record, num_parallel_calls=tf.data.AUTOTUNE)
    return _generate_image_and_label_batch_dataset(
        records,
        min_queue_examples=min_queue_examples,
        batch_size=batch_size,
        shuffle=True,
    )
