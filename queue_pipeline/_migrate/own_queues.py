"""The function's own queue in a migration: queue, enqueue, QueueRunner, dequeue.

NOTE [ Migrating the function's own queue ]
Model code often builds the queue that hands out its batches itself (CIFAR-10's
official input, im2txt's prefetch queue)::

    queue = tf.queue.RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes=...)
    enqueue = queue.enqueue([image, label])
    tf.compat.v1.train.add_queue_runner(tf.compat.v1.train.QueueRunner(queue, [enqueue] * 16))
    images, labels = queue.dequeue_many(batch_size)

Its statements migrate as the batching call they amount to:

* **The queue** line goes; its kind and arguments are kept.
* **The enqueue** names what one element is (the enqueued values); the
  per-record statements before it become the mapped function returning them,
  as before a batching call. ``enqueue_many`` enqueues rows, so the mapped
  elements are unbatched.
* **The runner** lines go. Several enqueue threads deliver in an order of
  their own (said among the differences); the tf.data map is ordered.
* **The dequeue** is the batching call: a RandomShuffleQueue's
  ``dequeue_many(n)`` is ``shuffle_batch``'s chain (``shuffle(capacity,
  seed)``, then ``batch(n, drop_remainder=True)``), a FIFO queue's is
  ``batch``'s, a padding FIFO queue's ``padded_batch``'s; ``dequeue_up_to``
  keeps the last partial batch; ``dequeue()`` hands out one element (after the
  shuffle, for a RandomShuffleQueue).
* **Branches** (a train branch that distorts, an eval branch that crops) keep
  their own per-record statements, as any ``if`` does.
* **Arrays in memory** filling it (no reader: the queue tutorial's
  ``enqueue_many([data, target])`` of NumPy arrays) are its source,
  ``from_tensor_slices(...).repeat()``: NOTE [ A queue filled from arrays in
  memory ] in :mod:`queue_pipeline._migrate.constant_queues`.
* Refused, with the line: a queue filled by a loop of readers, an enqueue
  outside the function, a dequeue of a queue no enqueue of the function fills.

NOTE [ A FIFO queue read one record at a time ]
A FIFO queue that is only ever read with ``values = queue.dequeue()`` hands
out the records it was given, in order: it changes nothing. Its enqueue then
ends no mapped function: the per-record statements before and after it stay
one function, the dequeue becomes ``values = <what was enqueued>``, so a
name computed before the enqueue and read after the dequeue (``shapes`` for
a ``set_shape`` loop) is still seen.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst
import tensorflow as tf

from queue_pipeline._migrate import chains
from queue_pipeline._migrate.base import OWN_QUEUES, READS, State, Step
from queue_pipeline._migrate.constant_queues import typed_values
from queue_pipeline._migrate.dequeued_values import is_whole_value, nested_dequeue
from queue_pipeline._migrate.stages import Stages
from queue_pipeline._migrate.syntax import (
    assigned_names,
    callee,
    names_in,
    registers_runner,
)

__all__ = ["OwnQueues"]

_DEQUEUES = ("dequeue_many", "dequeue_up_to", "dequeue")
_ENQUEUES = ("enqueue", "enqueue_many")


class OwnQueues(Stages):
    """The own-queue rewrites (a mixin of the rewriter); see the NOTE above."""

    _return: Callable[..., list[str]]  # the rewriter's: a `return` statement's lines
    _element_names: Callable[..., list[str]]  # the branches': the element from now on

    def own_queue_statement(self, fn, stmt, calls: list, state: State, depth: int):
        """The lines `stmt` becomes if it builds, fills, runs or reads an own queue; else None."""
        ctor = next((c for c in calls if callee(c) in OWN_QUEUES), None)
        if ctor is not None:
            return self._own_queue(fn, stmt, ctor, state, depth)
        own = state.own_queues
        enqueue = next((c for c in calls if callee(c) in _ENQUEUES and _on(c, own)), None)
        runners = [c for c in calls if registers_runner(c)]
        out = None
        if enqueue is not None:
            out = self._own_enqueue(fn, stmt, enqueue, state, depth)
        if runners and own:
            self._own_runner(fn, stmt, runners)
            out = out or []
        if out is not None:
            return out
        dequeue = next((c for c in calls if callee(c) in _DEQUEUES and _on(c, own)), None)
        if dequeue is not None:
            return self._own_dequeue(fn, stmt, dequeue, state, depth)
        foreign = next(
            (
                c
                for c in calls
                if callee(c) in _DEQUEUES[:2]
                and _on(c, {n: 0 for n in names_in(stmt) if fn.kind(n) == "queue"})
                and _queue_name(c) not in state.queues
            ),
            None,
        )
        if foreign is not None:
            raise self.fail(
                fn, stmt, f"it dequeues from `{_queue_name(foreign)}`, a queue another function "
                "built and returned; the migration follows a queue within the function that "
                "builds, fills and reads it: move the dequeue into that function (return the "
                "batches), then migrate it"
            )  # fmt: skip
        if any(callee(c) == "size" and _on(c, own) for c in calls) and not assigned_names(stmt):
            self.dropped.append(
                f"{self.where(fn.line(stmt))}: `{self.code(stmt).strip().splitlines()[0]}`: "
                "a summary of the queue's fill (the Dataset has no queue; its buffers are "
                "autotuned)"
            )
            return []
        return None

    def own_reader_loop(self, fn, stmt: cst.For, state: State, depth: int):
        """A loop of N readers filling an own queue, as one interleave of N files at a time.

        ``for _ in range(num_readers): _, value = reader.read(filename_queue);
        enqueue_ops.append(queue.enqueue([value]))``: N readers take the next
        file from the filename queue as they need one; ``interleave`` with
        ``cycle_length=N`` reads N files, one record of each in turn (one of
        their schedules). None if `stmt` is not such a loop.
        """
        calls = self.calls_in(stmt)
        enqueues = [c for c in calls if callee(c) in _ENQUEUES and _on(c, state.own_queues)]
        if not enqueues or not any(callee(c) in READS for c in calls):
            return None
        count = self.code(stmt.iter).strip()
        match = re.fullmatch(r"range\((.+)\)", count)
        state.parallel_readers = match.group(1) if match else f"len({count})"
        try:
            return self._block(fn, list(stmt.body.body), state, depth)
        finally:
            state.parallel_readers = ""

    def _own_queue(self, fn, stmt, call: cst.Call, state: State, depth: int) -> list[str]:
        kind = callee(call)
        targets = assigned_names(stmt)
        if len(targets) != 1:
            raise self.fail(fn, stmt, f"assign the {kind} to one variable")
        init = getattr(tf.queue, kind).__init__
        made = fn.call.local_values.get(targets[0]) if fn.call is not None else None
        known, written = _attributes(made), call
        if known is not None and any(
            a.star == "**" for a in call.args
        ):  # `**` arguments: NOTE [ A queue's `**` arguments ]
            written = call.with_changes(args=[a for a in call.args if a.star != "**"])
        try:
            args = self.bound(init, written, skip_self=True)
        except (chains.Unsupported, TypeError, ValueError) as e:
            raise self.fail(fn, stmt, str(e)) from e
        if known is not None and written is not call:
            args = {**known, **args}
        state.own_queues[targets[0]] = (kind, args)
        state.enqueued.pop(targets[0], None)  # a new queue under that name
        if self._of_arrays(fn, targets[0]):  # NOTE [ A queue filled from arrays in memory ]
            if kind == "RandomShuffleQueue":
                self._shuffle_difference(fn, stmt, kind)
            if depth <= 1:
                return []  # its shuffle is written at its dequeue, after all its records
            # made in a branch (a shuffling queue in one, a FIFO in the other): each says
            # what its dequeue shuffles
            state.deferred.add(targets[0])
            seed = args.get("seed", "None")
            value = f"({args['capacity']}, {seed})" if kind == "RandomShuffleQueue" else "None"
            return ["    " * depth + f"{targets[0]}_shuffle = {value}\n"]
        if not state.element and not state.pending and fn.role != "batch":
            # made before its records are read (Inception's examples queue, a
            # RandomShuffleQueue in training and a FIFOQueue in evaluation): its
            # shuffle, if any, is written at the enqueue
            state.deferred.add(targets[0])
            seed = args.get("seed", "None")
            value = f"({args['capacity']}, {seed})" if kind == "RandomShuffleQueue" else "None"
            self.steps.append(Step(fn.line(stmt), kind, f"{targets[0]}_shuffle = {value}"))
            if kind == "RandomShuffleQueue":
                self._shuffle_difference(fn, stmt, kind)
            return ["    " * depth + f"{targets[0]}_shuffle = {value}\n"]
        if kind != "RandomShuffleQueue":
            return []
        # The shuffle is the queue's, where it is made (a branch may make
        # another queue): the records it is fed, in a buffer of its capacity.
        var = (
            "dataset"
            if fn.role == "batch" and not state.pending and not state.mapped
            else "records"
        )
        seed = f", seed={args['seed']}" if "seed" in args else ""
        line = f"{var} = {var}.shuffle({args['capacity']}{seed})"
        self.steps.append(Step(fn.line(stmt), kind, line))
        self._shuffle_difference(fn, stmt, kind)
        return ["    " * depth + line + "\n"]

    def _shuffle_difference(self, fn, stmt, kind: str) -> None:
        self.differences.append(
            f"{self.where(fn.line(stmt))}: {kind}: a shuffle buffer is not a "
            "RandomShuffleQueue; the examples are the same, their order is not"
        )

    def _own_enqueue(self, fn, stmt, call: cst.Call, state: State, depth: int) -> list[str]:
        """The per-record statements so far, mapped to the enqueued values; then the
        queue's own part of its dequeue (rows of an enqueue_many, a shuffle buffer)."""
        pad = "    " * depth
        name = _queue_name(call)
        if name in state.enqueued and not self._of_arrays(fn, name):
            raise self.fail(
                fn, stmt, f"it enqueues into {name} a second time (one enqueue per queue: "
                "enqueue ops repeated in the QueueRunner's list are threads)"
            )  # fmt: skip
        if not call.args:
            raise self.fail(fn, stmt, "the enqueue has no values")
        node = call.args[0].value
        values = self.code(node)
        if isinstance(node, cst.IfExp):
            raise self.fail(
                fn, stmt, f"what it enqueues depends on a test (`{values}`): the element of "
                "a Dataset has one structure; write the enqueue in each branch of an `if` "
                "(`if keyed: enqueue = q.enqueue([key, value])` / `else: ...`)"
            )  # fmt: skip
        if isinstance(node, (cst.List, cst.Tuple)):
            element = [self.code(e.value) for e in node.elements]
        else:
            element = [values]
        kind, args = state.own_queues[name]
        if self._of_arrays(fn, name):  # NOTE [ A queue filled from arrays in memory ]
            return self._array_source(fn, stmt, call, element, state, depth)
        if (
            callee(call) == "enqueue"
            and kind in ("FIFOQueue", "PaddingFIFOQueue")
            and name not in state.deferred
            and state.pending
            and _read_one_at_a_time(self.code(fn.node), name)
        ):  # NOTE [ A FIFO queue read one record at a time ]
            state.enqueued[name] = (values, False)
            state.passed_on[name] = values
            self.steps.append(Step(fn.line(stmt), f"{kind}.enqueue", "the records pass on"))
            return []
        out = self._flush(state, self._element_of(values), depth)
        lines = []
        if callee(call) == "enqueue_many":  # rows; a shuffling queue mixes rows, not chunks
            lines.append("records = records.unbatch()")
            if kind == "RandomShuffleQueue" and name not in state.deferred:
                seed = f", seed={args['seed']}" if "seed" in args else ""
                lines.append(f"records = records.shuffle({args['capacity']}{seed})")
        if name in state.deferred:  # the shuffle of a queue made before its records
            lines.append(f"if {name}_shuffle:\n    records = records.shuffle(*{name}_shuffle)")
        out += [f"{pad}{line}\n".replace("\n    ", f"\n{pad}    ") for line in lines]
        self.steps.append(
            Step(fn.line(stmt), f"{kind}.{callee(call)}", " / ".join(lines) or "the mapped records")
        )
        state.element = self._element_names(fn, element, state)  # a list's values: *name
        state.enqueued[name] = (values, callee(call) == "enqueue_many")
        return out

    def _of_arrays(self, fn, name: str) -> bool:
        """Whether the queue `name` of `fn` is one runners fill from arrays in memory."""
        queue = fn.call.local_values.get(name) if fn.call is not None else None
        op = getattr(getattr(queue, "queue_ref", None), "op", None)
        return op is not None and op.name in self.trace.array_queues

    def _array_source(self, fn, stmt, call, element: list[str], state: State, depth: int):
        """The enqueue of arrays as the Dataset of its records, repeated; a second enqueue
        op of arrays sampled with it: NOTE [ A queue filled from arrays in memory ]."""
        name = _queue_name(call)
        kind, _ = state.own_queues[name]
        many = callee(call) == "enqueue_many"
        more = name in state.enqueued  # another op of arrays into the same queue
        if (state.element or state.pending or state.batch_element) and not more:
            raise self.fail(
                fn, stmt, f"it fills {name} from arrays in memory in a function that already "
                "reads records (one Dataset holds one pipeline): fill the queue in a function "
                "of its own and migrate that"
            )  # fmt: skip
        queue = fn.call.local_values.get(name) if fn.call is not None else None
        values = typed_values(element, getattr(queue, "dtypes", None), fn)
        values_text = values[0] if len(values) == 1 else f"({', '.join(values)})"
        held = fn.call.local_values if fn.call is not None else {}
        if len(values) == 1 and isinstance(held.get(values[0]), list):
            values_text = f"tuple({values[0]})"  # a list of arrays: one array each, not stacked
        source = "from_tensor_slices" if many else "from_tensors"
        made = f"tf.data.Dataset.{source}({values_text}).repeat()"
        line = f"records = {made}"
        if more:  # the threads interleave the ops' enqueues: a random draw of the streams
            line = f"records = tf.data.Dataset.sample_from_datasets([records, {made}])"
            self.differences.append(
                f"{self.where(fn.line(stmt))}: several enqueue ops of arrays into {name}: "
                "the legacy threads interleave their enqueues in an order of their own; "
                "sample_from_datasets draws from each stream at random"
            )
        self.steps.append(Step(fn.line(stmt), f"{kind}.{callee(call)}", line))
        if not more:
            state.element = self._element_names(fn, element, state)
        state.enqueued[name] = (", ".join(element), many)
        return ["    " * depth + line + "\n"]

    def _array_shuffle(self, fn, stmt, name: str, state: State, depth: int) -> list[str]:
        """A RandomShuffleQueue of arrays' shuffle, written at its dequeue (after every
        enqueue op's records)."""
        kind, args = state.own_queues[name]
        if not self._of_arrays(fn, name):
            return []
        if name in state.deferred:  # made in branches: each set `<name>_shuffle`
            line = f"if {name}_shuffle:\n    records = records.shuffle(*{name}_shuffle)"
            self.steps.append(Step(fn.line(stmt), f"{kind} (its shuffle)", line))
            pad = "    " * depth
            return [pad + line.replace("\n", "\n" + pad) + "\n"]
        if kind != "RandomShuffleQueue":
            return []
        seed = f", seed={args['seed']}" if "seed" in args else ""
        line = f"records = records.shuffle({args['capacity']}{seed})"
        self.steps.append(Step(fn.line(stmt), f"{kind} (its shuffle)", line))
        return ["    " * depth + line + "\n"]

    def _own_runner(self, fn, stmt, runners: list) -> None:
        """The QueueRunner lines go; several threads are a difference in order."""
        for call in runners:
            if callee(call) != "QueueRunner" or len(call.args) < 2:
                continue
            queue = call.args[0].value
            if isinstance(queue, cst.Name) and self._of_arrays(fn, queue.value):
                continue  # one op of the same arrays: in order (NOTE [ A queue filled from ...
            ops = self.code(call.args[1].value)
            threads = re.fullmatch(r"\[.+\]\s*\*\s*(\w+)", ops.strip())
            if threads is not None and threads.group(1) != "1":
                count = threads.group(1)
                count = count if count.isdigit() else f"`{count}`"
                self.differences.append(
                    f"{self.where(fn.line(stmt))}: QueueRunner with {count} enqueue "
                    "threads: the legacy order depends on its threads; the tf.data map "
                    "delivers in the order of the records"
                )

    def _own_dequeue(self, fn, stmt, call: cst.Call, state: State, depth: int) -> list[str]:
        name = _queue_name(call)
        if name not in state.enqueued:
            raise self.fail(fn, stmt, f"it dequeues from {name}, which no enqueue of it fills")
        shuffle = self._array_shuffle(fn, stmt, name, state, depth)
        return shuffle + self._own_dequeue_lines(fn, stmt, call, state, depth)

    def _own_dequeue_lines(self, fn, stmt, call: cst.Call, state: State, depth: int):
        name = _queue_name(call)
        kind, _ = state.own_queues[name]
        method = callee(call)
        if name in state.passed_on:  # NOTE [ A FIFO queue read one record at a time ]
            # `values = queue.dequeue()`, its call read as what was enqueued
            # (the record's names stay the mapped function's parameters)
            state.pending.append((stmt, ((call, state.passed_on[name]),)))
            self.steps.append(Step(fn.line(stmt), f"{kind}.dequeue", "one record at a time"))
            return []
        if not is_whole_value(stmt, call):  # NOTE [ A dequeue inside an expression ]
            return nested_dequeue(self, fn, stmt, call, state, kind)
        if method == "dequeue":
            lines = self._own_single(fn, stmt, kind, state, depth)
            if isinstance(stmt.body[0], cst.Return):
                return lines
            if fn.role == "batch" and not state.pending and not state.mapped:
                # records in, records out: NOTE [ A helper that shuffles the records ]
                return ["    " * depth + "records = dataset\n"]
            return lines
        count = call.args[0].value if call.args else None
        if count is None:
            raise self.fail(fn, stmt, f"{method} needs its count")
        batching = {
            "tensors": ", ".join(state.element),
            "batch_size": self.code(count),
            "allow_smaller_final_batch": repr(method == "dequeue_up_to"),
        }
        if kind == "PaddingFIFOQueue":
            batching["dynamic_pad"] = "True"
        label = f"{kind}.{method}"
        return self._batching(fn, stmt, call, state, depth, legacy=("batch", batching, label))

    def _own_single(self, fn, stmt, kind: str, state: State, depth: int) -> list[str]:
        """``dequeue()``: the records go on, one element at a time, under the new names."""
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if isinstance(assign, cst.Return) and state.element and not state.batch_element:
            # ``return queue.dequeue()``: the records, returned as ``return <element>`` is
            self.steps.append(Step(fn.line(stmt), f"{kind}.dequeue", "one record at a time"))
            element = cst.parse_expression(", ".join(state.element))
            return self._return(fn, stmt.with_changes(body=[cst.Return(element)]), state, depth)
        if not isinstance(assign, cst.Assign):
            raise self.fail(fn, stmt, f"assign what {kind}.dequeue() returns to variables")
        target = assign.targets[0].target
        if isinstance(target, (cst.Tuple, cst.List)):
            names = [self.code(e.value) for e in target.elements]
        else:
            names = [self.code(target)]
        values = fn.call.local_values if fn.call is not None else {}
        whole = len(names) == 1 and isinstance(values.get(names[0]), list)
        if len(names) != len(state.element) and not whole:
            # NOTE [ A dequeued tuple read by index ]: one name for the whole list works
            raise self.fail(
                fn, stmt, f"it unpacks {len(names)} value(s) of a queue that holds "
                f"{len(state.element)}: unpack every value (`{', '.join(state.element)} = "
                "...dequeue()`) or assign the whole list to one name"
            )  # fmt: skip
        state.element = self._element_names(fn, names, state)
        self.steps.append(Step(fn.line(stmt), f"{kind}.dequeue", "one record at a time"))
        return []


