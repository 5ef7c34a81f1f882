"""Speed and CPU of ``queue_pipeline.convert`` against a hand-written TFRecordWriter loop.

Three workloads, generated in a temporary directory (not timed):

* ``images``: ``--images`` JPEGs (default 4,000, 10 classes, 256-500 pixels a
  side, quality 90: ImageNet-sized photos, ~50 KB each) in class folders,
  converted from ``images:DIR`` to the TPU format;
* ``table``: a CSV table of ``--rows`` rows (default 200,000; 6 int, float
  and string columns), converted from ``csv-table:FILE``;
* ``legacy`` (read-back only): a TF 1.x input function over the same JPEGs
  (``string_input_producer`` -> ``WholeFileReader`` -> ``decode_jpeg`` ->
  resize to 96x96 -> uint8 -> ``batch``), converted from ``FILE.py:FUNCTION``:
  its shards hold the decoded pixels.

Conversion variants, each a fresh process, interleaved ``--repeats`` times:

* ``hand_loop``: one process, what most users write by hand: for each image
  ``tf.io.decode_jpeg`` (eager) for its size, a ``tf.train.Example``,
  ``TFRecordWriter.write``; for the table ``csv.reader`` and the same writer.
  One shard, no verification, no error handling.
* ``beam_1w``: ``queue_pipeline.convert`` on the DirectRunner with one
  in-process worker (``--direct_running_mode=in_memory``);
* ``beam_2t`` / ``beam_2p``: 2 workers as threads (``multi_threading``, the
  default on a 2-core machine) / as processes (``multi_processing``).
  All 8 shards, ``verify`` on (the default).
* with ``--runner DaskRunner``: ``dask_2p``, ``convert`` on a LocalCluster of
  2 worker processes; with ``--runner PortableRunner``: ``portable_1w``, on
  Beam's embedded job server and an external SDK worker pool (one SDK worker
  process a job). The benchmark starts the cluster before the clock
  (``convert_clusters.py``) and warms it with one tiny conversion, as a
  cluster already running is; ``verify`` on, as for the DirectRunner variants
  (it is off by default on other runners).

Reported: examples/s (median) and the CPU seconds of the process and its
children per 1,000 examples; ratios against ``hand_loop`` of the same run;
the 1-minute load average when each measurement started (median), since the
machine may be shared. Each variant also converts a tiny input (``TINY``
records): its time is the fixed start-up, and ``marginal`` is ``(N - TINY) /
(T_N - T_TINY)``, the rate a large input approaches.

Then the read-back: one epoch of training input (batches of 64), each side
as a user runs it:

* images ``raw_files``: ``list_files`` -> ``read_file`` -> ``decode_jpeg`` ->
  resize to 96x96, parallel ``map``; ``shards``: the emitted reader of the
  converted shards (``TFRecordDataset`` -> ``parse_example`` ->
  ``decode_jpeg`` -> resize): both decode every JPEG every epoch;
* legacy ``legacy_queue``: the legacy function itself on TF's queue API in
  TF1 mode (Coordinator, 2 batching threads; as a user ran it before);
  ``raw_files``: its tf.data twin (decode and resize per epoch, parallel);
  ``shards``: the emitted reader of the function's shards (parse only: the
  decode and resize were paid once, at conversion);
* table ``raw_files``: ``TextLineDataset`` -> ``decode_csv`` on batches;
  ``shards``: the emitted reader.

Usage (the whole run, ~9 minutes on 2 shared cores):
  python benchmarks/convert.py --repeats 2 --json OUT.json
  python benchmarks/convert.py --quick              # a smoke run, ~3 minutes
  python benchmarks/convert.py --workloads table --variants hand_loop,beam_2t --no-read
  python benchmarks/convert.py --render OUT.json    # print a result
  python benchmarks/convert.py --images 2000 --workloads images --no-read --runner DaskRunner

Results kept in ``results/convert/`` (this report's own format).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CONVERT_VARIANTS = ("hand_loop", "beam_1w", "beam_2t", "beam_2p")
BEAM_OPTIONS = {
    "beam_1w": ["--direct_running_mode=in_memory"],
    "beam_2t": ["--direct_running_mode=multi_threading", "--direct_num_workers=2"],
    "beam_2p": ["--direct_running_mode=multi_processing", "--direct_num_workers=2"],
}
READ_VARIANTS = {
    "images": ("raw_files", "shards"),
    "legacy": ("legacy_queue", "raw_files", "shards"),
    "table": ("raw_files", "shards"),
}
SHARDS = 8
BATCH = 64
SIZE = 96
SIDES = (256, 500)  # ImageNet-sized photos
TINY = 20
CLUSTER_ENV = "CONVERT_BENCH_CLUSTER"
LEGACY = f"""
import tensorflow.compat.v1 as tf

