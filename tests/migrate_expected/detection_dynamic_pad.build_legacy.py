def build_legacy_dataset(
    record_files,
    impl: str = "qp",
    *,
    batch_size: int = 4,
    num_epochs=None,
    shuffle: bool = True,
    seed=None,
    num_threads: int = 1,
    batch_capacity: int = 16,
    prefetch_capacity: int = 2,
):
    """The detection input stage: read, decode, pad-batch, prefetch, dequeue.

    Args:
      record_files: TFRecord files of detection Examples (:func:`write_records`).
      impl: "qp" (queue_pipeline) or "tf" (TF's own queue API).
      batch_size: images per batch; the tail that does not fill a batch is
        dropped (the API's batcher did not allow a smaller final batch).
      num_epochs: passes over the files (None: forever).
      shuffle: shuffle the file names each epoch.
      seed: the file-name shuffle's op seed.
      num_threads: enqueue threads of the batch queue (1: deterministic order).
      batch_capacity: the batch queue's capacity, in images.
      prefetch_capacity: the prefetch queue's capacity, in batches.

    Returns:
      A dict of padded batches: ``image`` uint8 ``[batch_size, H, W, 3]``
      (H, W: the batch's largest), ``groundtruth_boxes`` float32
      ``[batch_size, K, 4]`` (K: the batch's most boxes),
      ``true_image_shape`` int32 ``[batch_size, 3]`` and
      ``num_groundtruth_boxes`` int32 ``[batch_size]``.
    """
    filenames = tf.data.Dataset.from_tensor_slices(record_files)
    if shuffle:
        filenames = filenames.shuffle(filenames.cardinality(), seed=seed)
    filenames = filenames.repeat(num_epochs)
    records = tf.data.TFRecordDataset(filenames)
    records = records.map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = records.padded_batch(batch_size, drop_remainder=True)
    return dataset.prefetch(tf.data.AUTOTUNE)
