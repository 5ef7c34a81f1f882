"""The "multiple readers" program of TF 1.x's "Reading data" guide, on queue_pipeline.

One ``string_input_producer`` is shared by N ``TextLineReader``s, each with
its own ``decode_csv``; their N example lists go to ``shuffle_batch_join``,
which runs one enqueue thread per list, so N files are read in parallel::

    filename_queue = tf.train.string_input_producer(filenames, shuffle=True)
    example_list = [read_my_file_format(filename_queue)
                    for _ in range(read_threads)]
    example_batch, label_batch = tf.train.shuffle_batch_join(
        example_list, batch_size=batch_size, capacity=capacity,
        min_after_dequeue=min_after_dequeue)

Here the files are the bundled digits as CSV (``label,p0,...,p63`` rows).
Only the import changed: ``tf.train`` is ``queue_pipeline`` (``--impl tf``
runs TF's own queue API).

The tf.data twin (:func:`build_twin`) has to choose, because a Dataset cannot
share a filename queue with another Dataset: each Dataset owns its iterator
and nothing hands work from one to the next. Two faithful shapes exist:

* **Shards** (chosen, :func:`build_twin`): file ``i`` goes to reader
  ``i % N``, each reader is its own Dataset, and
  ``queue_pipeline.data.shuffle_batch_join`` takes the N Datasets, just as the
  legacy call takes the N example lists. The program keeps its structure
  (N readers -> one join), the migration table pairs the two calls by name,
  and each record is still read exactly once per epoch. What changes is
  who reads which file: the legacy readers pull the next file name from the
  shared queue whenever they finish one (a fast reader reads more files); a
  shard is fixed in advance, so N must not exceed the number of files, and
  shards of unequal size end at different times (the join then continues
  with the others, as the legacy queue did when files ran out).
* **One interleaved Dataset** (:func:`build_twin_interleaved`): one file-name
  Dataset, ``interleave(cycle_length=N, num_parallel_calls=N)`` reads N files
  at once and pulls the next name when one ends: the closest to the shared
  queue's dynamics, and what tf.data's own guide recommends. It is the better
  choice when files are few or uneven; it loses the 1:1 mapping to the
  legacy call.

Both deliver the same multiset per epoch as the legacy program; the order of
a ``shuffle_batch_join`` is nondeterministic (threads and a
RandomShuffleQueue), so :func:`legacy` and :func:`twin` compare as multisets.

``--tf1`` runs the program in TF1 mode, as legacy scripts run (see
``legacy_examples/README.rst``).

Usage: python -m legacy_examples.multi_reader_join [--steps N] [--smoke]
       [--impl qp|tf] [--readers N] [--tf1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import queue_pipeline  # noqa: E402
from legacy_examples import _scratch, _twin_loop  # noqa: E402
from queue_pipeline import _bundled_data  # noqa: E402

IMPLS = {
    "qp": {"train": queue_pipeline, "TextLineReader": queue_pipeline.TextLineReader},
    "tf": {"train": tf.compat.v1.train, "TextLineReader": tf.compat.v1.TextLineReader},
}

NUM_PIXELS = 64
RECORD_DEFAULTS = [[0]] * (1 + NUM_PIXELS)  # label, then 64 pixels


def write_files(directory: str, num_files: int = 4) -> list[str]:
    """Writes the bundled digits as `num_files` CSV files; returns their paths."""
    return _bundled_data.write_csv(directory, num_files=num_files)


def decode_line(line):
    """One CSV line (or a batch of lines) -> (pixels [..., 64] int32, label [...] int32)."""
    columns = tf.io.decode_csv(line, record_defaults=RECORD_DEFAULTS)
    return tf.stack(columns[1:], axis=-1), columns[0]


def read_my_file_format(filename_queue, impl: str = "qp"):
    """The guide's per-reader function: one reader and its decoder on the shared queue."""
    reader = IMPLS[impl]["TextLineReader"]()
    _, line = reader.read(filename_queue)
    pixels, label = decode_line(line)
    return [pixels, label]


