"""Per-run cost of a QueueRunner thread: queue_pipeline's against TF's own.

Each variant runs one runner thread over an enqueue op fed by an epoch
counter that ends after N runs, and times the thread from start to its exit
(the closing OutOfRangeError). Reference points: a bare ``sess.run`` loop and
a ``Session.make_callable`` loop over the same op. Repetitions are
interleaved; the medians, min and max are printed, with the ratio of TF's
per-run time to queue_pipeline's (>= 1.0 means queue_pipeline is no slower).

Usage: python benchmarks/runner_loop.py [--runs N] [--repeats R] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import queue_pipeline as qp  # noqa: E402


def _graph(runs):
    g = tf.Graph()
    with g.as_default():
        counter = tf.compat.v1.Variable(0, use_resource=True, name="counter")
        value = counter.count_up_to(runs)
        queue = tf.queue.FIFOQueue(runs + 1, tf.int32, shapes=[[]])
        enqueue = queue.enqueue(value)
        init = tf.compat.v1.global_variables_initializer()
    return g, queue, enqueue, init


def time_runner(runner_cls, runs):
    g, queue, enqueue, init = _graph(runs)
    with g.as_default(), tf.compat.v1.Session(graph=g) as sess:
        runner = runner_cls(queue, [enqueue])
        sess.run(init)
        (thread,) = runner.create_threads(sess)
        start = time.perf_counter()
        thread.start()
        thread.join()
        elapsed = time.perf_counter() - start
        assert sess.run(queue.size()) == runs
    return elapsed / runs


def time_loop(runs, use_callable):
    g, queue, enqueue, init = _graph(runs)
    with tf.compat.v1.Session(graph=g) as sess:
        sess.run(init)
        step = sess.make_callable(enqueue) if use_callable else (lambda: sess.run(enqueue))
        start = time.perf_counter()
        for _ in range(runs):
            step()
        return (time.perf_counter() - start) / runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    variants = {
        "tf QueueRunner": lambda: time_runner(tf.compat.v1.train.QueueRunner, args.runs),
        "queue_pipeline QueueRunner": lambda: time_runner(qp.QueueRunner, args.runs),
        "sess.run loop": lambda: time_loop(args.runs, False),
        "make_callable loop": lambda: time_loop(args.runs, True),
    }
    samples = {name: [] for name in variants}
    for _ in range(args.repeats):  # interleaved repetitions
        for name, fn in variants.items():
            samples[name].append(fn() * 1e6)
    print(
        f"# {platform.node()} {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"TF {tf.__version__}, {time.strftime('%Y-%m-%d')}, {args.runs} runs x "
        f"{args.repeats}"
    )
    print(f"{'variant':30s} {'median us/run':>14s} {'min':>8s} {'max':>8s}")
    result = {}
    for name, values in samples.items():
        med = statistics.median(values)
        result[name] = {"median_us": med, "min_us": min(values), "max_us": max(values)}
        print(f"{name:30s} {med:14.2f} {min(values):8.2f} {max(values):8.2f}")
    ratio = (
        result["tf QueueRunner"]["median_us"] / result["queue_pipeline QueueRunner"]["median_us"]
    )
    print(f"ratio TF / queue_pipeline per-run time: {ratio:.3f}")
    result["ratio_tf_over_qp"] = ratio
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
