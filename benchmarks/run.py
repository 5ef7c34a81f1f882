"""Benchmark harness: queue_pipeline against TF's own queue API and tf.data, in one run.

For each workload (see workloads.py) every variant reads one epoch in batches
of 128; repetitions are interleaved (W1 v1, W1 v2, ..., then again), and the
median, min and max examples/s are reported with the ratio against TF's own
queue API at 1 thread, plus each variant's peak memory (the child process's
peak RSS: every measurement runs in a fresh process in the full mode).

Usage::

    python benchmarks/run.py                 # full: about 15 minutes on 2 cores
    python benchmarks/run.py --quick         # under a minute, small data, in-process
    python benchmarks/run.py --json out.json --repeats 3 --workloads W1 W2
    python benchmarks/run.py --scaling       # threads 1/2/4/8 and 8/1,000/10,000 files

Variants: tf_queue_1/4 (tf.compat.v1.train at 1 and 4 threads), qp_queue_1/4
(queue_pipeline, same code), qp_dataset_engine (qp_queue_1's unmodified code
built under ``queue_pipeline.engine("dataset")``: the same Session loop, fed
by a tf.data iterator), twin (queue_pipeline.data, per-record decode),
twin_batch_decode (the twin's batch-then-decode path), tfdata and
tfdata_batch_decode (idiomatic hand-written tf.data of the same meaning).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import workloads  # noqa: E402

WORKLOADS = ["W1", "W2", "W3", "W4"]
VARIANTS = ["tf_queue_1", "tf_queue_4", "qp_queue_1", "qp_queue_4", "qp_dataset_engine",
            "twin", "twin_batch_decode", "tfdata", "tfdata_batch_decode"]
BASELINE = "tf_queue_1"


def _apis(variant):
    if variant.startswith("tf_queue"):
        return tf.compat.v1.train, tf.compat.v1
    import queue_pipeline

    return queue_pipeline, queue_pipeline


def applicable(variant, workload) -> bool:
    """W4 (preloaded arrays) has no decoder, so no batch-then-decode path."""
    return not (workload == "W4" and variant.endswith("batch_decode"))


def _count(batch) -> int:
    first = batch[0] if isinstance(batch, (list, tuple)) else batch
    return int(first.shape[0])


def measure(variant: str, workload: str, data) -> tuple[int, float]:
    """Runs one epoch of `variant` on `workload`; returns (examples, seconds)."""
    if variant.startswith(("tf_queue", "qp_queue")):
        return _measure_session(variant, workload, data)
    if variant == "qp_dataset_engine":
        import queue_pipeline  # noqa: PLC0415

        with queue_pipeline.engine("dataset"):
            return _measure_session("qp_queue_1", workload, data)
    if variant.startswith("twin"):
        from twins import twin_dataset  # noqa: PLC0415 - only when twins exist

        dataset = twin_dataset(workload, data, variant == "twin_batch_decode")
    else:
        dataset = workloads.handwritten(workload, data, variant == "tfdata_batch_decode")
    examples = 0
    start = time.perf_counter()
    for batch in dataset:
        examples += _count(batch)
    return examples, time.perf_counter() - start


def _measure_session(variant, workload, data):
    api, readers = _apis(variant)
    threads = int(variant.rsplit("_", 1)[1])
    graph = tf.Graph()
    with graph.as_default():
        fetches = workloads.queue_pipeline_fetches(api, readers, workload, data, threads)
        init = tf.compat.v1.local_variables_initializer()
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=600_000)
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(init)
            coord = api.Coordinator()
            examples = 0
            start = time.perf_counter()
            threads_ = api.start_queue_runners(sess, coord)
            try:
                while True:
                    examples += _count(sess.run(fetches))
            except tf.errors.OutOfRangeError:
                pass
            elapsed = time.perf_counter() - start
            coord.request_stop()
            coord.join(threads_, stop_grace_period_secs=30)
    return examples, elapsed


def load_data(directory: str, sizes: workloads.Sizes | None = None,
              workload: str | None = None) -> dict:
    """Writes the workloads' data to `directory` (with `sizes`), or reads back one
    `workload`'s (so that a child process holds only what it measures)."""
    marker = os.path.join(directory, "w4.npz")
    if sizes is not None:
        data = workloads.write_data(directory, sizes)
        np.savez(marker, images=data["W4"][0], labels=data["W4"][1])
        return data

    def listed(prefix):
        return sorted(os.path.join(directory, f) for f in os.listdir(directory)
                      if f.startswith(prefix))

    if workload == "W1":
        return {"W1": listed("w1_")}
    if workload == "W2":
        return {"W2": [os.path.join(directory, "w2.tfrecord")]}
    if workload == "W3":
        return {"W3": listed("w3_")}
    arrays = np.load(marker)
    return {"W4": (arrays["images"], arrays["labels"])}


def _child(args) -> int:
    """One measurement in this (fresh) process; prints a JSON line."""
    data = load_data(args.data, workload=args.one[0])
    if args.files:
        data["W1"] = sorted(os.path.join(args.files, f) for f in os.listdir(args.files))
    examples, seconds = measure(args.one[1], args.one[0], data[args.one[0]])
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"examples": examples, "seconds": seconds, "peak_rss_mb": peak_mb}))
    return 0


