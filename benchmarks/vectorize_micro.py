"""Micro-benchmark: a lifted legacy decode region per record vs vectorized per batch.

For each workload the legacy pipeline is built with queue_pipeline (producer,
reader, the per-record decoder of workloads.py), its per-record ops are lifted
(``_lift.lift``) and vectorized (``_vectorize.vectorize``); then one epoch of
the raw records is read four ways, interleaved over the repeats:

* ``lifted_per_record``: ``map(region)`` then ``batch`` (what ``to_dataset`` does);
* ``lifted_vectorized``: ``batch`` then ``map(vectorized region)``;
* ``tfdata``: hand-written per-record decode, then ``batch``;
* ``tfdata_batch_decode``: hand-written ``batch`` then batch decode (the target).

Usage::

    python benchmarks/vectorize_micro.py                   # W2, 60,000 records, 5 repeats
    python benchmarks/vectorize_micro.py --workloads W1 W2 W3 --records 20000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorflow as tf  # noqa: E402

import queue_pipeline  # noqa: E402
import workloads  # noqa: E402
from queue_pipeline._engine import vectorize as _vectorize  # noqa: E402
from queue_pipeline._rebuild import lift as _lift

VARIANTS = ["lifted_per_record", "lifted_vectorized", "tfdata", "tfdata_batch_decode"]
RECORD_BYTES = {"W3": 3073}


def lifted_region(workload: str, files: list[str]) -> _lift.LiftedRegion:
    """The per-record region of the legacy queue_pipeline program for `workload`."""
    with tf.Graph().as_default():
        queue = queue_pipeline.string_input_producer(files, num_epochs=1, shuffle=False)
        if workload == "W1":
            _, value = queue_pipeline.TextLineReader().read(queue)
            example = workloads.decode_csv(value)
        elif workload == "W2":
            _, value = queue_pipeline.TFRecordReader().read(queue)
            example = workloads.decode_example(value)
        else:
            _, value = queue_pipeline.FixedLengthRecordReader(3073).read(queue)
            example = workloads.decode_cifar(value)
        return _lift.lift(list(example), [value])


def dataset(variant: str, workload: str, files, region, vectorized) -> tf.data.Dataset:
    autotune = tf.data.AUTOTUNE
    if variant.startswith("tfdata"):
        return workloads.handwritten(
            workload, files, batch_then_decode=variant.endswith("batch_decode")
        )
    raw = workloads.raw_dataset(workload, files)
    no_autograph = tf.autograph.experimental.do_not_convert
    if variant == "lifted_per_record":
        return (
            raw.map(no_autograph(lambda r: tuple(region(r))), num_parallel_calls=autotune)
            .batch(workloads.BATCH)
            .prefetch(autotune)
        )
    return (
        raw.batch(workloads.BATCH)
        .map(no_autograph(lambda r: tuple(vectorized(r))), num_parallel_calls=autotune)
        .prefetch(autotune)
    )


def examples_per_second(ds: tf.data.Dataset) -> tuple[float, int]:
    count = 0
    start = time.perf_counter()
    for element in ds:
        count += int(element[0].shape[0])
    return count / (time.perf_counter() - start), count


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", nargs="+", default=["W2"], choices=["W1", "W2", "W3"])
    parser.add_argument(
        "--records", type=int, default=60_000, help="records per workload (default 60,000)"
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    n = args.records
    sizes = workloads.Sizes(
        csv_files=4,
        csv_lines=max(n // 4, 1),
        tfrecords=n,
        cifar_files=4,
        cifar_records=max(n // 4, 1),
        preloaded=1,
    )
    print(
        f"TF {tf.__version__}, {os.cpu_count()} cores, batch {workloads.BATCH}, "
        f"{args.repeats} repeats (examples/s: median [min-max])"
    )
    with tempfile.TemporaryDirectory() as directory:
        data = workloads.write_data(directory, sizes)
        for workload in args.workloads:
            files = data[workload]
            region = lifted_region(workload, files)
            fixed = {0: RECORD_BYTES[workload]} if workload in RECORD_BYTES else None
            vectorized = _vectorize.vectorize(region, fixed_lengths=fixed)
            if isinstance(vectorized, _vectorize.NotVectorizable):
                print(f"{workload}: {vectorized.describe()}")
                continue
            runs: dict[str, list[float]] = {v: [] for v in VARIANTS}
            for _ in range(args.repeats + 1):  # the first round warms up
                for variant in VARIANTS:
                    rate, count = examples_per_second(
                        dataset(variant, workload, files, region, vectorized)
                    )
                    runs[variant].append(rate)
            print(f"\n{workload} ({count:,} examples)")
            base = statistics.median(runs["lifted_per_record"][1:])
            for variant in VARIANTS:
                rates = runs[variant][1:]
                median = statistics.median(rates)
                print(
                    f"  {variant:22s} {median:>10,.0f} [{min(rates):,.0f}-"
                    f"{max(rates):,.0f}]  x{median / base:.2f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
