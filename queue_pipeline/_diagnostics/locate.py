"""Where an input error came from: the file and record behind it, and partial-tail warnings.

Three pieces, all behind the diagnostics switches of
:mod:`queue_pipeline._core.settings`:

* :func:`describe_origin`: a short text naming the file and record behind a
  runner thread's error, for the message the consumer sees.
* :func:`consumer_error`: the same for an error raised in the consumer's own
  step (a reader's value decoded in the main thread, a batch of raw records
  decoded after the dequeue), as the error to raise instead (same type).
* :func:`warn_partial_tails` (``tail_warning``): one warning per file that a
  FixedLengthRecordReader will read with a partial record at its end, which
  TF 1.x drops silently (spec P21).

Nothing is recorded while a pipeline runs: decode errors are traced back to
their record after the fact (NOTE [ Finding the failing record ] in
``_diagnostics/records.py``), reader errors by re-reading the files. Nothing here
raises: every failure degrades to "" (or None) or to no warning.
"""

from __future__ import annotations

import re
import time
import zlib

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline import plan
from queue_pipeline._diagnostics import records as _records
from queue_pipeline._diagnostics import sources
from queue_pipeline._core.compat import logger

__all__ = ["consumer_error", "describe_origin"]

# The time budget of one description, in seconds (file checks and record scans stop).
_BUDGET_SECS = 3.0
# Traversal and reporting bounds.
_MAX_NAMED = 3


# --------------------------------------------------------------------------- describe_origin


def describe_origin(error: BaseException, runner, sess) -> str:
    """A short text naming the file and record behind a runner thread's error.

    What it can say depends on the error:

    * a file-system error (missing, unreadable, a directory) already names
      the path: ``"file /d/gone.csv"``;
    * a reader's ``DataLossError`` (bad CRC, truncated record, wrong
      compression) names no file: the statically known files of the producer
      feeding the reader are re-read with the reader's settings until one
      fails the same way, within the time budget:
      ``"file /d/b.tfrecord, record /d/b.tfrecord:18"``, plus a hint when the
      compression is wrong;
    * an error after the read (``decode_csv``, ``parse_single_example``,
      ``decode_raw``) is traced to its record by decoding the reader's files
      again (NOTE [ Finding the failing record ] in ``_diagnostics/records.py``):
      ``"file /d/a.csv, line 17 (record /d/a.csv:17)"``, or ``"one of the
      records ..."`` when several fail the same way;
    * a producer's "non-null input tensor" error names the glob of its
      ``match_filenames_once``: ``"no file matches the pattern /d/*.csv"``.

    Args:
      error: the exception the runner thread caught.
      runner: the QueueRunner (only its ``enqueue_ops`` are used).
      sess: the Session the runner ran in (only its graph is used).

    Returns:
      The text, or ``""`` when nothing is known. It never raises, and it
      gives up after a few seconds.
    """
    try:
        graph = getattr(sess, "graph", None)
        ops = sources.runner_ops(runner)
        if graph is None and ops:
            graph = ops[0].graph
        if graph is None:
            return ""
        return _describe(error, graph, ops, time.monotonic() + _BUDGET_SECS)
    except Exception as e:  # noqa: BLE001 - diagnostics must never mask the error
        logger.debug("queue_pipeline could not locate the origin of %r: %s", error, e)
        return ""


def consumer_error(error: BaseException, graph: tf.Graph) -> BaseException | None:
    """`error`, raised in a consumer's own step, rebuilt with its input named; or None.

    For read and decode errors whose records come from a queue_pipeline
    reader read in the step (or one batching queue upstream), the message
    becomes ``queue_pipeline: op '<name>' failed on an input record. Input:
    <origin>. Original error: <TF's message>``, with ``error``'s type. None
    when the error concerns no record (then TF's error stands).
    """
    if "queue_pipeline:" in _message(error):
        return None
    text = _message(error)
    failing = _failing_op(error, text, graph)
    if failing is None:
        return None
    try:
        origin = _describe(error, graph, [failing], time.monotonic() + _BUDGET_SECS)
    except Exception as e:  # noqa: BLE001 - diagnostics must never mask the error
        logger.debug("queue_pipeline could not locate the origin of %r: %s", error, e)
        return None
    if not origin:
        return None
    message = (
        f"queue_pipeline: op '{failing.name}' failed on an input record. "
        f"Input: {origin}. Original error: {text}"
    )
    if isinstance(error, tf.errors.OpError):
        return type(error)(error.node_def, error.op, message)
    return None


