def read_my_file_format_record(line):
    """The guide's per-reader function: one reader and its decoder on the shared queue."""
    pixels, label = decode_line(line)
    return pixels, label


def build_legacy_dataset(
    filenames,
    impl: str = "qp",
    *,
    num_readers: int = 2,
    batch_size: int = 32,
    num_epochs=None,
    shuffle: bool = True,
    seed=None,
    min_after_dequeue: int = 200,
    allow_smaller_final_batch: bool = False,
):
    """The guide's multi-reader input stage.

    Args:
      filenames: the CSV files.
      impl: "qp" (queue_pipeline) or "tf" (TF's own queue API).
      num_readers: readers sharing the one filename queue (one enqueue
        thread each in ``shuffle_batch_join``).
      batch_size: examples per batch.
      num_epochs: passes over the files (None: forever).
      shuffle: shuffle the file names each epoch.
      seed: the producer's and the batcher's op seed.
      min_after_dequeue: the shuffle queue's floor; capacity is it plus
        three batches, as the guide recommends.
      allow_smaller_final_batch: deliver the last partial batch.

    Returns:
      ``[pixels [batch_size, 64] int32, labels [batch_size] int32]``.
    """
    files = tf.data.Dataset.from_tensor_slices(filenames)
    if shuffle:
        files = files.shuffle(files.cardinality(), seed=seed)
    files = files.repeat(num_epochs)
    records = files.interleave(
        tf.data.TextLineDataset, cycle_length=num_readers, num_parallel_calls=tf.data.AUTOTUNE
    )
    records = records.map(read_my_file_format_record, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = records.shuffle(min_after_dequeue + 3 * batch_size, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=not allow_smaller_final_batch)
    return dataset.prefetch(tf.data.AUTOTUNE)
