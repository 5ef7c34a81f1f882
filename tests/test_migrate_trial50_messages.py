"""migrate's refusals and advice on trial 50's public programs (#41).

A name-mangled ``self.__x`` is looked for in a method's code, never in its
comments or strings, and the refusal names the line that reads it (NOTE
[ Migrating a method ]); a reading helper of another module that batches two
ways, followed by the model, is refused as the model it is (was: a "bug in
migrate" crash); a function that takes the queue is refused at its ``def``
line; a script's advice names what a script takes (no ``--call``); a failed
import is not told to use ``--argv``. The programs are
``tests/scripts/unseen_mangled_producer.py``, ``unseen_twoway_*.py``,
``unseen_queue_taking_reader.py`` and ``unseen_script_big_batch.py``; run in
the suite's TF mode (the suite runs this file with ``--tf1`` too).
"""

from __future__ import annotations

import pytest

from queue_pipeline._migrate.api import MigrateError, migrate

from helpers import copy_script, id_label_csv, line_of, tf1_mode


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A directory holding ``part0.csv`` (20 lines ``id,label``), made the working one."""
    id_label_csv(tmp_path, files=1)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_a_mangled_name_in_a_comment_or_string_is_not_code(data_dir):
    """``# ident = self.__scale(ident)`` and a string naming it: the method MATCHes
    (was: refused as reading a name-mangled attribute)."""
    path = str(copy_script("unseen_mangled_producer.py", data_dir))
    result = migrate(path, "Producer.inputs", call="'part0.csv', 4", tf1=tf1_mode())
    assert result.verdict.status == "MATCH", result.report()


def test_a_mangled_name_read_is_refused_at_its_line(data_dir):
    """The refusal names the line of ``self.__scale(ident)``, not the method's ``def``."""
    path = str(copy_script("unseen_mangled_producer.py", data_dir))
    with pytest.raises(MigrateError) as caught:
        migrate(path, "Producer.inputs_scaled", call="'part0.csv', 4", tf1=tf1_mode())
    lines = open(path).read().splitlines()
    line = 1 + lines.index("        ident = self.__scale(ident)")  # the code, not the comment
    message = str(caught.value)
    assert f"{path}:{line}: Producer.inputs_scaled() reads `self.__scale`" in message, message
    assert "rename the attribute" in message


@pytest.mark.slow
def test_a_two_way_helper_of_another_module_then_the_model_is_refused_as_the_model(data_dir):
    """``datas, targets = reader.read_and_decode(queue)`` (``if shuffle_batch:
    shuffle_batch(...) else: batch(...)`` in another module), then ``loss, mask =
    model.get_loss(datas)``: refused at that line as the model on the batches, as
    for a helper batching one way (was: "bug in migrate", `loss` read in a map)."""
    for name in ("unseen_twoway_reader.py", "unseen_twoway_model.py"):
        copy_script(name, data_dir)
    path = str(copy_script("unseen_twoway_train.py", data_dir))
    with pytest.raises(MigrateError) as caught:
        migrate(path, "train", call="", tf1=tf1_mode())
    message = str(caught.value)
    line = line_of(path, "loss, mask = model.get_loss(datas)")
    assert f"{path}:{line}: cannot migrate `loss, mask = model.get_loss(datas)`" in message
    assert "it builds the model on the batches" in message and "bug in migrate" not in message


def test_a_function_taking_the_queue_is_refused_at_its_def_line(data_dir):
    path = str(copy_script("unseen_queue_taking_reader.py", data_dir))
    call = "tf.compat.v1.train.string_input_producer(['part0.csv'], num_epochs=1), 4"
    with pytest.raises(MigrateError) as caught:
        migrate(path, "read_and_decode", call=call, tf1=tf1_mode())
    line = line_of(path, "def read_and_decode(")
    message = str(caught.value)
    assert f"{path}:{line}: read_and_decode() takes a queue or per-record tensors" in message


@pytest.mark.slow
def test_a_script_without_a_whole_batch_is_not_told_to_use_call(data_dir):
    """A literal ``batch_size=128`` over 20 records: UNVERIFIED, and the advice says
    what a script takes (its values in a copy; no flags here, so no --argv)."""
    path = str(copy_script("unseen_script_big_batch.py", data_dir))
    result = migrate(path, "", tf1=tf1_mode())
    assert result.verdict.status == "UNVERIFIED", result.report()
    reason = result.verdict.reason
    assert "no batch on either side" in reason
    assert "(--call)" not in reason and "a script takes no --call" in reason
    assert "--argv" not in reason


_NEEDS = """
import tensorflow as tf
{head}


def inputs(path):
    queue = tf.compat.v1.train.string_input_producer([path], num_epochs=1, shuffle=False)
    _, line = tf.compat.v1.TextLineReader().read(queue)
    ident, label = tf.io.decode_csv(line, record_defaults=[[0], [0]])
    return tf.compat.v1.train.batch([ident * SCALE, label], batch_size=4)
"""


@pytest.mark.parametrize(
    "head, fix, argv",
    [
        ("from not_a_module_of_m11 import SCALE", "change the import", False),
        (
            "SCALE = int(open('scale_m11.txt').read())",
            "run migrate where the file's imports and data",
            False,
        ),
        (
            "import sys\nSCALE = int(open(sys.argv[1]).read())",
            "run migrate where the file's imports and data",
            True,
        ),
    ],
)
def test_argv_is_suggested_only_where_the_program_reads_its_arguments(data_dir, head, fix, argv):
    """A failed import (cnncom's ``import tensorflow.contrib.slim``) or a file read at
    module level by a program that reads no arguments: no --argv in the fix."""
    path = data_dir / "needs.py"
    path.write_text(_NEEDS.format(head=head))
    with pytest.raises(MigrateError) as caught:
        migrate(str(path), "inputs", call="'part0.csv'", tf1=tf1_mode())
    message = str(caught.value)
    assert "(needed by the function) raised" in message and f"Fix: {fix}" in message, message
    assert ("--argv" in message) == argv, message
    assert ".. Fix" not in message
