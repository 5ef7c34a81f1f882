"""Benchmark of legacy programs beyond W1-W4: an own queue, a py_func, per-record augmentation.

W5 (CIFAR-like, an own queue): K binary files of records of 1 label byte +
32*32*3 image bytes; the program is TF 1.x model code on TF's own API:
``string_input_producer(num_epochs=1, shuffle=False)`` ->
``FixedLengthRecordReader(3073)`` -> decode_raw, label, [3, 32, 32] -> HWC
float32 -> ``resize_with_crop_or_pad`` to 36x36 -> ``random_crop`` to
[32, 32, 3] -> ``random_flip_left_right`` -> the program's OWN
``tf.queue.RandomShuffleQueue(capacity=2000, min_after_dequeue=1000)``, filled
by a ``QueueRunner`` of 16 enqueue ops (``add_queue_runner``), read with
``dequeue_many(128)``: one epoch is floor(N / 128) * 128 examples.

W6 (W2-shaped with a py_func): TFRecords (784-byte ``image_raw``, int64
``label``) -> ``parse_single_example`` -> decode_raw -> a
``tf.compat.v1.py_func`` normalizing the image in numpy (``stateful=False``)
-> ``train.batch(batch_size=128, num_threads=4,
allow_smaller_final_batch=True)``: one epoch is every example.

W7 and W8 (augmentation, the most common training shape; see NOTE [ Stateless
randomness keyed by the record ]): K TFRecord files of raw 64x64x3 uint8 images
-> ``decode_raw`` -> ``random_crop`` to 56x56 -> ``random_flip_left_right`` ->
``random_brightness`` -> ``random_contrast`` -> ``shuffle_batch(64,
num_threads=4)``: one epoch is floor(N / 64) * 64 examples. W7 has no seed; W8
is the same program after ``set_random_seed(1234)`` (its hand-written tf.data
twin sets the same graph seed).

Variants, each measured in a fresh process:

* ``tf_queue``: the program on TF's own API (queue_pipeline never imported);
* ``qp_queue``: the same code under ``queue_pipeline.install()`` with
  ``queue_pipeline.engine("queue")``;
* ``qp_dataset``: the same under ``engine("dataset")``; ``served`` records
  whether the engine rebuilt the program on tf.data (its INFO line "runs on
  tf.data", or "is filled from tf.data" for the program's own queue, on logger
  ``queue_pipeline``) or left it on the queue engine (its WARNING "stays on the
  queue engine" or "stays on its QueueRunners");
* ``tfdata``: hand-written tf.data of the same shape, read as the legacy
  program reads its batches: a one-shot iterator's ``get_next`` fetched by
  ``Session.run`` until ``OutOfRangeError`` (in both TF modes).

As ``run.py``: repeats interleaved, the clock started on a collected heap
(``run.clock_start``), examples/s per epoch, the median of the repeats, and
the ratios (qp_dataset / tf_queue, qp_dataset / tfdata, qp_queue / tf_queue)
taken inside one run. ``--tf1`` runs every child with
``tf.compat.v1.disable_v2_behavior()``; one run is one TF mode.

Usage::

    python benchmarks/own_queue.py                      # 3 repeats, about 3 minutes on 2 cores
    python benchmarks/own_queue.py --tf1 --repeats 5 --json out.json
    python benchmarks/own_queue.py --workloads W5 --quick   # tiny data, 1 repeat
    python benchmarks/own_queue.py --quick --in-process     # a smoke run: no child processes

``--in-process`` measures every variant in the run's own process, in its TF
mode (queue_pipeline is then imported for ``tf_queue`` and ``tfdata`` too, and
the processes' start-ups are not paid: figures for checking the harness, not
for comparing); the suite runs it so, and checks the fresh-process path on its
own (``_run_child``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import run  # noqa: E402 - benchmarks/run.py (imports no queue_pipeline)
from report import MODE_NAMES  # noqa: E402
from workloads import FEATURES  # noqa: E402

BATCH = 128
RECORD_BYTES = 1 + 32 * 32 * 3
WORKLOADS = ["W5", "W6", "W7", "W8"]
AUGMENT_BATCH = 64
AUGMENT_SIDE, AUGMENT_CROP = 64, 56
VARIANTS = ["tf_queue", "qp_queue", "qp_dataset", "tfdata"]
# (name, numerator, denominator), each inside one run
RATIOS = [
    ("qp_dataset/tf_queue", "qp_dataset", "tf_queue"),
    ("qp_dataset/tfdata", "qp_dataset", "tfdata"),
    ("qp_queue/tf_queue", "qp_queue", "tf_queue"),
]
SERVED = ("runs on tf.data", "is filled from tf.data")  # a batching call's, a queue's
FALLBACK = ("stays on the queue engine", "stays on its QueueRunners")
SESSION_TIMEOUT_MS = 60_000


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much data each workload gets."""

    cifar_files: int = 4
    cifar_records: int = 2_500  # per file
    tfrecords: int = 10_000
    augment_files: int = 4
    augment_records: int = 1_000  # per file


