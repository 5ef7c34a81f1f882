"""The tf.data code each legacy call becomes, and what happens to each of its arguments.

Each function here takes the *source text* of the legacy call's arguments
(by parameter name, as bound to the legacy signature) and returns lines of
plain TensorFlow code; the arguments' fates for the report use the wording
of the migration table (:mod:`queue_pipeline.data.migration`).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Mapping

import libcst as cst

from queue_pipeline._migrate import kept_inputs
from queue_pipeline.data import migration
from queue_pipeline.plan import BATCHING_KINDS

__all__ = [
    "Unsupported",
    "batching_lines",
    "chunks_dataset",
    "compression_code",
    "fates",
    "keyed_records_of",
    "producer_lines",
    "reader_dataset",
    "records_of",
    "slice_lines",
]

AUTOTUNE = "tf.data.AUTOTUNE"


class Unsupported(Exception):
    """A legacy call, or one of its arguments, that the migration cannot express."""


@dataclasses.dataclass(frozen=True)
class Chain:
    """The lines a call became and the fate of each argument it was given."""

    lines: list[str]
    fates: list[tuple[str, str]]


_TABLE = {m.legacy: m for m in migration.MIGRATIONS}


# where the written code does otherwise than the table's to_dataset twins
_WRITTEN = {
    "num_threads": "the map runs in parallel (AUTOTUNE), keeping the records' order (with "
    "more threads TF 1.x's order is nondeterministic)",
    "keep_input": "the element carries it: filter(...) keeps the records it keeps, then it "
    "is dropped, before the shuffle and the batch",
}


def fates(kind: str, given: Mapping[str, str]) -> list[tuple[str, str]]:
    """The migration table's words for the arguments the call spelled out (what the
    written code does with them)."""
    row = _TABLE.get(kind)
    out = []
    for arg in given:
        if arg == "keep_input" and _is_true(given[arg]):
            out.append((arg, "True: every record is kept, no filter is written"))
            continue
        if arg in _WRITTEN and kind in BATCHING_KINDS:
            out.append((arg, _WRITTEN[arg]))
            continue
        if arg == "enqueue_many" and _is_true(given[arg]) is False:  # the table's is for True
            out.append((arg, "False, the default: one record per element, nothing to unbatch"))
            continue
        fate = "used as written"
        if row is not None:
            for names, words in row.arguments:
                if arg in [n.strip() for n in names.replace("/", " ").split()]:
                    fate = words
                    break
        out.append((arg, fate))
    return out


def _is_true(text: str | None) -> bool | None:
    """True / False for the literals, None for an expression; absent counts as None."""
    if text is None:
        return None
    if text.strip() == "True":
        return True
    if text.strip() in ("False", "None", "0"):
        return False
    return None


def _shuffle_lines(args: Mapping[str, str], var: str) -> list[str]:
    """A producer's per-epoch shuffle: a fresh permutation of all its rows each epoch."""
    seed = f", seed={args['seed']}" if "seed" in args else ""
    line = f"{var} = {var}.shuffle({var}.cardinality(){seed})"
    shuffle = _is_true(args.get("shuffle", "True"))
    if shuffle is None:
        return [f"if {args['shuffle']}:", "    " + line]
    return [line] if shuffle else []


def producer_lines(kind: str, args: Mapping[str, str], var: str, single: bool) -> Chain:
    """``string_input_producer`` / ``input_producer`` / ``range_input_producer`` as a Dataset.

    Args:
      kind: the producer.
      args: source text by legacy parameter name.
      var: the Dataset variable to assign.
      single: the input is statically one row (nothing to shuffle).
    """
    if kind == "range_input_producer":
        # TF 1.x's rows are int32; Dataset.range takes its limit as an int64
        limit = args["limit"].strip()
        if not limit.isdigit():
            limit = f"tf.cast({limit}, tf.int64)"
        lines = [f"{var} = tf.data.Dataset.range({limit}, output_type=tf.int32)"]
    else:
        first = "string_tensor" if kind == "string_input_producer" else "input_tensor"
        lines = [f"{var} = tf.data.Dataset.from_tensor_slices({args[first]})"]
    if not single:
        lines += _shuffle_lines(args, var)
    epochs = args.get("num_epochs")
    lines.append(f"{var} = {var}.repeat({'' if epochs in (None, 'None') else epochs})")
    return Chain(lines, fates(kind, args))


def as_tuple(text: str) -> str:
    """A list display ``[a, b]`` as the tuple ``(a, b)``; anything else as ``tuple(x)``."""
    try:
        node = cst.parse_expression(text.strip())
    except cst.ParserSyntaxError:
        return f"tuple({text})"
    if isinstance(node, (cst.List, cst.Tuple)):
        items = [cst.Module([]).code_for_node(e.value) for e in node.elements]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return f"tuple({text.strip()})"


