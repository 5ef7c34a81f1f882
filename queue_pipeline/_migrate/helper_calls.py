"""The rewriter's calls of the file's helpers: a helper's version called in its place.

A reading helper's record function mapped over the records; a batching
helper's version taking the Dataset (records in, records out for one that
only shuffles: NOTE [ A helper that shuffles the records ]); a pipeline
helper's version returning the Dataset, or the records of a queue it filled
and returned (NOTE [ A queue a helper fills and returns ]).

NOTE [ A helper that makes its own records ]
``image = read_and_decode_single_example(filename)`` (segnet.tf, many GAN
readers): the helper makes its own producer and reader and returns one
decoded record, which the caller batches. Its version returns the Dataset of
those records (no batch), and the caller's line becomes ``records =
<helper>_dataset(filename)``, its names the element from then on; the run
tells records from batches. Called again for another record of the same
batch (``label = read_and_decode_single_example(labels_filename)``), the
second Dataset is zipped with the first (NOTE [ Records read in lockstep ]).
"""

from __future__ import annotations

import re

import dataclasses
from collections.abc import Callable
from typing import cast

import libcst as cst
import libcst.matchers as m
import tensorflow as tf

from queue_pipeline._migrate import chains, record_objects, taken_reads
from queue_pipeline._migrate.base import READS, Function, State, Step, batch_params, fresh
from queue_pipeline._migrate.branches import Branches
from queue_pipeline._migrate.syntax import (
    assigned_names,
    bare,
    call_text,
    callee,
    names_in,
)

__all__ = ["HelperCalls"]