def inputs(pattern, batch_size={BATCH}, num_epochs=None, num_threads=2):
    files = tf.train.string_input_producer(
        sorted(tf.gfile.Glob(pattern)), num_epochs=num_epochs, shuffle=False)
    key, data = tf.WholeFileReader().read(files)
    image = tf.image.decode_jpeg(data, channels=3)
    image = tf.cast(tf.image.resize_images(image, [{SIZE}, {SIZE}]), tf.uint8)
    label = tf.strings.to_number(
        tf.strings.regex_replace(tf.strings.split([key], "/").values[-2], "class", ""),
        tf.int32)
    image.set_shape([{SIZE}, {SIZE}, 3])
    return tf.train.batch([image, label], batch_size, num_threads=num_threads,
                          capacity=4 * batch_size, allow_smaller_final_batch=True)
"""


def _cpu() -> float:
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def make_images(root: str, count: int) -> None:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for i in range(count):
        folder = os.path.join(root, f"class{i % 10}")
        os.makedirs(folder, exist_ok=True)
        h, w = rng.integers(SIDES[0], SIDES[1] + 1, size=2)
        # smooth gradients plus noise: compresses like a photo, not like white noise
        y, x = np.mgrid[0:h, 0:w]
        base = (np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (w + h)], -1)).astype(np.int16)
        pixels = np.clip(base + rng.integers(-20, 21, size=(h, w, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, f"{i:05d}.jpg"), quality=90)


def make_table(path: str, rows: int) -> None:
    import numpy as np

    rng = np.random.default_rng(1)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "age", "score", "weight", "city", "label"])
        for i in range(rows):
            writer.writerow(
                [
                    i,
                    int(rng.integers(18, 90)),
                    round(float(rng.normal()), 4),
                    round(float(rng.uniform(40, 120)), 2),
                    f"city{int(rng.integers(500))}",
                    int(rng.integers(2)),
                ]
            )


def _hand_images(data: str, out: str) -> int:
    import tensorflow as tf

    classes = sorted(os.listdir(data))
    count = 0
    with tf.io.TFRecordWriter(os.path.join(out, "train-00000-of-00001")) as writer:
        for label, name in enumerate(classes, start=1):
            for file in sorted(os.listdir(os.path.join(data, name))):
                path = os.path.join(data, name, file)
                encoded = tf.io.read_file(path)
                shape = tf.io.decode_jpeg(encoded, channels=3).shape
                feature = {
                    "image/encoded": _bytes(encoded.numpy()),
                    "image/format": _bytes(b"JPEG"),
                    "image/colorspace": _bytes(b"RGB"),
                    "image/channels": _ints(3),
                    "image/height": _ints(shape[0]),
                    "image/width": _ints(shape[1]),
                    "image/class/label": _ints(label),
                    "image/class/synset": _bytes(name.encode()),
                    "image/filename": _bytes(file.encode()),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
                count += 1
    return count


def _bytes(value: bytes):
    import tensorflow as tf

    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _ints(value: int):
    import tensorflow as tf

    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _hand_table(path: str, out: str) -> int:
    import tensorflow as tf

    count = 0
    with (
        open(path, newline="") as f,
        tf.io.TFRecordWriter(os.path.join(out, "train-00000-of-00001")) as writer,
    ):
        rows = csv.reader(f)
        header = next(rows)
        for row in rows:
            feature = {}
            for name, cell in zip(header, row):
                if name in ("score", "weight"):
                    feature[name] = tf.train.Feature(
                        float_list=tf.train.FloatList(value=[float(cell)])
                    )
                elif name == "city":
                    feature[name] = _bytes(cell.encode())
                else:
                    feature[name] = _ints(int(cell))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
            count += 1
    return count


def child_convert(variant: str, workload: str, data: str, out: str) -> dict:
    """One conversion in this (fresh) process; returns its numbers (imports not timed).

    A cluster variant's Beam options come from ``$CONVERT_BENCH_CLUSTER`` (JSON).
    """
    import tensorflow as tf  # noqa: F401 - imported before the clock starts, as for every variant

    if variant != "hand_loop":
        import apache_beam  # noqa: F401

        import queue_pipeline as qp
    start_cpu, start = _cpu(), time.perf_counter()
    if variant == "hand_loop":
        os.makedirs(out)
        count = (_hand_images if workload == "images" else _hand_table)(data, out)
    else:
        source = f"images:{data}" if workload == "images" else f"csv-table:{data}"
        options = BEAM_OPTIONS.get(variant) or json.loads(os.environ[CLUSTER_ENV])
        result = qp.convert(source, out, shards=SHARDS, beam_options=options, verify=True)
        count = result.written
    seconds = time.perf_counter() - start
    return {"examples": count, "seconds": seconds, "cpu": _cpu() - start_cpu}


def child_read(variant: str, workload: str, data: str, shards: str) -> dict:
    """One epoch of training input in this (fresh) process."""
    import importlib.util

    import tensorflow as tf

    if variant == "shards":
        spec = importlib.util.spec_from_file_location("reader", os.path.join(shards, "reader.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kwargs = {"image_size": (SIZE, SIZE)} if workload == "images" else {}
        dataset = module.input_fn("train", BATCH, seed=0, **kwargs)
    elif variant == "legacy_queue":
        return _legacy_queue_epoch(os.path.join(os.path.dirname(shards), "legacy_inputs.py"), data)
    elif workload == "legacy":  # the legacy function's tf.data twin: decode + resize per epoch

        def decoded(path):
            image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
            image = tf.cast(tf.image.resize(image, (SIZE, SIZE)), tf.uint8)
            name = tf.strings.split(path, os.sep)[-2]
            label = tf.strings.to_number(tf.strings.regex_replace(name, "class", ""), tf.int32)
            return image, label

        files = tf.data.Dataset.list_files(os.path.join(data, "*", "*.jpg"), shuffle=False)
        dataset = files.map(decoded, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH)
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
    elif workload == "images":
        classes = sorted(os.listdir(data))
        table = tf.constant(classes)

        def load(path):
            label = tf.argmax(
                tf.cast(tf.equal(table, tf.strings.split(path, os.sep)[-2]), tf.int32)
            )
            image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
            image = tf.image.resize(tf.image.convert_image_dtype(image, tf.float32), (SIZE, SIZE))
            return image, label

        files = tf.data.Dataset.list_files(os.path.join(data, "*", "*.jpg"), seed=0)
        dataset = files.map(load, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH)
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
    else:
        defaults = [[0], [0], [0.0], [0.0], [""], [0]]
        lines = tf.data.TextLineDataset(data).skip(1).shuffle(10_000, seed=0)
        dataset = (
            lines.batch(BATCH)
            .map(lambda b: tf.io.decode_csv(b, defaults), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )
    start_cpu, start = _cpu(), time.perf_counter()
    count = 0
    for batch in dataset:
        count += int(tf.shape(tf.nest.flatten(batch)[0])[0])
    return {"examples": count, "seconds": time.perf_counter() - start, "cpu": _cpu() - start_cpu}


def _legacy_queue_epoch(legacy: str, data: str) -> dict:
    """One epoch of the legacy function on TF's own queue API (the benchmark's oracle)."""
    import importlib.util

    import tensorflow as tf

    spec = importlib.util.spec_from_file_location("legacy_inputs", legacy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    v1 = tf.compat.v1
    v1.disable_v2_behavior()  # as the legacy script ran: TF1 mode
    with tf.Graph().as_default():
        images, _ = module.inputs(os.path.join(data, "*", "*.jpg"), num_epochs=1)
        config = v1.ConfigProto(operation_timeout_in_ms=600_000)
        with v1.Session(config=config) as sess:
            sess.run([v1.global_variables_initializer(), v1.local_variables_initializer()])
            coord = v1.train.Coordinator()
            start_cpu, start = _cpu(), time.perf_counter()
            threads = v1.train.start_queue_runners(sess, coord=coord)
            count = 0
            try:
                while True:
                    count += len(sess.run(images))
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=10)
            seconds = time.perf_counter() - start
    return {"examples": count, "seconds": seconds, "cpu": _cpu() - start_cpu}


def _run_child(*args: str) -> dict:
    load = os.getloadavg()[0]  # the machine is shared: recorded with each measurement
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=1800,
    )
    if done.returncode:
        raise RuntimeError(f"{args}: {done.stderr[-3000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load": load}


def _summary(runs: list[dict], tiny: list[dict] | None = None) -> dict:
    rates = [r["examples"] / r["seconds"] for r in runs]
    extra = {}
    if tiny:
        start = statistics.median(t["seconds"] for t in tiny)
        seconds = statistics.median(r["seconds"] for r in runs)
        # None when the tiny run took as long as the full one (noise on a loaded machine)
        marginal = (runs[0]["examples"] - TINY) / (seconds - start) if seconds > start else None
        extra = {"startup_s": start, "marginal_per_s": marginal}
    return {
        **extra,
        "examples": runs[0]["examples"],
        "examples_per_s": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
        "cpu_s_per_1k": statistics.median(1000 * r["cpu"] / r["examples"] for r in runs),
        "load": statistics.median(r["load"] for r in runs),
    }


def _progress(message: str) -> None:
    print(f"[convert bench] {message} (load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)


def _reader(shards: str) -> None:
    from queue_pipeline._convert.reader import reader_source

    with open(os.path.join(shards, "manifest.json")) as f:
        manifest = json.load(f)
    with open(os.path.join(shards, "reader.py"), "w") as f:
        f.write(reader_source(manifest, shards))


def _convert_legacy(tmp: str, images: str) -> tuple[str, float]:
    """The legacy function's shards (decoded pixels), converted in this process."""
    import queue_pipeline as qp

    legacy = os.path.join(tmp, "legacy_inputs.py")
    with open(legacy, "w") as f:
        f.write(LEGACY)
    out = os.path.join(tmp, "legacy-shards")
    start = time.perf_counter()
    pattern = os.path.join(images, "*", "*.jpg")
    qp.convert(f"{legacy}:inputs", out, call=f"{pattern!r}, num_epochs=1", shards=SHARDS)
    return out, time.perf_counter() - start