def slice_lines(args: Mapping[str, str], var: str) -> Chain:
    """``slice_input_producer(tensor_list, ...)`` as ``from_tensor_slices(tuple)``.

    A list of one tensor is sliced bare (``from_tensor_slices(x)``): TF's
    ``batch([value])`` returns a tensor, not a list of one, and so do the
    Dataset's batches then.
    """
    tensors = as_tuple(args["tensor_list"])
    if tensors.startswith("(") and tensors.endswith(",)"):
        tensors = tensors[1:-2]
    lines = [f"{var} = tf.data.Dataset.from_tensor_slices({tensors})"]
    lines += _shuffle_lines(args, var)
    epochs = args.get("num_epochs")
    lines.append(f"{var} = {var}.repeat({'' if epochs in (None, 'None') else epochs})")
    return Chain(lines, fates("slice_input_producer", args))


def reader_dataset(kind: str, args: Mapping[str, str]) -> str:
    """The function of a file name giving the records a reader reads from it."""
    if kind == "TFRecordReader":
        compression = compression_code(args.get("options", "None"))
        if compression not in ('""', "''"):
            return f"lambda f: tf.data.TFRecordDataset(f, compression_type={compression})"
        return "tf.data.TFRecordDataset"
    if kind == "TextLineReader":
        skip = args.get("skip_header_lines")
        if skip is not None and skip.strip() not in ("None", "0"):
            return f"lambda f: tf.data.TextLineDataset(f).skip({skip})"
        return "tf.data.TextLineDataset"
    if kind == "FixedLengthRecordReader":
        if args.get("hop_bytes", "0").strip() not in ("0", "None"):
            raise Unsupported("FixedLengthRecordReader's `hop_bytes` (tf.data has no hop)")
        extra = "".join(
            f", {name}={args[name]}"
            for name in ("header_bytes", "footer_bytes")
            if name in args and args[name].strip() not in ("0", "None")
        )
        if "encoding" in args and args["encoding"].strip() != "None":
            extra += f", compression_type={args['encoding']}"
        return f"lambda f: tf.data.FixedLengthRecordDataset(f, {args['record_bytes']}{extra})"
    if kind == "WholeFileReader":
        return "tf.io.read_file"
    raise Unsupported(f"the reader {kind} has no plain tf.data spelling")


_COMPRESSIONS = {"NONE": "", "ZLIB": "ZLIB", "GZIP": "GZIP"}


def compression_code(options: str) -> str:
    """The ``compression_type`` string of a TFRecordReader's `options` source text.

    NOTE [ A TFRecordReader's options as a compression string ]
    TF 1.x's reader takes a ``TFRecordOptions``, a ``TFRecordCompressionType``
    or a string; ``TFRecordDataset`` takes only the string (``"ZLIB"``,
    ``"GZIP"``, ``""``). The spelled forms (``TFRecordOptions(ZLIB)``,
    ``TFRecordOptions(compression_type="GZIP", compression_level=9)``,
    ``TFRecordCompressionType.ZLIB``, ``"ZLIB"``) become the string; anything
    else (``options`` made in a variable) is converted where the Dataset is
    built, as the reader did: ``tf.io.TFRecordOptions.get_compression_type_string(options)``.
    The other fields of the options tune writing only.
    """
    text = options.strip()
    try:
        node: cst.BaseExpression | None = cst.parse_expression(text)
    except cst.ParserSyntaxError:
        node = None
    if isinstance(node, cst.Call) and _dotted(node.func).endswith("TFRecordOptions"):
        given = [a for a in node.args if a.keyword is None or a.keyword.value == "compression_type"]
        node = given[0].value if given and not given[0].star else None
        if not given:
            return '""'
    if isinstance(node, cst.Name) and node.value == "None":
        return '""'
    literal = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    if isinstance(literal, str) and literal in ("", "ZLIB", "GZIP"):
        return f'"{literal}"'
    if isinstance(node, cst.Attribute) and _dotted(node.value).endswith("TFRecordCompressionType"):
        if node.attr.value in _COMPRESSIONS:
            return f'"{_COMPRESSIONS[node.attr.value]}"'
    if isinstance(node, cst.Integer) and node.value in ("0", "1", "2"):
        return f'"{["", "ZLIB", "GZIP"][int(node.value)]}"'
    return f"tf.io.TFRecordOptions.get_compression_type_string({text})"


