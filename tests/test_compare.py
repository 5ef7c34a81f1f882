"""queue_pipeline.compare: true twins match, each injected difference is caught."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

import compare_pipelines as P
import queue_pipeline as qp
from helpers import TF
from queue_pipeline._compare import normalize as _normalize
from queue_pipeline._core.progress import Progress
from queue_pipeline.compare import (
    ComparisonReport,
    PipelineError,
    PipelineMismatchError,
    PipelineStalledError,
    compare,
)

T = 10.0  # seconds per fetch: generous, but nothing here may hang


def run(legacy, twin, **kw) -> ComparisonReport:
    kw.setdefault("timeout", T)
    return compare(legacy, twin, **kw)


def test_true_twin_matches_in_order():
    r = run(P.legacy_range, P.twin_range)
    assert r.matched, r.render()
    assert r.mode == "ordered" and r.mode_reason == "both sides are deterministic"
    assert (r.legacy.examples, r.twin.examples, r.legacy.batches, r.twin.batches) == (10, 10, 3, 3)
    assert r.ordered_equal and r.multiset_equal and r.counts_equal and r.batch_counts_equal
    assert r.first_difference is None and r.mismatches == []
    assert [c.legacy for c in r.components] == ["int32[None]"]
    r.assert_match()


def test_two_epochs_are_split_by_the_plans_num_epochs():
    r = run(P.legacy_range_2_epochs, P.twin_range_2_epochs)
    assert r.matched, r.render()
    assert r.epoch_size == 10 and [e.multiset_equal for e in r.epochs] == [True, True]


def test_dropped_record_is_caught():
    r = run(P.legacy_range, P.twin_dropped)
    assert not r.matched
    d = r.first_difference
    assert (d.index, d.kind, d.legacy, d.twin) == (3, "value", "3", "4")
    assert not r.counts_equal and not r.multiset_equal
    text = r.render()
    assert "twin has fewer" in text and "only in legacy: 3 x1" in text
    assert "first differing index: 3" in text
    with pytest.raises(PipelineMismatchError, match="DIFFER"):
        r.assert_match()


def test_duplicated_record_is_caught():
    r = run(P.legacy_range, P.twin_duplicated, ordered=False)
    assert not r.matched and r.mode == "multiset"
    assert "only in twin: 5 x1 (legacy x1, twin x2)" in r.render()
    assert "duplicated or dropped" in r.render()
    assert r.first_difference.kind == "only in twin"


def test_dtype_change_is_caught_even_with_equal_values():
    r = run(P.legacy_range, P.twin_int64)
    assert not r.matched
    assert r.multiset_equal and r.ordered_equal  # values compare equal across int widths
    assert not r.components[0].dtype_equal
    assert "dtype of component (tensor) differs" in r.mismatches[0]
    assert "int32" in r.mismatches[0] and "int64" in r.mismatches[0]


def test_shape_change_is_caught():
    r = run(P.legacy_range, P.twin_pairs)
    assert not r.matched and not r.components[0].shape_compatible
    assert r.components[0].legacy_example_shape == [] and r.components[0].twin_example_shape == [2]
    assert any("shape of component" in m for m in r.mismatches)


def test_order_change_fails_when_ordered_and_hints_at_multisets():
    r = run(P.legacy_range, P.twin_swapped, ordered=True)
    assert not r.matched and r.multiset_equal and not r.ordered_equal
    assert (r.first_difference.index, r.first_difference.legacy) == (0, "0")
    assert "order differs but multisets match" in r.render()
    unordered = run(P.legacy_range, P.twin_swapped, ordered=False)
    assert unordered.matched and unordered.ordered_equal is False
    assert "differs (not required)" in unordered.render()


def test_extra_epoch_is_twin_has_more():
    r = run(P.legacy_range, P.twin_extra_epoch)
    assert not r.matched and not r.counts_equal
    assert r.twin.examples == 20 and r.first_difference.kind == "twin has more"
    assert r.first_difference.index == 10
    assert "one more epoch" in r.render()
    assert r.epochs[-1].legacy_examples == 0 and r.epochs[-1].twin_examples == 10


def test_infinite_twin_is_bounded():
    r = run(P.legacy_range, P.twin_forever)
    assert not r.matched and not r.twin.exhausted
    assert r.twin.examples <= 10 + 10 + P.BATCH  # legacy total + one epoch (+ one batch)
    assert "twin has more" in r.render()


def test_shuffle_batch_is_compared_by_multisets():
    r = run(P.legacy_shuffled, P.twin_shuffled)
    assert r.matched, r.render()
    assert r.mode == "multiset" and "nondeterministic" in r.mode_reason
    assert not r.legacy.deterministic and not r.twin.deterministic
    assert any("RandomShuffleQueue" in n for n in r.legacy.nondeterminism)
    # Read off the twin's own graph, eagerly or through a Session (TF1 mode).
    assert any("Shuffle" in n for n in r.twin.nondeterminism), r.twin.nondeterminism
    assert not r.epochs_required  # the shuffle queue mixes epochs
    assert r.legacy.shuffle is not None and r.twin.shuffle is not None
    assert r.legacy.shuffle.rank_correlation < 0.9 and r.mixing_gap is not None
    assert "multiset (legacy side is nondeterministic" in r.render()


def test_shuffle_batch_with_a_dropped_record_differs():
    r = run(P.legacy_shuffled, P.twin_shuffled_dropped)
    assert not r.matched and r.mode == "multiset"
    assert "only in legacy: 0 x2" in r.render()


def test_unshuffled_twin_of_a_shuffled_legacy_is_flagged_as_mixing_differently():
    r = run(P.legacy_shuffled, P.twin_range_2_epochs)
    assert r.matched  # same multiset; the mixing gap is a note, not a verdict
    assert r.twin.shuffle.rank_correlation == pytest.approx(1.0)


def test_reference_order_for_shuffle_statistics():
    def reference():
        return tf.data.Dataset.from_tensor_slices(tf.constant(P.VALUES[::-1], tf.int32))

    r = run(P.legacy_range, P.twin_range, reference=reference)
    assert r.legacy.shuffle.reference == "reference"
    assert r.legacy.shuffle.rank_correlation == pytest.approx(-1.0)


def test_reader_key_value_tuple_against_hand_written_twin(text_files):
    files = text_files({"a.txt": ["x", "y"], "b.txt": ["z"]})

    def legacy():
        queue = qp.string_input_producer(files, num_epochs=1, shuffle=False)
        return qp.TextLineReader().read(queue)

    def twin():
        keys = [f"{f}:{i + 1}".encode() for f, n in zip(files, (2, 1)) for i in range(n)]
        return tf.data.Dataset.from_tensor_slices((keys, [b"x", b"y", b"z"]))

    r = run(legacy, twin)
    assert r.matched, r.render()
    assert r.legacy.structure == "[0], [1]" and not r.legacy.batched
    bad = run(legacy, lambda: twin().map(lambda k, v: (k, tf.strings.upper(v))))
    assert not bad.matched and bad.first_difference.index == 0
    assert "b'X'" in bad.first_difference.twin


def test_dict_and_sparse_components():
    def legacy():
        x = tf.cast(qp.range_input_producer(4, num_epochs=1, shuffle=False).dequeue(), tf.int64)
        sparse = tf.SparseTensor([[0]], tf.reshape(x, [1]), [3])
        return qp.batch({"x": x, "s": sparse}, 2)

    def twin():
        return (
            tf.data.Dataset.range(4)
            .map(lambda x: {"x": x, "s": tf.SparseTensor([[0]], tf.reshape(x, [1]), [3])})
            .batch(2)
        )

    r = run(legacy, twin)
    assert r.matched, r.render()
    assert [c.path for c in r.components] == ["[s]", "[x]"]
    assert r.components[0].legacy.startswith("sparse int64")
    bad = run(legacy, lambda: twin().map(lambda d: {"x": d["x"], "s": d["s"] * 2}))
    assert not bad.matched and "SparseTensor" in bad.first_difference.legacy


def test_tf_oracle_pipeline_as_legacy():
    def legacy():
        x = TF.range_input_producer(P.N, num_epochs=1, shuffle=False).dequeue()
        return TF.batch([x], P.BATCH, allow_smaller_final_batch=True)

    r = run(legacy, P.twin_range)
    assert r.matched, r.render()


# ------------------------------------------------------------- bad input


def test_different_structure_is_reported_not_raised():
    r = run(P.legacy_range, P.twin_two_components)
    assert not r.matched and not r.structure_equal
    assert r.ordered_equal is None and r.multiset_equal is None
    assert "structure differs" in r.mismatches[-1]
    json.loads(r.to_json())


def test_unbatched_twin_gets_a_batch_hint():
    r = run(P.legacy_range, P.twin_unbatched)
    assert not r.matched and r.multiset_equal  # the examples are the same
    assert "add .batch(4)" in r.render()


def test_legacy_that_raises():
    with pytest.raises(
        PipelineError,
        match="`legacy` callable legacy_raises raised RuntimeError: boom while building",
    ):
        run(P.legacy_raises, P.twin_range)


def test_legacy_that_returns_no_tensors():
    with pytest.raises(PipelineError, match="must return the pipeline's output tensors"):
        run(P.legacy_returns_number, P.twin_range)


def test_twin_that_raises_or_returns_no_dataset():
    with pytest.raises(PipelineError, match="`twin` callable twin_raises raised ValueError"):
        run(P.legacy_range, P.twin_raises)
    with pytest.raises(PipelineError, match="must return a tf.data.Dataset; got list"):
        run(P.legacy_range, P.twin_not_a_dataset)


def test_twin_that_fails_while_reading():
    def failing():
        return tf.data.Dataset.from_tensor_slices(["1", "x"]).map(tf.strings.to_number)

    with pytest.raises(PipelineError, match="twin dataset raised while reading element"):
        run(P.legacy_range, failing)


def test_pipeline_that_never_produces_names_the_starved_queue():
    with pytest.raises(PipelineStalledError) as info:
        run(P.legacy_starved, P.twin_range, timeout=1.5)
    assert info.value.queue_name == "orphan"
    assert "no QueueRunner in the 'queue_runners' collection fills it" in str(info.value)


def test_twin_that_never_produces_is_bounded():
    import time

    def slow(x):
        time.sleep(2)
        return x

    def twin():
        return P.twin_range().map(lambda x: tf.py_function(slow, [x], tf.int32))

    with pytest.raises(
        PipelineStalledError, match="twin dataset delivered no element within 0.5 s"
    ):
        run(P.legacy_range, twin, timeout=0.5)


def test_legacy_that_never_ends_needs_max_batches():
    with pytest.raises(ValueError, match="max_batches"):
        run(P.legacy_forever, P.twin_forever)
    r = run(P.legacy_forever, P.twin_forever, max_batches=5)
    assert r.matched, r.render()
    assert (r.legacy.batches, r.twin.batches, r.legacy.exhausted) == (5, 5, False)
    assert any("max_batches" in n for n in r.notes)


def test_the_legacy_side_is_bounded_in_memory():
    """`max_bytes` stops reading once the batches hold that much; the twin reads as many."""
    r = run(P.legacy_forever, P.twin_forever, max_batches=10_000, max_bytes=64)
    assert r.matched, r.render()
    assert not r.legacy.exhausted and r.legacy.batches == r.twin.batches < 10_000
    assert any("max_bytes=64" in n and "MiB" in n for n in r.notes), r.notes


def test_a_fetched_batch_counts_its_arrays_and_strings():
    from queue_pipeline._compare.harness import nbytes  # noqa: PLC0415

    batch = [np.zeros((4, 2), np.float32), np.array([b"ab", b"cde"], object), {"k": b"x"}]
    assert nbytes(batch) == 32 + 5 + 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_bytes": 0}, "`max_bytes`"),
        ({"epochs": 0}, "`epochs`"),
        ({"max_batches": -1}, "`max_batches`"),
        ({"ordered": "yes"}, "`ordered`"),
        ({"timeout": 0}, "`timeout`"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        compare(P.legacy_range, P.twin_range, **kwargs)


def test_non_callables_are_rejected():
    with pytest.raises(TypeError, match="`twin` must be a callable"):
        compare(P.legacy_range, P.twin_range())


# ------------------------------------------------------ report and helpers


def test_json_round_trips_every_field():
    r = run(P.legacy_range, P.twin_dropped)
    data = json.loads(r.to_json())
    assert data["matched"] is False and data["first_difference"]["index"] == 3
    assert data["legacy"]["examples_per_second"] > 0
    assert set(data) >= {"mode", "components", "epochs", "mismatches", "notes"}


def test_normalize_canonical_structure():
    assert _normalize.flatten({"b": 1, "a": [2]})[0] == ["[a]", "[b]"]
    assert _normalize.flatten([np.int32(1)])[0] == [""]  # batch([x]) == x
    paths, leaves = _normalize.flatten(({"k": 1}, 2))
    assert paths == ["[0][k]", "[1]"]
    a = _normalize.leaves_of(np.array([1, 2], np.int32))
    b = _normalize.leaves_of(np.array([1, 2], np.int64))  # as a Session fetches it
    assert _normalize.example_key(a) == _normalize.example_key(b)
    if tf.executing_eagerly():  # an eager element normalizes alike
        eager = _normalize.leaves_of(tf.constant([1, 2], tf.int64))
        assert _normalize.example_key(eager) == _normalize.example_key(a)
    rows = _normalize.split_examples([np.array([b"a\x00", b"b"], dtype=object)])
    assert _normalize.format_example([""], rows[0]) == "b'a\\x00'"


def test_progress_bar_draws_only_when_enabled(capsys):
    import io

    stream = io.StringIO()
    with Progress("batches", 10, stream=stream, enabled=True, delay=0, interval=0) as bar:
        bar.update(5)
    assert "batches [" in stream.getvalue() and "5/10" in stream.getvalue()
    quiet = io.StringIO()
    with Progress("batches", 10, stream=quiet) as bar:  # StringIO is not a TTY
        bar.update(5)
    assert quiet.getvalue() == ""


def test_legacy_graph_is_not_the_callers():
    with tf.Graph().as_default() as g:
        run(P.legacy_range, P.twin_range)
        assert not g.get_operations()
    assert qp.plan_for  # the public plan API the harness relies on


# ---------------------------------------------------------------------- CLI

PIPELINES = "compare_pipelines"


@pytest.mark.parametrize(
    "twin, ordered, code",
    [
        ("twin_range", [], 0),
        ("twin_dropped", [], 1),
        ("twin_swapped", ["--ordered"], 1),
        ("twin_swapped", ["--unordered"], 0),
        ("twin_raises", [], 2),
        ("no_such_twin", [], 2),
    ],
)
def test_cli_exit_status(capsys, twin, ordered, code):
    from queue_pipeline import cli

    argv = ["compare", f"{PIPELINES}:legacy_range", f"{PIPELINES}:{twin}", "--timeout", "10"]
    assert cli.main(argv + ordered) == code
    out, err = capsys.readouterr()
    if code == 2:
        assert "queue-pipeline compare: error:" in err
    else:
        assert out.startswith("queue_pipeline compare: " + ("MATCH" if code == 0 else "DIFFER"))


def test_cli_json_and_epochs(capsys):
    from queue_pipeline import cli

    code = cli.main(
        [
            "compare",
            f"{PIPELINES}:legacy_range_2_epochs",
            f"{PIPELINES}:twin_range",
            "--json",
            "--epochs",
            "2",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["matched"] is False and data["twin"]["examples"] == 10
    assert not any("`epochs`=2" in n for n in data["notes"])  # the plan agrees: 2
    assert cli.main(["compare", "nonsense", f"{PIPELINES}:twin_range", "--json"]) == 2
    assert "error" in json.loads(capsys.readouterr().out)


@pytest.mark.one_suite("the console script runs under TF 2.x defaults in either suite")
@pytest.mark.slow
def test_console_script_with_a_file_path(tmp_path):
    import pathlib
    import shutil
    import subprocess

    script = shutil.which("queue-pipeline")
    assert script, "the console script is missing: run `pip install -e .`"
    module = pathlib.Path(__file__).with_name("compare_pipelines.py")
    out = subprocess.run(
        [script, "compare", f"{module}:legacy_range", f"{module}:twin_dropped", "--timeout", "20"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=pathlib.Path(__file__).parent,
    )
    assert out.returncode == 1, out.stderr[-2000:]
    assert "queue_pipeline compare: DIFFER" in out.stdout
    assert "first differing index: 3" in out.stdout


def test_the_memory_bound_counts_what_each_example_costs_beside_its_arrays():
    """Tiny examples hold few bytes but a comparison keeps each one split and keyed:
    `max_bytes` counts `EXAMPLE_BYTES` per example, so a one-scalar stream stops
    at about max_bytes / EXAMPLE_BYTES examples (was: only the 4-byte arrays
    counted, and 200,000 scalar records added 236 MiB to a proof)."""
    import numpy as np  # noqa: PLC0415

    from queue_pipeline._compare.harness import EXAMPLE_BYTES, examples_in  # noqa: PLC0415

    assert examples_in((np.zeros((4, 3)), np.zeros(4))) == 4
    assert examples_in({"a": np.zeros((2,))}) == 2 and examples_in(np.int32(3)) == 1
    bound = 8 * EXAMPLE_BYTES
    r = run(P.legacy_forever, P.twin_forever, max_batches=10_000, max_bytes=bound)
    assert r.matched, r.render()
    assert not r.legacy.exhausted and r.legacy.examples <= bound // EXAMPLE_BYTES + P.BATCH
