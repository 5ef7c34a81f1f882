"""Where a runner's error came from: the file and record behind it, and partial-tail warnings.

Three pieces, all behind the diagnostics switches of
:mod:`queue_pipeline._settings`:

* :func:`track_last_key` (``runner_errors``): the readers' ``read`` and
  ``read_up_to`` remember the key(s) they just produced in a per-session
  resource, so an error raised later in the same step (a decoder) can name
  the record. See NOTE [ Last key ].
* :func:`describe_origin`: a short text naming the file and record behind a
  runner's error, for the message the consumer sees.
* :func:`warn_partial_tails` (``tail_warning``): one warning per file that a
  FixedLengthRecordReader will read with a partial record at its end, which
  TF 1.x drops silently (spec P21).

Nothing here raises: every failure degrades to "" or to no warning.
"""

from __future__ import annotations

import os
import re
import threading
import time
import zlib
from typing import Iterable

import tensorflow as tf

from queue_pipeline import _settings, plan
from queue_pipeline._compat import logger
from queue_pipeline._diagnostics import GUARD_SUFFIX

__all__ = ["describe_origin", "partial_tail", "track_last_key",
           "warn_partial_tails"]

_LAST_KEY = "last_key"  # the lookup op under "<read op>_qp_guard/"
_KEY_SEPARATOR = "\0"  # between the keys of one read_up_to; never in a file name

# Time budgets, in seconds: the whole description, and running one lookup.
_BUDGET_SECS = 3.0
_LOOKUP_TIMEOUT_MS = 2000
# Traversal and reporting bounds.
_MAX_OPS = 50_000
_MAX_NAMED = 3

_READ_OPS = ("ReaderReadV2", "ReaderReadUpToV2", "ReaderRead", "ReaderReadUpTo")
# Readers whose key is "<file>:<record>"; the others' key is the work unit itself.
_SUFFIXED_KEYS = ("TextLineReaderV2", "FixedLengthRecordReaderV2", "TFRecordReaderV2")

# NOTE [ Last key ]
# Decoder errors ("Expect 3 fields but have 2 in record 0") name neither the
# file nor the line, and no reader kernel exposes the key it produced last.
# Under the `runner_errors` switch each read stores the key(s) it
# produced in a MutableHashTable (shared by node name, so it is per session
# and needs no initializer) and returns its value through an Identity with a
# control dependency on that store: whatever decodes the value runs after the
# key is stored. The lookup op is built at read() time, because graphs are
# finalized by MonitoredTrainingSession before any error happens. All these
# ops sit under "<read op name>_qp_guard/", so TF's own names are untouched
# and structural comparisons can skip them. When several threads share one
# reader the stored key is the most recent record read by any of them, which
# is the failing record only approximately; describe_origin says so. The
# cost is two small ops per run (three for read_up_to, which joins its keys):
# no measurable change (under 1%) in a CSV read + decode_csv step of ~37 us.


def _guard_scope(read_op: tf.Operation) -> str:
    return f"{read_op.name}{GUARD_SUFFIX}/"


def track_last_key(read_op: tf.Operation, keys: tf.Tensor, values: tf.Tensor) -> tf.Tensor:
    """Makes `values` remember `keys` in the session; returns the values to hand out.

    Args:
      read_op: the ``ReaderReadV2`` or ``ReaderReadUpToV2`` op.
      keys: its key output (a scalar, or a vector for read_up_to).
      values: its value output.

    Returns:
      `values` itself when the ``runner_errors`` diagnostic is off; otherwise
      an identity of it that runs after the keys are stored. See
      NOTE [ Last key ].
    """
    if not _settings.current().runner_errors:
        return values
    scope = _guard_scope(read_op)
    with tf.compat.v1.name_scope(scope):
        with tf.control_dependencies(None):
            table = tf.raw_ops.MutableHashTableV2(
                key_dtype=tf.int64, value_dtype=tf.string, use_node_name_sharing=True,
                name="table")
            slot = tf.constant(0, tf.int64, name="slot")
            tf.raw_ops.LookupTableFindV2(
                table_handle=table, keys=slot,
                default_value=tf.constant("", name="no_key"), name=_LAST_KEY)
        stored = keys
        if keys.shape.rank != 0:
            stored = tf.raw_ops.ReduceJoin(inputs=keys, reduction_indices=0,
                                           separator=_KEY_SEPARATOR, name="joined_keys")
        store = tf.raw_ops.LookupTableInsertV2(table_handle=table, keys=slot,
                                               values=stored, name="store")
        with tf.control_dependencies([store]):
            return tf.identity(values, name="value")


