"""migrate on a function whose records are drawn at random while it builds (#41, round 47).

NOTE [ Random data made while the pipeline is built ]: data drawn from
NumPy's or Python's global random state is drawn alike on both sides (the
state is held equal for each side's build, the verdict says so, and the
user's state is restored); data no global state decides is UNVERIFIED,
naming the line that made it (was: a false DIFFER). The program is
``tests/scripts/unseen_random_arrays.py``; run in the suite's TF mode (the
suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import os
import random
import shutil

import numpy as np

from queue_pipeline._migrate.api import migrate

from helpers import tf1_mode

SCRIPTS = os.path.join(os.path.dirname(__file__), "scripts")


def _program(tmp_path):
    target = tmp_path / "random_arrays.py"
    shutil.copy(os.path.join(SCRIPTS, "unseen_random_arrays.py"), target)
    return target


def test_global_numpy_draws_are_held_equal_and_the_users_state_restored(tmp_path):
    path = _program(tmp_path)
    np.random.seed(7)
    random.seed(7)
    python_state = random.getstate()
    result = migrate(str(path), "noisy_batches", call="", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "ordered" in result.verdict.reason
    assert "numpy's global random state held equal for both sides' builds" in result.verdict.reason
    assert "Python's" not in result.verdict.reason
    assert random.getstate() == python_state
    # without the proof the trace draws once; the proof leaves the state as it found it
    np.random.seed(7)
    unproven = migrate(str(path), "noisy_batches", call="", tf1=tf1_mode(), verify=False)
    assert unproven.verdict is None
    once = np.random.get_state()[1].copy()
    np.random.seed(7)
    migrate(str(path), "noisy_batches", call="", tf1=tf1_mode())
    assert np.array_equal(np.random.get_state()[1], once)


def test_a_function_without_random_data_says_nothing_of_the_state(tmp_path):
    path = _program(tmp_path)
    source = path.read_text().replace(
        "np.random.random([count, 4, 4, 3])", "np.ones([count, 4, 4, 3])"
    )
    path.write_text(source)
    result = migrate(str(path), "noisy_batches", call="", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()
    assert "random state" not in result.verdict.reason


def test_draws_no_global_state_decides_are_unverified_naming_the_line(tmp_path):
    path = _program(tmp_path)
    result = migrate(str(path), "fresh_generator_batches", call="", tf1=tf1_mode())
    assert result.verdict.status == "UNVERIFIED", result.report()
    reason = result.verdict.reason
    assert "the legacy function's own data is not reproducible" in reason
    line = 1 + next(
        i
        for i, text in enumerate(path.read_text().splitlines())
        if "values = tf.constant(noise" in text
    )
    assert f"{path}:{line}" in reason
    assert "seed it or read the data from a file" in reason
    assert result.exit_status == 0
