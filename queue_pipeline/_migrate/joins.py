"""Joins in a migration: N copies of the per-record code, and readers joined by a list.

A join's lists become one Dataset of records: N identical copies of the
per-record code (one per thread) become that code mapped once
(NOTE [ Copies of the per-record code for a join ]); N readers of one queue
become an interleave of the files.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from queue_pipeline._migrate import chains
from queue_pipeline._migrate.graph_checks import identical_copies
from queue_pipeline._migrate.syntax import assigned_names, callee, names_in, parse_expression
from queue_pipeline._migrate.base import (
    BATCHING,
    PRODUCERS,
    READS,
    State,
    Step,
)
from queue_pipeline._migrate.lockstep import Lockstep
from queue_pipeline._migrate.repeated_lists import multiplied_list

__all__ = ["Joins"]


class Joins(Lockstep):
    """The join rewrites (a mixin of the rewriter)."""

    _block: Callable[..., list[str]]  # the rewriter's: rewrites a list of statements

    def join_copies_loop(self, fn, stmt: cst.For, state: State, depth: int):
        """A loop making N copies of the per-record code for a join, as that code once.

        NOTE [ Copies of the per-record code for a join ]
        Inception-era input code preprocesses in N copies, each a thread of
        the join::

            images_and_labels = []
            for thread_id in range(num_preprocess_threads):
                image, label = parse_and_distort(example_serialized)
                images_and_labels.append([image, label])
            images, labels = tf.train.batch_join(images_and_labels, batch_size)

        Every copy reads the same dequeue, so each record goes through one
        copy: the records mapped by that code once, then ``batch`` with
        ``num_threads=N`` (the join's threads; its order depends on them).
        A copy that reads the loop's variable (preprocessing that differs by
        thread) is refused. None if `stmt` is not such a loop.
        """
        body = list(stmt.body.body) if isinstance(stmt.body, cst.IndentedBlock) else []
        last = body[-1].body[0] if body and isinstance(body[-1], cst.SimpleStatementLine) else None
        call = last.value if isinstance(last, cst.Expr) else None
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "append"
            and isinstance(call.func.value, cst.Name)
            and len(call.args) == 1
            and fn.kind(call.func.value.value) == "record"
        ):
            return None
        stages = set(PRODUCERS + BATCHING + READS) | {"slice_input_producer"}
        if any(callee(c) in stages for c in self.calls_in(stmt)):
            return None
        if (
            fn.role == "batch"
            and isinstance(stmt.iter, cst.Name)
            and state.element == [stmt.iter.value]
            and not state.pending
        ):  # NOTE [ A batching helper looping over the copies ]
            return self._copies_parameter_loop(fn, stmt, body, call, state, depth)
        loop_names = names_in(stmt.target)
        reads_loop = bool(loop_names & set().union(*(names_in(s) for s in body)))
        if reads_loop and not identical_copies(self.trace.nodes):
            raise self.fail(
                fn, stmt, f"each copy of the per-record code reads `{self.code(stmt.target)}` "
                "(preprocessing that differs by thread); tf.data maps every record with one "
                "function: make the choice from the record (or at random) and migrate that"
            )  # fmt: skip
        count = self.code(stmt.iter).strip()
        match = re.fullmatch(r"range\((.+)\)", count)
        out = self._block(fn, body[:-1], state, depth)
        if reads_loop:  # every copy built the same ops: the first copy's value serves
            first = "0" if match else f"next(iter({count}))"
            out.insert(0, f"{'    ' * depth}{self.code(stmt.target)} = {first}\n")
            self.differences.append(
                f"{self.where(fn.line(stmt))}: the copies of the per-record code read "
                f"`{self.code(stmt.target)}` but built the same ops (checked on the graph): "
                f"the tf.data version runs it once with {self.code(stmt.target)} = {first}"
            )
        element = self._element_of(self.code(call.args[0].value))
        self.copy_lists.add(call.func.value.value)
        state.copies[call.func.value.value] = (
            f"[{element}]",
            match.group(1) if match else f"len({count})",
        )
        label = f"for ... in {count}: (copies for a join)"
        self.steps.append(Step(fn.line(stmt), label, "the per-record code once"))
        return out

    def join_copies_comprehension(self, fn, stmt, comp: cst.ListComp, state: State) -> bool:
        """``example_list = [tf.decode_csv(value, ...) for _ in range(n)]`` for a join:
        N copies of per-record code on one read, as that code once (NOTE [ Copies of
        the per-record code for a join ], the comprehension's form). False if `stmt`
        is no such list (a copy that reads the loop's variable, one that builds a stage,
        or no record read)."""
        loop = comp.for_in
        if loop.inner_for_in is not None or comp.for_in.ifs:
            return False
        stages = set(PRODUCERS + BATCHING + READS) | {"slice_input_producer"}
        if any(callee(c) in stages for c in self.calls_in(comp.elt)):
            return False
        if names_in(loop.target) & names_in(comp.elt):
            return False
        if not any(fn.kind(n) == "record" for n in names_in(comp.elt)):
            return False
        (name,) = assigned_names(stmt) or ("",)
        if not name:
            return False
        count = self.code(loop.iter).strip()
        match = re.fullmatch(r"range\((.+)\)", count)
        state.pending.append((stmt, ((comp, self.code(comp.elt)),)))
        self.copy_lists.add(name)
        state.copies[name] = (name, match.group(1) if match else f"len({count})")
        label = f"[... for ... in {count}] (copies for a join)"
        self.steps.append(Step(fn.line(stmt), label, "the per-record code once"))
        return True

    def _copies_parameter_loop(self, fn, stmt, body, call, state: State, depth: int) -> list[str]:
        """``for image, caption in images_and_captions:`` in a batching helper.

        NOTE [ A batching helper looping over the copies ]
        im2txt's ``batch_with_dynamic_pad(images_and_captions, batch_size,
        ...)`` takes the N copies' lists of its caller (NOTE [ Copies of the
        per-record code for a join ]), loops over them computing per-record
        values, appends each copy's list and joins them. Its version takes the
        Dataset of one copy's values: the loop's target names one element, the
        loop's body is per-record code mapped over the Dataset, and the join is
        a ``batch`` of what the body appended.
        """
        target = stmt.target
        names = (
            [self.code(e.value) for e in target.elements]
            if isinstance(target, (cst.Tuple, cst.List))
            else [self.code(target)]
        )
        state.element = names
        out = [f"{'    ' * depth}records = dataset\n"]  # the per-record code maps `records`
        out += self._block(fn, body[:-1], state, depth)
        element = self._element_of(self.code(call.args[0].value))
        self.copy_lists.add(call.func.value.value)
        state.copies[call.func.value.value] = (f"[{element}]", "")
        label = f"for {self.code(target)} in {self.code(stmt.iter)}: (the copies' lists)"
        self.steps.append(Step(fn.line(stmt), label, "per-record code mapped over the Dataset"))
        return out

    def _join_records(self, fn, stmt, call, args, state: State, depth: int) -> list[str]:
        tensors = call.args[0].value if call.args and call.args[0].keyword is None else None
        if tensors is None:
            for a in call.args:
                if a.keyword is not None and a.keyword.value == "tensors_list":
                    tensors = a.value
        if isinstance(tensors, cst.Name) and tensors.value in state.joined:
            return []
        if isinstance(tensors, cst.ListComp) and isinstance(tensors.elt, cst.Call):
            return self._interleave(fn, stmt, tensors, state, depth)
        if isinstance(tensors, cst.List) and tensors.elements:
            return self._literal_join(fn, stmt, tensors, state, depth)
        raise self.fail(
            fn, stmt, f"the join's lists `{self.code(tensors) if tensors else '?'}` are not "
            "a list the migration can follow: write them as `[read(queue) for _ in range(n)]` "
            "(one reading helper, n readers of one queue) or as a literal list"
        )  # fmt: skip

    def one_list_join(self, kind: str, args: dict[str, str]) -> tuple[str, dict[str, str]]:
        """``*_batch_join([x], ...)`` as ``*_batch(x, ...)``; other calls unchanged.

        NOTE [ A join of a literal list ]
        Each list of a join is one enqueue thread (the spec's batch_join):
        ``shuffle_batch_join([sample], enqueue_many=True)`` has one list, so
        one thread, and is exactly ``shuffle_batch(sample, enqueue_many=True)``
        (its `enqueue_many` and every other argument mean the same). A literal
        list of N lists ``[read(queue), read(queue)]`` is N readers of one
        queue, the comprehension ``[read(queue) for _ in range(N)]`` written
        out: an interleave of the files (``_literal_join``; ``[read(queue)]``,
        one helper's call, too, with one reader). Lists read by different
        code, or from different queues, are refused with the fix.
        """
        if not kind.endswith("_join"):
            return kind, args
        tensors = parse_expression(args.get("tensors_list", ""))
        repeated = multiplied_list(tensors)
        if repeated is not None:  # NOTE [ A join of one list repeated ]
            item, threads = repeated
            args = {k: v for k, v in args.items() if k != "tensors_list"}
            args["tensors"] = self.code(item)
            if threads.strip() != "1":
                args["num_threads"] = threads
            return kind[: -len("_join")], args
        if not (isinstance(tensors, cst.List) and len(tensors.elements) == 1):
            return kind, args
        only = tensors.elements[0]
        if isinstance(only, cst.StarredElement):
            return kind, args
        if isinstance(only.value, cst.Call) and self.helper_of(only.value) is not None:
            return kind, args  # `[read(queue)]`: one reader, as the literal list of N
        args = {k: v for k, v in args.items() if k != "tensors_list"}
        args["tensors"] = self.code(tensors.elements[0].value)
        return kind[: -len("_join")], args

    def _literal_join(self, fn, stmt, tensors: cst.List, state: State, depth: int) -> list[str]:
        """``batch_join([read(queue), read(queue)], ...)``: N readers of one queue
        (NOTE [ A join of a literal list ])."""
        texts = [self.code(e.value) for e in tensors.elements]
        first = tensors.elements[0].value
        if (
            not any(isinstance(e, cst.StarredElement) for e in tensors.elements)
            and isinstance(first, cst.Call)
            and self.helper_of(first) is not None
            and len({re.sub(r"\s+", "", t) for t in texts}) == 1
        ):
            return self._interleave_reads(fn, stmt, first, str(len(texts)), None, state, depth)
        raise self.fail(
            fn, stmt, f"the join's {len(texts)} lists `{self.code(tensors)}` are not all "
            "one reading helper's call on one queue, so each list (one enqueue thread of "
            "the join) reads by its own code: read them with one helper, "
            "`[read(queue) for _ in range(n)]` (tf.data interleaves the files), or build "
            "one Dataset per reader and mix them with `tf.data.Dataset.sample_from_datasets`"
        )  # fmt: skip

    def _interleave(self, fn, stmt, comp: cst.ListComp, state: State, depth: int) -> list[str]:
        """N readers sharing one queue (``[read(queue) for _ in range(n)]``) as an interleave."""
        count = self.code(comp.for_in.iter)
        match = re.fullmatch(r"range\((.+)\)", count.strip())
        readers = match.group(1) if match else f"len({count})"
        return self._interleave_reads(fn, stmt, comp.elt, readers, None, state, depth)

    def _interleave_reads(
        self, fn, stmt, elt, readers: str, label: str | None, state: State, depth: int
    ) -> list[str]:
        """`readers` readers made by the helper call `elt`, all of one queue, as an
        interleave of that queue's files (`label`: the step's, if not the reads')."""
        pad = "    " * depth
        helper = self.helper_of(elt) if isinstance(elt, cst.Call) else None
        if helper is None or helper.role != "record" or not isinstance(elt, cst.Call):
            raise self.fail(fn, stmt, "the join's lists must come from one reading helper")
        new, kind, reader_fn, extra, _ = self.record_helper(helper)
        if helper.name in self.record_lockstep:
            raise self.fail(fn, stmt, "parallel readers each reading several queues in lockstep")
        if helper.name in self.record_keys:
            raise self.fail(fn, stmt, "a reader's key read by one of several parallel readers")
        queue = next(  # the first argument (after the object, for an object's method)
            (
                a.value
                for a in elt.args
                if isinstance(a.value, cst.Name) and a.value.value in state.queues
            ),
            None,
        )
        if not isinstance(queue, cst.Name):
            raise self.fail(fn, stmt, "the helper must read from a producer of this function")
        files = state.queues[queue.value]
        mapped = new
        if extra:
            passed = ", ".join(self._extra_args(helper, elt, extra))
            mapped = f"lambda value: {new}(value, {passed})"
        self.steps.append(
            Step(
                fn.line(stmt),
                label or f"{kind}.read x {readers} (in {helper.name})",
                f"{files}.interleave({reader_fn}, cycle_length={readers}), "
                f"then {new} in Dataset.map",
            )
        )
        state.element = ["value"]
        return [
            f"{pad}records = {files}.interleave(\n",
            f"{pad}    {reader_fn}, cycle_length={readers}, num_parallel_calls={chains.AUTOTUNE}\n",
            f"{pad})\n",
            f"{pad}records = records.map({mapped}, num_parallel_calls={chains.AUTOTUNE})\n",
        ]