FULL = Sizes()
QUICK = Sizes(cifar_files=2, cifar_records=300, tfrecords=500, augment_files=2, augment_records=100)


def expected_examples(workload: str, sizes: Sizes) -> int:
    """One epoch's examples: W5 drops the last partial batch (dequeue_many), W6 keeps it."""
    if workload == "W5":
        return sizes.cifar_files * sizes.cifar_records // BATCH * BATCH
    if workload in ("W7", "W8"):
        records = sizes.augment_files * sizes.augment_records
        return records // AUGMENT_BATCH * AUGMENT_BATCH
    return sizes.tfrecords


def write_data(directory: str, sizes: Sizes) -> None:
    """W5's binary files (``w5_*.bin``), W6's TFRecord file (``w6.tfrecord``) and
    W7/W8's TFRecord files of raw images (``aug_*.tfrecord``)."""
    rng = np.random.default_rng(0)
    for i in range(sizes.cifar_files):
        records = rng.integers(0, 256, size=(sizes.cifar_records, RECORD_BYTES), dtype=np.uint8)
        records[:, 0] %= 10
        records.tofile(os.path.join(directory, f"w5_{i}.bin"))
    images = rng.integers(0, 256, size=(sizes.tfrecords, 784), dtype=np.uint8)
    labels = rng.integers(0, 10, sizes.tfrecords)
    with tf.io.TFRecordWriter(os.path.join(directory, "w6.tfrecord")) as writer:
        for image, label in zip(images, labels):
            feature = {
                "image_raw": tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[image.tobytes()])
                ),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
            }
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    shape = (sizes.augment_records, AUGMENT_SIDE * AUGMENT_SIDE * 3)
    for i in range(sizes.augment_files):
        with tf.io.TFRecordWriter(os.path.join(directory, f"aug_{i}.tfrecord")) as writer:
            for image in rng.integers(0, 256, size=shape, dtype=np.uint8):
                writer.write(image.tobytes())


def data_files(directory: str, workload: str) -> list[str]:
    prefix = {"W5": "w5_", "W6": "w6.", "W7": "aug_", "W8": "aug_"}[workload]
    return sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.startswith(prefix))


# --- the legacy programs, on TF's own API (tf.compat.v1), as TF 1.x model code ---------
# Every symbol is looked up at call time, so under queue_pipeline.install() the
# very same code builds queue_pipeline's pipeline.


def _decode_and_augment(record):
    """A CIFAR record -> (augmented image [32, 32, 3] float32, label int32)."""
    raw = tf.io.decode_raw(record, tf.uint8)
    label = tf.reshape(tf.cast(tf.strided_slice(raw, [0], [1]), tf.int32), [])
    depth_major = tf.reshape(tf.strided_slice(raw, [1], [RECORD_BYTES]), [3, 32, 32])
    image = tf.cast(tf.transpose(depth_major, [1, 2, 0]), tf.float32)
    image = tf.image.resize_with_crop_or_pad(image, 36, 36)
    image = tf.image.random_crop(image, [32, 32, 3])
    image = tf.image.random_flip_left_right(image)
    return image, label


def w5_program(filenames):
    """W5: reader -> decode + augment -> the program's own RandomShuffleQueue -> dequeue_many."""
    filename_queue = tf.compat.v1.train.string_input_producer(
        filenames, num_epochs=1, shuffle=False
    )
    reader = tf.compat.v1.FixedLengthRecordReader(record_bytes=RECORD_BYTES)
    _, value = reader.read(filename_queue)
    image, label = _decode_and_augment(value)
    queue = tf.queue.RandomShuffleQueue(
        capacity=2000,
        min_after_dequeue=1000,
        dtypes=[tf.float32, tf.int32],
        shapes=[[32, 32, 3], []],
    )
    runner = tf.compat.v1.train.QueueRunner(queue, [queue.enqueue([image, label])] * 16)
    tf.compat.v1.train.add_queue_runner(runner)
    return queue.dequeue_many(BATCH)


def _parse(serialized):
    """A serialized Example -> (image [784] uint8, label int64)."""
    parsed = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.reshape(tf.io.decode_raw(parsed["image_raw"], tf.uint8), [784])
    return image, parsed["label"]


