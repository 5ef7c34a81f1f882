"""The migration table: each legacy symbol, its tf.data twin, how arguments map, what differs.

This is the one source of the table that README.rst shows and that
``python -m queue_pipeline table`` prints; the parity tests are parametrized
over it, so every row has a test.
"""

from __future__ import annotations

import dataclasses
import json

__all__ = ["MIGRATIONS", "Migration", "render"]


@dataclasses.dataclass(frozen=True)
class Migration:
    """One row: a legacy symbol and its twin in ``queue_pipeline.data``.

    Attributes:
      legacy: the legacy name, e.g. ``"shuffle_batch"`` (``queue_pipeline.X``
        and ``tf.compat.v1.train.X`` / ``tf.compat.v1.X``).
      chain: the tf.data chain the twin builds.
      arguments: legacy argument -> what it becomes in tf.data.
      differences: semantic differences a migration must know about.
    """

    legacy: str
    chain: str
    arguments: tuple[tuple[str, str], ...]
    differences: str

    @property
    def twin(self) -> str:
        """The twin's full name (same name, in ``queue_pipeline.data``)."""
        return f"queue_pipeline.data.{self.legacy}"


_INERT = ("shared_name / name / cancel_op", "no effect; accepted with a warning")
_EPOCHS = ("num_epochs", "repeat(num_epochs) after the shuffle (None: forever)")
_SHUFFLE = (
    "shuffle / seed",
    "shuffle(n, seed, reshuffle_each_iteration=True): a fresh "
    "permutation per epoch, epochs never mix",
)
_CAPACITY = ("capacity", "no effect on content (a buffering knob)")
_BATCHING_COMMON = (
    (
        "allow_smaller_final_batch",
        "drop_remainder = not allow_smaller_final_batch "
        "(inverted default: both drop the tail by default)",
    ),
    ("enqueue_many", "unbatch() first"),
    ("shapes", "ensure_shape on each element (padded_shapes with dynamic_pad)"),
    ("decode (keyword-only, new)", "a function applied to each batch: batch-then-decode"),
)
_READ = (
    "read(queue) / read_up_to(queue, n)",
    "read(filenames) / read_up_to(filenames, n) "
    "take a Dataset of file names and yield (key, value) with TF 1.x's keys; "
    "keyword-only keys=False yields the values alone, at plain tf.data speed",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "string_input_producer",
        "Dataset.from_tensor_slices(strings).shuffle(n).repeat(num_epochs)",
        (_EPOCHS, _SHUFFLE, _CAPACITY, _INERT),
        "Elements are produced when iterated, not pushed into a queue by a thread.",
    ),
    Migration(
        "input_producer",
        "Dataset.from_tensor_slices(rows).shuffle(n).repeat(num_epochs)",
        (
            _EPOCHS,
            _SHUFFLE,
            _CAPACITY,
            ("element_shape", "checked against the rows"),
            ("summary_name", "no effect; accepted with a warning"),
            _INERT,
        ),
        "No queue-fill summary.",
    ),
    Migration(
        "range_input_producer",
        "Dataset.range(limit).shuffle(limit).repeat(num_epochs)",
        (_EPOCHS, _SHUFFLE, _CAPACITY, _INERT),
        "The dtype follows `limit` (int32 for a Python int), as in TF 1.x.",
    ),
    Migration(
        "slice_input_producer",
        "Dataset.from_tensor_slices(tuple(tensor_list)).shuffle(n).repeat(num_epochs)",
        (_EPOCHS, _SHUFFLE, _CAPACITY, _INERT),
        "Elements are tuples of slices (TF 1.x returns a list of tensors that "
        "dequeue one index per run).",
    ),
    Migration(
        "limit_epochs",
        "Dataset.from_tensors(tensor).repeat(num_epochs)",
        (("num_epochs", "repeat(num_epochs)"), ("name", "no effect; accepted with a warning")),
        "The end is the end of the Dataset, not OutOfRangeError from a counter.",
    ),
    Migration(
        "match_filenames_once",
        "Dataset.list_files(pattern, shuffle=False)",
        (("pattern", "the glob"), ("name", "no effect; accepted with a warning")),
        "The glob is evaluated each time the Dataset is iterated (TF 1.x: once, at "
        "local-variable initialization); no match is an error when iterated.",
    ),
    Migration(
        "TextLineReader",
        "Dataset of files .flat_map(TextLineDataset(f).skip(n))",
        (_READ, ("skip_header_lines", "skip(n) per file; keys still count the skipped lines")),
        "Keys are built from the file name and line number; no reader state ops.",
    ),
    Migration(
        "FixedLengthRecordReader",
        "FixedLengthRecordDataset(f, record_bytes, header_bytes, footer_bytes, encoding)",
        (
            _READ,
            ("hop_bytes", "overlapping records built from the whole file (tf.data has no hop)"),
            ("encoding", "compression_type (unknown strings: uncompressed, as TF 1.x)"),
        ),
        "A partial tail record: TF 1.x drops it silently, tf.data's "
        "FixedLengthRecordDataset (and so the twin) raises; with hop_bytes the twin "
        "drops it, as TF 1.x.",
    ),
    Migration(
        "TFRecordReader",
        "TFRecordDataset(f, compression_type)",
        (_READ, ("options", "compression_type")),
        "Keys carry the byte offset of each record, as TF 1.x's.",
    ),
    Migration(
        "WholeFileReader",
        "Dataset of files .map(lambda f: (f, tf.io.read_file(f)))",
        (_READ,),
        "none",
    ),
    Migration("IdentityReader", "Dataset of work strings .map(lambda w: (w, w))", (_READ,), "none"),
    Migration(
        "batch",
        "dataset.batch(batch_size, drop_remainder)",
        (
            *_BATCHING_COMMON,
            ("dynamic_pad", "padded_batch (0 / b'' padding)"),
            (
                "num_threads",
                "deterministic=False when > 1 (TF 1.x's order is nondeterministic then)",
            ),
            ("capacity", "no effect on content; the prefetch buffer is autotuned"),
            _INERT,
        ),
        "Deterministic order with one thread, as TF 1.x.",
    ),
    Migration(
        "maybe_batch",
        "dataset.filter(keep).batch(batch_size, drop_remainder)",
        (
            (
                "keep_input",
                "filter: a bool, a predicate, or the key of a boolean "
                "component (removed from the output)",
            ),
            *_BATCHING_COMMON,
            _INERT,
        ),
        "keep_input=False gives an empty Dataset (TF 1.x blocks forever).",
    ),
    Migration(
        "batch_join",
        "choose_from_datasets(lists, round robin).batch(batch_size)",
        (
            ("tensors_list", "a list of Datasets, interleaved round robin"),
            *_BATCHING_COMMON,
            ("dynamic_pad", "padded_batch"),
            _INERT,
        ),
        "The interleaving is round robin (TF 1.x: whichever thread is first); "
        "order within each list is kept, as in TF 1.x.",
    ),
    Migration(
        "maybe_batch_join",
        "interleave(...).filter(keep).batch(batch_size)",
        (("keep_input", "filter, as maybe_batch"), *_BATCHING_COMMON, _INERT),
        "As batch_join and maybe_batch.",
    ),
    Migration(
        "shuffle_batch",
        "dataset.shuffle(capacity, seed).batch(batch_size, drop_remainder)",
        (
            (
                "capacity / min_after_dequeue",
                "shuffle buffer = capacity; capacity <= min_after_dequeue is an error",
            ),
            ("seed", "shuffle seed"),
            *_BATCHING_COMMON,
            ("num_threads", "deterministic=False when > 1"),
            _INERT,
        ),
        "A shuffle buffer is not a RandomShuffleQueue: mixing is comparable, the "
        "orders are not; tf.data reshuffles each epoch reproducibly with a seed.",
    ),
    Migration(
        "maybe_shuffle_batch",
        "dataset.filter(keep).shuffle(capacity).batch(batch_size)",
        (
            ("keep_input", "filter, as maybe_batch"),
            ("capacity / min_after_dequeue", "as shuffle_batch"),
            *_BATCHING_COMMON,
            _INERT,
        ),
        "As shuffle_batch and maybe_batch.",
    ),
    Migration(
        "shuffle_batch_join",
        "interleave(...).shuffle(capacity).batch(batch_size)",
        (
            ("tensors_list", "a list of Datasets, interleaved"),
            ("capacity / min_after_dequeue", "as shuffle_batch"),
            *_BATCHING_COMMON,
            _INERT,
        ),
        "As shuffle_batch; order within a list is not kept (nor in TF 1.x).",
    ),
    Migration(
        "maybe_shuffle_batch_join",
        "interleave(...).filter(keep).shuffle(capacity).batch(batch_size)",
        (
            ("keep_input", "filter, as maybe_batch"),
            ("capacity / min_after_dequeue", "as shuffle_batch"),
            *_BATCHING_COMMON,
            _INERT,
        ),
        "As shuffle_batch_join and maybe_batch.",
    ),
)


