"""Which record a decode error came from: found by decoding the reader's files again.

NOTE [ Finding the failing record ]
A decoder's error ("Expect 3 fields but have 2 in record 0", "Feature: label
... is required but could not be found") names neither the file nor the
record, and no reader kernel tells which record it produced last; with
several threads sharing one reader even a per-read record of the last key
would name the wrong one. Nothing is recorded while the pipeline runs, so
this costs nothing until an error happens. Then :func:`failing_records`:

1. finds the reader read whose records reach the failing op: in the same
   step (a decoder on a reader's value, in a runner thread or in the
   consumer's own step), or one batching queue downstream (raw records
   batched, the batch decoded after the dequeue);
2. lifts the ops from the read's value to the failing op into a function
   (``_lift``; through the queue, the record's region and the batch's
   region, the record fed as a batch of one);
3. reads the reader's statically known files again with its tf.data twin
   (same settings, same keys) in a private graph, maps the function over
   every record with ``ignore_errors``, and takes the keys that did not
   come through;
4. decodes each of those records alone and keeps those that fail with the
   same error (message compared with record indexes masked).

One match names the record exactly; several say "one of" and list them; none
within the time budget (``_BUDGET_SECS``) says nothing rather than guess.
"""

from __future__ import annotations

import re
import time

import numpy as np
import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._core.compat import readable_error
from queue_pipeline import plan
from queue_pipeline._rebuild import lift as _lift
from queue_pipeline.errors import NotRebuildableError

__all__ = ["describe_key", "failing_records", "kernel_message", "read_sources"]

_MAX_CHECKED = 10
_SCAN_BATCH = 4096
_MIN_SUFFIX = 20  # characters a message must share to count as the same failure
_RECORD_INDEX = re.compile(r"\b(in |at )?record \d+")


class _Source:
    """How a failing op's input comes from a reader read: the region(s) in between."""

    def __init__(self, read_op, record_region, batch_region=None, batched=False):
        self.read_op = read_op
        self.record_region = record_region  # value -> what the failing op (or queue) gets
        self.batch_region = batch_region  # dequeued -> failing op's outputs, or None
        self.batched = batched  # the queue is dequeued many at a time

    def decode(self, value: tf.Tensor) -> list:
        """The failing op's outputs for one record `value` (read-up-to records as [1])."""
        if self.read_op.type == "ReaderReadUpToV2":
            value = tf.expand_dims(value, 0)
        outputs = self.record_region(value)
        if self.batch_region is None:
            return outputs
        if self.batched:
            outputs = [tf.expand_dims(t, 0) for t in outputs]
        return self.batch_region(*outputs)


def _value_of(read_op: tf.Operation) -> tf.Tensor:
    return read_op.outputs[1]


def _step_reads(op: tf.Operation) -> list:
    """The reader reads in `op`'s own step (not across a queue), in name order."""
    walk = graph_facts.walk_back(
        [op],
        control=True,
        stop=lambda o: o.type in graph_facts.RESOURCE_READ_OPS or o.type.startswith("QueueDequeue"),
    )
    reads = [o for o in walk if o.type in graph_facts.RESOURCE_READ_OPS]
    return sorted(reads, key=lambda r: r.name)


def read_sources(failing: tf.Operation) -> list[_Source]:
    """Where `failing`'s records come from: reads in its step, or behind one queue.

    Each source can decode one record of its reader up to `failing`'s
    outputs. Regions that cannot be lifted (a py_func, state) are skipped.
    """
    if not failing.outputs:
        return []
    sinks = list(failing.outputs)
    sources = []
    for read_op in _step_reads(failing):
        try:
            region = _lift.lift(sinks, [_value_of(read_op)], api="queue_pipeline")
        except (NotRebuildableError, ValueError, TypeError):
            continue
        sources.append(_Source(read_op, region))
    if sources:
        return sources
    return _queued_sources(failing, sinks)


