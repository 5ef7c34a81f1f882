"""Installs queue_pipeline: TF 1.x queue input pipelines on TensorFlow 2.x."""

import pathlib
import re

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).parent
VERSION = re.search(
    r'^__version__ = "([^"]+)"', (HERE / "queue_pipeline" / "_version.py").read_text(), re.M
).group(1)

setup(
    name="queue_pipeline",
    version=VERSION,
    description=(
        "TensorFlow 1.x queue-runner input pipelines, faithful on "
        "TensorFlow 2.x, with tf.data twins for migration."
    ),
    long_description=(HERE / "README.rst").read_text(),
    long_description_content_type="text/x-rst",
    packages=find_packages(include=["queue_pipeline", "queue_pipeline.*"]),
    # py.typed: the package's annotations are meant for type checkers (PEP 561).
    package_data={"queue_pipeline": ["py.typed"]},
    # CI runs the full suite on 3.11 (.ci/run) and the quick suite on both ends,
    # 3.10 with the oldest TensorFlow (.ci/oldest-tf) and 3.13 with the newest
    # (.ci/newest-python).
    python_requires=">=3.10",
    # No TensorFlow here: like TensorFlow Probability and TensorFlow Datasets,
    # the package runs on whichever TensorFlow distribution the user has
    # (tensorflow, tensorflow-cpu, tf-nightly, a vendor's build), and pip must
    # never install a second one over it: two distributions write one
    # tensorflow/ package. The first name that needs TensorFlow checks it is
    # there and recent enough (queue_pipeline/_core/tf_required.py); the
    # tensorflow and tensorflow-cpu extras below let pip bring it.
    # libcst: `queue-pipeline migrate` rewrites the user's source as a concrete
    # syntax tree, so the statements it keeps or moves keep their comments and
    # formatting (the standard library's ast drops both).
    install_requires=["numpy", "libcst>=1.0"],
    extras_require={
        # The supported TensorFlow range (CI tests its two ends: .ci/oldest-tf,
        # and .ci/run and .ci/newest-python); one extra per distribution.
        "tensorflow": ["tensorflow>=2.16"],
        "tensorflow-cpu": ["tensorflow-cpu>=2.16"],
        # pytest-timeout: the suite's global per-test timeout, so that a
        # regression that blocks a queue fails instead of hanging CI.
        # tf-slim: the best-known downstream of TF's queue API; the tests run
        # its data layer unmodified under install() (tests/test_downstreams.py).
        # ruff and mypy: the lint, format and type checks CI runs with the tests.
        # pytest-xdist: the suite on both cores (-n 2), so that both TF modes
        # fit CI's 10 minutes.
        # apache-beam, google-crc32c: the tests of `convert` run its pipelines
        # on Beam's DirectRunner (the [beam] extra below); dask[distributed]:
        # and on Beam's Dask runner against a LocalCluster of worker
        # processes the tests start (the [dask] extra).
        # playwright: the pages `compare --html` writes are opened in a real
        # headless Chromium, offline (tests/browser.py); it drives the system's
        # Chromium (Debian: apt-get install chromium), never a browser it
        # downloads, and without one those tests are skipped.
        # No TensorFlow in this extra or the next: README's commands name
        # [tensorflow,...] for a fresh venv, and a venv that has its own
        # TensorFlow installs [test] alone.
        "test": [
            "pytest>=7",
            "pytest-timeout>=2",
            "scikit-learn",
            "tf-slim>=1.1",
            "ruff>=0.6",
            "mypy>=1.10",
            "pytest-xdist>=3",
            "apache-beam>=2.60",
            "google-crc32c>=1.5",
            "dask[distributed]>=2024.1",
            "playwright>=1.40",
        ],
        # apache-beam: `queue-pipeline convert` runs on Beam (DirectRunner on
        # every local core; Dataflow, Flink or Spark by option) instead of a
        # home-made process pool; its dependency Pillow decodes the images.
        # Tested with apache-beam 2.77.0, which declares protobuf<7: beside
        # protobuf 7 install it with --no-deps (README: Converting to TFRecords).
        # google-crc32c (the CRC-32C that Beam's own GCS and TFRecord I/O use):
        # Beam's workers frame the shards' records themselves and import no
        # TensorFlow, seconds less start-up per worker process (NOTE [ TFRecord
        # framing ] in queue_pipeline/_convert/tfrecords.py); without it they
        # fall back to TensorFlow's writer.
        "beam": ["apache-beam>=2.60", "google-crc32c>=1.5"],
        # dask.distributed: `convert --runner DaskRunner` on a Dask cluster
        # (Beam's Dask runner; its client is dask.distributed's).
        "dask": ["apache-beam>=2.60", "google-crc32c>=1.5", "dask[distributed]>=2024.1"],
        # scikit-learn ships real handwritten digits inside its wheel (no
        # download): the demo and legacy_examples write them in the classic
        # formats; without it they use a synthetic stand-in.
        "examples": ["scikit-learn"],
    },
    entry_points={
        "console_scripts": ["queue-pipeline=queue_pipeline.cli:main"],
        # The pytest plugin: fixtures qp_graph, qp_session, qp_coord,
        # qp_snapshot and the --update-snapshots option. Loading it imports
        # no TensorFlow (tests/test_startup_cost.py).
        "pytest11": ["queue_pipeline=queue_pipeline.pytest_plugin"],
    },
    license="Apache-2.0",
    license_files=["LICENSE"],
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
