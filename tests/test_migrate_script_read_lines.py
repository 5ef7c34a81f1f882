"""A refusal in a script's pipeline points to the file's own line (#41).

NOTE [ A refusal at the line that reads the pipeline's names ]: the session
code fetches a reader's unbatched key and line beside the batches
(``tests/scripts/unseen_script_fetches_key.py``); the refusal quoted the
``return`` migrate writes for the pipeline lines, at the ``with`` line. Run in
the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import os

import pytest

from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, line_of, tf1_mode

pytestmark = pytest.mark.slow


def test_unbatched_key_and_value_fetched_beside_batches_are_refused_at_the_fetch(
    tmp_path, monkeypatch
):
    path = copy_script("unseen_script_fetches_key.py", tmp_path, "passengers.py")
    (tmp_path / "passengers.csv").write_text("id,survived,name\n1,0,a\n2,1,b\n3,1,c\n4,0,d\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "", tf1=tf1_mode())
    message = str(caught.value)
    fetch = line_of(path, "sess.run([ids, survived, key, value])")
    assert (
        f"{os.path.realpath(path)}:{fetch}: cannot migrate `first, second, key1, value1 = "
        "sess.run([ids, survived, key, value])`: it reads per-record tensors (key, value) "
        "beside the batches"
    ) in message, message
    assert "return " not in message and "add them to the batching call's list" in message
