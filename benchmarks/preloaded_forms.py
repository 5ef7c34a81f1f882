"""Preloaded arrays read through tf.data in a Session: as a graph constant or from variables.

The two forms ``queue-pipeline migrate`` writes for the "Reading data"
guide's preloaded programs (``legacy_examples/preloaded_data.py``):

* ``constant_one_shot``: ``from_tensor_slices`` of ``tf.constant`` arrays
  (``fully_connected_preloaded.py``), read through a one-shot iterator;
* ``variable_initializable``: ``from_tensor_slices`` of non-trainable
  variables loaded from placeholders (``fully_connected_preloaded_var.py``),
  read through an initializable iterator initialized after the load;

beside TF's own queue API on the constant (``slice_input_producer`` ->
``batch``, one runner thread). One epoch of W4's data (60,000 x 784 float32
and int64 labels) in batches of 128; the time counts everything from building
the graph to the end of the epoch (a program reads its preloaded data once).
Each measurement runs in a fresh process; repeats interleave the variants.

Usage: python benchmarks/preloaded_forms.py [--tf1] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

VARIANTS = ("tf_queue_1", "constant_one_shot", "variable_initializable")
ROWS, DIM, BATCH = 60_000, 784, 128


def _measure(variant: str) -> float:
    """Examples/s of one epoch of `variant`, in this process."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    images = rng.random((ROWS, DIM), dtype=np.float32)
    labels = rng.integers(0, 10, ROWS)
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=120_000)
    t0 = time.perf_counter()
    with tf.Graph().as_default(), tf.compat.v1.Session(config=config) as sess:
        setup = None
        threads: list = []
        coord = None
        if variant == "tf_queue_1":
            image, label = tf.compat.v1.train.slice_input_producer(
                [tf.constant(images), tf.constant(labels)], num_epochs=1, shuffle=False
            )
            fetch = tf.compat.v1.train.batch(
                [image, label], BATCH, capacity=4 * BATCH, allow_smaller_final_batch=True
            )
            sess.run(tf.compat.v1.local_variables_initializer())
            coord = tf.compat.v1.train.Coordinator()
            threads = tf.compat.v1.train.start_queue_runners(sess, coord)
        elif variant == "constant_one_shot":
            ds = tf.data.Dataset.from_tensor_slices((tf.constant(images), tf.constant(labels)))
            ds = ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)
            fetch = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
        else:
            image_in = tf.compat.v1.placeholder(images.dtype, images.shape)
            label_in = tf.compat.v1.placeholder(labels.dtype, labels.shape)
            image_var = tf.compat.v1.Variable(image_in, trainable=False, collections=[])
            label_var = tf.compat.v1.Variable(label_in, trainable=False, collections=[])
            ds = tf.data.Dataset.from_tensor_slices((image_var, label_var))
            iterator = tf.compat.v1.data.make_initializable_iterator(
                ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)
            )
            fetch = iterator.get_next()
            setup = [
                (image_var.initializer, {image_in: images}),
                (label_var.initializer, {label_in: labels}),
                (iterator.initializer, None),
            ]
        for op, feed in setup or ():
            sess.run(op, feed)
        count = 0
        try:
            while True:
                count += len(sess.run(fetch)[1])
        except tf.errors.OutOfRangeError:
            pass
        if coord is not None:
            coord.request_stop()
            coord.join(threads)
    assert count == ROWS, count
    return count / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf1", action="store_true", help="TF1 mode (disable_v2_behavior)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if args.tf1:
            import tensorflow as tf

            tf.compat.v1.disable_v2_behavior()
        print(json.dumps(_measure(args.child)))
        return 0
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for repeat in range(args.repeats):
        for variant in VARIANTS:
            argv_child = [sys.executable, __file__, "--child", variant]
            argv_child += ["--tf1"] if args.tf1 else []
            done = subprocess.run(
                argv_child, capture_output=True, text=True, timeout=600, env=env, check=True
            )
            samples[variant].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"[bench] repeat {repeat + 1}/{args.repeats} {variant}: "
                  f"{samples[variant][-1]:,.0f}/s", file=sys.stderr)  # fmt: skip
    mode = "TF1 mode (disable_v2_behavior)" if args.tf1 else "TF 2.x defaults"
    print(f"# preloaded arrays through tf.data in a Session, {mode}; one epoch of "
          f"{ROWS:,} x {DIM} float32, batch {BATCH}, build to end of epoch; "
          f"{args.repeats} repeats, fresh processes (examples/s)")  # fmt: skip
    base = statistics.median(samples["tf_queue_1"])
    print(f"  {'variant':<24}{'median/s':>10}{'min':>10}{'max':>10}{'ratio':>8}")
    for variant, values in samples.items():
        med = statistics.median(values)
        print(f"  {variant:<24}{med:>10,.0f}{min(values):>10,.0f}{max(values):>10,.0f}"
              f"{med / base:>8.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