# --------------------------------------------------------------------------- describe_origin

def describe_origin(error: BaseException, runner, sess) -> str:
    """A short text naming the file and record behind a runner's error.

    What it can say depends on the error:

    * a file-system error (missing, unreadable, a directory) already names
      the path: ``"file /d/gone.csv"``;
    * a reader's ``DataLossError`` (bad CRC, truncated record, wrong
      compression) names no file: the statically known files of the producer
      feeding the reader are re-read with the reader's settings (the file of
      the most recent record first) until one fails the same way, within the
      time budget: ``"file /d/b.tfrecord, record /d/b.tfrecord:18"``, plus a
      hint when the compression is wrong;
    * an error after the read (``decode_csv``, ``parse_single_example``,
      ``decode_raw``) names the key the reader stored last (see NOTE
      [ Last key ]), the one at ``record N`` of the message for
      ``read_up_to``: ``"file /d/a.csv, record /d/a.csv:17"``; when several
      threads share the reader it is ``"file /d/a.csv, most recent record
      read /d/a.csv:17 (2 threads share reader 'TextLineReaderV2')"``;
    * a producer's "non-null input tensor" error names the glob of its
      ``match_filenames_once``: ``"no file matches the pattern /d/*.csv"``.

    Args:
      error: the exception the runner thread caught.
      runner: the QueueRunner (only its ``enqueue_ops`` are used).
      sess: the Session the runner ran in; the last-key lookups run in it.

    Returns:
      The text, or ``""`` when nothing is known. It never raises, and it
      gives up after a few seconds (file checks stop at a time budget).
    """
    try:
        deadline = time.monotonic() + _BUDGET_SECS
        return _describe(error, runner, sess, deadline)
    except Exception as e:  # noqa: BLE001 - diagnostics must never mask the error
        logger.debug("queue_pipeline could not locate the origin of %r: %s", error, e)
        return ""


def _describe(error, runner, sess, deadline) -> str:
    graph = getattr(sess, "graph", None)
    ops = _runner_ops(runner)
    if graph is None and ops:
        graph = ops[0].graph
    if graph is None:
        return ""
    text = _message(error)
    failing = _failing_op(error, text, graph)
    if failing is not None and failing.type in _READ_OPS:
        return _describe_read_error(error, text, failing, sess, deadline)
    path = _named_path(text)
    if path:
        return f"file {path}"
    # A decoder (or anything after a read): the reads it depends on, or, when
    # the failing op is unknown, every read the runner's ops run.
    reads = _upstream_reads([failing] if failing is not None else ops)
    if reads:
        return _describe_last_keys(text, reads, runner, sess)
    return _describe_producer_error(text, ops)


def _message(error) -> str:
    return getattr(error, "message", None) or str(error)


def _runner_ops(runner) -> list:
    ops = []
    for item in list(getattr(runner, "enqueue_ops", None) or []):
        op = item if isinstance(item, tf.Operation) else getattr(item, "op", None)
        if isinstance(op, tf.Operation):
            ops.append(op)
    return ops


_NODE_PATTERNS = (re.compile(r"\{\{node ([^}]+)\}\}"), re.compile(r"Node: '([^']+)'"))


def _failing_op(error, text, graph) -> tf.Operation | None:
    op = getattr(error, "op", None)
    if isinstance(op, tf.Operation):
        return op
    for pattern in _NODE_PATTERNS:
        match = pattern.search(text)
        if match:
            try:
                return graph.get_operation_by_name(match.group(1))
            except (KeyError, ValueError):
                continue
    return None


