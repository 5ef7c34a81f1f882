"""Benchmark harness: queue_pipeline against TF's own queue API and tf.data, in one run.

For each workload (see workloads.py) every variant reads one epoch in batches
of 128; repetitions are interleaved (W1 v1, W1 v2, ..., then again), and the
median, min and max examples/s are reported with the ratio against TF's own
queue API at 1 thread, plus each variant's peak memory (the child process's
peak RSS: every measurement runs in a fresh process in the full mode).

Both TF modes: by default every variant runs under TF 2.x defaults (the
tf.data variants iterated eagerly, ``for batch in dataset``); ``--tf1``
applies ``tf.compat.v1.disable_v2_behavior()`` before anything is built, as
legacy scripts run, and the tf.data variants are then read the TF1 way:
``tf.compat.v1.data.make_one_shot_iterator(ds).get_next()`` fetched whole,
one ``sess.run`` per batch, until ``OutOfRangeError`` (the loop the queue
variants and the dataset engine already use). One run is one mode; the result
records it (``"tf_mode": "tf2"`` or ``"tf1"``; ``"mode"`` stays the data size,
quick or full), and ``report.py`` puts a run of each mode side by side with
the ratios taken inside each run.

Progress goes to stderr, a line per measurement (workload, variant, repeat);
the report goes to stdout.

Usage::

    python benchmarks/run.py                 # full: about 15 minutes on 2 cores
    python benchmarks/run.py --tf1           # full, in TF1 mode
    python benchmarks/run.py --quick         # under a minute, small data, in-process
    python benchmarks/run.py --quick --tf1
    python benchmarks/run.py --json out.json --repeats 3 --workloads W1 W2
    python benchmarks/run.py --scaling       # threads 1/2/4/8 and 8/1,000/10,000 files

The full run of both modes, kept in results/ (the .txt is the stdout report)::

    python benchmarks/run.py --json benchmarks/results/DATE-full.json \
        > benchmarks/results/DATE-full.txt
    python benchmarks/run.py --tf1 --json benchmarks/results/DATE-full-tf1.json \
        > benchmarks/results/DATE-full-tf1.txt
    python benchmarks/report.py benchmarks/results/DATE-full.json \
        benchmarks/results/DATE-full-tf1.json > benchmarks/results/DATE-modes.txt

Variants: tf_queue_1/4 (tf.compat.v1.train at 1 and 4 threads), qp_queue_1/4
(queue_pipeline, same code), qp_dataset_engine (qp_queue_1's unmodified code
built under ``queue_pipeline.engine("dataset")``: the same Session loop, fed
by a tf.data iterator), twin (queue_pipeline.data, per-record decode),
twin_batch_decode (the twin's batch-then-decode path), tfdata and
tfdata_batch_decode (idiomatic hand-written tf.data of the same meaning),
migrated (``queue-pipeline migrate``'s code), raw_read (the floor: the records
read and batched with no decoding; W4's rows in ready-made batches). The
report gives qp_dataset_engine / hand-written (tfdata_batch_decode; W4:
tfdata) and qp_dataset_engine / raw_read per workload.
The diagnostics' cost, switch by switch: qp_queue_1_off / qp_queue_4_off
(every diagnostic off, ``tf_faithful()``) and qp_queue_N_only_<switch> (only
that switch on), e.g. ``--variants tf_queue_1 qp_queue_1 qp_queue_1_off
qp_queue_1_only_unstarted_guard``. session_tfdata and
session_tfdata_batch_decode read hand-written tf.data through a Session, as
the legacy program reads its batches (under TF 2.x defaults the plain tf.data
variants iterate eagerly); the report then adds qp_dataset_engine / that.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import workloads  # noqa: E402
from report import BASELINE, MODE_NAMES, format_table  # noqa: E402

WORKLOADS = ["W1", "W2", "W3", "W4"]
VARIANTS = [
    "tf_queue_1",
    "tf_queue_4",
    "qp_queue_1",
    "qp_queue_4",
    "qp_dataset_engine",
    "twin",
    "twin_batch_decode",
    "tfdata",
    "tfdata_batch_decode",
    "migrated",
    "raw_read",
]
# The diagnostics' cost, switch by switch (not in the default run; pass them to
# --variants): qp_queue_N with every diagnostic off, and with only one on.
SWITCHES = (
    "unstarted_guard",
    "runner_errors",
    "quiet_shutdown",
    "no_spin",
    "tail_warning",
    "exit_unblock",
)
DIAGNOSTIC_VARIANTS = [
    f"qp_queue_{n}_{which}" for n in (1, 4) for which in ["off"] + [f"only_{s}" for s in SWITCHES]
]
# Hand-written tf.data read as the legacy program reads its batches: a
# one-shot iterator's get_next fetched by Session.run (not in the default
# run; pass them to --variants). Under TF 2.x defaults the plain variants are
# iterated eagerly; these take the same Session loop as qp_dataset_engine,
# so engine / session_* is the engine against hand-written tf.data on the
# legacy program's own API. In TF1 mode every tf.data variant is read so.
SESSION_VARIANTS = ["session_tfdata", "session_tfdata_batch_decode"]
EXTRA_VARIANTS = DIAGNOSTIC_VARIANTS + SESSION_VARIANTS
SESSION_TIMEOUT_MS = 600_000


def tf_mode() -> str:
    """``"tf1"`` once v2 behaviour is disabled in this process (``--tf1``), else ``"tf2"``."""
    return "tf2" if tf.__internal__.tf2.enabled() else "tf1"


def _apis(variant):
    if variant.startswith("tf_queue"):
        return tf.compat.v1.train, tf.compat.v1
    import queue_pipeline

    return queue_pipeline, queue_pipeline


def applicable(variant, workload) -> bool:
    """W4 (preloaded arrays) has no decoder, so no batch-then-decode path."""
    return not (workload == "W4" and variant.endswith("batch_decode"))


def _count(batch) -> int:
    """The batch size of a fetched batch (eager tensors, or numpy from a Session)."""
    if isinstance(batch, dict):
        batch = next(iter(batch.values()))
    first = batch[0] if isinstance(batch, (list, tuple)) else batch
    return int(first.shape[0])


def _session_config() -> tf.compat.v1.ConfigProto:
    return tf.compat.v1.ConfigProto(operation_timeout_in_ms=SESSION_TIMEOUT_MS)


def measure(variant: str, workload: str, data) -> dict:
    """Runs one epoch of `variant` on `workload`; returns its :func:`timed_epoch` sample."""
    if variant.startswith(("tf_queue", "qp_queue")):
        return _measure_session(variant, workload, data)
    if variant == "qp_dataset_engine":
        import queue_pipeline  # noqa: PLC0415

        with queue_pipeline.engine("dataset"):
            return _measure_session("qp_queue_1", workload, data)
    if variant in SESSION_VARIANTS:
        return _measure_dataset_session(variant[len("session_") :], workload, data)
    if not tf.executing_eagerly():  # TF1 mode: no eager iteration
        return _measure_dataset_session(variant, workload, data)
    dataset = _dataset(variant, workload, data)
    start = clock_start()
    batches = iter(dataset)  # the iterator is made inside the clock, as a Session's first step
    return timed_epoch(lambda: next(batches), StopIteration, start)


# Python's full (generation 2) collections inside the clock: how many, and their ms.
_FULL_COLLECTIONS = {"count": 0, "ms": 0.0, "began": 0.0}
_CPU_AT_START = {"seconds": 0.0}  # the process's CPU time when the clock started


def _watch_collections(phase: str, info: dict) -> None:
    if info["generation"] != 2:
        return
    if phase == "start":
        _FULL_COLLECTIONS["began"] = time.perf_counter()
    else:
        _FULL_COLLECTIONS["count"] += 1
        _FULL_COLLECTIONS["ms"] += (time.perf_counter() - _FULL_COLLECTIONS["began"]) * 1e3


def clock_start() -> float:
    """Collects the set-up's garbage, then starts the clock; returns ``time.perf_counter()``.

    Every variant's clock starts on a collected heap (as ``timeit`` and
    pyperf isolate their timings): a build leaves Python objects that make
    the interpreter's next full collection (100-150 ms with TensorFlow
    loaded) due, and where it then lands (in one variant's short epoch,
    or not) is chance. Full collections that still run inside the clock are
    counted in the sample (``gc_full``, ``gc_ms``).
    """
    gc.collect()
    if _watch_collections not in gc.callbacks:
        gc.callbacks.append(_watch_collections)
    _FULL_COLLECTIONS.update(count=0, ms=0.0)
    _CPU_AT_START["seconds"] = time.process_time()
    return time.perf_counter()


def timed_epoch(step: Callable[[], object], end: type, start: float) -> dict:
    """Calls `step` until it raises `end`; the epoch's sample, its first step apart.

    Args:
      step: fetches one batch (a ``sess.run`` or an eager ``next``).
      end: the exception that ends the epoch (``OutOfRangeError``,
        ``StopIteration``).
      start: the :func:`clock_start` time (set-up done before the first
        step, such as starting runners, is inside the clock).

    Returns:
      ``{"examples", "seconds", "cpu_seconds", "first_examples",
      "first_seconds", "gc_full", "gc_ms"}``: the whole epoch, the CPU time
      the whole process (every thread) spent in it, its first step (from
      `start`: set-up, the iterator's start, the first batch), and the full
      collections inside the clock. The steady rate after the first step is
      ``(examples - first_examples) / (seconds - first_seconds)``.
    """
    examples = first_examples = 0
    first_seconds = None
    try:
        while True:
            examples += _count(step())
            if first_seconds is None:
                first_seconds = time.perf_counter() - start
                first_examples = examples
    except end:
        pass
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - _CPU_AT_START["seconds"]
    return {
        "examples": examples,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "first_examples": first_examples,
        "first_seconds": seconds if first_seconds is None else first_seconds,
        "gc_full": _FULL_COLLECTIONS["count"],
        "gc_ms": _FULL_COLLECTIONS["ms"],
    }


def _dataset(variant, workload, data) -> tf.data.Dataset:
    if variant == "raw_read":
        return workloads.raw_read(workload, data)
    if variant == "migrated":
        return _migrated(workload, data)
    if variant.startswith("twin"):
        from twins import twin_dataset  # noqa: PLC0415 - only when twins exist

        return twin_dataset(workload, data, variant == "twin_batch_decode")
    return workloads.handwritten(workload, data, variant == "tfdata_batch_decode")


MIGRATED_DIR: str | None = None  # where prepare_migrated() wrote the migrated modules


def prepare_migrated(directory: str, data: dict, workloads_: list[str]) -> None:
    """Rewrites legacy_inputs.py's function of each workload with ``queue-pipeline migrate``.

    Each migrated module is written to `directory` once, before any
    measurement (batch-then-decode where the rules allow it;
    tests/test_migrate.py verifies the same rewrites MATCH), so that the
    ``migrated`` variant runs the written tf.data code as plain tf.data: its
    process neither traces the legacy function nor imports the migration.
    """
    global MIGRATED_DIR
    import queue_pipeline  # noqa: PLC0415

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "legacy_inputs.py")
    for workload in workloads_:
        args = tuple(data[workload]) if workload == "W4" else (data[workload],)
        result = queue_pipeline.migrate(
            path, f"{workload.lower()}_inputs", args=args, verify=False, batch_decode=True
        )
        with open(os.path.join(directory, f"migrated_{workload}.py"), "w") as f:
            f.write(result.source)
    MIGRATED_DIR = directory


def _migrated(workload, data) -> tf.data.Dataset:
    """The ``migrated`` variant: the module prepare_migrated() wrote, imported and called."""
    import importlib.util  # noqa: PLC0415

    if MIGRATED_DIR is None:
        raise RuntimeError("benchmarks: the migrated variant needs prepare_migrated() first")
    path = os.path.join(MIGRATED_DIR, f"migrated_{workload}.py")
    spec = importlib.util.spec_from_file_location(f"migrated_{workload}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = getattr(module, f"{workload.lower()}_inputs_dataset")
    return function(*data) if workload == "W4" else function(data)


def _measure_dataset_session(variant, workload, data):
    """A tf.data variant read the TF1 way: a one-shot iterator's get_next in a Session.

    The same measurement as the eager loop: the Dataset is built before the
    clock starts, the iterator is made by the first fetch (as the eager loop
    makes it on entry), and each ``sess.run`` fetches one whole batch (every
    component at once, as numpy), as the queue variants' loop does.
    """
    graph = tf.Graph()
    with graph.as_default():
        built = _dataset(variant, workload, data)
        # (dataset, load): migrated TF1-mode code holding its arrays in variables
        # (NOTE [ Preloaded arrays in a migrated TF1-mode program ]); loading and
        # initializing run inside the clock
        dataset, *loaders = built if isinstance(built, tuple) else (built,)
        if loaders:
            iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
        else:
            iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
        next_batch = iterator.get_next()
        with tf.compat.v1.Session(config=_session_config()) as sess:
            start = clock_start()
            for load in loaders:
                load(sess)
            if loaders:
                sess.run(iterator.initializer)
            return timed_epoch(lambda: sess.run(next_batch), tf.errors.OutOfRangeError, start)


def _diagnostics(variant):
    """The diagnostics settings of a qp_queue variant (a no-op context for the others)."""
    import contextlib  # noqa: PLC0415

    which = variant.split("_", 3)[3] if variant.count("_") >= 3 else ""
    if not variant.startswith("qp_queue") or not which:
        return contextlib.nullcontext()
    import queue_pipeline  # noqa: PLC0415

    if which == "off":
        return queue_pipeline.tf_faithful()
    return queue_pipeline.diagnostics(False, **{which[len("only_") :]: True})


def _measure_session(variant, workload, data):
    api, readers = _apis(variant)
    threads = int(variant.split("_")[2])
    graph = tf.Graph()
    with graph.as_default(), _diagnostics(variant):
        fetches = workloads.queue_pipeline_fetches(api, readers, workload, data, threads)
        init = tf.compat.v1.local_variables_initializer()
        with tf.compat.v1.Session(config=_session_config()) as sess:
            sess.run(init)
            coord = api.Coordinator()
            start = clock_start()
            threads_ = api.start_queue_runners(sess, coord)
            try:
                return timed_epoch(lambda: sess.run(fetches), tf.errors.OutOfRangeError, start)
            finally:
                coord.request_stop()
                coord.join(threads_, stop_grace_period_secs=30)


def load_data(
    directory: str, sizes: workloads.Sizes | None = None, workload: str | None = None
) -> dict:
    """Writes the workloads' data to `directory` (with `sizes`), or reads back one
    `workload`'s (so that a child process holds only what it measures)."""
    marker = os.path.join(directory, "w4.npz")
    if sizes is not None:
        data = workloads.write_data(directory, sizes)
        np.savez(marker, images=data["W4"][0], labels=data["W4"][1])
        return data

    def listed(prefix):
        return sorted(
            os.path.join(directory, f) for f in os.listdir(directory) if f.startswith(prefix)
        )

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
    global MIGRATED_DIR
    MIGRATED_DIR = args.data  # where the parent's prepare_migrated() wrote the modules
    data = load_data(args.data, workload=args.one[0])
    if args.files:
        data["W1"] = sorted(os.path.join(args.files, f) for f in os.listdir(args.files))
    sample = measure(args.one[1], args.one[0], data[args.one[0]])
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(sample, peak_rss_mb=peak_mb, tf_mode=tf_mode())))
    return 0