class HelperCalls(Branches):
    """The helper-call rewrites (a mixin of the rewriter)."""

    pipeline: Callable[..., str]  # the rewriter's: writes a function's tf.data version

    def _helper_call(self, fn, stmt, call, helper: Function, state: State, depth: int) -> list[str]:
        pad = "    " * depth
        role = helper.role
        if role == "record":
            if not state.parallel_readers:  # NOTE [ Readers in lockstep on one queue ]
                taken_reads.refuse_repeated_reads(self, fn, stmt, helper)
            new, kind, reader_fn, extra, value = self.record_helper(helper)
            args = self._extra_args(helper, call, extra) if extra else []
            if helper.name in self.record_lockstep:  # NOTE [ Records read in lockstep ]
                records = self.lockstep_records(fn, stmt, call, helper, state)
            else:
                files = self._files(fn, stmt, call, state)
                records = chains.records_of(reader_fn, files)
                if state.read_from and not state.batch_element:  # the record's next source
                    return self.helper_zipped(fn, stmt, call, helper, records, files, state, depth)
            state.element = value.split(", ")
            if helper.name in self.record_keys:  # (key, value): the legacy reader's keys
                key, spec = self.record_keys[helper.name]
                try:
                    records = chains.keyed_records_of(spec[0], spec[1], files)
                except chains.Unsupported as e:
                    raise self.fail(fn, stmt, str(e)) from e
                state.element = [key, value]
            passed = ", ".join(state.element + args)
            state.pending.append((stmt, ((call, f"{new}({passed})"),)))
            state.direct = (stmt, new if not args else "")
            self.steps.append(
                Step(
                    fn.line(stmt),
                    f"{kind}.read (in {helper.name})",
                    f"{' '.join(records.split())}, then {new} in Dataset.map",
                )
            )
            read = [f"{pad}records = {records.replace(chr(10), chr(10) + pad)}\n"]
            if helper.name in self.record_batching:  # NOTE [ A reading helper that batches ]
                returned = isinstance(stmt.body[0], cst.Return)
                state.direct = (stmt, new if not args else "") if returned else (None, "")
                if helper.name in self.record_branches:
                    return read + self._branched_batching(fn, stmt, call, helper, state, depth)
                legacy = self.caller_batching(fn, stmt, call, helper)
                read += self._batching(fn, stmt, call, state, depth, legacy=legacy)
            return read
        if role == "pipeline":
            values = fn.call.local_values if fn.call is not None else {}
            targets = assigned_names(stmt)
            if state.read_from and targets and not any(t in values for t in targets):
                raise self.fail(
                    fn, stmt, f"a branch this run did not take calls `{helper.name}`, which "
                    "builds queue stages the run did not see; migrate with arguments that "
                    "take that branch (--call)"
                )  # fmt: skip
            self._record_object_passed(fn, stmt, call, helper)
            self._second_source(fn, stmt, state)  # one Dataset holds one pipeline
            self._refuse_record_object(fn, stmt, helper, targets, values)
        new = self.pipeline(helper)
        kept = self.kept_params[new]
        queue = self._returned_queue(fn, stmt)
        if queue is not None:  # NOTE [ A queue a helper fills and returns ]
            name, count = queue
            new_call = self._new_call(helper, call, new, kept, {})
            state.own_queues[name] = ("FIFOQueue", {})
            state.enqueued[name] = (name, False)
            state.element = [f"{name}_{i}" for i in range(count)]
            self.steps.append(Step(fn.line(stmt), f"{helper.name}(...)", f"records = {new_call}"))
            target = stmt.body[0].targets[0].target
            return [self.text(stmt, depth, [(target, "records"), (call, new_call)])]
        out: list[str] = []
        replace: dict[str, str] = {}
        if role == "batch":
            bound = self.bound(getattr(self.trace.module, helper.name), call)
            record_params = helper.record_params
            out += self._record_read_in_call(fn, stmt, call, helper, bound, state, depth)
            returns = ", ".join(
                e for p in record_params if p in bound for e in helper.element_of(p, bound[p])
            )
            if returns in state.copies:  # the N copies' lists: one copy's values
                returns = self._element_of(state.copies.pop(returns)[0])
            elif state.pending:
                returns = self._element_of(returns, fn)
            if state.pending or bare(returns) != bare(", ".join(state.element)):
                out += self._flush(state, returns, depth)
            replace = {p: "" for p in record_params}
            replace[record_params[0]] = "records"
        new_call = self._new_call(helper, call, new, kept, replace)
        self.steps.append(Step(fn.line(stmt), f"{helper.name}(...)", new_call))
        replacements: list[tuple[cst.CSTNode, str]] = []
        target = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        loaders = self.loaders.get(new, [])  # the helper's version returns (dataset, load)
        if isinstance(target, cst.Assign) and role == "pipeline" and self._records_out(fn, target):
            # NOTE [ A helper that makes its own records ]
            t = target.targets[0].target
            names = (
                [self.code(e.value) for e in t.elements]
                if isinstance(t, (cst.Tuple, cst.List))
                else [self.code(t)]
            )
            if state.read_from:  # NOTE [ Records read in lockstep ]: one more source
                self.check_helper_unshuffled(fn, stmt, helper)
                more = fresh(fn, f"{names[0]}_records", f"{names[0]}s_records")
                out.append(self.text(stmt, depth, [(t, more), (call, new_call)]))
                out += self.zipped(more, state, "    " * depth)
                state.element += names
            else:
                out.append(self.text(stmt, depth, [(t, "records"), (call, new_call)]))
                state.element = self._element_names(fn, names, state)
            state.read_from.append(new_call)
            return out
        if isinstance(target, cst.Assign) and role == "batch" and self._records_out(fn, target):
            # NOTE [ A helper that shuffles the records ]: records in, records out
            t = target.targets[0].target
            state.element = self._element_names(
                fn,
                [self.code(e.value) for e in t.elements]
                if isinstance(t, (cst.Tuple, cst.List))
                else [self.code(t)],
                state,
            )
            replacements.append((t, "records"))
        elif isinstance(target, cst.Assign):
            t = target.targets[0].target
            state.batch_element = (
                [self.code(e.value) for e in t.elements]
                if isinstance(t, (cst.Tuple, cst.List))
                else batch_params(fn, self.code(t))
            )
            own = [fresh(fn, *(f"{n}{s}" for s in ("", "_inputs", "_arrays"))) for n in loaders]
            state.loaders += own
            replacements.append((t, ", ".join(["dataset", *own])))
        elif loaders and isinstance(target, cst.Return):
            self.loaders[f"{fn.name}_dataset"] = list(loaders)  # returned with the Dataset
        replacements.append((call, new_call))
        out.append(self.text(stmt, depth, replacements))
        return out

    def _branched_batching(self, fn, stmt, call, helper: Function, state: State, depth: int):
        """The records mapped once, then the helper's ``if`` with each branch's batching
        chain: NOTE [ A reading helper that batches two ways ]."""
        pad = "    " * depth
        test, parts = self.record_branches[helper.name]
        legacies = [self.caller_batching(fn, stmt, call, helper, part) for part in parts]
        element = self._element_of(legacies[0][1]["tensors"], fn)
        out = self._flush(state, element, depth)
        state.element = [e.strip() for e in element.split(",") if e.strip()]
        test = self.in_caller_terms(test, call, helper)
        if test in ("True", "False"):  # the caller takes one branch: the other is not written
            legacy = legacies[0] if test == "True" else legacies[1]
            return out + self._batching(fn, stmt, call, state, depth, legacy=legacy)
        out.append(f"{pad}if {test}:\n")
        other = dataclasses.replace(state, pending=[], element=list(state.element))
        out += self._batching(fn, stmt, call, state, depth + 1, legacy=legacies[0])
        out.append(f"{pad}else:\n")
        out += self._batching(fn, stmt, call, other, depth + 1, legacy=legacies[1])
        return out

    def _restores_shapes(self, fn: Function, stmt) -> bool:
        """Whether `stmt` only sets the shapes of what it dequeued from those its records
        had (in a batching helper: its record parameters'; in a pipeline: shapes read
        before an own queue) (``for i in range(len(input_tensors)):
        output_tensors[i].set_shape(input_tensors[i].shape)``)."""
        calls = {callee(c) for c in self.calls_in(stmt)}
        if "set_shape" not in calls or calls - {"set_shape", "range", "len", "enumerate", "zip"}:
            return False
        if fn.role != "batch":  # shapes kept before an own queue (``shapes = [x.get_shape()
            # for x in data]``), set again on what it hands out: a Dataset keeps them
            kept = {
                n
                for st in m.findall(fn.node.body, m.SimpleStatementLine())
                if re.search(r"\.get_shape\(\)|\.shape\b", self.code(st))
                for n in assigned_names(st)
            }
            return isinstance(stmt, cst.For) and bool(names_in(stmt.iter) & kept)
        return bool(names_in(stmt) & set(fn.record_params))

    def _refuse_record_object(self, fn: Function, stmt, helper: Function, targets, values):
        """Refuses ``read_input = read_data(files)`` where the helper builds its own
        producer and returns its records as attributes of an object (cifar10's
        ``read_cifar10`` shape, over ``slice_input_producer``): a Dataset's element
        cannot be that object (was: a crash, the object's name unbound)."""
        for target in targets:
            value = values.get(target)
            fields = getattr(value, "__dict__", None)
            if not isinstance(fields, dict) or isinstance(value, (tf.Tensor, type)):
                continue
            if self.trace.kind_of(value) in ("queue", "reader"):
                continue  # a queue or reader object (prefetch_input_data's): followed elsewhere
            held = sorted(
                k
                for k, v in fields.items()
                if isinstance(v, tf.Tensor) and self.trace.kind_of(v) == "record"
            )
            if held:
                returns = m.findall(helper.node, m.Return(value=m.Name()))
                own = (
                    cast(cst.Name, cast(cst.Return, returns[0]).value).value if returns else target
                )
                shown = ", ".join(f"{target}.{k}" for k in held)
                raise self.fail(
                    fn, stmt, f"`{helper.name}` builds its own producer and returns its "
                    f"per-record tensors as attributes of an object ({shown}), which a "
                    f"Dataset's element cannot be (not migrated yet). Fix: return the tensors "
                    f"from {helper.name} (`return {', '.join(f'{own}.{k}' for k in held)}`), "
                    "unpack them where it is called, then migrate"
                )  # fmt: skip

    def producer_and_reader(self, fn: Function, stmt, producer, state: State, depth: int):
        """A producer's statement; with the call of a reading helper the queue is handed to.

        NOTE [ A queue made in the call that reads it ]
        ``example = get_example(tf.train.string_input_producer([filename]))``
        makes the queue inside the call of the reading helper that reads it:
        the producer's chain is written first, its Dataset of file names known
        by the producer call's text, then the helper call is migrated as if the
        queue had a name of its own (was: the helper call dropped, and the
        written code read names nothing bound). The reading helper's call may
        itself be an argument of a batching helper's (``make_batch(read_record(
        producer(...)), n)``): that call is migrated, which reads the record first
        (NOTE [ A batching helper computing on its records ]).
        """
        calls = self.calls_in(stmt)
        for outer in calls:
            if not any(a.value is producer for a in outer.args):
                continue
            helper = self.helper_of(outer)
            if helper is not None:
                key = self.code(producer)
                out = self._producer(fn, stmt, producer, state, depth, key=key)
                # `make_batch(read_record(producer(...)), n)`: the batching helper's call
                for batching in calls:
                    taker = self.helper_of(batching)
                    if taker is not None and any(a.value is outer for a in batching.args):
                        outer, helper = batching, taker
                return out + self._helper_call(fn, stmt, outer, helper, state, depth)
            if callee(outer) in READS:  # ``reader.read(tf.train.string_input_producer(...))``
                out = self._producer(fn, stmt, producer, state, depth, key=self.code(producer))
                return out + self.read_records(fn, stmt, outer, state, depth)
        return self._producer(fn, stmt, producer, state, depth)

    def read_records(self, fn: Function, stmt, read: cst.Call, state: State, depth: int):
        """A reader's ``read(queue)`` (or ``read_up_to``) as ``records = <its Dataset>``."""
        pad, line = "    " * depth, fn.line(stmt)
        if state.read_from and not state.batch_element:  # NOTE [ Records read in lockstep ]
            return self.lockstep_read(fn, stmt, read, state, depth)
        kind, reader_fn, value, key_used = self._read(fn, stmt, read, state.readers)
        files = self._files(fn, stmt, read, state)
        state.read_from, state.read_by = [files], {self.reader_name(read)}
        if state.parallel_readers:  # NOTE [ Migrating the function's own queue ]
            if key_used:
                raise self.fail(fn, stmt, "a key read by one of several parallel readers")
            records = (
                f"{files}.interleave(\n    {reader_fn}, cycle_length={state.parallel_readers}, "
                f"num_parallel_calls={chains.AUTOTUNE}\n)"
            )
            state.element = [value]
            step = f"{kind}.{callee(read)} x {state.parallel_readers}"
            self.steps.append(Step(line, step, " ".join(records.split())))
            return [f"{pad}records = {records.replace(chr(10), chr(10) + pad)}\n"]
        if key_used:  # (key, value) pairs with the legacy reader's key strings
            spec = self._reader_spec(fn, stmt, read, state.readers)
            try:
                records = chains.keyed_records_of(spec[0], spec[1], files)
            except chains.Unsupported as e:
                raise self.fail(fn, stmt, str(e)) from e
            state.element = [self._read_key(stmt), value]
        else:
            records = chains.records_of(reader_fn, files)
            state.element = [value]
        self.steps.append(Step(line, f"{kind}.{callee(read)}", records))
        records = records.replace("\n", "\n" + pad)
        return [f"{pad}records = {records}\n"]

    def _record_read_in_call(self, fn, stmt, call, helper: Function, bound, state, depth):
        """``make_batch(read_record(queue), n)``: the reading helper's call, read first and
        named (its record object once per record; NOTE [ A batching helper computing on
        its records ]); `bound` then passes that name. The lines that read the records."""
        for param in helper.record_objects:
            inner = next(
                (a.value for a in call.args if self.code(a.value) == bound.get(param)), None
            )
            reader = self.helper_of(inner) if isinstance(inner, cst.Call) else None
            if reader is None or reader.role != "record":
                continue
            out = self._helper_call(fn, stmt, inner, reader, state, depth)
            name = fresh(fn, param, "record")
            _, ((_, read),) = state.pending.pop()
            state.pending.append((stmt, ((stmt.body[0], f"{name} = {read}"),)))
            state.direct, bound[param] = (None, ""), name
            return out
        return []

    def _record_object_passed(self, fn: Function, stmt, call, helper: Function) -> None:
        """Refuses a record handed to `helper` as an object it uses for more than batching
        its attributes (NOTE [ A record passed as an object ]; was: "a second pipeline")."""
        given = helper.call.arguments if helper.call is not None else {}
        bound = self.bound(getattr(self.trace.module, helper.name), call)
        for param, value in given.items():
            held = record_objects.record_fields(value, self.trace.kind_of)
            if self.trace.kind_of(value) in ("queue", "reader"):
                continue  # an object holding its queue: followed elsewhere
            if held and param in bound and param not in ("self", "cls"):
                use = record_objects.misuse(helper.node, param, held)
                why = record_objects.refusal(helper.name, bound[param], held, use, param)
                raise self.fail(fn, stmt, why)

    def _records_out(self, fn: Function, assign: cst.Assign) -> bool:
        """Whether what a batching helper's call assigns holds records, not batches.

        NOTE [ A helper that shuffles the records ]
        magenta's ``input_tensors = _shuffle_inputs(input_tensors, capacity,
        min_after_dequeue, num_threads)`` passes the records through a
        ``RandomShuffleQueue`` of its own (``enqueue``, a QueueRunner, then
        ``dequeue()``): records in, records out. Its version maps the Dataset
        of records to the shuffled Dataset of records, and the caller goes on
        with ``records`` and the same element (the run tells records from
        batches).
        """
        values = fn.call.local_values if fn.call is not None else {}
        tensors = [
            t
            for t_ in assign.targets
            for n in m.findall(t_.target, m.Name())
            if isinstance(n, cst.Name)
            for t in tf.nest.flatten(values.get(n.value))
            if isinstance(t, tf.Tensor)
        ]
        return bool(tensors) and all(t.name not in self.trace.batch for t in tensors)

    def _returned_queue(self, fn: Function, stmt) -> tuple[str, int] | None:
        """(name, number of components) when `stmt` assigns one name a queue its helper
        filled and returned.

        NOTE [ A queue a helper fills and returns ]
        im2txt's and skip-thoughts' ``input_queue = prefetch_input_data(reader,
        pattern, ...)`` returns a queue the helper made, filled from N readers
        and started (``RandomShuffleQueue`` in training, ``FIFOQueue`` in
        evaluation); the caller dequeues (``dequeue()`` in N copies of its
        preprocessing, or ``dequeue_many(batch_size)``). The helper's version
        returns the Dataset of what it enqueued (its shuffle included); the
        caller's line becomes ``records = <helper>_dataset(...)`` and its
        dequeues read those records as a FIFO queue's: ``dequeue()`` one at a
        time, ``dequeue_many(n)`` a batch of ``n``.
        """
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        target = assign.targets[0].target
        if not isinstance(target, cst.Name) or fn.kind(target.value) != "queue":
            return None
        value = fn.call.local_values.get(target.value) if fn.call is not None else None
        dtypes = getattr(value, "dtypes", None)
        if not dtypes or not hasattr(value, "dequeue_many"):
            return None
        return target.value, len(dtypes)

    def _new_call(self, helper: Function, call: cst.Call, new: str, kept, replace) -> str:
        """`call` of `helper` as a call of its version `new` that takes the `kept` parameters.

        `replace` maps parameters to the text to pass instead (empty: drop it).
        """
        positional = [
            p.name.value
            for p in list(helper.node.params.posonly_params) + list(helper.node.params.params)
        ]
        pieces: list[str] = []
        as_keywords = False
        for i, arg in enumerate(call.args):
            param = arg.keyword.value if arg.keyword is not None else positional[i]
            text = replace.get(param, self.code(arg.value))
            if param == next((p for p, t in replace.items() if t), None):
                param = "dataset"
            if not text or param not in kept:
                as_keywords = as_keywords or arg.keyword is None
                continue
            if arg.keyword is not None or as_keywords:
                pieces.append(f"{param}={text}")
            else:
                pieces.append(text)
        return call_text(new, pieces)