def _describe(error, graph, ops, deadline) -> str:
    text = _message(error)
    failing = _failing_op(error, text, graph)
    if failing is not None and failing.type in graph_facts.READ_OPS:
        return _describe_read_error(error, text, failing, deadline)
    if failing is not None and failing.type == "IteratorGetNext":
        # The dataset engine's reader twin failed: the legacy reads behind it.
        for read_op in sources.served_reads(failing):
            found = _describe_read_error(error, text, read_op, deadline)
            if found:
                return found
    path = _named_path(text)
    if path:
        return f"file {path}"
    if failing is not None:
        found = _describe_records(text, failing, deadline)
        if found:
            return found
    return _describe_producer_error(text, ops)


def _message(error) -> str:
    return getattr(error, "message", None) or str(error)


_NODE_PATTERNS = (re.compile(r"\{\{node ([^}]+)\}\}"), re.compile(r"Node: '([^']+)'"))


# Import scopes of the regions the dataset engine and to_dataset lift into
# functions: a node "lifted/DecodeCSV" in an iterator's error is the legacy
# graph's "DecodeCSV", which still exists.
_LIFTED_SCOPES = ("lifted/", "vectorized/", "per_record/")


def _failing_op(error, text, graph) -> tf.Operation | None:
    """The legacy op an error names: its ``op``, else the first ``{{node X}}`` found.

    An iterator's ``IteratorGetNext`` counts only when nothing else is named
    (an error raised by a callable, as cached steps run, has no ``op``: its
    ``{{node X}}`` names it).
    """
    op = getattr(error, "op", None)
    if isinstance(op, tf.Operation) and op.type != "IteratorGetNext":
        return op
    fallback = op if isinstance(op, tf.Operation) else None
    for pattern in _NODE_PATTERNS:
        for name in pattern.findall(text):
            for candidate in [name] + [
                name[len(s) :] for s in _LIFTED_SCOPES if name.startswith(s)
            ]:
                try:
                    found = graph.get_operation_by_name(candidate)
                except (KeyError, ValueError):
                    continue
                if found.type != "IteratorGetNext":
                    return found
                fallback = fallback or found
    return fallback


def _named_path(text: str) -> str | None:
    """The path a file-system error names ("<path>; No such file or directory")."""
    match = re.search(
        r"^\s*(.+?); (No such file or directory|Permission denied|"
        r"Is a directory|Not a directory)",
        text,
        re.M,
    )
    return match.group(1) if match else None


# --- errors raised by the read op itself -------------------------------------


def _describe_read_error(error, text, read_op, deadline) -> str:
    """A reader's own error: the path it names, or the file that reproduces it."""
    path = _named_path(text)
    if path:
        return f"file {path}"
    if not isinstance(error, tf.errors.DataLossError):
        return ""
    reader = sources.reader_op(read_op)
    files = sources.static_files(read_op, deadline)
    matches, checked = [], 0
    for path in files:
        if time.monotonic() > deadline:
            break
        checked += 1
        found = _file_problem(reader, path, deadline)
        if found is not None and _same_problem(found[0], text):
            matches.append((path, found[1]))
    if not matches:
        return ""
    if len(matches) == 1:
        path, offset = matches[0]
        record = f", record {path}:{offset}" if offset is not None else ""
        return f"file {path}{record}{_compression_hint(reader, path)}"
    names = ", ".join(path for path, _ in matches[:_MAX_NAMED])
    more = f" and {len(matches) - _MAX_NAMED} more" if len(matches) > _MAX_NAMED else ""
    unchecked = "" if checked == len(files) else f" ({len(files) - checked} not checked)"
    return (
        f"one of the files {names}{more}{unchecked} (each fails this way)"
        f"{_compression_hint(reader, matches[0][0])}"
    )


_PROBLEM = re.compile(
    r"(corrupted record at \d+|truncated record at \d+|"
    r"inflate\(\) failed with error -?\d+|"
    r"Is this even a TFRecord file\?)"
)


def _same_problem(found: str, text: str) -> bool:
    ours = set(_PROBLEM.findall(found))
    return bool(ours) and ours <= set(_PROBLEM.findall(text))


def _file_problem(reader: tf.Operation, path: str, deadline) -> tuple[str, int | None] | None:
    """(error text, frame offset or None) if `path` fails to read with `reader`'s settings."""
    if reader.type == "TFRecordReaderV2":
        compression = reader.get_attr("compression_type")
        compression = compression.decode() if isinstance(compression, bytes) else compression
        return _tfrecord_problem(path, compression, deadline)
    if reader.type == "FixedLengthRecordReaderV2":
        encoding = reader.get_attr("encoding")
        encoding = encoding.decode() if isinstance(encoding, bytes) else encoding
        if encoding in ("GZIP", "ZLIB"):
            return _inflate_problem(path, encoding, deadline)
    return None