def _ancestors(start: Iterable[tf.Operation]) -> set:
    """Ops `start` depends on (data and control inputs), bounded in size."""
    seen, stack = set(), list(start)
    while stack and len(seen) < _MAX_OPS:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return seen


def _upstream_reads(start) -> list:
    """The reader read ops `start` runs in its own step, in name order."""
    return sorted((op for op in _ancestors(start) if op.type in _READ_OPS),
                  key=lambda op: op.name)


def _reader_op(read_op: tf.Operation) -> tf.Operation:
    return read_op.inputs[0].op


def _named_path(text: str) -> str | None:
    """The path a file-system error names ("<path>; No such file or directory")."""
    match = re.search(r"^\s*(.+?); (No such file or directory|Permission denied|"
                      r"Is a directory|Not a directory)", text, re.M)
    return match.group(1) if match else None


# --- errors raised by the read op itself -------------------------------------

def _describe_read_error(error, text, read_op, sess, deadline) -> str:
    """A reader's own error: the path it names, or the file that reproduces it."""
    path = _named_path(text)
    if path:
        return f"file {path}"
    if not isinstance(error, tf.errors.DataLossError):
        return ""
    reader = _reader_op(read_op)
    keys = _last_keys(read_op, sess)
    unknown = f"most recent record read before the error: {keys[-1]}" if keys else ""
    files = _static_files(read_op, deadline)
    if not files:
        return unknown
    last_file = _file_of(keys[-1], reader) if keys else None
    # The failing file is often the one being read (a corrupt record in the
    # middle); try it first, then the others, until the budget runs out.
    if last_file in files:
        files = [last_file] + [f for f in files if f != last_file]
    matches, checked = [], 0
    for path in files:
        if time.monotonic() > deadline:
            break
        checked += 1
        found = _file_problem(reader, path, deadline)
        if found is not None and _same_problem(found[0], text):
            matches.append((path, found[1]))
            if path == last_file:
                break  # the file being read fails exactly this way
    if not matches:
        return unknown
    if len(matches) == 1 or matches[0][0] == last_file:
        path, offset = matches[0]
        record = f", record {path}:{offset}" if offset is not None else ""
        return f"file {path}{record}{_compression_hint(reader, path)}"
    names = ", ".join(path for path, _ in matches[:_MAX_NAMED])
    more = f" and {len(matches) - _MAX_NAMED} more" if len(matches) > _MAX_NAMED else ""
    unchecked = "" if checked == len(files) else f" ({len(files) - checked} not checked)"
    return (f"one of the files {names}{more}{unchecked} (each fails this way)"
            f"{_compression_hint(reader, matches[0][0])}")


_PROBLEM = re.compile(r"(corrupted record at \d+|truncated record at \d+|"
                      r"inflate\(\) failed with error -?\d+|"
                      r"Is this even a TFRecord file\?)")


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

def _describe_last_keys(text, reads, runner, sess) -> str:
    """Names the key(s) each of `reads` stored last (see NOTE [ Last key ])."""
    match = re.search(r"in record (\d+)", text)  # the decoders' index in their input
    index = int(match.group(1)) if match else None
    parts = []
    for read_op in reads[:_MAX_NAMED]:
        keys = _last_keys(read_op, sess)
        if not keys:
            continue
        if index is not None and index < len(keys):
            key, what = keys[index], f"record {keys[index]}"
        elif len(keys) > 1:  # read_up_to, and the record is unknown: the batch
            key, what = keys[-1], f"records {keys[0]} to {keys[-1]}"
        else:
            key, what = keys[-1], f"record {keys[-1]}"
        reader = _reader_op(read_op)
        sharing = _threads_sharing(read_op, runner)
        if sharing > 1:
            what = what.replace("record ", "record read ", 1).replace(
                "records ", "records read ", 1)
            what = f"most recent {what} ({sharing} threads share reader '{reader.name}')"
        unit = "work unit" if reader.type.startswith("IdentityReader") else "file"
        parts.append(f"{unit} {_file_of(key, reader)}, {what}")
    return "; ".join(parts)


