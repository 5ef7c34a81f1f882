"""Pipeline stages of a migration: producers, readers, slices and batching calls.

Each legacy stage of a pipeline function becomes its tf.data lines (from
:mod:`queue_pipeline._migrate.chains`); the per-record statements collected
between a reader and a batching call become the mapped function, per record
or, where allowed, per batch (NOTE [ Batch-then-decode in migrated code ]).
"""

from __future__ import annotations

import re

import libcst as cst
import tensorflow as tf

from queue_pipeline._migrate.legacy_api import legacy_api
from queue_pipeline import plan
from queue_pipeline._migrate import chains, kept_inputs, map_values, preloaded, vectorize
from queue_pipeline._migrate.graph_checks import (
    reads_in_lockstep,
    settings_fed,
)
from queue_pipeline._migrate.syntax import (
    assigned_names,
    bare,
    callee,
    element_params,
    parse_expression,
)
from queue_pipeline._migrate.base import (
    PRODUCERS,
    State,
    Step,
    batch_params,
    fresh,
    is_shuffled,
    starred_params,
    tensor_names,
)
from queue_pipeline._migrate.batch_shapes import BatchShapes
from queue_pipeline._migrate.joins import Joins
from queue_pipeline._migrate.lockstep import shuffle_key
from queue_pipeline._migrate.python_filled_queues import FED_QUEUE_READ
from queue_pipeline._migrate.trace import loader_count

__all__ = ["Stages"]

# Above this, arrays held as graph constants are worth a note (NOTE in _note_large_constants).
_LARGE_CONSTANT_BYTES = 64 * 2**20