def _tfrecord_problem(path, compression, deadline):
    """Reads `path` as TF's record reader does (same C++ reader), up to `deadline`."""
    options = tf.io.TFRecordOptions(compression or None)
    offset = 0
    try:
        for record in _record_iterator()(path, options):
            offset += 16 + len(record)
            if time.monotonic() > deadline:
                return None
    except tf.errors.OpError as e:
        # Every record before the failing frame was read: `offset` is its start,
        # the key TFRecordReader gives it (offsets count uncompressed bytes).
        return _message(e), offset
    except Exception:  # noqa: BLE001 - e.g. a missing file: not this problem
        return None
    return None


def _record_iterator():
    """TF's TFRecord file iterator, without its one-time deprecation notice.

    It is TF's file-format layer (``python/lib/io``, the C++ record reader the
    kernel uses, so it raises the kernel's own messages), not the queue input
    layer; it works with and without eager execution.
    """
    iterator = tf.compat.v1.io.tf_record_iterator
    return getattr(iterator, "__wrapped__", iterator)


def _inflate_problem(path, encoding, deadline):
    wbits = 16 + zlib.MAX_WBITS if encoding == "GZIP" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        with open(path, "rb") as f:
            while time.monotonic() < deadline:
                chunk = f.read(1 << 20)
                if not chunk:
                    return None
                inflater.decompress(chunk, 1 << 16)
                while inflater.unconsumed_tail and time.monotonic() < deadline:
                    inflater.decompress(inflater.unconsumed_tail, 1 << 16)
    except zlib.error as e:
        match = re.search(r"error (-?\d+)", str(e), re.I)
        code = match.group(1) if match else "?"
        return f"inflate() failed with error {code}: {e}", None
    except OSError:
        return None
    return None


def _compression_hint(reader: tf.Operation, path: str) -> str:
    """A hint when the file's compression differs from the reader's setting."""
    try:
        with open(path, "rb") as f:
            head = f.read(2)
    except OSError:
        return ""
    gzipped = head == b"\x1f\x8b"
    if reader.type == "TFRecordReaderV2":
        setting = reader.get_attr("compression_type")
        fix = "pass options='GZIP' to TFRecordReader"
    elif reader.type == "FixedLengthRecordReaderV2":
        setting = reader.get_attr("encoding")
        fix = "pass encoding='GZIP' to FixedLengthRecordReader"
    else:
        return ""
    setting = (setting.decode() if isinstance(setting, bytes) else setting) or ""
    if gzipped and setting != "GZIP":
        return f" (the file is GZIP-compressed: {fix})"
    if setting == "GZIP" and not gzipped:
        return " (the reader expects GZIP but the file is not GZIP-compressed)"
    if setting == "ZLIB" and not head.startswith(b"\x78"):
        return " (the reader expects ZLIB but the file is not ZLIB-compressed)"
    return ""


# --- errors raised downstream of a read (decoders) ----------------------------


def _describe_records(text, failing, deadline) -> str:
    """The record(s) that fail like `text` at `failing`; see NOTE [ Finding the failing record ]."""
    named = []
    for source in _records.read_sources(failing)[:_MAX_NAMED]:
        files = sources.static_files(source.read_op, deadline)
        keys, _ = _records.failing_records(source, files, text, deadline)
        reader_type = sources.reader_op(source.read_op).type
        named += [_records.describe_key(key, reader_type) for key in keys]
    named = list(dict.fromkeys(named))
    if len(named) == 1:
        return named[0]
    if named:
        shown = "; ".join(named[:_MAX_NAMED])
        more = f" and {len(named) - _MAX_NAMED} more" if len(named) > _MAX_NAMED else ""
        return f"one of the records {shown}{more} (each fails this way)"
    return ""


# --- errors raised by a producer ---------------------------------------------


def _describe_producer_error(text, ops) -> str:
    if "non-null input tensor" not in text:
        return ""
    patterns = (
        [
            node.args.get("pattern")
            for node in plan.plan_for(*ops)
            if node.kind == "match_filenames_once"
        ]
        if ops
        else []
    )
    texts = [text for text in map(sources.constant_text, patterns) if text]
    return f"no file matches the pattern {', '.join(texts)}" if texts else ""
