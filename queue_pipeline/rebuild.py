"""to_dataset: rebuilds a queue_pipeline pipeline as a tf.data.Dataset, from its plan.

:func:`to_dataset` takes what a legacy pipeline hands out (a batching call's
tensors, a producer's queue, a reader's ``(key, value)``,
``slice_input_producer``'s list) and returns the ``tf.data.Dataset`` with the
same element structure, dtypes and static shapes, assembled from the tf.data
twins in :mod:`queue_pipeline.data` by the :class:`Rebuilder
<queue_pipeline._rebuild.rebuilder.Rebuilder>` (NOTE [ Rebuilding from the
plan ] in ``_rebuild/rebuilder.py``).
"""

from __future__ import annotations

from typing import Any, Mapping

import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._rebuild import walk as _walk
from queue_pipeline._rebuild.rebuilder import Rebuilder
from queue_pipeline.errors import NotRebuildableError

__all__ = ["to_dataset"]

_API = "to_dataset"


def _flatten(outputs, leaves: list):
    """A spec of `outputs`' structure; appends its tensors to `leaves`."""
    if isinstance(outputs, (tf.Tensor, tf.SparseTensor)):
        leaves.append(outputs)
        return None
    if isinstance(outputs, Mapping):
        return ("dict", [(key, _flatten(outputs[key], leaves)) for key in outputs])
    if isinstance(outputs, (list, tuple)):
        return ("tuple", [_flatten(item, leaves) for item in outputs])
    raise TypeError(
        f"{_API}: `outputs` must be what a queue_pipeline pipeline returned (tensors, "
        "SparseTensors, or lists, tuples or dicts of them, or a producer's queue); got "
        f"{type(outputs).__name__}: {outputs!r:.80}."
    )


def _pack(spec, values) -> Any:
    it = iter(values)

    def build(s):
        if s is None:
            return next(it)
        kind, items = s
        if kind == "dict":
            return {key: build(sub) for key, sub in items}
        return tuple(build(sub) for sub in items)

    return build(spec)


def _is_flat_tuple(spec, count: int) -> bool:
    return (
        spec is not None
        and spec[0] == "tuple"
        and count > 1
        and all(sub is None for sub in spec[1])
    )