def _normalize(image):
    return image.astype(np.float32) / 255.0


def w6_program(filenames):
    """W6: TFRecords -> parse -> decode -> py_func (numpy) -> train.batch(num_threads=4)."""
    filename_queue = tf.compat.v1.train.string_input_producer(
        filenames, num_epochs=1, shuffle=False
    )
    reader = tf.compat.v1.TFRecordReader()
    _, serialized = reader.read(filename_queue)
    image, label = _parse(serialized)
    image = tf.compat.v1.py_func(_normalize, [image], tf.float32, stateful=False)
    image.set_shape([784])
    return tf.compat.v1.train.batch(
        [image, label],
        batch_size=BATCH,
        num_threads=4,
        capacity=BATCH * 4,
        allow_smaller_final_batch=True,
    )


def _augment(record):
    """A raw 64x64x3 record -> a randomly cropped, flipped and coloured 56x56x3 float32 image."""
    image = tf.reshape(tf.io.decode_raw(record, tf.uint8), [AUGMENT_SIDE, AUGMENT_SIDE, 3])
    image = tf.image.random_crop(image, [AUGMENT_CROP, AUGMENT_CROP, 3])
    image = tf.image.random_flip_left_right(image)
    image = tf.image.random_brightness(tf.cast(image, tf.float32), max_delta=63)
    return tf.image.random_contrast(image, lower=0.2, upper=1.8)


def augment_program(filenames, seed=None):
    """W7 (no seed) / W8 (graph seed): raw records -> augment -> shuffle_batch(64, 4 threads)."""
    if seed is not None:
        tf.compat.v1.set_random_seed(seed)
    filename_queue = tf.compat.v1.train.string_input_producer(filenames, num_epochs=1)
    reader = tf.compat.v1.TFRecordReader()
    _, value = reader.read(filename_queue)
    return tf.compat.v1.train.shuffle_batch(
        [_augment(value)],
        batch_size=AUGMENT_BATCH,
        num_threads=4,
        capacity=1000 + 3 * AUGMENT_BATCH,
        min_after_dequeue=1000,
    )


PROGRAMS = {
    "W5": w5_program,
    "W6": w6_program,
    "W7": augment_program,
    "W8": lambda filenames: augment_program(filenames, seed=1234),
}


# --- hand-written tf.data of the same shape -------------------------------------------


def w5_dataset(filenames) -> tf.data.Dataset:
    autotune = tf.data.AUTOTUNE
    return (
        tf.data.FixedLengthRecordDataset(filenames, RECORD_BYTES)
        .map(_decode_and_augment, num_parallel_calls=autotune)
        .shuffle(1000)
        .batch(BATCH, drop_remainder=True)
        .prefetch(autotune)
    )


def w6_dataset(filenames) -> tf.data.Dataset:
    autotune = tf.data.AUTOTUNE

    def normalize(image, label):
        image = tf.numpy_function(_normalize, [image], tf.float32, stateful=False)
        image.set_shape([784])
        return image, label

    return (
        tf.data.TFRecordDataset(filenames)
        .map(_parse, num_parallel_calls=autotune)
        .map(normalize, num_parallel_calls=autotune)
        .batch(BATCH)
        .prefetch(autotune)
    )


def augment_dataset(filenames, seed=None) -> tf.data.Dataset:
    if seed is not None:
        tf.compat.v1.set_random_seed(seed)
    autotune = tf.data.AUTOTUNE
    return (
        tf.data.Dataset.from_tensor_slices(filenames)
        .shuffle(len(filenames))
        .flat_map(tf.data.TFRecordDataset)
        .map(_augment, num_parallel_calls=autotune)
        .shuffle(1000)
        .batch(AUGMENT_BATCH, drop_remainder=True)
        .prefetch(autotune)
    )


DATASETS = {
    "W5": w5_dataset,
    "W6": w6_dataset,
    "W7": augment_dataset,
    "W8": lambda filenames: augment_dataset(filenames, seed=1234),
}


# --- one measurement (in a fresh child process) ---------------------------------------


class _Records(logging.Handler):
    """Keeps the messages logged on logger ``queue_pipeline``."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _engine_said(messages: list[str]) -> str:
    """What the dataset engine logged: ``"runs on tf.data"``, ``"stays on the queue
    engine"`` (either, if any call fell back), or ``"nothing"`` (no call it considers)."""
    if any(f in m for f in FALLBACK for m in messages):
        return "stays on the queue engine"
    return "runs on tf.data" if any(x in m for x in SERVED for m in messages) else "nothing"