def _queued_sources(failing: tf.Operation, sinks: list) -> list[_Source]:
    """Sources one batching call upstream: a batch decoded after its dequeue.

    The batching call is found by its plan node, whose outputs are the
    faithful dequeue's or, under the dataset engine, the served iterator's
    (the same per-example inputs either way).
    """
    ancestors = graph_facts.ancestors([failing])
    nodes = [
        node
        for node in plan.plan_nodes(failing.graph)
        if node.kind in plan.BATCHING_KINDS
        and not node.args.get("enqueue_many")
        and any(getattr(t, "op", None) in ancestors for t in node.outputs)
    ]
    if not nodes:
        return []
    node = nodes[-1]  # the engine's node comes after the faithful one
    outputs = list(node.outputs)
    if any(isinstance(t, tf.SparseTensor) for t in outputs + list(node.inputs)):
        return []
    try:
        batch_region = _lift.lift(sinks, outputs, api="queue_pipeline")
    except (NotRebuildableError, ValueError, TypeError):
        return []
    size = len(outputs)
    sources = []
    for start in range(0, len(node.inputs), size):
        components = list(node.inputs[start : start + size])
        for read_op in _step_reads_of(components):
            try:
                record_region = _lift.lift(components, [_value_of(read_op)], api="queue_pipeline")
            except (NotRebuildableError, ValueError, TypeError):
                continue
            sources.append(_Source(read_op, record_region, batch_region, batched=True))
    return sources


def _step_reads_of(tensors: list) -> list:
    reads: dict = {}
    for t in tensors:
        for read_op in _step_reads(t.op):
            reads[read_op.name] = read_op
    return [reads[name] for name in sorted(reads)]


def _reader_node(read_op: tf.Operation):
    for node in plan.plan_nodes(read_op.graph):
        outputs = [getattr(t, "op", None) for t in node.outputs]
        if node.kind.endswith((".read", ".read_up_to")) and read_op in outputs:
            return node
    return None


def _twin_reader(node):
    """The tf.data twin of the reader behind `node`, with the same settings."""
    import inspect  # noqa: PLC0415

    from queue_pipeline.data import readers as data_readers  # noqa: PLC0415

    class_name = node.kind.rpartition(".")[0]
    twin_class = getattr(data_readers, class_name, None)
    if twin_class is None or class_name == "ReaderBase":
        return None
    params = inspect.signature(twin_class.__init__).parameters
    return twin_class(
        **{k: v for k, v in node.args.items() if k in params and k not in ("self", "name")}
    )


_NOISE = (
    "Graph execution error",
    "Detected at node",
    "Node: ",
    "File ",
    "[[",
    "Error in user-defined function",
)


_IN_DATASET = re.compile(
    r"^Error in user-defined function passed to \S+ transformation "
    r"with iterator: \S+: "
)


def kernel_message(text: str) -> str:
    """The kernel's own message in a Session error's text (headers, stacks, node tags cut)."""
    text = (text or "").split("\nRecent warning and error logs:")[0]
    for line in text.splitlines():
        stripped = _IN_DATASET.sub("", line.strip())
        if stripped and not stripped.startswith(_NOISE):
            return stripped
    return text.strip()


def _masked(text: str) -> str:
    """The kernel's message with record indexes masked (a batch's index is not a record's)."""
    return _RECORD_INDEX.sub("record #", kernel_message(text)).strip()


def _message(error) -> str:
    return getattr(error, "message", None) or str(error)


def _original_message(text: str) -> str:
    """The kernel's message inside a queue_pipeline-enriched one, else `text`."""
    marker = "Original error: "
    return text.rsplit(marker, 1)[-1] if marker in text else text


