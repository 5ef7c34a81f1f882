"""What the session hook knows of a graph, and how it reads a step's fetches.

The per-graph state of NOTE [ The session hook ] in ``session_hook.py``:
the graph's queue_pipeline queues (:class:`QueueFacts`: the API named in
messages, the unstarted guard's grace and probe), what the hook does for the
graph's steps, and two cached walks: from a step's fetches to the guarded
queues it dequeues or reads from (:meth:`GraphState.consumed`), and from a
queue to every queue upstream of it (:meth:`GraphState.upstream`). Pure
graph reading: the sessions, the hook itself and its locks are
``session_hook.py``'s.
"""

from __future__ import annotations

from typing import Callable

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts

__all__ = ["GraphState", "QueueFacts", "fed_names", "fetch_ops"]


class QueueFacts:
    """What the guard knows of one queue: the API for messages, its grace, its probe."""

    def __init__(self, api: str, grace: float, probe: list[str], guarded: bool) -> None:
        self.api, self.grace, self.probe, self.guarded = api, grace, probe, guarded


class GraphState:
    """A graph's queue_pipeline queues and the per-fetch cache of what a step dequeues."""

    def __init__(self) -> None:
        self.queues: dict[str, QueueFacts] = {}
        self.version = 0
        self.names_errors = False
        self.times_steps = False  # set for a graph served by tf.data service: see waiting_since
        self.caches_steps = False  # set for a graph the dataset engine serves: see cache_steps
        self.served_ops: set[str] = set()  # its served get_next ops: see cache_steps
        self.holds_constants = False  # see guard_held_constants
        self.rewrite: Callable | None = None  # see rewrite_steps
        self._consumed: dict[tuple, frozenset] = {}
        self._upstream: dict[str, frozenset] = {}
        self._upstream_version = -1

    def guarded_queues(self) -> frozenset:
        return frozenset(n for n, q in self.queues.items() if q.guarded)

    def consumed(self, graph: tf.Graph, fetch_ops: list, fed: frozenset) -> frozenset:
        """Guarded queue names the step of `fetch_ops` dequeues or reads from (cached)."""
        key = (tuple(sorted(op.name for op in fetch_ops)), fed, self.version)
        found = self._consumed.get(key)
        if found is not None:
            return found
        guarded = self.guarded_queues()
        queues, seen, stack = set(), set(), list(fetch_ops)
        while stack:
            op = stack.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            if op.type in graph_facts.DEQUEUE_OPS and op.inputs[0].op.name in guarded:
                queues.add(op.inputs[0].op.name)
                continue
            if op.type in graph_facts.READ_OPS and op.inputs[1].op.name in guarded:
                queues.add(op.inputs[1].op.name)
            stack.extend(t.op for t in op.inputs if t.name not in fed)
            stack.extend(op.control_inputs)
        found = frozenset(queues)
        self._consumed[key] = found
        return found

    def upstream(self, graph: tf.Graph, queue_name: str) -> frozenset:
        """`queue_name` and every queue whose runners feed it, directly or not."""
        runners = graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS)
        if self._upstream_version != len(runners):
            self._upstream, self._upstream_version = {}, len(runners)
        found = self._upstream.get(queue_name)
        if found is not None:
            return found
        fillers: dict[str, list] = {}
        for qr in runners:
            name = graph_facts.queue_op(getattr(qr, "queue", None))
            if name is not None:
                fillers.setdefault(name.name, []).extend(
                    getattr(e, "op", e) for e in getattr(qr, "enqueue_ops", ())
                )
        result, todo = set(), [queue_name]
        while todo:
            queue = todo.pop()
            if queue in result:
                continue
            result.add(queue)
            seen, stack = set(), list(fillers.get(queue, ()))
            while stack:
                op = stack.pop()
                if op.name in seen:
                    continue
                seen.add(op.name)
                if op.type in graph_facts.DEQUEUE_OPS:
                    todo.append(op.inputs[0].op.name)
                elif op.type in graph_facts.READ_OPS:
                    todo.append(op.inputs[1].op.name)
                stack.extend(t.op for t in op.inputs)
                stack.extend(op.control_inputs)
        found = frozenset(result)
        self._upstream[queue_name] = found
        return found


def _leaves(fetches) -> list:
    """The leaves of a fetch structure as Session.run accepts it (dict values, not keys)."""
    out, stack = [], [fetches]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, tf.SparseTensor):
            stack.extend([item.indices, item.values, item.dense_shape])
        elif item is not None:
            out.append(item)
    return out


def fetch_ops(graph: tf.Graph, fetches) -> list:
    ops = []
    for leaf in _leaves(fetches):
        if isinstance(leaf, (str, bytes)):
            try:
                leaf = graph.as_graph_element(leaf.decode() if isinstance(leaf, bytes) else leaf)
            except (KeyError, ValueError, TypeError):
                continue
        op = leaf if isinstance(leaf, tf.Operation) else getattr(leaf, "op", None)
        if isinstance(op, tf.Operation) and op.graph is graph:
            ops.append(op)
    return ops


def fed_names(feed_dict) -> frozenset:
    if not feed_dict:
        return frozenset()
    names = set()
    for key in feed_dict:
        for leaf in _leaves(key):
            names.add(getattr(leaf, "name", leaf))
    return frozenset(n for n in names if isinstance(n, str))