def _last_keys(read_op: tf.Operation, sess) -> list[str]:
    """The key(s) `read_op` stored in `sess` (see NOTE [ Last key ]), or []."""
    try:
        lookup = read_op.graph.get_tensor_by_name(f"{_guard_scope(read_op)}{_LAST_KEY}:0")
    except (KeyError, ValueError):
        return []
    run = getattr(getattr(sess, "run", None), "__wrapped__", None) or sess.run
    try:
        value = run(lookup, options=tf.compat.v1.RunOptions(
            timeout_in_ms=_LOOKUP_TIMEOUT_MS))
    except Exception:  # noqa: BLE001 - a closed session, a timeout: unknown
        return []
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return [key for key in text.split(_KEY_SEPARATOR) if key] if text else []


def _file_of(key: str, reader: tf.Operation) -> str:
    if reader.type in _SUFFIXED_KEYS and ":" in key:
        return key.rsplit(":", 1)[0]
    return key


def _threads_sharing(read_op: tf.Operation, runner) -> int:
    """How many of `runner`'s enqueue threads run `read_op` (an op listed twice counts twice)."""
    count = 0
    cache: dict = {}
    for op in _runner_ops(runner):
        if op not in cache:
            cache[op] = read_op in _ancestors([op])
        count += cache[op]
    return count


# --- errors raised by a producer ---------------------------------------------

def _describe_producer_error(text, ops) -> str:
    if "non-null input tensor" not in text:
        return ""
    patterns = [node.args.get("pattern") for node in plan.plan_for(*ops)
                if node.kind == "match_filenames_once"] if ops else []
    patterns = [_constant_text(p) for p in patterns]
    patterns = [p for p in patterns if p]
    return f"no file matches the pattern {', '.join(patterns)}" if patterns else ""


def _constant_text(value) -> str | None:
    if isinstance(value, (str, bytes)):
        return value.decode() if isinstance(value, bytes) else value
    try:
        static = tf.get_static_value(value)
    except Exception:  # noqa: BLE001
        return None
    if static is None:
        return None
    flat = [v.decode() if isinstance(v, bytes) else str(v)
            for v in getattr(static, "flat", [static])]
    return ", ".join(flat)


# --- the files behind a reader ------------------------------------------------

def _static_files(read_op: tf.Operation, deadline) -> list[str]:
    """The file names the producer feeding `read_op`'s queue holds, if known statically.

    Known are a constant list given to a queue_pipeline producer, and the
    glob of a ``match_filenames_once`` (evaluated now, in Python).
    """
    queue_op = read_op.inputs[1].op
    files: list[str] = []
    for node in plan.plan_for(queue_op):
        if node.kind == "match_filenames_once":
            for pattern in (_constant_text(node.args.get("pattern")) or "").split(", "):
                if pattern and time.monotonic() < deadline:
                    files.extend(sorted(tf.io.gfile.glob(pattern)))
        elif node.kind in ("string_input_producer", "input_producer") \
                and _fills(node, queue_op) and node.inputs:
            try:
                static = tf.get_static_value(node.inputs[0])
            except Exception:  # noqa: BLE001
                static = None
            if static is not None:
                files.extend(v.decode() if isinstance(v, bytes) else str(v)
                             for v in getattr(static, "flat", [static]))
    return list(dict.fromkeys(files))


def _fills(node, queue_op) -> bool:
    queue = node.fills
    return queue is not None and getattr(getattr(queue, "queue_ref", None), "op", None) is queue_op


# --------------------------------------------------------------------------- partial tails

_WARNED_LOCK = threading.Lock()
_WARNED: set = set()
_TAIL_BUDGET_SECS = 2.0