class Stages(Joins, BatchShapes):
    """The stage rewrites (a mixin of the rewriter)."""

    def _files(self, fn, stmt, read_call, state: State) -> str:
        for arg in read_call.args:  # the queue (a lifted reading method takes `self` first)
            queue = arg.value
            if isinstance(queue, cst.Name) and queue.value in state.queues:
                return state.queues[queue.value]
            if isinstance(queue, cst.Call) and self.code(queue) in state.queues:
                return state.queues[self.code(queue)]  # a queue made in the call
        raise self.fail(fn, stmt, FED_QUEUE_READ)

    def _legacy_arguments(self, fn, stmt, call) -> tuple[str, dict[str, str]]:
        """The legacy API `call` names and its arguments' source text by parameter name."""
        kind = callee(call)
        try:
            return kind, self.bound(legacy_api(kind), call)
        except (chains.Unsupported, TypeError) as e:
            raise self.fail(fn, stmt, str(e)) from e

    def _producer(self, fn, stmt, call, state: State, depth: int, key: str = "") -> list[str]:
        """`call`'s chain; `key`: its queue's name when it has none (NOTE [ A queue made in
        the call that reads it ])."""
        pad = "    " * depth
        kind, args = self._legacy_arguments(fn, stmt, call)
        targets = [key] if key else assigned_names(stmt)
        if not targets:
            raise self.fail(fn, stmt, "the producer's queue is not assigned to a variable")
        single = self._single_row(args)
        self._second_source(fn, stmt, state)
        if self._dequeued(stmt, call):
            # ``i = range_input_producer(n).dequeue()``: its rows are the records
            chain = self._producer_chain(fn, stmt, kind, args, "records", single)
            state.element = [targets[0]]
            return [f"{pad}{line}\n" for line in chain.lines]
        names = ["filenames", "files", "file_names"]
        if targets[0] in state.queues:  # the same queue in another branch: the same name
            names = [state.queues[targets[0]]]
        elif state.queues:  # another queue (NOTE [ Records read in lockstep ]): its own name
            stem = re.sub(r"_?(filename_)?queue$", "", targets[0]) or "more"
            names = [n for n in (f"{stem}_files", f"{stem}_filenames", f"{targets[0]}_files")
                     if n not in state.queues.values()]  # fmt: skip
        files = fresh(fn, *names)
        chain = self._producer_chain(fn, stmt, kind, args, files, single)
        state.queues[targets[0]] = files
        traced = self.built_at(fn, stmt, PRODUCERS)
        if not single and (
            any(n.args.get("shuffle") for n in traced) if traced else is_shuffled(args)
        ):
            state.shuffled.add(files)  # as run (NOTE [ Records read in lockstep ])
            seeded = [n for n in traced if n.args.get("seed") is not None]
            if len(traced) == 1 and seeded:  # NOTE [ Queues shuffled alike by one seed ]
                state.shuffled_alike[files] = shuffle_key(seeded[0])
        return [f"{pad}{line}\n" for line in chain.lines]

    def _producer_chain(self, fn, stmt, kind, args, var, single) -> chains.Chain:
        try:
            chain = chains.producer_lines(kind, args, var, single)
        except chains.Unsupported as e:
            raise self.fail(fn, stmt, str(e)) from e
        self.steps.append(Step(fn.line(stmt), kind, " / ".join(chain.lines), chain.fates))
        if single and is_shuffled(args):
            self.differences.append(
                f"{self.where(fn.line(stmt))}: {kind} shuffles one row: nothing to shuffle, "
                "so no shuffle is written"
            )
        return chain

    @staticmethod
    def _dequeued(stmt, call) -> bool:
        """Whether `stmt` assigns ``<producer call>.dequeue()`` (one row at a time)."""
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        value = assign.value if isinstance(assign, cst.Assign) else None
        return (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "dequeue"
            and value.func.value is call
        )

    @staticmethod
    def _single_row(args) -> bool:
        """Whether the producer's input is written as a list of one row (``[filename]``)."""
        first = args.get("string_tensor") or args.get("input_tensor") or ""
        try:
            node = cst.parse_expression(first)
        except cst.ParserSyntaxError:
            return False
        return isinstance(node, cst.List) and len(node.elements) == 1

    def _second_source(self, fn, stmt, state: State) -> None:
        """Refuses a second pipeline in one function: a Dataset is one pipeline."""
        if state.read_from and not state.batch_element and reads_in_lockstep(self.trace.nodes):
            return  # a queue read with the first (NOTE [ Records read in lockstep ])
        if state.element or state.batch_element:
            raise self.fail(
                fn, stmt, "it starts a second pipeline in the same function (one Dataset "
                "holds one pipeline): build each pipeline in a function of its own and "
                "migrate those"
            )  # fmt: skip

    def _slice(self, fn, stmt, call, state: State, depth: int) -> list[str]:
        self._second_source(fn, stmt, state)
        pad = "    " * depth
        held = self._held_in_variables(fn, stmt, call, state, depth)
        if not held:
            self._note_large_constants(fn, stmt)
        try:
            args = self.bound(legacy_api("slice_input_producer"), call)
            chain = chains.slice_lines(args, "records")
        except (chains.Unsupported, TypeError) as e:
            raise self.fail(fn, stmt, str(e)) from e
        if held:
            chain.lines[0] = held[-1]
            chain.lines[:0] = held[:-1]
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if not isinstance(assign, cst.Assign):
            raise self.fail(fn, stmt, "assign the slices to variables")
        target = assign.targets[0].target
        if isinstance(target, (cst.Tuple, cst.List)):
            state.element = [self.code(e.value) for e in target.elements]
        else:
            state.element = ["*" + self.code(target)]
        self.steps.append(
            Step(fn.line(stmt), "slice_input_producer", " / ".join(chain.lines), chain.fates)
        )
        return [f"{pad}{line}\n" for line in chain.lines]

    def _sliced_here(self, fn, stmt) -> list:
        """The tensors the traced ``slice_input_producer`` calls of `stmt` sliced."""
        return [
            t for node in self.built_at(fn, stmt, ("slice_input_producer",)) for t in node.inputs
        ]

    def built_at(self, fn, stmt, kinds) -> list:
        """The traced plan nodes of `kinds` that a line of `stmt` (in `fn`) built."""
        span = self.positions[stmt]

        def built_here(node) -> bool:  # one of its frames is a line of `stmt`
            frames = self.trace.sites.get(node.index, ())
            return any(
                name == fn.name and span.start.line <= line <= span.end.line
                for name, line in frames
            )

        return [node for node in self.trace.nodes if node.kind in kinds and built_here(node)]

    def _held_in_variables(self, fn, stmt, call, state: State, depth: int) -> list[str]:
        """The lines that hold the sliced arrays in variables, or [] to slice them as they are.

        See NOTE [ Preloaded arrays in a migrated TF1-mode program ]: only in
        TF1 mode, and only for graph constants of VARIABLES_FROM_BYTES or more.
        The last line is the ``from_tensor_slices`` over the variables.
        """
        inputs = self._sliced_here(fn, stmt)
        if (
            not preloaded.in_tf1_mode()
            or not inputs
            or not all(isinstance(t, tf.Tensor) and t.op.type == "Const" for t in inputs)
            or preloaded.constant_bytes(inputs) < preloaded.VARIABLES_FROM_BYTES
            or loader_count(self.trace.outputs)  # its own loaders already: keep one contract
        ):
            return []
        tensor_list = next(
            (a.value for a in call.args if a.keyword is None or a.keyword.value == "tensor_list"),
            None,
        )
        constants = preloaded.constants_named(fn.node)
        arguments = (
            preloaded.arrays_and_dtypes(tensor_list, inputs, self.code, constants)
            if tensor_list is not None
            else None
        )
        if arguments is None:
            return []
        if isinstance(tensor_list, (cst.List, cst.Tuple)):
            state.unwrapped += [
                e.value.value
                for e in tensor_list.elements
                if isinstance(e.value, cst.Name) and e.value.value in constants
            ]
        helper = self.preloaded_helper()
        variables = fresh(fn, "variables", "held_variables", "input_variables")
        load = fresh(fn, "load", "load_arrays", "load_inputs")
        state.loaders.append(load)
        sliced = f"{variables}[0]" if len(inputs) == 1 else f"tuple({variables})"
        total = preloaded.constant_bytes(inputs)
        self.differences.append(
            f"{self.where(fn.line(stmt))}: slice_input_producer: its arrays "
            f"({total / 2**20:.0f} MiB) are held in variables that {load}(sess) loads once "
            f"from placeholders (graph constants would make each iterator start wait for "
            f"Grappler: about 10 s for 188 MB); {preloaded.returns_loader(load)}"
        )
        call = f"{variables}, {load} = {helper}({arguments[0]}, {arguments[1]})"
        if 4 * depth + len(call) > 100:  # wrapped as ruff format would
            lines = [f"{variables}, {load} = {helper}(", f"    {arguments[0]}, {arguments[1]}"]
            lines.append(")")
        else:
            lines = [call]
        return lines + [f"records = tf.data.Dataset.from_tensor_slices({sliced})"]

    def _note_large_constants(self, fn, stmt) -> None:
        """Arrays held as graph constants: a Session reads a Dataset over them slowly.

        Measured (benchmarks/preloaded_forms.py, 60,000 x 784 float32, either
        TF mode): a one-shot iterator over the constants reads an epoch at 0.64x
        TF's queue API (the constants are copied into the iterator's function);
        from variables loaded from placeholders, through an initializable
        iterator, at 36x. Eager iteration is not affected.
        """
        total = preloaded.constant_bytes(self._sliced_here(fn, stmt))
        if total >= _LARGE_CONSTANT_BYTES:
            self.differences.append(
                f"{self.where(fn.line(stmt))}: slice_input_producer: its arrays "
                f"({total / 2**20:.0f} MiB) are graph constants; read in a Session, a "
                "one-shot iterator copies them into its function, and an epoch reads "
                "slower than TF's queue API did (0.64x measured for 180 MiB). Hold them in "
                "variables loaded from placeholders (the preloaded variable program, "
                "through an initializable iterator: 36x; migrated in TF1 mode, with --tf1, "
                "the code does that itself), or iterate the Dataset eagerly"
            )

    def _direct_helper(self, state: State, returns: str) -> str:
        """The record helper to map as it is, if the pending code only calls it and returns that.

        ``image, label = read_and_decode_record(value)`` followed by a batch of
        ``[image, label]`` maps ``read_and_decode_record`` itself (no wrapper).
        """
        stmt, direct = state.direct
        if direct and len(state.pending) == 1 and state.pending[0][0] is stmt:
            if isinstance(stmt.body[0], cst.Return):  # `return read_and_decode(queue, n)`
                return direct
            if bare(self.code(stmt.body[0].targets[0].target)) == bare(returns):
                return direct
        return ""

    def _numpy_functions(self, stmt) -> list[tuple]:
        """(callee, ``tf.numpy_function``) for each ``py_func`` call in `stmt`.

        ``tf.compat.v1.py_func(f, inp, Tout, stateful, name)`` and TF 2.x's
        ``tf.numpy_function`` take the same arguments in the same order and
        call `f` on NumPy arrays alike; the migrated map runs the program's
        own Python function.
        """
        return [
            (call.func, "tf.numpy_function")
            for call in self.calls_in(stmt)
            if callee(call) == "py_func" and isinstance(call.func, cst.Attribute)
        ]

    def _flush(self, state: State, returns: str, depth: int) -> list[str]:
        """The pending per-record statements as a nested function mapped over ``records``."""
        pad = "    " * depth
        params = ", ".join(f"*{e}" if e in state.starred else e for e in state.element)
        direct = self._direct_helper(state, returns)
        if direct:
            state.pending, state.mapped = [], True
            return [f"{pad}records = records.map({direct}, num_parallel_calls={chains.AUTOTUNE})\n"]
        call = parse_expression(returns)
        if (
            not state.pending
            and not set(state.element) & state.starred  # `tuple(values)` is no map function
            and isinstance(call, cst.Call)
            and isinstance(call.func, (cst.Name, cst.Attribute))
            and [self.code(a.value) for a in call.args if a.keyword is None] == state.element
            and len(call.args) == len(state.element)
        ):
            function = self.code(call.func)
            state.mapped = True
            return [
                f"{pad}records = records.map({function}, num_parallel_calls={chains.AUTOTUNE})\n"
            ]
        if not state.pending and returns.replace(" ", "").replace("tuple(", "(").strip("()") in (
            params.replace(" ", "").lstrip("*"),
        ):
            return []
        if not state.pending and returns.replace(" ", "") in (
            params.replace(" ", ""),
            f"({params})",
        ):
            return []
        params, unpack = starred_params(state.element, state.starred)
        body = "".join(f"{pad}    {line}\n" for line in unpack) + "".join(
            self.text(st, depth + 1, [*rep, *self._numpy_functions(st)])
            for st, rep in state.pending
        )
        # NOTE [ Python values changed between per-record lines ]
        moved = [st for st, _ in state.pending]
        before, leave, after = map_values.holder_lines(
            map_values.handed_out(self, state.fn, moved, returns), pad
        )
        body += f"{leave}{pad}    return {returns}\n"
        params = map_values.with_outer_values(params, moved)
        state.pending, state.mapped = [], True
        return [
            "\n",
            *before,
            f"{pad}def per_record({params}):\n",
            body,
            "\n",
            f"{pad}records = records.map(per_record, num_parallel_calls={chains.AUTOTUNE})\n",
            *after,
        ]

    def _batched_flush(self, fn, state: State, returns: str, args, kind, depth):
        """The per-record code as a function mapped over batches, or None if it stays per record.

        The lines go after the batch; see NOTE [ Batch-then-decode in migrated code ].
        """
        if not self.batch_decode or kind not in ("batch", "shuffle_batch"):
            return None
        if any(
            args.get(a, "False").strip() not in ("False", "None")
            for a in ("dynamic_pad", "enqueue_many")
        ):
            return None
        pad = "    " * depth
        direct = self._direct_helper(state, returns)
        if direct:
            batched = self.batch_helpers.get(direct)
            if batched is None:
                return None
            self._use_batch_helper(batched)
            state.pending = []
            self.batched.append(batched)
            return [
                f"{pad}dataset = dataset.map({batched}, num_parallel_calls={chains.AUTOTUNE})\n"
            ]
        moved = [st for st, _ in state.pending]
        if not moved or map_values.handed_out(self, fn, moved, returns):  # those stay per record
            return None
        try:
            expression = cst.parse_expression(returns)
            self._batch_plain_functions([st for st, _ in state.pending] + [expression])
            body = "".join(
                self.batched_text(fn, st, depth + 1, dict(rep)) for st, rep in state.pending
            )
            returned = vectorize.batch_statement(
                expression, self.batch_helpers, {}, tensor_names(fn)
            )
        except vectorize.Unbatchable:
            return None
        code = body + self.code(returned)
        for batched in set(self.batch_helpers.values()):
            if re.search(rf"\b{batched}\(", code):
                self._use_batch_helper(batched)
        state.pending = []
        self.batched.append(f"{fn.name}'s per_batch")
        params, unpack = starred_params(state.element, set())
        params = map_values.with_outer_values(params, moved)
        return [
            "\n",
            f"{pad}def per_batch({params}):\n",
            "".join(f"{pad}    {line}\n" for line in unpack),
            body,
            f"{pad}    return {self.code(returned)}\n",
            "\n",
            f"{pad}dataset = dataset.map(per_batch, num_parallel_calls={chains.AUTOTUNE})\n",
        ]

    def _use_batch_helper(self, name: str) -> None:
        """Writes the batched function `name`, and the batched functions it calls."""
        if name in self._pending_batch_code:
            owner, code = self._pending_batch_code.pop(name)
            self.generated[owner] = self.generated.get(owner, "") + "\n\n" + code
            for other in list(self._pending_batch_code):
                if re.search(rf"\b{other}\(", code):
                    self._use_batch_helper(other)

    def _batching(self, fn, stmt, call, state: State, depth: int, legacy=None) -> list[str]:
        """`stmt`'s batching call as its chain; `legacy`: (kind, arguments, label) instead of
        the call's own (an own queue's dequeue, NOTE [ Migrating the function's own queue ])."""
        pad = "    " * depth
        if legacy is None:
            kind, args = self._legacy_arguments(fn, stmt, call)
            label = kind
            self._refuse_fed_settings(fn, stmt, kind)
        else:
            kind, args, label = legacy
        legacy_copies = False
        kind, args = self.one_list_join(kind, args)  # NOTE [ A join of a literal list ]
        keep, rank = kept_inputs.keep_for(self, fn, stmt, kind, args)  # before the copies'
        if kind.endswith("_join") and args.get("tensors_list", "").strip() in state.copies:
            legacy_copies = fn.role == "batch"
            # NOTE [ Copies of the per-record code for a join ]
            element, count = state.copies.pop(args["tensors_list"].strip())
            kind = kind[: -len("_join")]
            args = {k: v for k, v in args.items() if k != "tensors_list"}
            args.update(tensors=element, **({"num_threads": count} if count else {}))
        args, narrowed = self.given_shapes(fn, stmt, kind, args)  # see batch_shapes.py
        out: list[str] = []
        after: list[str] | None = None
        first = "tensors_list" if kind.endswith("_join") else "tensors"
        if kind.endswith("_join"):
            out += self._join_records(fn, stmt, call, args, state, depth)
            source = "records"
        elif fn.role == "batch" and not state.pending and not state.mapped and not legacy_copies:
            element = self._element_of(args[first])
            if keep or element.replace(" ", "").rstrip(",") != ",".join(state.element):
                params = ", ".join(element_params(state.element)[0])
                kept = kept_inputs.with_keep(element, keep)
                out.append(f"{pad}dataset = dataset.map(lambda {params}: ({kept}))\n")
            source = "dataset"
        else:
            element = self._element_of(args[first], fn)
            if not narrowed.spelled:  # else decoded before the batch, to check the shapes
                after = self._batched_flush(fn, state, element, args, kind, depth)
            if after is None:  # NOTE [ keep_input as a filter ]: the element carries it
                out += self._flush(state, kept_inputs.with_keep(element, keep), depth)
            source = "records"
        try:
            chain = chains.batching_lines(kind, args, "dataset", keep, rank)
        except chains.Unsupported as e:
            raise self.fail(fn, stmt, str(e)) from e
        lines = list(chain.lines)
        if narrowed.spelled:  # after the rows of an enqueue_many are unbatched
            joined = kind.endswith("_join")  # its lists' element is not one expression
            ensure = self.ensure_line(fn, stmt, kind, narrowed, None if joined else element)
            lines.insert(1 if lines[0].endswith(".unbatch()") else 0, ensure)
        lines[0] = lines[0].replace("= dataset.", f"= {source}.", 1)
        out += [f"{pad}{line}\n" for line in lines]
        if after is not None:
            out += after
        self.steps.append(Step(fn.line(stmt), label, " / ".join(lines), chain.fates))
        if "shuffle" in kind:
            self.differences.append(
                f"{self.where(fn.line(stmt))}: {label}: a shuffle buffer is not a "
                "RandomShuffleQueue; the examples are the same, their order is not"
            )
        if (
            kind in ("batch", "batch_join")
            and "num_threads" in args
            and args["num_threads"].strip() not in ("1",)
        ):
            self.differences.append(
                f"{self.where(fn.line(stmt))}: {kind}(num_threads={args['num_threads']}): the "
                "legacy order depends on its threads; the tf.data order is the order of the files"
            )
        target = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if isinstance(target, cst.Return):
            loaders = "".join(f", {n}" for n in state.loaders)  # NOTE [ Preloaded arrays ... ]
            out.append(f"{pad}return dataset.prefetch({chains.AUTOTUNE}){loaders}\n")
        elif isinstance(target, cst.Assign):
            t = target.targets[0].target
            if isinstance(t, (cst.Tuple, cst.List)):
                state.batch_element = [self.code(e.value) for e in t.elements]
            else:
                state.batch_element = batch_params(fn, self.code(t))
        else:
            raise self.fail(fn, stmt, "assign or return the batching call's result")
        return out

    def _refuse_fed_settings(self, fn, stmt, kind: str) -> None:
        """Refuses a batching call whose size or capacity the session run feeds (a
        variable set from a placeholder): a Dataset's are fixed when it is built."""
        for node in self.built_at(fn, stmt, plan.BATCHING_KINDS):
            fed = settings_fed(node)
            if fed:
                raise self.fail(
                    fn, stmt, f"{kind}'s `{fed[0]}` is read from a variable or placeholder "
                    "when the session runs (the program feeds it), and a Dataset fixes its "
                    f"{fed[0]} when it is built: pass {fed[0]} as a Python number (or a "
                    "constant) to the function"
                )  # fmt: skip
