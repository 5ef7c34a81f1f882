"""What a graph or a dataset tells the harness: queue chains, stall diagnosis, nondeterminism.

Used by ``_harness`` (and through it by ``compare`` and ``testing``); reads
graphs and datasets, never runs a pipeline itself except for the short probes
of :func:`diagnose`.
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._compare import normalize as _normalize

QUEUE_RUNNERS = tf.compat.v1.GraphKeys.QUEUE_RUNNERS
_PROBE_TIMEOUT_MS = 500


# NOTE [ Finding the starved queue ]
# A fetch blocks on the queue it dequeues from; that queue is empty because the
# runner filling it blocks on *its* upstream queue, and so on. We walk from the
# fetches back through dequeue and reader ops to the queues they consume, and
# from each queue to its runners' enqueue ops, giving the chain downstream
# first. Probes (size, is-closed) are created before the session starts (the
# graph is never modified while runner threads run) and run with a short
# per-call timeout. The starved queue is the most upstream empty queue whose
# runner is missing, never started or dead; failing that, the most upstream
# empty queue.


def _walk_ops(start_ops):
    """Yields the ops `start_ops` depend on through data inputs (BFS)."""
    seen, frontier = set(), list(start_ops)
    while frontier:
        op = frontier.pop(0)
        if op.name in seen:
            continue
        seen.add(op.name)
        yield op
        frontier.extend(t.op for t in op.inputs)


def _fetch_ops(fetches) -> list:
    ops = []
    for leaf in _normalize.flatten(fetches)[1]:
        for t in tf.nest.flatten(leaf, expand_composites=True):
            op = t if isinstance(t, tf.Operation) else getattr(t, "op", None)
            if op is not None:
                ops.append(op)
    return ops


def _consumed_queue(op):
    if op.type in graph_facts.DEQUEUE_OPS:
        return op.inputs[0].op
    if op.type in graph_facts.READ_OPS:
        return op.inputs[1].op
    return None


def is_batched(fetches) -> bool:
    """Whether the nearest dequeue upstream of `fetches` takes many elements."""
    for op in _walk_ops(_fetch_ops(fetches)):
        if op.type in graph_facts.BATCHED_DEQUEUE_OPS:
            return True
        if op.type in graph_facts.DEQUEUE_OPS or op.type in graph_facts.READ_OPS:
            return False
    return False


def _runners_by_queue(graph) -> dict[str, list]:
    out: dict[str, list] = {}
    for qr in graph.get_collection(QUEUE_RUNNERS):
        queue = getattr(qr, "queue", None)
        op = graph_facts.queue_op(queue)
        if op is not None:
            out.setdefault(op.name, []).append(qr)
    return out


def queue_chain(graph, fetches) -> list:
    """The queue ops the fetches depend on, downstream first (see NOTE above)."""
    runners = _runners_by_queue(graph)
    chain, seen, frontier = [], set(), _fetch_ops(fetches)
    while frontier:
        found = []
        for op in _walk_ops(frontier):
            queue_op = _consumed_queue(op)
            if queue_op is not None and queue_op.name not in seen:
                seen.add(queue_op.name)
                found.append(queue_op)
        chain += found
        frontier = [
            getattr(e, "op", e)
            for q in found
            for qr in runners.get(q.name, ())
            for e in qr.enqueue_ops
        ]
    return chain


class Probes:
    """Size and is-closed ops for each queue of the chain (built before running)."""

    def __init__(self, graph, fetches):
        self.chain, self.ops = [], {}
        try:
            self.chain = queue_chain(graph, fetches)
            if graph.finalized:
                return
            with graph.as_default(), tf.name_scope("queue_pipeline_probe"):
                for q in self.chain:
                    if q.type.endswith("V2"):
                        handle = q.outputs[0]
                        self.ops[q.name] = (
                            tf.raw_ops.QueueSizeV2(handle=handle),
                            tf.raw_ops.QueueIsClosedV2(handle=handle),
                        )
        except Exception:  # noqa: BLE001 - diagnosis is best effort
            pass

    def read(self, sess, name):
        if name not in self.ops:
            return None, None
        try:
            opts = tf.compat.v1.RunOptions(timeout_in_ms=_PROBE_TIMEOUT_MS)
            size, closed = sess.run(self.ops[name], options=opts)
            return int(size), bool(closed)
        except Exception:  # noqa: BLE001
            return None, None


def _runner_status(runners, threads_by_runner, started) -> tuple[str, bool]:
    """(description, healthy) of the runners that fill one queue."""
    if not runners:
        return ("no QueueRunner in the 'queue_runners' collection fills it", False)
    parts, healthy = [], True
    for qr in runners:
        n = len(qr.enqueue_ops)
        if not started:
            parts.append(f"{n} enqueue thread(s), never started")
            healthy = False
            continue
        threads = threads_by_runner.get(id(qr), [])[:n]
        alive = sum(t.is_alive() for t in threads)
        text = f"{alive} of {n} enqueue thread(s) alive"
        errors = list(getattr(qr, "exceptions_raised", []) or [])
        if errors:
            text += f", raised {type(errors[0]).__name__}: {errors[0]}"
        if not threads:
            text = f"{n} enqueue thread(s), not started for this session"
        healthy = healthy and alive > 0
        parts.append(text)
    return "; ".join(parts), healthy


def diagnose(api, sess, graph, probes, threads_by_runner, started, timeout, fetched):
    """Explains a fetch that timed out; returns (message, starved queue name, diagnosis)."""
    runners = _runners_by_queue(graph)
    rows, starved, starved_sick = [], None, None
    for q in probes.chain:
        size, closed = probes.read(sess, q.name)
        status, healthy = _runner_status(runners.get(q.name, []), threads_by_runner, started)
        rows.append((q, size, closed, status))
        if size == 0 or size is None:
            starved = (q, closed, status, healthy)
            if not healthy:
                starved_sick = starved
    pick = starved_sick or starved
    lines = [
        f"{api}: the pipeline stalled: no batch within {timeout:g} s (after {fetched} batch(es))."
    ]
    if pick is not None:
        q, closed, status, healthy = pick
        state = "closed" if closed else "open" if closed is not None else "of unknown state"
        lines.append(
            f"Starved queue: {q.name!r} ({q.type}) is empty and {state}; its runner: {status}."
        )
    else:
        lines.append("No starved queue found among the queues the fetches read.")
    lines.append("Queues the fetches wait on, downstream first:")
    for q, size, closed, status in rows:
        size_text = "?" if size is None else str(size)
        closed_text = "?" if closed is None else ("closed" if closed else "open")
        lines.append(f"  {q.name:<32} {q.type:<20} size {size_text:<4} {closed_text:<6} {status}")
    if not rows:
        lines.append("  (none: the fetches read no queue)")
    lines.append("Fix: " + _fix_hint(pick, started))
    diagnosis = "\n".join(lines[1:])
    return "\n".join(lines), (pick[0].name if pick else None), diagnosis


def _fix_hint(pick, started) -> str:
    if pick is None:
        return "check the fetched ops; raise `timeout` if the input is just slow."
    status, healthy = pick[2], pick[3]
    if not started or "never started" in status:
        return (
            "start the runners before fetching "
            "(queue_pipeline.start_queue_runners(sess=sess, coord=coord))."
        )
    if "no QueueRunner" in status:
        return (
            "register a runner for the queue (queue_pipeline.add_queue_runner("
            "QueueRunner(queue, [enqueue_op]))) or feed it yourself."
        )
    if not healthy:
        return "its runner threads ended; see their errors (Coordinator.join re-raises them)."
    return (
        "its runner threads are alive but blocked: the upstream input is slow or "
        "empty (an empty file list, a reader on a file that never ends); raise "
        "`timeout` if the input is just slow."
    )


@dataclasses.dataclass(frozen=True)
class Nondeterminism:
    """One thing that makes a pipeline's order vary.

    Attributes:
      reason: a readable description naming the op or queue.
      varies_between_runs: False for a shuffle with a fixed seed (the order is
        random but reproducible); True otherwise; None if unknown.
      mixes_epochs: whether examples of consecutive epochs can interleave
        (threads, a RandomShuffleQueue), so per-epoch multisets may differ.
    """

    reason: str
    varies_between_runs: bool | None = True
    mixes_epochs: bool = False


def legacy_nondeterminism(graph) -> list[Nondeterminism]:
    """RandomShuffleQueues, shuffle ops, and runners with more than one enqueue op."""
    out = []
    for op in graph.get_operations():
        if op.type in ("RandomShuffleQueueV2", "RandomShuffleQueue"):
            out.append(
                Nondeterminism(
                    f"RandomShuffleQueue {op.name!r} dequeues in random order (shuffle_batch)",
                    mixes_epochs=True,
                )
            )
        elif op.type == "RandomShuffle":
            seeded = bool(op.get_attr("seed") or op.get_attr("seed2"))
            out.append(
                Nondeterminism(
                    f"{op.name!r} shuffles (a producer with shuffle=True)"
                    + (" with a fixed seed" if seeded else ""),
                    not seeded,
                )
            )
    for qr in graph.get_collection(QUEUE_RUNNERS):
        n = len(getattr(qr, "enqueue_ops", ()))
        if n > 1 and not _same_values_in_order(qr):
            name = getattr(getattr(qr, "queue", None), "name", "?")
            out.append(
                Nondeterminism(
                    f"QueueRunner for {name!r} runs {n} enqueue threads", mixes_epochs=True
                )
            )
    return out


def _same_values_in_order(qr) -> bool:
    """Whether the threads of `qr` run one enqueue op of constants into a FIFO queue.

    Each run enqueues the same values, and a FIFO queue finishes one enqueue
    attempt before the next: the threads deliver the values repeated, in order
    (NOTE [ A queue filled from arrays in memory ] in
    :mod:`queue_pipeline._migrate.constant_queues`).
    """
    ops = graph_facts.enqueue_ops([qr])
    queue_op = graph_facts.queue_op(getattr(qr, "queue", None))
    return (
        len(ops) == 1
        and queue_op is not None
        and "FIFOQueue" in queue_op.type
        and graph_facts.enqueued_from(ops[0])[0] == "constant"
    )


def _serialized_dataset(dataset) -> bytes:
    """The GraphDef of `dataset`, eager or in a graph (TF1 mode: run in a Session)."""
    variant = dataset._variant_tensor  # noqa: SLF001 - no public way
    if not tf.is_symbolic_tensor(variant):
        return tf.raw_ops.DatasetToGraphV2(
            input_dataset=variant, external_state_policy=1, strip_device_assignment=True
        ).numpy()
    with variant.graph.as_default():
        serialized = tf.raw_ops.DatasetToGraphV2(
            input_dataset=variant, external_state_policy=1, strip_device_assignment=True
        )
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=_PROBE_TIMEOUT_MS * 20)
    with tf.compat.v1.Session(graph=variant.graph, config=config) as sess:
        return sess.run(serialized)


def _needs_a_session_setup(dataset) -> bool:
    """Whether a graph-mode Dataset reads a feed or a ref variable (a program's loader fills it).

    Serializing such a Dataset in a throwaway Session fails, and TensorFlow
    logs the failure: it is not tried.
    """
    variant = dataset._variant_tensor  # noqa: SLF001 - no public way
    if not tf.is_symbolic_tensor(variant):
        return False
    seen, stack = set(), [variant.op]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in ("Placeholder", "VariableV2"):
            return True
        stack += [t.op for t in op.inputs] + list(op.control_inputs)
    return False


def dataset_nondeterminism(dataset) -> list[Nondeterminism] | None:
    """Shuffles and nondeterministic parallel ops in a Dataset; None if unknown.

    Works on an eager Dataset and on one in a graph (TF1 mode), where the
    serialization runs once in a throwaway Session on the Dataset's graph.
    """
    if _needs_a_session_setup(dataset):
        return None
    try:
        from tensorflow.core.framework import graph_pb2

        graph_def = graph_pb2.GraphDef.FromString(_serialized_dataset(dataset))
    except Exception:  # noqa: BLE001 - an unserializable dataset (a feed it needs)
        return None
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes += list(function.node_def)
    out = []
    for node in nodes:
        if "Shuffle" in node.op:
            out.append(Nondeterminism(f"{node.op} in the twin"))
        elif "deterministic" in node.attr and node.attr["deterministic"].s == b"false":
            out.append(Nondeterminism(f"{node.op} with deterministic=False in the twin"))
    return out