def measure(
    images: int,
    rows: int,
    repeats: int,
    workloads: tuple[str, ...] = ("images", "table"),
    variants: tuple[str, ...] = CONVERT_VARIANTS,
    read: bool = True,
) -> dict:
    results: dict = {
        "images": images,
        "rows": rows,
        "repeats": repeats,
        "cores": os.cpu_count(),
        "sides": list(SIDES),
        "load_before": os.getloadavg()[0],
        "workloads": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        data = {"images": os.path.join(tmp, "images"), "table": os.path.join(tmp, "table.csv")}
        tiny = {"images": os.path.join(tmp, "tiny"), "table": os.path.join(tmp, "tiny.csv")}
        _progress(f"generating {images} JPEGs and a {rows}-row table")
        if "images" in workloads or read:
            make_images(data["images"], images)
            make_images(tiny["images"], TINY)
        make_table(data["table"], rows)
        make_table(tiny["table"], TINY)
        shards = {}
        for workload in workloads:
            runs: dict = {v: [] for v in variants}
            starts: dict = {v: [] for v in variants}
            if CLUSTER_ENV in os.environ:  # a running cluster: its workers have started
                _progress(f"warming the cluster on the {workload} tiny input")
                warm = os.path.join(tmp, f"warm-{workload}")
                _run_child("convert", variants[-1], workload, tiny[workload], warm)
            for r in range(repeats):
                for variant in variants:
                    _progress(f"{workload} {variant} repeat {r + 1}/{repeats}")
                    out = os.path.join(tmp, f"{workload}-{variant}-{r}")
                    runs[variant].append(
                        _run_child("convert", variant, workload, data[workload], out)
                    )
                    out = os.path.join(tmp, f"tiny-{workload}-{variant}-{r}")
                    starts[variant].append(
                        _run_child("convert", variant, workload, tiny[workload], out)
                    )
            shards[workload] = os.path.join(tmp, f"{workload}-{variants[-1]}-0")
            results["workloads"][workload] = {
                "convert": {v: _summary(x, starts[v]) for v, x in runs.items()}
            }
        if not read:
            return results
        _progress("converting the legacy function (in this process)")
        shards["legacy"], seconds = _convert_legacy(tmp, data["images"])
        results["legacy_convert_s"] = seconds
        data["legacy"] = data["images"]
        for workload in ("images", "legacy", "table"):
            _reader(shards[workload])
            reads: dict = {v: [] for v in READ_VARIANTS[workload]}
            for r in range(repeats):
                for variant in READ_VARIANTS[workload]:
                    _progress(f"read {workload} {variant} repeat {r + 1}/{repeats}")
                    reads[variant].append(
                        _run_child("read", variant, workload, data[workload], shards[workload])
                    )
            results["workloads"].setdefault(workload, {})["read"] = {
                v: _summary(x) for v, x in reads.items()
            }
    return results


def render(results: dict) -> str:
    lo, hi = results["sides"]
    lines = [
        f"queue_pipeline.convert: {results['images']} JPEGs ({lo}-{hi} px a side), a "
        f"{results['rows']}-row CSV table; {results['cores']} cores, shared (load = the "
        f"1-minute load average as each run started); median of {results['repeats']}",
        "",
        f"{'workload':<8} {'variant':<10} {'examples/s':>11} {'x hand':>7} {'CPU s/1k':>9} "
        f"{'start-up s':>10} {'marginal/s':>10} {'x hand':>7} {'load':>5}",
    ]
    for workload in ("images", "table"):
        if workload not in results["workloads"]:
            continue
        convert = results["workloads"][workload]["convert"]
        base = convert["hand_loop"]["examples_per_s"]
        marginal = convert["hand_loop"]["marginal_per_s"]
        for variant, row in convert.items():
            lines.append(
                f"{workload:<8} {variant:<10} {row['examples_per_s']:>11.0f} "
                f"{row['examples_per_s'] / base:>6.2f}x {row['cpu_s_per_1k']:>9.2f} "
                f"{row['startup_s']:>10.1f} "
                + _marginal(row["marginal_per_s"], marginal)
                + f" {row['load']:>5.1f}"
            )
    if "legacy_convert_s" not in results:  # --no-read
        return "\n".join(lines) + "\n"
    lines += [
        "",
        f"{'workload':<8} {'input':<12} {'examples/s':>11} {'x raw':>7} {'CPU s/1k':>9} "
        f"{'load':>5}",
    ]
    for workload in ("images", "legacy", "table"):
        read = results["workloads"][workload]["read"]
        base = read["raw_files"]["examples_per_s"]
        for variant, row in read.items():
            lines.append(
                f"{workload:<8} {variant:<12} {row['examples_per_s']:>11.0f} "
                f"{row['examples_per_s'] / base:>6.2f}x {row['cpu_s_per_1k']:>9.2f} "
                f"{row['load']:>5.1f}"
            )
    lines += [
        "",
        f"(converting the legacy function, in the launching process: "
        f"{results['legacy_convert_s']:.1f} s)",
    ]
    return "\n".join(lines) + "\n"


def _marginal(rate: float | None, hand: float | None) -> str:
    if rate is None or not hand:
        return f"{'-':>10} {'-':>7}"
    return f"{rate:>10.0f} {rate / hand:>6.2f}x"


def main(argv=None) -> int:
    from convert_clusters import RUNNERS, cluster  # beside this script (on its sys.path)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4000)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 200 JPEGs, 5,000 rows, one repeat"
    )
    parser.add_argument(
        "--workloads",
        default="images,table",
        help="conversions to run, comma-separated: images, table (default: images,table)",
    )
    parser.add_argument(
        "--variants",
        default=",".join(CONVERT_VARIANTS),
        help=f"conversion variants, in run order (hand_loop first): {','.join(CONVERT_VARIANTS)}",
    )
    parser.add_argument(
        "--no-read", action="store_true", help="skip the legacy conversion and the read-back"
    )
    parser.add_argument(
        "--runner",
        default="DirectRunner",
        choices=["DirectRunner", *RUNNERS],
        help="another runner: its variant (dask_2p, portable_1w) on a cluster the benchmark "
        "starts; the default variants are then hand_loop and that one",
    )
    parser.add_argument("--json", default=None, metavar="OUT.json")
    parser.add_argument("--render", default=None, metavar="RESULT.json", help="print a result")
    parser.add_argument("--child", nargs=5, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.render:
        with open(args.render) as f:
            sys.stdout.write(render(json.load(f)))
        return 0
    if args.child:
        kind, variant, workload, data, out = args.child
        fn = child_convert if kind == "convert" else child_read
        print(json.dumps(fn(variant, workload, data, out)))
        return 0
    if args.quick:
        args.images, args.rows, args.repeats = 200, 5000, 1
    workloads = tuple(w for w in args.workloads.split(",") if w)
    variants = tuple(v for v in args.variants.split(",") if v)
    known = set(CONVERT_VARIANTS)
    if args.runner != "DirectRunner":
        known.add(RUNNERS[args.runner])
        if args.variants == parser.get_default("variants"):
            variants = ("hand_loop", RUNNERS[args.runner])
    unknown = sorted(set(workloads) - {"images", "table"}) + sorted(set(variants) - known)
    if unknown or "hand_loop" not in variants:
        parser.error(f"unknown workloads or variants {unknown}, or no hand_loop in --variants")
    read = not args.no_read and set(workloads) == {"images", "table"}
    with contextlib.ExitStack() as stack:
        if args.runner != "DirectRunner":
            _progress(f"starting the {args.runner} cluster")
            options = stack.enter_context(cluster(args.runner, REPO))
            os.environ[CLUSTER_ENV] = json.dumps(options)
        results = measure(args.images, args.rows, args.repeats, workloads, variants, read)
    results["runner"] = args.runner
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    sys.stdout.write(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
