"""The legacy examples run (smoke mode) and deliver what TF's own API delivers."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import TF, build, drain
from legacy_examples import csv_reading
import queue_pipeline as qp


def test_csv_reading_smoke(capsys):
    assert csv_reading.main(["--smoke"]) == 0
    assert "qp: read 20 examples" in capsys.readouterr().out


def test_csv_reading_same_epoch_as_tf(tmp_path):
    files = csv_reading.write_csv_files(str(tmp_path), num_files=2, rows=25)
    out = {}
    for key, impl in (("tf", TF), ("qp", qp)):
        g, fetch = build(impl, lambda m: csv_reading.build_legacy(
            files, key, num_epochs=1, shuffle=False))
        out[key] = drain(impl, g, fetch)
    assert len(out["qp"]) == 50
    np.testing.assert_equal(out["qp"], out["tf"])


@pytest.mark.parametrize("impl", ["qp", "tf"])
def test_csv_reading_run_loop(tmp_path, impl):
    files = csv_reading.write_csv_files(str(tmp_path), num_files=1, rows=10)
    examples = csv_reading.run(files, 15, impl)  # wraps past one epoch
    assert len(examples) == 15
    assert all(features.shape == (4,) for features, _ in examples)


def test_csv_reading_twin_matches_legacy():
    from queue_pipeline import compare

    report = compare.compare(csv_reading.legacy, csv_reading.twin, timeout=20)
    assert report.matched, str(report)
    assert report.to_json()


def test_csv_reading_shuffled_twin_matches_as_multiset(tmp_path):
    from queue_pipeline import compare

    files = csv_reading.write_csv_files(str(tmp_path), num_files=3, rows=7)
    report = compare.compare(
        lambda: csv_reading.build_legacy(files, num_epochs=2),
        lambda: csv_reading.build_twin(files, num_epochs=2, seed=5), timeout=20)
    assert report.matched, str(report)