def to_dataset(outputs, *, session: tf.compat.v1.Session | None = None) -> tf.data.Dataset:
    """Rebuilds a queue_pipeline pipeline as a ``tf.data.Dataset``.

    The Dataset delivers what running `outputs` in a Session would, one
    element per ``sess.run``: the same element structure (lists and tuples,
    named ones included, become plain tuples; dicts stay dicts), dtypes and
    static shapes. It is built
    from the pipeline's plan: each producer, reader and batching call becomes
    its twin in :mod:`queue_pipeline.data`, and the user's own per-record ops
    between them are lifted out of the legacy graph into ``Dataset.map``
    functions (see NOTE [ Rebuilding from the plan ] and NOTE [ Lifting a
    region ] in ``_rebuild/walk.py``). The legacy graph is not modified and nothing
    in it runs, except one read of each variable the per-record ops or the
    producers read, through `session`.

    Called outside the legacy graph (usual: build the pipeline under ``with
    tf.Graph().as_default():``, call this after the block) it returns an
    eager Dataset, for ``model.fit``, eager loops and tf.data service; called
    inside a graph, a Dataset in that graph. A ``with Session(...)`` block
    makes the legacy graph the default one: to get an eager Dataset, open the
    session for `session` without ``with`` (and close it afterwards; the
    Dataset does not need it).

    Args:
      outputs: what a queue_pipeline pipeline returned: a batching call's
        tensors (a tensor, list, tuple or dict), a producer's queue, a
        reader's ``(key, value)``, ``slice_input_producer``'s list, or tensors
        computed from them.
      session: a ``tf.compat.v1.Session`` on the legacy graph, in which the
        variables the pipeline reads are initialized (e.g. preloaded data in
        a variable). Default: the default session, if it runs that graph.

    Returns:
      A ``tf.data.Dataset``. It ends where the legacy pipeline raises
      ``OutOfRangeError`` (``num_epochs``), and repeats forever where it does.

    Raises:
      NotRebuildableError: something cannot be rebuilt: a ``py_func``, a
        placeholder, a per-record read of a variable that changes (trainable,
        or written by an op other than its initializer), a variable read
        without `session`, or a queue or reader that no queue_pipeline builder
        recorded. The message names the op, its type, why, and the fix.
      TypeError: `outputs` holds something other than tensors.
      ValueError: the tensors come from several graphs, or `session` runs
        another graph.

    Differences from the legacy pipeline (those of the twins, see
    ``queue_pipeline.data``, plus):

      * Shuffled orders differ (another algorithm); per-epoch multisets
        match. Several readers sharing one filename queue get fixed shards
        of the files instead of the next free file.
      * Variables are read once: later assignments are not seen (changing
        variables are refused, see above).
      * Control dependencies of per-record ops on ops outside them (asserts)
        are kept only when those ops can be lifted too; queue_pipeline's own
        diagnostics are never lifted.
      * A region that uses no stage at all (``batch([tf.constant(1)])``)
        repeats forever, as the legacy enqueue thread did.

    Example::

        with tf.Graph().as_default():
            queue = queue_pipeline.string_input_producer(files, num_epochs=1)
            _, line = queue_pipeline.TextLineReader().read(queue)
            x, y = tf.io.decode_csv(line, [[0.0], [0]])
            batch = queue_pipeline.shuffle_batch([x, y], 32, 1000, 500)
        dataset = queue_pipeline.to_dataset(batch)   # (x [32], y [32]) batches
        model.fit(dataset, epochs=1)
    """
    if hasattr(outputs, "queue_ref"):
        return _queue_dataset(outputs, session)
    leaves: list = []
    spec = _flatten(outputs, leaves)
    if not leaves:
        raise ValueError(f"{_API}: `outputs` holds no tensor; got {outputs!r}.")
    graphs = {t.graph for leaf in leaves for t in graph_facts.components(leaf)}
    if len(graphs) != 1:
        raise ValueError(
            f"{_API}: the tensors of `outputs` must come from one graph; "
            f"they come from {len(graphs)}."
        )
    graph = graphs.pop()
    rebuilder = Rebuilder(graph, session=_session_for(graph, session))
    rebuilder.restrict_to(leaves)
    if not rebuilder.has_plan():
        # Name the op at fault (a py_func, a foreign queue) when there is one.
        _walk.find_sources(
            [t for leaf in leaves for t in graph_facts.components(leaf)], lambda t: False, api=_API
        )
        raise NotRebuildableError(
            f"{_API}: nothing upstream of `outputs` was built by queue_pipeline, so there "
            "is no plan to rebuild. Fix: build the pipeline with queue_pipeline's "
            "producers, readers and batching functions (or write its tf.data twin).",
            reason="no plan",
        )
    if spec is None:
        return rebuilder.rebuild(leaves, exact=True).dataset
    stream = rebuilder.rebuild(
        leaves,
        pack=None if _is_flat_tuple(spec, len(leaves)) else (lambda values: _pack(spec, values)),
    )
    return stream.dataset


def _session_for(graph: tf.Graph, session):
    if session is not None:
        if getattr(session, "graph", None) is not graph:
            raise ValueError(
                f"{_API}: `session` runs another graph than the pipeline's; "
                "pass a tf.compat.v1.Session on the legacy graph."
            )
        return session
    default = tf.compat.v1.get_default_session()
    return default if default is not None and default.graph is graph else None


def _queue_dataset(queue, session) -> tf.data.Dataset:
    queue_op = graph_facts.queue_op(queue)
    if queue_op is None:
        raise TypeError(f"{_API}: expected a queue; got {queue!r}.")
    rebuilder = Rebuilder(queue_op.graph, session=_session_for(queue_op.graph, session))
    return rebuilder.producer_dataset(queue_op, None)
