"""Records read in lockstep from several queues: their Datasets zipped.

NOTE [ Records read in lockstep ]
Segmentation and paired-image programs keep an image list and a label list
in two producers, both unshuffled, and read one file of each for every
record (``_, image = reader.read(image_queue)``, then ``_, label =
reader.read(label_queue)``), directly or in a helper handed both queues.
Each run of the batching call's enqueue reads the next element of each
queue, so the i-th record pairs the i-th element of each: in tf.data, the
two Datasets of records zipped (``tf.data.Dataset.zip((records,
label_values))``), whose end is the shorter one's, as the legacy enqueue
stops at the first queue that closes.

A helper that makes its own records (NOTE [ A helper that makes its own
records ], in helper_calls.py) called once for the image and once for the
label is the same: its Datasets are zipped. So is a producer's queue whose
rows are dequeued one at a time (``style = style_queue.dequeue()``, a style
index beside each image): its Dataset of rows is a source of the record, as
the first one (``records = style_rows``) or zipped with the records read.

NOTE [ Queues shuffled alike by one seed ]
SfMLearner's loader shuffles its image list and its camera list, each in a
string_input_producer given the same ``seed=seed``, and reads one file of
each per record. TF shuffles them alike: a producer's shuffle is a
RandomShuffle op whose seeds are (graph seed, op seed), the graph seed its
default when none is set, so two producers given one op seed and lists of
one length draw the same permutation at every epoch, with or without a
graph-level seed (probed on TF 2.x's compat.v1: string, range and slice
producers; with no op seed, or two op seeds, they are not aligned, even
under one graph seed). tf.data does the same: two Datasets of one length,
each ``.shuffle(n, seed, reshuffle_each_iteration=True)`` with one seed,
give the same order at every epoch, in both TF modes. So such producers
are migrated as they are written, each Dataset of file names shuffled with
the seed given, then zipped; the pairs are the legacy pairs. (Not one
shuffled Dataset of both lists: a line reader's records are a stream over
its files, which zipped Datasets keep and one Dataset of file pairs would
not.) A producer with no op seed, or another one, or a list of another
length, is refused as before.

The graph decides what a second read is (:func:`graph_checks.reads_in_lockstep`):
reads whose values meet in one list of a batching call are one record; a
second read whose values go to another batching call is a second pipeline,
refused as before. Refused as well, each with its reason: a producer that
shuffles on its own (the legacy pairs are random, so nothing can prove a
twin; but see NOTE [ Queues shuffled alike by one seed ]); a
reader's key (the zip gives values); one line or record reader handed two
queues (it keeps reading its current file whichever queue it is handed, so
the pairs depend on file sizes); several parallel readers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import libcst as cst
import tensorflow as tf

from queue_pipeline._migrate import chains
from queue_pipeline._migrate.base import PRODUCERS, Function, State, Step, fresh
from queue_pipeline._migrate.graph_checks import reads_in_lockstep
from queue_pipeline._migrate.record_helpers import RecordHelpers
from queue_pipeline._migrate.syntax import bare, callee

__all__ = ["Lockstep", "shuffle_key"]


def shuffle_key(node) -> tuple | None:
    """(op seed, rows) of a shuffling producer's plan `node` as run, or None when its
    length is unknown: NOTE [ Queues shuffled alike by one seed ]."""
    shapes = [t.shape for t in node.inputs[:1] if hasattr(t, "shape") and t.shape.rank]
    rows = tf.compat.dimension_value(shapes[0][0]) if shapes else None
    if rows is None and isinstance(node.args.get("limit"), int):  # range_input_producer
        rows = node.args["limit"]
    return None if rows is None else (node.args["seed"], rows)


class Lockstep(RecordHelpers):
    """The rewrites of records read from several queues at once (a mixin of the rewriter)."""

    _files: Callable[..., str]  # the stages': the Dataset of file names a read reads
    _batching: Callable[..., list[str]]  # the stages': a batching call's lines

    @staticmethod
    def reader_name(read_call: cst.Call) -> str:
        """The source text of the reader a ``reader.read(queue)`` call reads with."""
        func = read_call.func
        return cst.Module([]).code_for_node(func.value) if isinstance(func, cst.Attribute) else ""

    def _check_lockstep(self, fn, stmt, read_call, kind: str, key_used: bool, read_by: set):
        """Refuses a second read that is not a lockstep read this module can migrate;
        `read_by`: the readers the record's earlier reads used (this one's is added)."""
        reader_name = self.reader_name(read_call)
        if not reads_in_lockstep(self.trace.nodes):
            raise self.fail(
                fn, stmt, "it reads a second queue for a second pipeline (one Dataset holds "
                "one pipeline): build each pipeline in a function of its own and migrate those"
            )  # fmt: skip
        if key_used:
            raise self.fail(
                fn, stmt, "it reads a reader's key with records read from two queues in "
                "lockstep (the zipped Datasets give values only): read the key from the "
                "value, or drop it"
            )  # fmt: skip
        if kind != "WholeFileReader" and reader_name in read_by:
            raise self.fail(
                fn, stmt, f"one {kind} `{reader_name}` reads two queues: it keeps reading "
                "its current file whichever queue it is handed, so which records pair "
                "depends on the files' sizes; Fix: give each queue a reader of its own"
            )  # fmt: skip
        read_by.add(reader_name)

    def _check_next_source(self, fn, stmt, state: State, what: str) -> None:
        """Refuses a `what` (``read``, ``dequeue``) of the record's next source once its
        first values were used, or by parallel readers: the zip needs every source first."""
        if state.parallel_readers or len(state.element) != len(state.read_from):
            raise self.fail(
                fn, stmt, f"a {what} of a second queue after the record's first values were "
                "used (or by parallel readers): read every queue of the record first"
            )  # fmt: skip

    def _check_unshuffled(self, fn, stmt, files: list[str], state: State) -> None:
        queue_of = {f: q for q, f in state.queues.items()}
        shuffled = [queue_of.get(f, f) for f in files if f in state.shuffled]
        if not shuffled:
            return
        alike = {state.shuffled_alike.get(f) for f in files}
        if len(alike) == 1 and None not in alike:  # NOTE [ Queues shuffled alike by one seed ]
            self.steps.append(
                Step(
                    fn.line(stmt), "producers read in lockstep, shuffled alike (one op seed)",
                    "each Dataset of file names shuffled with that seed: tf.data shuffles "
                    "them alike too",
                )
            )  # fmt: skip
            return
        raise self.fail(
            fn, stmt, "it reads records from several queues in lockstep, and the producer "
            f"of `{shuffled[0]}` shuffles: each queue is shuffled on its own (no one op "
            "seed= given to all of them, or lists of other lengths), so the legacy pairs "
            "are random and no tf.data twin can be proven equal to them; Fix: shuffle=False "
            "on the producers read in lockstep (shuffle_batch still shuffles the pairs), "
            "or give them all one seed= (TF shuffles lists of one length alike), then "
            "migrate"
        )  # fmt: skip

    def lockstep_read(self, fn: Function, stmt, read_call: cst.Call, state: State, depth: int):
        """A read of another queue for the record being read: the Datasets zipped."""
        pad = "    " * depth
        kind, reader_fn, value, key_used = self._read(fn, stmt, read_call, state.readers)
        self._check_lockstep(fn, stmt, read_call, kind, key_used, state.read_by)
        self._check_next_source(fn, stmt, state, "read")
        files = self._files(fn, stmt, read_call, state)
        self._check_unshuffled(fn, stmt, state.read_from + [files], state)
        more = fresh(fn, f"{value}s", f"{value}_records")
        out = [f"{pad}{more} = {chains.records_of(reader_fn, files)}\n"]
        out += self.zipped(more, state, pad)
        state.read_from.append(files)
        state.element.append(value)
        self.steps.append(
            Step(fn.line(stmt), f"{kind}.{callee(read_call)} (lockstep)", f"zip with {more}")
        )
        return out

    def check_helper_unshuffled(self, fn: Function, stmt, helper: Function) -> None:
        """Refuses a lockstep read of a helper making its own records from a producer
        that shuffles more than one element (its pairs are random)."""
        for node in self.trace.nodes:
            if node.kind not in PRODUCERS or not node.args.get("shuffle"):
                continue
            if not any(name == helper.name for name, _ in self.trace.sites.get(node.index, ())):
                continue
            rows = [t.shape[0] for t in node.inputs[:1] if hasattr(t, "shape") and t.shape.rank]
            if rows and rows[0] == 1:
                continue  # one row: nothing to shuffle
            raise self.fail(
                fn, stmt, f"it reads records from several sources in lockstep, and "
                f"{helper.name}'s {node.kind} shuffles: each source is shuffled on its own, "
                "so the legacy pairs are random and no tf.data twin can be proven equal to "
                "them; Fix: shuffle=False there (shuffle_batch still shuffles the pairs), "
                "then migrate"
            )  # fmt: skip

    def producer_dequeue(self, fn: Function, stmt, calls: list, state: State, depth: int):
        """The lines ``row = queue.dequeue()`` of a producer's queue becomes, else None: its
        rows are the records, or are zipped with them (NOTE [ Records read in lockstep ])."""
        call = next(
            (
                c
                for c in calls
                if callee(c) in ("dequeue", "dequeue_many", "dequeue_up_to")
                and isinstance(c.func, cst.Attribute)
                and isinstance(c.func.value, cst.Name)
                and c.func.value.value in state.queues
            ),
            None,
        )
        if call is None:
            return None
        rows = state.queues[cast(cst.Name, cast(cst.Attribute, call.func).value).value]
        method = callee(call)
        count = call.args[0].value if call.args else None
        step = Step(fn.line(stmt), f"{method} of a producer's queue", f"records of {rows}")
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if not isinstance(assign, cst.Assign) or assign.value is not call or state.batch_element:
            raise self.fail(
                fn, stmt, "a producer's queue dequeued other than as `row = queue.dequeue()` "
                "before the batching call: assign its dequeue() to a variable"
            )  # fmt: skip
        pad = "    " * depth
        target = self.code(assign.targets[0].target)
        if method != "dequeue":  # rows n at a time: the rows batched
            if state.element or count is None:
                raise self.fail(
                    fn, stmt, f"{method} of a producer's queue beside other records "
                    "(or without its count): batch the records with a batching call"
                )  # fmt: skip
            row = fresh(fn, "row", "producer_row")
            state.element, state.read_from = [row], [rows]
            batching = {
                "tensors": row,
                "batch_size": self.code(count),
                "allow_smaller_final_batch": repr(method == "dequeue_up_to"),
            }
            label = f"{method} of a producer's queue"
            out = [f"{pad}records = {rows}\n"]
            return out + self._batching(
                fn, stmt, call, state, depth, legacy=("batch", batching, label)
            )
        if not state.element:  # the rows are the records
            state.element, state.read_from = [target], [rows]
            self.steps.append(step)
            return [f"{pad}records = {rows}\n"]
        if not reads_in_lockstep(self.trace.nodes):
            raise self.fail(fn, stmt, "it dequeues a second queue for a second pipeline")
        self._check_next_source(fn, stmt, state, "dequeue")
        self._check_unshuffled(fn, stmt, state.read_from + [rows], state)
        out = self.zipped(rows, state, pad)
        state.read_from.append(rows)
        state.element.append(target)
        self.steps.append(step)
        return out

    def helper_zipped(self, fn, stmt, call, helper: Function, records, files, state, depth):
        """A reading helper's records as the record's next source, zipped with the others
        (its call, ``new(value)``, runs in the map on its part of the record)."""
        new, kind, _, extra, value = self.record_helper(helper)
        if helper.name in self.record_keys or helper.name in self.record_batching:
            raise self.fail(
                fn, stmt, f"{helper.name} reads a second source of the record with its key "
                "or its own batching call: read each source in the function itself"
            )  # fmt: skip
        args = self._extra_args(helper, call, extra) if extra else []
        self._check_next_source(fn, stmt, state, "read")
        if not reads_in_lockstep(self.trace.nodes):
            raise self.fail(fn, stmt, "it reads a second queue for a second pipeline")
        self._check_unshuffled(fn, stmt, state.read_from + [files], state)
        pad = "    " * depth
        more = fresh(fn, f"{value.split(', ')[0]}_records", f"{helper.name}_records")
        out = [f"{pad}{more} = {records}\n", *self.zipped(more, state, pad)]
        state.read_from.append(files)
        state.element += value.split(", ")
        state.pending.append((stmt, ((call, f"{new}({', '.join([value, *args])})"),)))
        self.steps.append(
            Step(fn.line(stmt), f"{kind}.read (in {helper.name}, lockstep)", f"zip with {more}")
        )
        return out

    @staticmethod
    def zipped(more: str, state: State, pad: str) -> list[str]:
        """``records`` zipped with the Dataset `more`, its elements kept flat."""
        if len(state.element) == 1 and not state.starred:
            return [f"{pad}records = tf.data.Dataset.zip((records, {more}))\n"]
        return [  # flat elements: map functions take the top level's components
            f"{pad}records = tf.data.Dataset.zip((records, {more})).map(\n",
            f"{pad}    lambda first, last: (*first, last)\n",
            f"{pad})\n",
        ]

    def helper_lockstep_read(self, fn: Function, stmt, read_call, readers: dict, read_by: set):
        """A reading helper's read of a second queue: (its queue parameter, the reader's
        Dataset function, the value's name)."""
        kind, reader_fn, value, key_used = self._read(fn, stmt, read_call, readers)
        key_used = key_used or fn.name in self.record_keys
        self._check_lockstep(fn, stmt, read_call, kind, key_used, read_by)
        return self.read_queue_param(fn, stmt, read_call), reader_fn, value

    def read_queue_param(self, fn: Function, stmt, read_call: cst.Call) -> str:
        """The parameter of reading helper `fn` holding the queue `read_call` reads."""
        queue = read_call.args[0].value if read_call.args else None
        if not isinstance(queue, cst.Name) or queue.value not in fn.params:
            raise self.fail(
                fn, stmt, "a reading helper reading two queues must read the queues it is "
                "handed (`reader.read(queue_param)`)"
            )  # fmt: skip
        return queue.value

    def lockstep_records(self, fn: Function, stmt, call: cst.Call, helper: Function, state):
        """The Dataset of records a call of a helper reading in lockstep reads: the zip of
        what each of its queue parameters was handed, read by that read's reader."""
        reads = self.record_lockstep[helper.name]
        bound = self.bound(helper.call and getattr(self.trace.module, helper.name), call)
        files = []
        for param, _, _ in reads:
            passed = bare(bound.get(param, ""))
            if passed not in state.queues:
                raise self.fail(
                    fn, stmt, f"{helper.name}'s `{param}` must be a queue a producer of this "
                    f"function filled (it was handed `{passed}`)"
                )  # fmt: skip
            files.append(state.queues[passed])
        self._check_unshuffled(fn, stmt, files, state)
        parts = "".join(f"    {chains.records_of(r, f)},\n" for (_, r, _), f in zip(reads, files))
        state.read_from = files
        return f"tf.data.Dataset.zip((\n{parts}))"