def _run_child(data_dir, workload, variant, files=None) -> dict:
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
    if files:
        cmd += ["--files", files]
    if tf_mode() == "tf1":
        cmd.append("--tf1")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"{workload}/{variant} failed:\n{out.stderr[-3000:]}")
    sample = json.loads(out.stdout.strip().splitlines()[-1])
    if sample.get("tf_mode") != tf_mode():
        raise RuntimeError(
            f"{workload}/{variant} ran in {sample.get('tf_mode')}, not in {tf_mode()}"
        )
    return sample


def _steady_rate(sample: dict) -> float | None:
    """Examples/s after the epoch's first step, or None (one step, or a sample without it)."""
    if "first_seconds" not in sample:
        return None
    seconds = sample["seconds"] - sample["first_seconds"]
    examples = sample["examples"] - sample["first_examples"]
    return examples / seconds if examples > 0 and seconds > 0 else None


def _summarize(samples):
    rates = [s["examples"] / s["seconds"] for s in samples]
    peaks = [s["peak_rss_mb"] for s in samples if s.get("peak_rss_mb") is not None]
    steady = [r for r in map(_steady_rate, samples) if r is not None]
    firsts = [s["first_seconds"] for s in samples if "first_seconds" in s]
    cpu = [1e6 * s["cpu_seconds"] / s["examples"] for s in samples if s.get("cpu_seconds")]
    return {
        "examples": samples[0]["examples"],
        "median": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
        # the epoch apart from its first step (set-up, iterator start, first batch)
        "steady_median": statistics.median(steady) if steady else None,
        "first_step_ms": statistics.median(firsts) * 1e3 if firsts else None,
        # the process's CPU time (all its threads) per example: what the work costs,
        # steadier than the rate when other processes share the machine
        "cpu_us_per_example": statistics.median(cpu) if cpu else None,
        "peak_rss_mb": max(peaks) if peaks else None,
        # Python's full collections inside the clock, over all the samples
        "gc_full": sum(s.get("gc_full", 0) for s in samples),
        "gc_ms": sum(s.get("gc_ms", 0.0) for s in samples),
        "load_1min": [s["load_1min"] for s in samples if "load_1min" in s],
    }


