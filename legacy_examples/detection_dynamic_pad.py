"""The TF 1.x Object Detection API's input stage, on queue_pipeline.

It reproduces what ``object_detection/core/batcher.py`` and
``object_detection/core/prefetcher.py`` built for TF 1.x training:

1. TFRecords of ``tf.train.Example``s (``image/encoded`` JPEG bytes and the
   boxes as ``image/object/bbox/{ymin,xmin,ymax,xmax}`` float lists) read by a
   ``TFRecordReader`` from a ``string_input_producer`` and decoded
   (``decode_jpeg``: images of varying height and width; boxes ``[k, 4]`` with
   a varying number ``k``);
2. each example's true image shape and box count computed beside it;
3. ``batch(..., dynamic_pad=True)``: a PaddingFIFOQueue pads every image to
   the batch's largest and every box list to its longest, with zeros;
4. the prefetcher: a second queue (a PaddingFIFOQueue, as the API's, so the
   padded dimensions can stay unknown) whose QueueRunner enqueues the batch
   queue's output, so the next batch is assembled while the model runs; the
   consumer dequeues from it;
5. after the dequeue, :func:`unpad` slices every example back to its true
   shape (the batcher's ``BatchQueue.dequeue``).

The boxes stay in pixels, as the bundled writer gives them (the API stored
them normalized to [0, 1]: one division away). Only the import changed:
``tf.train`` is ``queue_pipeline`` (``--impl tf`` runs TF's own queue API).

The tf.data twin (:func:`build_twin`): the same decoder in a ``map``, then
``queue_pipeline.data.batch(..., dynamic_pad=True)`` (``padded_batch``, same
zero padding) which ends in ``prefetch``: the prefetcher's twin, with no
thread to start or stop. With ``shuffle=False`` and one thread both sides are
deterministic, and :func:`legacy` / :func:`twin` match batch for batch.

``--tf1`` runs the program in TF1 mode, as legacy scripts run (see
``legacy_examples/README.rst``).

Usage: python -m legacy_examples.detection_dynamic_pad [--steps N] [--smoke]
       [--impl qp|tf] [--tf1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import queue_pipeline  # noqa: E402
from legacy_examples import _scratch, _twin_loop  # noqa: E402
from queue_pipeline import _bundled_data  # noqa: E402

IMPLS = {
    "qp": {"train": queue_pipeline, "TFRecordReader": queue_pipeline.TFRecordReader},
    "tf": {"train": tf.compat.v1.train, "TFRecordReader": tf.compat.v1.TFRecordReader},
}

# The Object Detection API's field names (fields.InputDataFields).
IMAGE = "image"
BOXES = "groundtruth_boxes"
TRUE_IMAGE_SHAPE = "true_image_shape"
NUM_BOXES = "num_groundtruth_boxes"
_COORDS = ("ymin", "xmin", "ymax", "xmax")
FEATURES = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/format": tf.io.FixedLenFeature([], tf.string, default_value="jpeg"),
    **{f"image/object/bbox/{c}": tf.io.VarLenFeature(tf.float32) for c in _COORDS},
}


def write_records(directory: str, count: int = 24) -> tuple[str, list[tuple[str, np.ndarray]]]:
    """Writes the bundled JPEG scenes and a TFRecord file of detection Examples.

    Returns:
      ``(tfrecord_path, [(jpeg_path, boxes [k, 4] int32 pixels)])``, the
      scenes in the order they were written.
    """
    scenes = _bundled_data.write_jpegs(directory, count)
    path = os.path.join(directory, "scenes.tfrecords")
    with tf.io.TFRecordWriter(path) as writer:
        for jpeg_path, boxes in scenes:
            with open(jpeg_path, "rb") as f:
                encoded = f.read()
            feature = {
                "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[encoded])),
                "image/format": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"jpeg"])),
            }
            for i, c in enumerate(_COORDS):
                feature[f"image/object/bbox/{c}"] = tf.train.Feature(
                    float_list=tf.train.FloatList(value=boxes[:, i].astype(np.float32))
                )
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return path, scenes


def decode_example(serialized) -> dict:
    """One serialized Example -> the detection tensors of one image.

    Returns:
      ``{"image": uint8 [h, w, 3], "groundtruth_boxes": float32 [k, 4],
      "true_image_shape": int32 [3], "num_groundtruth_boxes": int32 []}``.
    """
    features = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.io.decode_jpeg(features["image/encoded"], channels=3)
    boxes = tf.stack(
        [tf.sparse.to_dense(features[f"image/object/bbox/{c}"]) for c in _COORDS], axis=1
    )
    return {
        IMAGE: image,
        BOXES: boxes,
        TRUE_IMAGE_SHAPE: tf.shape(image),
        NUM_BOXES: tf.shape(boxes)[0],
    }


def prefetch(tensor_dict: dict, capacity: int, impl: str = "qp"):
    """The Object Detection API's prefetcher: a queue filled by its own QueueRunner.

    Side effects: registers a QueueRunner in the ``queue_runners`` collection
    and adds the ``queue/prefetch_queue/fraction_of_<capacity>_full`` summary.

    Returns:
      The prefetch queue; ``queue.dequeue()`` gives a dict like `tensor_dict`.
    """
    train = IMPLS[impl]["train"]
    names = sorted(tensor_dict)
    queue = tf.queue.PaddingFIFOQueue(
        capacity,
        dtypes=[tensor_dict[n].dtype for n in names],
        shapes=[tensor_dict[n].shape for n in names],
        names=names,
        name="prefetch_queue",
    )
    enqueue_op = queue.enqueue(tensor_dict)
    train.add_queue_runner(train.QueueRunner(queue, [enqueue_op]))
    tf.compat.v1.summary.scalar(
        f"queue/{queue.name}/fraction_of_{capacity}_full",
        tf.cast(queue.size(), tf.float32) * (1.0 / capacity),
    )
    return queue


def build_legacy(
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
) -> dict:
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
    train = IMPLS[impl]["train"]
    filename_queue = train.string_input_producer(
        record_files, num_epochs=num_epochs, shuffle=shuffle, seed=seed
    )
    _, serialized = IMPLS[impl]["TFRecordReader"]().read(filename_queue)
    batched = train.batch(
        decode_example(serialized),
        batch_size,
        num_threads=num_threads,
        capacity=batch_capacity,
        dynamic_pad=True,
    )
    return prefetch(batched, prefetch_capacity, impl).dequeue()


def build_twin(
    record_files,
    *,
    batch_size: int = 4,
    num_epochs=None,
    shuffle: bool = True,
    seed=None,
    num_threads: int = 1,
    batch_capacity: int = 16,
    prefetch_capacity: int = 2,
) -> tf.data.Dataset:
    """The same stage on tf.data: a Dataset of the padded batch dicts.

    ``map(decode_example)`` (parallel, order kept), then
    ``queue_pipeline.data.batch(dynamic_pad=True)``, whose trailing
    ``prefetch(AUTOTUNE)`` replaces the prefetch queue and its thread.
    Arguments as :func:`build_legacy`; `prefetch_capacity` only documents
    the legacy setting (the prefetch buffer is autotuned).
    """
    from queue_pipeline import data

    del prefetch_capacity  # see the docstring: autotuned
    names = data.string_input_producer(
        record_files, num_epochs=num_epochs, shuffle=shuffle, seed=seed
    )
    examples = (
        data.TFRecordReader()
        .read(names, keys=False)
        .map(decode_example, num_parallel_calls=tf.data.AUTOTUNE)
    )
    return data.batch(
        examples, batch_size, num_threads=num_threads, capacity=batch_capacity, dynamic_pad=True
    )


def unpad(batch: dict, batch_size: int | None = None) -> list[dict]:
    """Slices a padded batch back into its examples, each at its true shape.

    The Object Detection API's ``BatchQueue.dequeue``: unstack the batch and
    cut every image to ``true_image_shape`` and every box list to
    ``num_groundtruth_boxes``. Works on graph tensors (a static batch
    dimension, or `batch_size`, is needed to unstack), in a ``Dataset.map``
    in either TF mode, and eagerly on eager tensors and numpy arrays.

    Returns:
      One ``{"image": [h, w, 3], "groundtruth_boxes": [k, 4]}`` per example.
    """
    images = tf.unstack(tf.convert_to_tensor(batch[IMAGE]), num=batch_size)
    boxes = tf.unstack(tf.convert_to_tensor(batch[BOXES]), num=batch_size)
    shapes = tf.unstack(tf.convert_to_tensor(batch[TRUE_IMAGE_SHAPE]), num=batch_size)
    counts = tf.unstack(tf.convert_to_tensor(batch[NUM_BOXES]), num=batch_size)
    return [
        {
            IMAGE: tf.slice(image, [0, 0, 0], shape),
            BOXES: tf.slice(box, [0, 0], tf.stack([count, 4])),
        }
        for image, box, shape, count in zip(images, boxes, shapes, counts)
    ]


_COMPARE_FILES: list[str] = []


def _compare_files() -> list[str]:
    """Bundled data for the comparison entry points, written once per process."""
    if not _COMPARE_FILES:
        path, _ = write_records(_scratch.scratch_dir("queue_pipeline_detection_"))
        _COMPARE_FILES.append(path)
    return list(_COMPARE_FILES)


def legacy() -> dict:
    """Entry point for ``queue-pipeline compare``: one epoch, in order, one thread."""
    return build_legacy(_compare_files(), num_epochs=1, shuffle=False)


def twin() -> tf.data.Dataset:
    """Entry point for ``queue-pipeline compare``: the tf.data twin of :func:`legacy`."""
    return build_twin(_compare_files(), num_epochs=1, shuffle=False)


def run(
    record_files, steps: int, impl: str = "qp", *, num_epochs=None, shuffle: bool = True
) -> list[list[dict]]:
    """The training loop's input side: `steps` batches, each unpadded in the graph.

    Stops early at the end of input (``num_epochs``). Returns, per batch, the
    list of unpadded example dicts (numpy).
    """
    train = IMPLS[impl]["train"]
    batches = []
    with tf.Graph().as_default():
        batch = build_legacy(record_files, impl, num_epochs=num_epochs, shuffle=shuffle)
        examples = unpad(batch)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=60_000)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = train.Coordinator()
            threads = train.start_queue_runners(sess=sess, coord=coord)
            try:
                for _ in range(steps):
                    batches.append(sess.run(examples))
            except tf.errors.OutOfRangeError:
                pass  # the end of num_epochs
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=10)
    return batches


def main(argv=None) -> int:
    """Runs the example from the command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="batches to fetch")
    parser.add_argument("--smoke", action="store_true", help="a few steps, in seconds")
    parser.add_argument("--impl", choices=sorted(IMPLS), default="qp")
    args = _twin_loop.parse_args(parser, argv)
    steps = 3 if args.smoke else args.steps
    with tempfile.TemporaryDirectory() as tmp:
        path, _ = write_records(tmp)
        batches = run([path], steps, args.impl)
    print(f"{args.impl}: {len(batches)} batches of {len(batches[0])} images")
    for i, examples in enumerate(batches[:3]):
        sizes = ", ".join(
            f"{e[IMAGE].shape[0]}x{e[IMAGE].shape[1]}/{len(e[BOXES])} boxes" for e in examples
        )
        print(f"  batch {i}: {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
