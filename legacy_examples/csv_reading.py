"""The classic CSV program of TF 1.x's "Reading data" guide, on queue_pipeline.

string_input_producer -> TextLineReader -> decode_csv with record_defaults,
driven by the guide's Coordinator loop. Only the import changed: the guide's
``tf.train`` is ``queue_pipeline`` here (``--impl tf`` runs TF's own for
comparison). ``--tf1`` runs it in TF1 mode, as legacy scripts run (see
``legacy_examples/README.rst``).

Usage: python -m legacy_examples.csv_reading [--steps N] [--smoke] [--impl qp|tf] [--tf1]
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

IMPLS = {
    "qp": {"train": queue_pipeline, "TextLineReader": queue_pipeline.TextLineReader},
    "tf": {"train": tf.compat.v1.train, "TextLineReader": tf.compat.v1.TextLineReader},
}


def write_csv_files(
    directory: str, num_files: int = 2, rows: int = 300, seed: int = 0
) -> list[str]:
    """Writes `num_files` CSV files of 5 integer columns; the 5th is a 0/1 label."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(num_files):
        path = os.path.join(directory, f"file{i}.csv")
        features = rng.integers(0, 100, size=(rows, 4))
        labels = (features.sum(axis=1) > 200).astype(int)
        with open(path, "w") as f:
            for row, label in zip(features, labels):
                f.write(",".join(map(str, row)) + f",{label}\n")
        paths.append(path)
    return paths


def build_legacy(filenames, impl: str = "qp", num_epochs=None, shuffle=True):
    """The guide's input stage. Returns (features [4] int32, label int32)."""
    train, TextLineReader = IMPLS[impl]["train"], IMPLS[impl]["TextLineReader"]
    filename_queue = train.string_input_producer(filenames, num_epochs=num_epochs, shuffle=shuffle)
    reader = TextLineReader()
    key, value = reader.read(filename_queue)
    record_defaults = [[1], [1], [1], [1], [1]]
    col1, col2, col3, col4, col5 = tf.io.decode_csv(value, record_defaults=record_defaults)
    features = tf.stack([col1, col2, col3, col4])
    return features, col5


def build_twin(filenames, num_epochs=None, shuffle=True, seed=None):
    """The same input stage on tf.data: a Dataset of (features [4], label)."""
    from queue_pipeline import data

    names = data.string_input_producer(filenames, num_epochs=num_epochs, shuffle=shuffle, seed=seed)
    records = data.TextLineReader().read(names)

    def decode(key, value):
        col1, col2, col3, col4, col5 = tf.io.decode_csv(value, [[1], [1], [1], [1], [1]])
        return tf.stack([col1, col2, col3, col4]), col5

    return records.map(decode)


_COMPARE_FILES: list[str] = []


def _compare_files() -> list[str]:
    """Bundled data for the comparison entry points, written once per process."""
    if not _COMPARE_FILES:
        directory = _scratch.scratch_dir("queue_pipeline_csv_")
        _COMPARE_FILES.extend(write_csv_files(directory, num_files=2, rows=50))
    return list(_COMPARE_FILES)


def legacy():
    """Entry point for ``queue-pipeline compare``: one epoch, in file order."""
    return build_legacy(_compare_files(), num_epochs=1, shuffle=False)


def twin():
    """Entry point for ``queue-pipeline compare``: the tf.data twin of :func:`legacy`."""
    return build_twin(_compare_files(), num_epochs=1, shuffle=False)


def run(filenames, steps: int, impl: str = "qp") -> list:
    """The guide's loop: start the runners, fetch `steps` examples, stop, join."""
    train = IMPLS[impl]["train"]
    examples = []
    with tf.Graph().as_default():
        features, label = build_legacy(filenames, impl)
        config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=60_000)
        with tf.compat.v1.Session(config=config) as sess:
            coord = train.Coordinator()
            threads = train.start_queue_runners(sess=sess, coord=coord)
            for _ in range(steps):
                examples.append(sess.run([features, label]))
            coord.request_stop()
            coord.join(threads)
    return examples


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--smoke", action="store_true", help="a few steps, in seconds")
    parser.add_argument("--impl", choices=sorted(IMPLS), default="qp")
    args = _twin_loop.parse_args(parser, argv)
    steps = 20 if args.smoke else args.steps
    with tempfile.TemporaryDirectory() as tmp:
        examples = run(write_csv_files(tmp), steps, args.impl)
    positives = sum(int(label) for _, label in examples)
    print(
        f"{args.impl}: read {len(examples)} examples; first {examples[0][0].tolist()} "
        f"label {examples[0][1]}; {positives} positive labels"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