@contextlib.contextmanager
def _engine(variant: str):
    """Nothing for tf_queue (queue_pipeline is not imported); else install() on the engine."""
    if variant == "tf_queue":
        yield
        return
    import queue_pipeline as qp  # noqa: PLC0415

    with qp.install(), qp.engine("dataset" if variant == "qp_dataset" else "queue"):
        yield


def _measure_program(variant: str, workload: str, files: list[str]) -> dict:
    """The legacy program built and run in one epoch under `variant`'s engine."""
    logger = logging.getLogger("queue_pipeline")
    records = _Records()
    logger.addHandler(records)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        with _engine(variant):
            graph = tf.Graph()
            with graph.as_default():
                fetches = PROGRAMS[workload](files)
                said_after_build = _engine_said(records.messages)
                init = tf.compat.v1.local_variables_initializer()
                config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=SESSION_TIMEOUT_MS)
                with tf.compat.v1.Session(config=config) as sess:
                    sess.run(init)
                    coord = tf.compat.v1.train.Coordinator()
                    start = run.clock_start()
                    threads = tf.compat.v1.train.start_queue_runners(sess, coord)
                    try:
                        sample = run.timed_epoch(
                            lambda: sess.run(fetches), tf.errors.OutOfRangeError, start
                        )
                    finally:
                        coord.request_stop()
                        coord.join(threads, stop_grace_period_secs=30)
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)
    if variant == "qp_dataset":
        # served: the engine said "runs on tf.data" (after building; else by the epoch's end)
        # and no call of the program stayed on the queue engine
        said = _engine_said(records.messages)
        sample["served"] = said == "runs on tf.data"
        sample["engine_said_after_build"] = said_after_build
        sample["engine_said"] = said
        sample["engine_log"] = [
            m[:300] for m in records.messages if any(x in m for x in SERVED + FALLBACK)
        ]
    else:
        sample["served"] = None
    sample["queue_pipeline_imported"] = "queue_pipeline" in sys.modules
    return sample


def _measure_dataset(workload: str, files: list[str]) -> dict:
    """Hand-written tf.data, read through a one-shot iterator in a Session (run.py's way)."""
    graph = tf.Graph()
    with graph.as_default():
        next_batch = tf.compat.v1.data.make_one_shot_iterator(DATASETS[workload](files)).get_next()
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=SESSION_TIMEOUT_MS)
        with tf.compat.v1.Session(config=config) as sess:
            start = run.clock_start()
            sample = run.timed_epoch(lambda: sess.run(next_batch), tf.errors.OutOfRangeError, start)
    sample["served"] = None
    sample["queue_pipeline_imported"] = "queue_pipeline" in sys.modules
    return sample


def measure(variant: str, workload: str, files: list[str]) -> dict:
    """One epoch of `variant` on `workload` in this process: run.timed_epoch's sample."""
    if variant == "tfdata":
        return _measure_dataset(workload, files)
    return _measure_program(variant, workload, files)


def _child(args) -> int:
    workload, variant = args.one
    sample = measure(variant, workload, data_files(args.data, workload))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(sample, peak_rss_mb=peak_mb, tf_mode=run.tf_mode())))
    return 0


def _run_child(data_dir: str, workload: str, variant: str) -> dict:
    """One measurement in a fresh process, in this process's TF mode."""
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--one",
        workload,
        variant,
        "--data",
        data_dir,
    ]
    if run.tf_mode() == "tf1":
        cmd.append("--tf1")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{workload}/{variant} failed:\n{out.stderr[-3000:]}")
    sample = json.loads(out.stdout.strip().splitlines()[-1])
    if sample.get("tf_mode") != run.tf_mode():
        raise RuntimeError(
            f"{workload}/{variant} ran in {sample.get('tf_mode')}, not in {run.tf_mode()}"
        )
    if sample["queue_pipeline_imported"] != variant.startswith("qp_"):
        raise RuntimeError(f"{workload}/{variant}: queue_pipeline imported or not, wrongly")
    return sample


# --- the run and its table -------------------------------------------------------------


def _summary(samples: list[dict]) -> dict:
    row = run._summarize(samples)  # noqa: SLF001 - run.py's own summary, reused
    row["examples_per_epoch"] = sorted({s["examples"] for s in samples})
    served = {s["served"] for s in samples}
    row["served"] = served.pop() if len(served) == 1 else None
    if "engine_log" in samples[0]:
        for key in ("engine_said_after_build", "engine_said", "engine_log"):
            row[key] = samples[0][key]
    return row