def run_benchmarks(args) -> dict:
    sizes = workloads.QUICK if args.quick else workloads.FULL
    result = {
        "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "tf_mode": tf_mode(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "mode": "quick" if args.quick else "full",
        "batch_size": workloads.BATCH,
        "repeats": args.repeats,
        "workloads": {},
    }
    variants = [v for v in args.variants if v in VARIANTS + EXTRA_VARIANTS]
    samples = {(w, v): [] for w in args.workloads for v in variants if applicable(v, w)}
    scaling = args.scaling and not args.quick
    progress = Progress(
        len(samples) * args.repeats + (SCALING_MEASUREMENTS * args.repeats if scaling else 0)
    )
    progress.note(
        f"{result['mode']} run, {MODE_NAMES[result['tf_mode']]}, "
        f"{progress.total} measurements; writing the data"
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = load_data(tmp, sizes)
        if "migrated" in variants:
            prepare_migrated(tmp, data, args.workloads)
        progress.note(f"data written in {_clock(time.perf_counter() - progress.start)}")
        for repeat in range(args.repeats):  # interleaved repetitions
            for workload, variant in samples:
                if args.quick:
                    sample = dict(measure(variant, workload, data[workload]), peak_rss_mb=None)
                else:
                    sample = _run_child(tmp, workload, variant)
                sample["load_1min"] = os.getloadavg()[0]  # the machine is shared: say how busy
                samples[(workload, variant)].append(sample)
                progress.step(f"{workload} {variant} repeat {repeat + 1}/{args.repeats}", sample)
        for (workload, variant), values in samples.items():
            result["workloads"].setdefault(workload, {})[variant] = _summarize(values)
        for table in result["workloads"].values():
            base = table.get(BASELINE, {}).get("median")
            for row in table.values():
                row["ratio_vs_tf_queue_1"] = row["median"] / base if base else None
        if scaling:
            result["scaling"] = run_scaling(tmp, args.repeats, progress)
    return result


SCALING_THREADS = (1, 2, 4, 8)
SCALING_FILES = (8, 1_000, 10_000)
SCALING_FILE_VARIANTS = ("tf_queue_1", "qp_queue_1", "tfdata")
SCALING_MEASUREMENTS = 2 * len(SCALING_THREADS) + len(SCALING_FILES) * len(SCALING_FILE_VARIANTS)


def run_scaling(data_dir, repeats, progress=None) -> dict:
    """Throughput against num_threads (W1) and against the number of W1 files."""
    progress = progress or Progress(SCALING_MEASUREMENTS * repeats)
    scaling = {"threads": {}, "files": {}}

    def sample(what, variant, repeat, files=None):
        result = _run_child(data_dir, "W1", variant, files=files)
        progress.step(f"scaling {what} repeat {repeat + 1}/{repeats}", result)
        return result

    for variant_base in ("tf_queue", "qp_queue"):
        for threads in SCALING_THREADS:
            variant = f"{variant_base}_{threads}"
            samples = [sample(variant, variant, r) for r in range(repeats)]
            scaling["threads"][variant] = _summarize(samples)
    total = 20_000
    for count in SCALING_FILES:
        directory = os.path.join(data_dir, f"files_{count}")
        os.makedirs(directory)
        progress.note(f"scaling: writing {count:,} W1 files")
        rng = np.random.default_rng(count)
        for i in range(count):
            np.savetxt(
                os.path.join(directory, f"{i:05d}.csv"),
                rng.integers(0, 1000, size=(total // count, 5)),
                fmt="%d",
                delimiter=",",
            )
        for variant in SCALING_FILE_VARIANTS:
            samples = [
                sample(f"{count} files {variant}", variant, r, files=directory)
                for r in range(repeats)
            ]
            scaling["files"][f"{count} files {variant}"] = _summarize(samples)
    return scaling


class Progress:
    """One line per measurement on stderr (stdout keeps only the report)::

    [bench] full run, TF 2.x defaults, 102 measurements; writing the data
    [  3/102 0:41 eta 22:15] W1 qp_queue_1 repeat 1/3: 21,752/s
    """

    def __init__(self, total: int):
        self.total, self.done = total, 0
        self.start = time.perf_counter()

    @staticmethod
    def _write(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def note(self, message: str) -> None:
        self._write(f"[bench] {message}")

    def step(self, what: str, sample: dict) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        width = len(str(self.total))
        self._write(
            f"[{self.done:{width}d}/{self.total} {_clock(elapsed)} eta {_clock(eta)}] "
            f"{what}: {sample['examples'] / sample['seconds']:,.0f}/s"
        )


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}:{seconds:02d}"


def main(argv=None) -> int:
    """The command line. ``--tf1`` disables v2 behaviour for the whole process (it is
    meant for a fresh one); a process already in TF1 mode measures in TF1 mode
    with or without it, and records so."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data, in-process")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--workloads", nargs="+", default=WORKLOADS, choices=WORKLOADS)
    parser.add_argument(
        "--variants", nargs="+", default=VARIANTS, choices=VARIANTS + EXTRA_VARIANTS
    )
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument(
        "--tf1",
        action="store_true",
        help="TF1 mode, as legacy scripts run: tf.compat.v1."
        "disable_v2_behavior() before anything is built (for the "
        "whole process); tf.data variants read through a one-shot "
        "iterator in a Session",
    )
    parser.add_argument("--json", help="write the results to this JSON file")
    parser.add_argument("--one", nargs=2, metavar=("WORKLOAD", "VARIANT"), help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tf1 and tf_mode() == "tf2":
        tf.compat.v1.disable_v2_behavior()
    if args.one:
        return _child(args)
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