def failing_records(
    source: _Source, files: list[str], error_text: str, deadline: float
) -> tuple[list[str], bool]:
    """The keys of `source`'s records that fail like `error_text`; and whether all were read.

    See NOTE [ Finding the failing record ].
    """
    node = _reader_node(source.read_op)
    reader = _twin_reader(node) if node is not None else None
    if reader is None or not files:
        return [], False
    want = _masked(_original_message(error_text))
    graph = tf.Graph()
    with graph.as_default():
        records = reader.read(tf.data.Dataset.from_tensor_slices(files), keys=True)
        decode = tf.autograph.experimental.do_not_convert(
            lambda key, value: (key, tuple(source.decode(value)))
        )
        good = records.map(decode).ignore_errors().map(lambda key, _: key).batch(_SCAN_BATCH)
        every = records.map(lambda key, _: key).batch(_SCAN_BATCH)
        next_good = tf.compat.v1.data.make_one_shot_iterator(good).get_next()
        next_every = tf.compat.v1.data.make_one_shot_iterator(every).get_next()
        value_in = tf.compat.v1.placeholder(tf.string, [], name="record")
        single = source.decode(value_in)
        candidates_in = tf.compat.v1.placeholder(tf.string, [None], name="candidates")
        pick = records.filter(lambda key, _: tf.reduce_any(tf.equal(key, candidates_in)))
        pick_iterator = tf.compat.v1.data.make_initializable_iterator(pick)
        next_pick = pick_iterator.get_next()
    remaining_ms = max(int((deadline - time.monotonic()) * 1000), 1)
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=remaining_ms)
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        every_keys, complete = _drain(sess, next_every, deadline)
        good_keys, good_complete = _drain(sess, next_good, deadline)
        if not (complete and good_complete):
            return [], False
        ok = set(good_keys)
        candidates = [k for k in every_keys if k not in ok][:_MAX_CHECKED]
        if not candidates:
            return [], True
        sess.run(pick_iterator.initializer, {candidates_in: candidates})
        matched = []
        while time.monotonic() < deadline:
            try:
                key, value = sess.run(next_pick)
            except tf.errors.OutOfRangeError:
                break
            try:
                sess.run(single, {value_in: value})
            except (tf.errors.OpError, UnicodeDecodeError) as raised:
                e = readable_error(raised)  # TF's undecodable message, as the step saw it
                if not isinstance(e, tf.errors.OpError):
                    raise
                if _same_failure(_masked(_message(e)), want):
                    matched.append(key.decode("utf-8", "replace"))
        return matched, len(every_keys) - len(good_keys) <= _MAX_CHECKED


def _same_failure(one: str, other: str) -> bool:
    """Whether two kernel messages report the same failure.

    Equal, or one ends with the other: a batched kernel prefixes the
    per-record message with the example it was decoding (the dataset
    engine's vectorized ``ParseExampleV2`` says ``Name: <unknown>, Feature:
    x ... is required``, the per-record one ``Feature: x ... is required``).
    """
    if one == other:
        return True
    shorter, longer = sorted((one, other), key=len)
    return len(shorter) >= _MIN_SUFFIX and longer.endswith(shorter)


def _drain(sess, fetch, deadline) -> tuple[list[bytes], bool]:
    out: list = []
    while time.monotonic() < deadline:
        try:
            out.extend(np.asarray(sess.run(fetch)).tolist())
        except tf.errors.OutOfRangeError:
            return out, True
        except tf.errors.OpError:
            return out, False
    return out, False


_KEY_UNITS = {
    "TextLineReaderV2": "line",
    "TFRecordReaderV2": "byte offset",
    "FixedLengthRecordReaderV2": "record",
}


def describe_key(key: str, reader_type: str) -> str:
    """A record's key as a reader names it: ``file a.csv, line 3 (record a.csv:3)``."""
    unit = _KEY_UNITS.get(reader_type)
    if unit and ":" in key:
        path, _, position = key.rpartition(":")
        return f"file {path}, {unit} {position} (record {key})"
    if reader_type.startswith("IdentityReader"):
        return f"work unit {key}"
    return f"file {key}"
