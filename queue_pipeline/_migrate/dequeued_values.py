"""What an own queue's dequeue hands out, however the function reads it.

NOTE [ A dequeued tuple read by index ]
``q.dequeue()`` of a queue of several components returns a list of tensors,
one per component; public code often keeps the list whole and indexes it::

    sample = q.dequeue()
    image_b, label_b = tf.train.batch([sample[0], sample[1]], 8)

A name the run left holding that list is the element from the dequeue on,
taken as ``*sample`` by the per-record function (then ``sample =
list(sample)``: the same list TF hands out), so every use of it migrates
as written: ``sample[0]``, ``sample[-1]``, a helper taking it whole, a loop
over it (``base.starred_params``). ``dequeue_many(n)``'s list is the batch's
element the same way (``*batch`` in the per-batch function).

NOTE [ A dequeue inside an expression ]
``x = q.dequeue() * 2.0`` (a one-component queue's dequeue is its tensor)
is per-record code: its call reads as the element (``x = image * 2.0`` in
the mapped function). A dequeue that is not the whole value of its line
(``return tf.train.batch([q.dequeue()], n)``, ``q.dequeue_many(n)[0]``) is
refused at its line, with the fix: assign the dequeue to a name on a line of
its own; the batching call then reads that name.
"""

from __future__ import annotations

import libcst as cst

from queue_pipeline._migrate.base import BATCHING, PRODUCERS, READS
from queue_pipeline._migrate.syntax import callee

__all__ = ["is_whole_value", "nested_dequeue"]


def is_whole_value(stmt, call: cst.Call) -> bool:
    """Whether `call` is the whole value of `stmt` (``x = call``, ``return call``)."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    return isinstance(small, (cst.Assign, cst.Return)) and small.value is call


def nested_dequeue(rewriter, fn, stmt, call: cst.Call, state, kind: str) -> list[str]:
    """``x = f(q.dequeue())``: the line as per-record code, the dequeue read as the
    element (NOTE [ A dequeue inside an expression ]); refused where the line
    does more than per-record code (a batching call, a dequeue_many)."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    method = callee(call)
    queue = rewriter.code(call.func.value) if isinstance(call.func, cst.Attribute) else "queue"
    stages = set(PRODUCERS + BATCHING + READS)
    if (
        method != "dequeue"
        or not isinstance(small, cst.Assign)
        or state.starred & set(state.element)
        or any(callee(c) in stages for c in rewriter.calls_in(stmt))
    ):
        raise rewriter.fail(
            fn, stmt, f"`{queue}.{method}(...)` is read inside a larger expression on this "
            f"line; assign it to a name on a line of its own (`values = {queue}.{method}"
            "(...)`) and read that name here"
        )  # fmt: skip
    element = state.element
    text = element[0] if len(element) == 1 else "[" + ", ".join(element) + "]"
    state.pending.append((stmt, ((call, text),)))
    return []