def warn_partial_tails(runner) -> None:
    """Warns once per file that a FixedLengthRecordReader upstream will truncate.

    For every ``FixedLengthRecordReader`` whose reads `runner`'s enqueue ops
    run, and whose files are statically known (a constant list given to the
    producer, or a ``match_filenames_once`` glob), it checks each file's size:
    records start at ``header_bytes + i * stride`` and only records ending at
    or before ``size - footer_bytes`` are produced, so bytes from the first
    record start that does not fit are dropped, silently in TF 1.x. It logs
    one warning (logger ``queue_pipeline``) per file and reader configuration
    per process. Compressed files (``encoding`` GZIP or ZLIB), missing files
    and ``record_bytes=0`` are skipped; the check stops after a time budget.

    Args:
      runner: a QueueRunner (its ``enqueue_ops`` are inspected).

    It never raises, and does nothing when the ``tail_warning`` diagnostic is off.
    """
    try:
        if not _settings.current().tail_warning:
            return
        deadline = time.monotonic() + _TAIL_BUDGET_SECS
        for read_op in _upstream_reads(_runner_ops(runner)):
            reader = _reader_op(read_op)
            if reader.type != "FixedLengthRecordReaderV2":
                continue
            _warn_reader_tails(reader, _static_files(read_op, deadline), deadline)
    except Exception as e:  # noqa: BLE001 - a warning must never break a pipeline
        logger.debug("queue_pipeline could not check fixed-length tails: %s", e)


def _warn_reader_tails(reader: tf.Operation, files, deadline) -> None:
    attrs = {name: reader.get_attr(name) for name in
             ("record_bytes", "header_bytes", "footer_bytes", "hop_bytes")}
    encoding = reader.get_attr("encoding")
    encoding = encoding.decode() if isinstance(encoding, bytes) else encoding
    if encoding in ("GZIP", "ZLIB") or attrs["record_bytes"] <= 0:
        return
    for path in files:
        if time.monotonic() > deadline:
            return
        key = (path, *attrs.values())
        with _WARNED_LOCK:
            if key in _WARNED:
                continue
        try:
            size = (tf.io.gfile.stat(path).length if "://" in path
                    else os.stat(path).st_size)
        except Exception:  # noqa: BLE001 - a missing file: the reader reports it
            continue
        tail = partial_tail(size, **attrs)
        if tail is None:
            continue
        with _WARNED_LOCK:
            if key in _WARNED:
                continue
            _WARNED.add(key)
        start, unread = tail
        logger.warning(
            "queue_pipeline: FixedLengthRecordReader '%s': file %s has %d bytes, so "
            "with record_bytes=%d, header_bytes=%d, footer_bytes=%d, hop_bytes=%d it "
            "ends in a partial record at offset %d, which is dropped: %d bytes of the "
            "file are never read. TF 1.x drops them silently; check the record size, "
            "or pad the file.",
            reader.name, path, size, attrs["record_bytes"], attrs["header_bytes"],
            attrs["footer_bytes"], attrs["hop_bytes"], start, unread)


def partial_tail(size: int, record_bytes: int, header_bytes: int = 0,
                 footer_bytes: int = 0, hop_bytes: int = 0) -> tuple[int, int] | None:
    """(offset, bytes never read) of the partial record TF's kernel drops, or None.

    Record ``i`` starts at ``header_bytes + i * stride`` (stride: `hop_bytes`
    if positive, else `record_bytes`) and is produced only if it ends at or
    before ``size - footer_bytes``. The first start that does not fit, if it
    lies before that end, begins a partial record; its bytes after the end of
    the last produced record are never read (with overlapping records, the
    partial record may hold no unread byte at all: then there is nothing to
    report).

    >>> partial_tail(10, 4)
    (8, 2)
    >>> partial_tail(11, 4, hop_bytes=3)
    (9, 1)
    >>> partial_tail(10, 4, hop_bytes=3) is None
    True
    """
    end = size - footer_bytes
    available = end - header_bytes
    if record_bytes <= 0 or available <= 0:
        return None
    stride = hop_bytes if hop_bytes > 0 else record_bytes
    count = 0 if available < record_bytes else (available - record_bytes) // stride + 1
    start = header_bytes + count * stride
    last_end = header_bytes + (count - 1) * stride + record_bytes if count else header_bytes
    unread = end - max(start, last_end)
    if start >= end or unread <= 0:
        return None
    return start, unread
