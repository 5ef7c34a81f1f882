"""The legacy examples run (smoke mode) and deliver what TF's own API delivers."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import TF, build, drain
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
