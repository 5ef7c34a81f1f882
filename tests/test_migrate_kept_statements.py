"""A pipeline migrated where it stands keeps the plain statements among its lines.

A function that builds its pipeline and then runs its own Session loop is
rewritten in place (the pipeline's lines become the tf.data code). A plain
value set among those lines that the session code reads (``steps = 2`` between
the producer and the batching helper) stays in the file, before its first use
(it was dropped, and the written code failed with NameError while the proof
said MATCH). As a safety net, a rewrite that leaves a name of the function
unbound is refused as a bug in migrate, nothing written. Run in both TF modes
(``--tf1``).
"""

from __future__ import annotations

import os
import re

import pytest
from helpers import copy_script

from queue_pipeline._migrate.api import migrate
from queue_pipeline._migrate.loading import MigrateError
from queue_pipeline._migrate.static_check import check_rewritten_scope


def test_a_plain_value_among_the_pipelines_lines_is_kept_before_its_use(tmp_path):
    path = copy_script("unseen_session_reader_loop.py", tmp_path, "reader_test.py")
    (tmp_path / "labels.csv").write_text("".join(f"{i}\n" for i in range(12)))
    result = migrate(str(path), "test_read", call=f"{str(tmp_path / 'labels.csv')!r}")
    assert result.verdict.status == "MATCH", result.report()
    source = result.source
    get_next = source.index("make_one_shot_iterator(dataset).get_next()")
    assert source.index("        steps = 2\n") > get_next
    assert source.index('        cont = "y"\n') > get_next
    assert source.index("        steps = 2\n") < source.index("while cont ==")
    assert "string_input_producer" not in source


def test_a_rewrite_leaving_a_name_unbound_is_refused_as_a_bug():
    original = "def run(n):\n    steps = 2\n    return n * steps\n"
    rewritten = "def run(n):\n    return n * steps\n"
    with pytest.raises(MigrateError) as caught:
        check_rewritten_scope(original, rewritten, "run", "prog.py")
    message = str(caught.value)
    assert "the migrated run() reads `steps` (line 2 of the migrated file)" in message
    assert "bug in migrate: please report it with prog.py and the migrated module" in message
    saved = re.search(r"saved as (\S+prog_migrated_\w+\.py)\. Nothing was written\.", message)
    assert saved is not None, message
    with open(saved.group(1)) as f:  # the file the report names exists
        assert f.read() == rewritten
    os.remove(saved.group(1))
    check_rewritten_scope(original, original, "run", "prog.py")  # unchanged: fine
    unbound = "def run(n):\n    return n * later\n"  # unbound in the original too: not judged
    check_rewritten_scope(unbound, unbound, "run", "prog.py")
    starred = "from os.path import *\n" + rewritten  # a star import: names unknowable
    check_rewritten_scope("from os.path import *\n" + original, starred, "run", "prog.py")
