"""Trainer-side speed and CPU of a decode-heavy legacy input, local and on a tf.data service.

The workload (``served_input.py``): TFRecord files of 384x384 JPEGs, decoded,
cropped, resized to 112x112, flipped, brightened and standardized per
record, shuffle_batch of 128. Each measurement is a fresh trainer process
reading ``--steps`` batches after ``--warmup``; variants are interleaved,
``--repeats`` times:

* ``tf_queue``: TF's own queue API (``python served_input.py``);
* ``tfdata``: the hand-written tf.data version, local;
* ``engine``: ``queue-pipeline run --engine dataset``, local;
* ``served_1w`` / ``served_2w``: ``queue-pipeline run --service`` against a
  dispatcher and one or two workers on this machine (``queue-pipeline service``).

Reported per variant: examples/s (median, min, max) and the trainer's own CPU
seconds per 1,000 examples (median). On one machine the workers share its
cores with the trainer, so served examples/s says what the trainer gives up,
not what a cluster gains; the CPU column is what moves to other machines.

Usage: python benchmarks/service.py [--tf1] [--repeats 3] [--json OUT.json]

Results kept in ``results/service/`` (this report's own format, not
``report.py``'s): ``python benchmarks/service.py --json
benchmarks/results/service/DATE-service-tf2.json >
benchmarks/results/service/DATE-service-tf2.txt``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SCRIPT = os.path.join(HERE, "served_input.py")
VARIANTS = ("tf_queue", "tfdata", "engine", "served_1w", "served_2w")


def _env() -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    return env


def write_data(directory: str, files: int = 8, per_file: int = 256) -> list[str]:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    paths = []
    for f in range(files):
        path = os.path.join(directory, f"images-{f:02d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for _ in range(per_file):
                small = rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)
                image = tf.image.resize(small, [384, 384]).numpy().astype(np.uint8)
                jpeg = tf.io.encode_jpeg(image, quality=90).numpy()
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[jpeg])),
                            "label": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=[int(rng.integers(10))])
                            ),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths


def _server(args: list[str], log) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "queue_pipeline", "service", *args],
        stdout=subprocess.PIPE, stderr=log, env=_env(), text=True,
    )  # fmt: skip
    line = process.stdout.readline()
    match = re.search(r"listening on (grpc://\S+)", line)
    if not match:
        process.kill()
        raise RuntimeError(f"queue-pipeline service {' '.join(args)} printed {line!r}")
    return process, match.group(1)


@contextlib.contextmanager
def cluster(workers: int, log):
    processes = []
    try:
        dispatcher, address = _server(["dispatcher", "--port", "0"], log)
        processes.append(dispatcher)
        for _ in range(workers):
            processes.append(_server(["worker", "--dispatcher", address.split("://")[1]], log)[0])
        yield address
    finally:
        for process in reversed(processes):
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


def measure(variant: str, files: list[str], flags, address: str | None, log) -> dict:
    mode = ["--tf1"] if flags.tf1 else []
    script = [SCRIPT, *files, "--steps", str(flags.steps), "--warmup", str(flags.warmup), *mode]
    if variant == "tf_queue":
        argv = [sys.executable, *script]
    elif variant == "tfdata":
        argv = [sys.executable, *script, "--tfdata"]
    elif variant == "engine":
        argv = [sys.executable, "-m", "queue_pipeline", "run", "--engine", "dataset", *script]
    else:
        argv = [sys.executable, "-m", "queue_pipeline", "run", "--service", address, *script]
    out = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=900)
    log.write(out.stderr)
    if out.returncode != 0:
        raise RuntimeError(f"{variant} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf1", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--json", default=None)
    flags = parser.parse_args()
    results: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as directory:
        files = write_data(directory)
        with open(os.path.join(directory, "servers.log"), "w") as log:
            for repeat in range(flags.repeats):
                for variant in VARIANTS:
                    workers = {"served_1w": 1, "served_2w": 2}.get(variant, 0)
                    with cluster(workers, log) if workers else contextlib.nullcontext() as address:
                        if workers:
                            time.sleep(2)  # the workers register with the dispatcher
                        result = measure(variant, files, flags, address, log)
                    results[variant].append(result)
                    print(f"[{repeat + 1}/{flags.repeats}] {variant}: "
                          f"{result['examples_per_s']:,.0f} ex/s", file=sys.stderr)  # fmt: skip
    mode = "tf1" if flags.tf1 else "tf2"
    base = statistics.median(r["examples_per_s"] for r in results["tf_queue"])
    lines = [
        f"tf.data service benchmark ({mode}; {flags.steps} batches of 128 after "
        f"{flags.warmup}; {flags.repeats} repeats; {os.cpu_count()} cores)",
        f"{'variant':<11} {'ex/s median':>12} {'min':>9} {'max':>9} {'x tf_queue':>10} "
        f"{'trainer CPU s/1k ex':>20}",
    ]
    for variant, runs in results.items():
        speeds = [r["examples_per_s"] for r in runs]
        cpu = statistics.median(r["trainer_cpu_s_per_1k"] for r in runs)
        lines.append(
            f"{variant:<11} {statistics.median(speeds):>12,.0f} {min(speeds):>9,.0f} "
            f"{max(speeds):>9,.0f} {statistics.median(speeds) / base:>10.2f} {cpu:>20.3f}"
        )
    print("\n".join(lines))
    if flags.json:
        with open(flags.json, "w") as f:
            json.dump({"tf_mode": mode, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