def render(fmt: str = "text") -> str:
    """The table as ``"text"`` (terminal), ``"rst"`` (README) or ``"json"``."""
    if fmt == "json":
        return json.dumps(
            [
                {
                    "legacy": m.legacy,
                    "twin": m.twin,
                    "chain": m.chain,
                    "arguments": dict(m.arguments),
                    "differences": m.differences,
                }
                for m in MIGRATIONS
            ],
            indent=2,
        )
    if fmt == "rst":
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "",
            "   * - Legacy",
            "     - tf.data twin builds",
            "     - Arguments",
            "     - Differences",
        ]
        for m in MIGRATIONS:
            args = "; ".join(f"``{a}``: {meaning}" for a, meaning in m.arguments)
            lines += [
                f"   * - ``{m.legacy}``",
                f"     - ``{m.chain}``",
                f"     - {args}",
                f"     - {m.differences}",
            ]
        return "\n".join(lines) + "\n"
    if fmt != "text":
        raise ValueError(f"render: `fmt` must be 'text', 'rst' or 'json'; got {fmt!r}.")
    blocks = []
    for m in MIGRATIONS:
        block = [f"{m.legacy}  ->  {m.twin}", f"    builds: {m.chain}"]
        block += [f"    {a}: {meaning}" for a, meaning in m.arguments]
        block.append(f"    differences: {m.differences}")
        blocks.append("\n".join(block))
    return "\n\n".join(blocks) + "\n"