def _read_one_at_a_time(code: str, name: str) -> bool:
    """Whether the function's `code` reads queue `name` only as ``values = name.dequeue()``."""
    reads = re.findall(rf"(?<![\w.]){re.escape(name)}\s*\.\s*(dequeue\w*)\s*\(", code)
    assigned = re.findall(
        rf"^[ \t]*[\w, \t\[\]()]+=[ \t]*{re.escape(name)}\s*\.\s*dequeue\s*\(", code, re.M
    )
    return bool(reads) and set(reads) == {"dequeue"} and len(assigned) == len(reads)


def _attributes(queue) -> dict[str, str] | None:
    """The arguments the traced `queue` was made with that its migration reads, as source
    text, from its op; None if `queue` is no queue the trace built.

    NOTE [ A queue's `**` arguments ]
    ``tf.RandomShuffleQueue(capacity=..., dtypes=..., **({"names": names} if
    names else {}))`` (a text-detection reader's shuffling helper): which
    arguments the ``**`` sets is known only when the call runs. The queue the
    trace built knows them: its op holds its capacity and its seeds (``seed2``
    is the seed the call was given; 0 when it was given none), and the queue its
    names. Arguments written out keep their source text; those the ``**``
    may set are read from the op. Untraced (a branch the run did not take),
    the ``**`` is refused with the fix.
    """
    ref = getattr(queue, "queue_ref", None)
    op = getattr(ref, "op", None)
    if op is None or not isinstance(queue, tf.queue.QueueBase):
        return None
    found = {"capacity": str(op.get_attr("capacity"))}
    if op.type.startswith("RandomShuffleQueue"):
        found["min_after_dequeue"] = str(op.get_attr("min_after_dequeue"))
        if op.get_attr("seed2"):
            found["seed"] = str(op.get_attr("seed2"))
    if queue.names is not None:
        found["names"] = repr(list(queue.names))
    return found


def _queue_name(call: cst.Call) -> str:
    """The queue variable `call` is a method call on (checked by :func:`_on`)."""
    func = call.func
    assert isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
    return func.value.value


def _on(call: cst.Call, queues: dict) -> bool:
    """Whether `call` is a method call on one of `queues` (a plain name)."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value in queues
    )