def _dotted(node: cst.BaseExpression) -> str:
    """``a.b.c`` of an attribute chain (empty for anything else)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr.value}" if inner else ""
    return ""


def chunks_dataset(reader_fn: str, count: str) -> str:
    """The function of a file name giving the chunks ``read_up_to(queue, count)`` reads.

    NOTE [ read_up_to as per-file chunks ]
    A call of ``read_up_to(queue, n)`` returns up to `n` records of the file
    it reads and never spans two files once it has one (the spec's reader
    contract: 5-record files with n=3 give 3, 2, 3, 2): each file's records
    batched by `n`, the last batch of each file partial. A whole-file reader's
    chunks are its one record each.
    """
    if reader_fn == "tf.io.read_file":
        return "lambda f: tf.data.Dataset.from_tensors(tf.io.read_file(f)).batch(1)"
    if reader_fn.startswith("lambda f: "):
        return f"{reader_fn}.batch({count})"
    return f"lambda f: {reader_fn}(f).batch({count})"


def records_of(reader_fn: str, files: str) -> str:
    """The Dataset of records a reader reads from the Dataset of file names `files`.

    tf.data's readers take a Dataset of file names themselves
    (``tf.data.TFRecordDataset(files)``), which is also faster than a
    ``flat_map`` of one reader per file; a reader that needs per-file work (a
    header line to skip) stays a ``flat_map``, ``read_file`` a ``map``.
    """
    if re.fullmatch(r"tf\.data\.\w+", reader_fn):
        return f"{reader_fn}({files})"
    match = re.fullmatch(r"lambda f: (tf\.data\.\w+)\(f(, [^()]*)?\)", reader_fn)
    if match is not None:
        return f"{match.group(1)}({files}{match.group(2) or ''})"
    if reader_fn == "tf.io.read_file":
        return f"{files}.map(tf.io.read_file)"
    return f"{files}.flat_map({reader_fn})"


def keyed_records_of(kind: str, args: Mapping[str, str], files: str) -> str:
    """The Dataset of ``(key, value)`` pairs a reader reads from the file names `files`.

    The keys are the legacy reader's own strings (the spec's reader table):
    ``"<file>:<line>"`` (1-based, counting skipped header lines) for
    TextLineReader, ``"<file>:<record index>"`` (0-based) for
    FixedLengthRecordReader, ``"<file>:<byte offset of the record's frame>"``
    for TFRecordReader (each frame is 16 bytes more than its payload), and
    the file name itself for WholeFileReader.
    """
    reader_fn = reader_dataset(kind, args)
    if kind == "WholeFileReader":
        return f"{files}.map(lambda f: (f, tf.io.read_file(f)))"

    def numbered(start: str, data: str) -> str:
        return (
            f"{files}.flat_map(\n    lambda f: {data}.enumerate({start}).map(\n"
            '        lambda n, v: (tf.strings.join([f, ":", tf.strings.as_string(n)]), v)\n'
            "    )\n)"
        )

    if kind == "TextLineReader":
        skip = args.get("skip_header_lines")
        skip = "0" if skip is None or skip.strip() == "None" else skip.strip()
        return numbered(
            f"{skip} + 1" if skip != "0" else "1",
            f"tf.data.TextLineDataset(f).skip({skip})"
            if skip != "0"
            else "tf.data.TextLineDataset(f)",
        )
    if kind == "FixedLengthRecordReader":
        return numbered("0", f"({reader_fn})(f)")
    if kind == "TFRecordReader":
        data = (
            "tf.data.TFRecordDataset(f)"
            if reader_fn == "tf.data.TFRecordDataset"
            else f"({reader_fn})(f)"
        )
        return (
            f"{files}.flat_map(\n    lambda f: {data}.scan(\n"
            "        tf.constant(0, tf.int64),\n"
            "        lambda at, v: (\n"
            "            at + 16 + tf.cast(tf.strings.length(v), tf.int64),\n"
            '            (tf.strings.join([f, ":", tf.strings.as_string(at)]), v),\n'
            "        ),\n"
            "    )\n)"
        )
    raise Unsupported(f"the keys of {kind} have no plain tf.data spelling")


def batching_lines(
    kind: str, args: Mapping[str, str], var: str, keep: str | None = None, rank: int | None = None
) -> Chain:
    """A batching call's filter / shuffle / batch / padded_batch chain on `var`.

    The ``prefetch(AUTOTUNE)`` that ends the pipeline is written where the
    function returns the Dataset. `keep`: a ``maybe_*`` call's keep value, which the
    element carries (NOTE [ keep_input as a filter ]), `rank` its rank.
    """
    if "shapes" in args and args["shapes"].strip() != "None":
        raise Unsupported(f"{kind}'s `shapes` (set the shapes in the decode function)")
    many = _is_true(args.get("enqueue_many"))
    if args.get("enqueue_many") is not None and many is None:
        raise Unsupported(f"`enqueue_many={args['enqueue_many']}` is not a literal")
    before, after = kept_inputs.filter_lines(var, bool(many), rank) if keep else ([], [])
    lines = list(before)
    if many:
        lines.append(f"{var} = {var}.unbatch()")
    lines += after
    if "shuffle" in kind:
        seed = f", seed={args['seed']}" if "seed" in args else ""
        lines.append(f"{var} = {var}.shuffle({args['capacity']}{seed})")
    smaller = args.get("allow_smaller_final_batch")
    if smaller is None or _is_true(smaller) is False:
        drop = ", drop_remainder=True"
    elif _is_true(smaller):
        drop = ""
    else:
        inner = smaller if smaller.isidentifier() else f"({smaller})"
        drop = f", drop_remainder=not {inner}"
    pad = _is_true(args.get("dynamic_pad"))
    if pad is None and args.get("dynamic_pad") is not None:
        raise Unsupported(f"`dynamic_pad={args['dynamic_pad']}` is not a literal")
    method = "padded_batch" if pad else "batch"
    lines.append(f"{var} = {var}.{method}({args['batch_size']}{drop})")
    return Chain(lines, fates(kind, args))
