"""W7 / W8 in rounds of fresh processes: each variant, each TF mode, one or two cores.

``own_queue.py`` measures the augmentation workloads at 4 files x 1,000
images, epochs of about 0.3 s, too short for a shared 2-core machine. This
driver writes larger files once, then runs rounds: in each round, every
(TF mode, workload, variant) once, in a fresh process (``own_queue.py --one``),
optionally pinned to some cores with ``taskset``. Rounds alternate the
variants, so a change of the machine's load falls on all of them alike.

Each sample is appended to ``--out`` as one JSON line (mode, workload,
variant, cores, load average, the sample); the medians are printed as a
table of examples/s and CPU microseconds per example, with the engine's
ratios to TF's queues and to hand-written tf.data of each round.

Usage::

    python benchmarks/augment_rounds.py --rounds 3 --out results.jsonl
    python benchmarks/augment_rounds.py --workloads W8 --cpus 0 --out one_core.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import own_queue  # noqa: E402

VARIANTS = ["qp_dataset", "tfdata", "tf_queue"]


def _sample(data: str, mode: str, workload: str, variant: str, cpus: str | None) -> dict:
    cmd = [sys.executable, os.path.join(HERE, "own_queue.py"), "--one", workload, variant]
    cmd += ["--data", data] + (["--tf1"] if mode == "tf1" else [])
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{mode} {workload}/{variant} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _table(rows: list[dict]) -> str:
    lines = ["mode  work  variant      ex/s (median)   CPU us/ex   engine/queues  engine/tf.data"]
    keys = sorted({(r["mode"], r["w"]) for r in rows})
    for mode, workload in keys:
        mine = [r for r in rows if (r["mode"], r["w"]) == (mode, workload)]
        rate = {}
        for variant in VARIANTS:
            samples = [r["s"] for r in mine if r["v"] == variant]
            if not samples:
                continue
            rate[variant] = statistics.median(s["examples"] / s["seconds"] for s in samples)
            cpu = statistics.median(1e6 * s["cpu_seconds"] / s["examples"] for s in samples)
            ratios = ""
            if variant == "qp_dataset":
                by_round = {}
                for r in mine:
                    by_round.setdefault(r["round"], {})[r["v"]] = r["s"]
                for other in ("tf_queue", "tfdata"):
                    pairs = [
                        s[other]["seconds"] / s["qp_dataset"]["seconds"]
                        for s in by_round.values()
                        if "qp_dataset" in s and other in s
                    ]
                    ratios += f"   {statistics.median(pairs):5.2f}x" if pairs else "   -"
            lines.append(
                f"{mode:5} {workload:5} {variant:12} {rate[variant]:>10,.0f}   {cpu:9.0f}{ratios}"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=4000, help="images per file (4 files)")
    parser.add_argument("--modes", default="tf1,tf2", help="comma-separated: tf1, tf2")
    parser.add_argument("--workloads", default="W7,W8")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--cpus", default=None, help="taskset's core list, e.g. 0")
    parser.add_argument("--out", required=True, help="append the samples (JSON lines) here")
    args = parser.parse_args(argv)
    sizes = dataclasses.replace(own_queue.FULL, augment_records=args.records)
    rows = []
    with tempfile.TemporaryDirectory() as data:
        own_queue.write_data(data, sizes)
        for round_ in range(args.rounds):
            for mode in args.modes.split(","):
                for workload in args.workloads.split(","):
                    for variant in args.variants.split(","):
                        sample = _sample(data, mode, workload, variant, args.cpus)
                        row = {
                            "mode": mode,
                            "w": workload,
                            "v": variant,
                            "round": round_,
                            "cpus": args.cpus or f"all ({os.cpu_count()})",
                            "load": f"{os.getloadavg()[0]:.2f}",
                            "s": sample,
                        }
                        rows.append(row)
                        with open(args.out, "a") as f:
                            f.write(json.dumps(row) + "\n")
                        rate = sample["examples"] / sample["seconds"]
                        print(f"[{round_ + 1}/{args.rounds}] {mode} {workload} {variant}: "
                              f"{rate:,.0f}/s load {row['load']}", flush=True)  # fmt: skip
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