def build_legacy(
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
    train = IMPLS[impl]["train"]
    filename_queue = train.string_input_producer(
        filenames, num_epochs=num_epochs, shuffle=shuffle, seed=seed
    )
    example_list = [read_my_file_format(filename_queue, impl) for _ in range(num_readers)]
    return train.shuffle_batch_join(
        example_list,
        batch_size=batch_size,
        capacity=min_after_dequeue + 3 * batch_size,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        allow_smaller_final_batch=allow_smaller_final_batch,
    )


def _shards(filenames, num_readers: int) -> list[list[str]]:
    filenames = list(filenames)
    if not 1 <= num_readers <= len(filenames):
        raise ValueError(
            f"multi_reader_join: `num_readers` ({num_readers}) must be between "
            f"1 and the number of files ({len(filenames)}): each reader of the "
            "twin owns a fixed shard of the files. Fix: write more files, or "
            "use build_twin_interleaved."
        )
    return [filenames[i::num_readers] for i in range(num_readers)]


def build_twin(
    filenames,
    *,
    num_readers: int = 2,
    batch_size: int = 32,
    num_epochs=None,
    shuffle: bool = True,
    seed=None,
    min_after_dequeue: int = 200,
    allow_smaller_final_batch: bool = False,
) -> tf.data.Dataset:
    """The same stage on tf.data: N Datasets over disjoint shards, joined.

    Each shard gets its own ``string_input_producer`` twin (shuffled per epoch)
    and reader; ``shuffle_batch_join`` interleaves, shuffles and batches them,
    and decodes whole batches of lines (``decode=``), which is how tf.data
    moves the per-reader ``decode_csv`` off the per-example path. Arguments
    as :func:`build_legacy`.

    Returns:
      A Dataset of ``(pixels [batch_size, 64] int32, labels [batch_size] int32)``.

    Raises:
      ValueError: `num_readers` exceeds the number of files.
    """
    from queue_pipeline import data

    readers = []
    for i, shard in enumerate(_shards(filenames, num_readers)):
        names = data.string_input_producer(
            shard, num_epochs=num_epochs, shuffle=shuffle, seed=None if seed is None else seed + i
        )
        readers.append(data.TextLineReader().read(names, keys=False))
    return data.shuffle_batch_join(
        readers,
        batch_size=batch_size,
        capacity=min_after_dequeue + 3 * batch_size,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode_line,
    )


def build_twin_interleaved(
    filenames,
    *,
    num_readers: int = 2,
    batch_size: int = 32,
    num_epochs=None,
    shuffle: bool = True,
    seed=None,
    min_after_dequeue: int = 200,
    allow_smaller_final_batch: bool = False,
) -> tf.data.Dataset:
    """The alternative twin: one file-name Dataset, N files read at once by interleave.

    Arguments and result as :func:`build_twin`; any number of readers works.
    """
    from queue_pipeline import data

    names = data.string_input_producer(filenames, num_epochs=num_epochs, shuffle=shuffle, seed=seed)
    lines = names.interleave(
        tf.data.TextLineDataset, cycle_length=num_readers, num_parallel_calls=num_readers
    )
    return data.shuffle_batch(
        lines,
        batch_size=batch_size,
        capacity=min_after_dequeue + 3 * batch_size,
        min_after_dequeue=min_after_dequeue,
        seed=seed,
        allow_smaller_final_batch=allow_smaller_final_batch,
        decode=decode_line,
    )


_COMPARE_FILES: list[str] = []


def _compare_files() -> list[str]:
    """Bundled data for the comparison entry points, written once per process."""
    if not _COMPARE_FILES:
        _COMPARE_FILES.extend(write_files(_scratch.scratch_dir("queue_pipeline_join_")))
    return list(_COMPARE_FILES)


def legacy():
    """Entry point for ``queue-pipeline compare``: one epoch, every row once."""
    return build_legacy(_compare_files(), num_epochs=1, allow_smaller_final_batch=True)


def twin():
    """Entry point for ``queue-pipeline compare``: the tf.data twin of :func:`legacy`."""
    return build_twin(_compare_files(), num_epochs=1, seed=7, allow_smaller_final_batch=True)


def twin_interleaved():
    """Entry point for ``queue-pipeline compare``: :func:`build_twin_interleaved`."""
    return build_twin_interleaved(
        _compare_files(), num_epochs=1, seed=7, allow_smaller_final_batch=True
    )


def run(filenames, steps: int, impl: str = "qp", num_readers: int = 2) -> list:
    """The guide's loop: start the runners, fetch `steps` batches, stop, join."""
    train = IMPLS[impl]["train"]
    batches = []
    with tf.Graph().as_default():
        pixels, labels = build_legacy(filenames, impl, num_readers=num_readers)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=60_000)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = train.Coordinator()
            threads = train.start_queue_runners(sess=sess, coord=coord)
            try:
                for _ in range(steps):
                    batches.append(sess.run([pixels, labels]))
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=10)
    return batches


def main(argv=None) -> int:
    """Runs the example from the command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="batches to fetch")
    parser.add_argument("--smoke", action="store_true", help="a few steps, in seconds")
    parser.add_argument("--impl", choices=sorted(IMPLS), default="qp")
    parser.add_argument("--readers", type=int, default=2, help="readers sharing the queue")
    args = _twin_loop.parse_args(parser, argv)
    steps = 5 if args.smoke else args.steps
    with tempfile.TemporaryDirectory() as tmp:
        batches = run(write_files(tmp), steps, args.impl, args.readers)
    labels = [int(label) for _, batch_labels in batches for label in batch_labels]
    print(
        f"{args.impl}: {args.readers} readers, {len(batches)} batches of "
        f"{batches[0][0].shape[0]}; labels seen: "
        f"{dict(sorted((d, labels.count(d)) for d in set(labels)))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
