"""Queues fed from Python: runners whose enqueue ops take values from feed functions.

NOTE [ Queues fed from Python ]
The Estimator-era ``numpy_input_fn`` and ``pandas_input_fn`` (and programs
that keep a copy of their feeding runner) fill a queue from NumPy arrays or
DataFrames: placeholders, one ``enqueue_many`` of them per thread, and a
QueueRunner subclass whose thread ``i`` calls its feed function
``feed_fns[i]()`` (a dict from placeholder to value: the next rows) before
each ``sess.run(enqueue_ops[i], feed_dict=...)``. A feed function ends its
input by raising ``OutOfRangeError`` (or ``StopIteration``), and the last
thread to end closes the queue. The dataset engine's bridge (NOTE [ Queues
filled from tf.data ] in ``_engine/bridge.py``) reads such a queue from
tf.data as well:

* **Which runners.** A runner with a ``_feed_fns`` (or ``feed_fns``) list,
  one callable per enqueue op, as TF's feeding runner keeps them. A runner
  whose list holds only ``None`` feeds nothing and is bridged like any other.
* **The Dataset.** Per enqueue op, ``Dataset.from_generator`` over its feed
  function: each call gives one element, the values of the placeholders
  upstream of the enqueued tensors (in graph order, with the placeholders'
  dtypes and shapes); the ops between the placeholders and the enqueued
  tensors (a cast, a reshape, ...) run in a ``map``. Several enqueue ops take
  turns, one element each (one of TF's thread schedules). The feed
  functions are the program's own objects: their state (epoch, shuffle
  position) carries on as it would under TF's threads, and a new Session
  does not rewind it (nor does it under TF).
* **End of input and errors.** ``OutOfRangeError`` or ``StopIteration`` from
  a feed function ends its generator; when all have ended the queue is
  closed, as TF's last thread closes it. Any other exception stops the
  Coordinator, as in TF. A feed function that does not feed a placeholder
  its enqueue op needs is an error naming the runner and the placeholder.
* **What stays TF's.** The queue and what reads it, as for every bridged
  queue.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import tensorflow as tf

from queue_pipeline._core import graph as graph_facts
from queue_pipeline._rebuild import lift as _lift
from queue_pipeline._rebuild.stream import Stream

__all__ = ["feed_functions", "fed_streams"]

_PLACEHOLDERS = ("Placeholder", "PlaceholderWithDefault")


def feed_functions(fillers: list, enqueue: list[tf.Operation]) -> list | None:
    """Per op of `enqueue`, the feed function a runner of `fillers` calls for it.

    Returns None when no runner has a feed function (the queue is not fed
    from Python).

    Raises:
      TypeError: an enqueue op is run by a runner with a feed function and by
        another one.
    """
    by_op: dict[str, list[Callable | None]] = {}
    fed = False
    for qr in fillers:
        fns = getattr(qr, "_feed_fns", None)
        if fns is None:
            fns = getattr(qr, "feed_fns", None)
        ops = list(getattr(qr, "enqueue_ops", None) or ())
        if fns is None or len(fns) != len(ops):
            fns = [None] * len(ops)
        for op, fn in zip(ops, fns):
            fed = fed or fn is not None
            by_op.setdefault(getattr(op, "op", op).name, []).append(fn)
    if not fed:
        return None
    out = []
    for op in enqueue:
        fns = by_op.get(op.name, [None])
        if len(fns) != 1 or fns[0] is None:
            raise TypeError(
                f"its enqueue op '{op.name}' is run by {len(fns)} thread(s), not by one thread "
                "with a feed function"
            )
        out.append(fns[0])
    return out


def fed_streams(rebuilder, enqueue: list[tf.Operation], fns: list, where: str) -> list[Stream]:
    """One stream per op of `enqueue`, reading its feed function in `fns`.

    Args:
      rebuilder: the queue's engine rebuilder; the ops past the placeholders
        are lifted as it lifts regions (recorded in its ``regions`` and
        ``paths``).
      enqueue: the queue's enqueue ops.
      fns: one feed function per op (:func:`feed_functions`).
      where: the queue, for error messages.

    Raises:
      NotRebuildableError: the ops between the placeholders and the enqueued
        tensors cannot run in a map.
      TypeError: an enqueued tensor depends on no placeholder.
    """
    streams = []
    for op, fn in zip(enqueue, fns):
        leaves = list(op.inputs[1:])
        placeholders = _placeholders(leaves)
        if not placeholders:
            raise TypeError(f"the values of its enqueue op '{op.name}' are fed to no placeholder")
        signature = tuple(tf.TensorSpec(p.shape, p.dtype) for p in placeholders)
        generator = _generator(fn, placeholders, f"{where}, enqueue op '{op.name}'")
        dataset = tf.data.Dataset.from_generator(generator, output_signature=signature)
        role = f"enqueue {op.name}"
        if [t.name for t in leaves] == [p.name for p in placeholders]:
            rebuilder.paths.append(f"{role}: its feed function, through Dataset.from_generator")
            streams.append(Stream(dataset, leaves, "tuple"))
            continue
        region = _lift.lift(
            leaves, placeholders, api=rebuilder.api, capture=rebuilder.capture_variables
        )
        rebuilder.regions.append((role, region))
        rebuilder.paths.append(
            f"{role}: its feed function, through Dataset.from_generator, then a map"
        )

        def per_element(*values, region=region):
            return tuple(region(*values))

        mapped = dataset.map(tf.autograph.experimental.do_not_convert(per_element))
        streams.append(Stream(mapped, leaves, "tuple"))
    return streams


def _placeholders(leaves: list[tf.Tensor]) -> list[tf.Tensor]:
    """The placeholders upstream of `leaves`, in the graph's order."""
    found = [op for op in graph_facts.ancestors(t.op for t in leaves) if op.type in _PLACEHOLDERS]
    order = {op.name: i for i, op in enumerate(leaves[0].graph.get_operations())}
    return [op.outputs[0] for op in sorted(found, key=lambda op: order[op.name])]


def _generator(fn: Callable, placeholders: list[tf.Tensor], where: str) -> Callable:
    """A generator function yielding, per call of `fn`, the values of `placeholders`."""
    names = [p.name for p in placeholders]

    def generate():
        while True:
            try:
                feed = fn()
            except (tf.errors.OutOfRangeError, StopIteration):
                return
            by_name = {_tensor_name(k): v for k, v in dict(feed or {}).items()}
            values = []
            for name, placeholder in zip(names, placeholders):
                if name not in by_name:
                    raise KeyError(
                        f"queue_pipeline dataset engine: {where}: its feed function did not "
                        f"feed placeholder '{name}' (it fed {sorted(by_name)}); feed every "
                        "placeholder the enqueue op reads"
                    )
                values.append(np.asarray(by_name[name], dtype=placeholder.dtype.as_numpy_dtype))
            yield tuple(values)

    return generate


def _tensor_name(key) -> str:
    name = getattr(key, "name", key)
    name = str(name)
    return name if ":" in name else f"{name}:0"
