def build_legacy_dataset(filenames, impl: str = "qp", num_epochs=None, shuffle=True):
    """The guide's input stage. Returns (features [4] int32, label int32)."""
    files = tf.data.Dataset.from_tensor_slices(filenames)
    if shuffle:
        files = files.shuffle(files.cardinality())
    files = files.repeat(num_epochs)
    records = tf.data.TextLineDataset(files)
    record_defaults = [[1], [1], [1], [1], [1]]

    def per_record(value):
        col1, col2, col3, col4, col5 = tf.io.decode_csv(value, record_defaults=record_defaults)
        features = tf.stack([col1, col2, col3, col4])
        return features, col5

    records = records.map(per_record, num_parallel_calls=tf.data.AUTOTUNE)
    return records.prefetch(tf.data.AUTOTUNE)