def _run_child(data_dir, workload, variant, files=None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--one", workload, variant,
           "--data", data_dir]
    if files:
        cmd += ["--files", files]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{workload}/{variant} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summarize(samples):
    rates = [s["examples"] / s["seconds"] for s in samples]
    peaks = [s["peak_rss_mb"] for s in samples if s.get("peak_rss_mb") is not None]
    return {"examples": samples[0]["examples"], "median": statistics.median(rates),
            "min": min(rates), "max": max(rates),
            "peak_rss_mb": max(peaks) if peaks else None}


def run_benchmarks(args) -> dict:
    sizes = workloads.QUICK if args.quick else workloads.FULL
    result = {"machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
              "python": platform.python_version(), "tensorflow": tf.__version__,
              "date": time.strftime("%Y-%m-%d %H:%M"), "mode": "quick" if args.quick else "full",
              "batch_size": workloads.BATCH, "repeats": args.repeats, "workloads": {}}
    variants = [v for v in args.variants if v in VARIANTS]
    with tempfile.TemporaryDirectory() as tmp:
        data = load_data(tmp, sizes)
        samples = {(w, v): [] for w in args.workloads for v in variants if applicable(v, w)}
        for _ in range(args.repeats):  # interleaved repetitions
            for workload, variant in samples:
                if args.quick:
                    examples, seconds = measure(variant, workload, data[workload])
                    sample = {"examples": examples, "seconds": seconds, "peak_rss_mb": None}
                else:
                    sample = _run_child(tmp, workload, variant)
                samples[(workload, variant)].append(sample)
                _progress(f"{workload} {variant}: {sample['examples'] / sample['seconds']:,.0f}/s")
        for (workload, variant), values in samples.items():
            result["workloads"].setdefault(workload, {})[variant] = _summarize(values)
        for workload, table in result["workloads"].items():
            base = table.get(BASELINE, {}).get("median")
            for row in table.values():
                row["ratio_vs_tf_queue_1"] = row["median"] / base if base else None
        if args.scaling and not args.quick:
            result["scaling"] = run_scaling(tmp, args.repeats)
    return result


def run_scaling(data_dir, repeats) -> dict:
    """Throughput against num_threads (W1) and against the number of W1 files."""
    scaling = {"threads": {}, "files": {}}
    for variant_base in ("tf_queue", "qp_queue"):
        for threads in (1, 2, 4, 8):
            variant = f"{variant_base}_{threads}"
            samples = [_run_child(data_dir, "W1", variant) for _ in range(repeats)]
            scaling["threads"][variant] = _summarize(samples)
            _progress(f"scaling {variant}: {scaling['threads'][variant]['median']:,.0f}/s")
    total = 20_000
    for count in (8, 1_000, 10_000):
        directory = os.path.join(data_dir, f"files_{count}")
        os.makedirs(directory)
        rng = np.random.default_rng(count)
        for i in range(count):
            np.savetxt(os.path.join(directory, f"{i:05d}.csv"),
                       rng.integers(0, 1000, size=(total // count, 5)), fmt="%d",
                       delimiter=",")
        for variant in ("tf_queue_1", "qp_queue_1", "tfdata"):
            samples = [_run_child(data_dir, "W1", variant, files=directory)
                       for _ in range(repeats)]
            scaling["files"][f"{count} files {variant}"] = _summarize(samples)
            _progress(f"scaling {count} files {variant}")
    return scaling


def _progress(message):
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{message}")
        sys.stderr.flush()


def format_table(result) -> str:
    lines = [f"# {result['machine']}, Python {result['python']}, TF {result['tensorflow']}, "
             f"{result['date']}, {result['mode']} mode, batch {result['batch_size']}, "
             f"{result['repeats']} repeats (examples/s: median [min-max]; ratio vs "
             f"{BASELINE})"]
    for workload, table in result["workloads"].items():
        lines.append(f"\n{workload}  ({next(iter(table.values()))['examples']:,} examples)")
        lines.append(f"  {'variant':22s} {'median/s':>11s} {'min':>10s} {'max':>10s} "
                     f"{'ratio':>7s} {'peak MB':>8s}")
        for variant, row in table.items():
            ratio = f"{row['ratio_vs_tf_queue_1']:.2f}" if row["ratio_vs_tf_queue_1"] else "-"
            peak = f"{row['peak_rss_mb']:.0f}" if row["peak_rss_mb"] else "-"
            lines.append(f"  {variant:22s} {row['median']:11,.0f} {row['min']:10,.0f} "
                         f"{row['max']:10,.0f} {ratio:>7s} {peak:>8s}")
    for section, table in result.get("scaling", {}).items():
        lines.append(f"\nscaling by {section}")
        for name, row in table.items():
            lines.append(f"  {name:28s} {row['median']:11,.0f}/s")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data, in-process")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--workloads", nargs="+", default=WORKLOADS, choices=WORKLOADS)
    parser.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument("--json", help="write the results to this JSON file")
    parser.add_argument("--one", nargs=2, metavar=("WORKLOAD", "VARIANT"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return _child(args)
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    result = run_benchmarks(args)
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    print(format_table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