def run_benchmarks(args) -> dict:
    sizes = QUICK if args.quick else FULL
    result = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "tf_mode": run.tf_mode(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "mode": "quick" if args.quick else "full",
        "in_process": args.in_process,
        "sizes": dataclasses.asdict(sizes),
        "batch_size": BATCH,
        "repeats": args.repeats,
        "workloads": {},
        "expected_examples": {},
        "ratios": {},
    }
    samples = {(w, v): [] for w in args.workloads for v in VARIANTS}
    progress = run.Progress(len(samples) * args.repeats)
    progress.note(
        f"{result['mode']} run, {MODE_NAMES[result['tf_mode']]}, "
        f"{progress.total} measurements; writing the data"
    )
    with tempfile.TemporaryDirectory() as tmp:
        write_data(tmp, sizes)
        for repeat in range(args.repeats):  # interleaved repetitions
            for workload, variant in samples:
                if args.in_process:
                    sample = measure(variant, workload, data_files(tmp, workload))
                    sample["peak_rss_mb"] = None
                    sample["tf_mode"] = run.tf_mode()
                else:
                    sample = _run_child(tmp, workload, variant)
                sample["load_1min"] = os.getloadavg()[0]  # the machine is shared: say how busy
                samples[(workload, variant)].append(sample)
                progress.step(f"{workload} {variant} repeat {repeat + 1}/{args.repeats}", sample)
    for workload in args.workloads:
        table = {v: _summary(samples[(workload, v)]) for v in VARIANTS}
        result["workloads"][workload] = table
        result["ratios"][workload] = {
            name: table[a]["median"] / table[b]["median"] for name, a, b in RATIOS
        }
        result["expected_examples"][workload] = expected_examples(workload, sizes)
    return result


def format_table(result: dict) -> str:
    where = "in the run's own process" if result.get("in_process") else "per fresh process"
    lines = [
        f"# {result['machine']}, Python {result['python']}, TF {result['tensorflow']} in "
        f"{MODE_NAMES[result['tf_mode']]}, {result['date']}, {result['mode']} mode, "
        f"batch {result['batch_size']}, {result['repeats']} repeats (examples/s: median "
        f"[min-max] of one epoch {where}; CPU us/ex: the process's CPU time, all "
        "threads, per example, median)"
    ]
    for workload, table in result["workloads"].items():
        expected = result["expected_examples"][workload]
        lines.append(f"\n{workload}  ({expected:,} examples per epoch expected)")
        lines.append(
            f"  {'variant':12s} {'median/s':>11s} {'min':>10s} {'max':>10s} "
            f"{'examples':>9s} {'peak MB':>8s} {'CPU us/ex':>9s} {'served':>7s}"
        )
        for variant, row in table.items():
            examples = ",".join(f"{n:,}" for n in row["examples_per_epoch"])
            served = "-" if variant != "qp_dataset" else str(row["served"])
            cpu = row.get("cpu_us_per_example")
            cpu_cell = "-" if cpu is None else f"{cpu:.1f}"
            peak = row["peak_rss_mb"]  # None --in-process: the process is the run's own
            peak_cell = "-" if peak is None else f"{peak:.0f}"
            lines.append(
                f"  {variant:12s} {row['median']:11,.0f} {row['min']:10,.0f} "
                f"{row['max']:10,.0f} {examples:>9s} {peak_cell:>8s} "
                f"{cpu_cell:>9s} {served:>7s}"
            )
        ratios = result["ratios"][workload]
        lines.append(
            "  -> " + ", ".join(f"{name} = {value:.2f}x" for name, value in ratios.items())
        )
        engine = table["qp_dataset"]
        if "engine_said" in engine:
            lines.append(
                f"  -> dataset engine: served = {engine['served']} (logged after the build: "
                f"{engine['engine_said_after_build']}; by the epoch's end: {engine['engine_said']})"
            )
        for message in engine.get("engine_log", [])[:2]:
            lines.append(f"     {message[:160]}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny data, 1 repeat")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--workloads",
        type=lambda text: text.split(","),
        default=WORKLOADS,
        help="comma-separated, from W5,W6,W7,W8",
    )
    parser.add_argument(
        "--tf1",
        action="store_true",
        help="TF1 mode: tf.compat.v1.disable_v2_behavior() in every child",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="measure every variant in this process (a smoke run of the harness, not figures)",
    )
    parser.add_argument("--json", help="write the results to this JSON file")
    parser.add_argument("--one", nargs=2, metavar=("WORKLOAD", "VARIANT"), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tf1 and run.tf_mode() == "tf2":
        tf.compat.v1.disable_v2_behavior()
    if args.one:
        return _child(args)
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {WORKLOADS}")
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    result = run_benchmarks(args)
    print(format_table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
