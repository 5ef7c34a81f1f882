"""Writing a traced legacy input function again as plain tf.data code, with libcst.

NOTE [ How a legacy function is rewritten ]
The rewriter works on the user's own source (a concrete syntax tree, so the
statements it keeps or moves keep their comments and formatting) and on the
:class:`~queue_pipeline._migrate.trace.Trace` of one run, which says what
each variable of each function held: a queue, a reader, a per-record tensor,
a batch or a plain value. Calls are recognized by the API they name
(``shuffle_batch``, ``string_input_producer``, ``.read``; any module or table
spelling before the dot) and by the run (the reader constructor is the
statement that created the reader of a traced read). Each function on the
path from the target function to the legacy calls gets a tf.data version,
written right after it:

* **pipeline** functions (they return batches, take no per-record value)
  become ``<name>_dataset`` with the same parameters, returning the Dataset;
* **record** helpers (they take a queue, read from it and decode, e.g.
  ``read_and_decode(filename_queue)``) become ``<name>_record(value)``: the
  body without the reader lines, taking the record the reader read (the
  parameters only the reader used are dropped);
* **batching** helpers (they take per-record tensors and batch them) become
  ``<name>_dataset(dataset, ...)``: the per-record parameters are replaced by
  one Dataset of them.

Inside a pipeline function the statements are sorted by what they touch:
a producer becomes ``from_tensor_slices(...).shuffle(...).repeat(...)``, a
reader and its read ``tf.data.TFRecordDataset(files)`` (or the other
readers; N readers on one queue an ``interleave``; the reader constructor
line is dropped), ``slice_input_producer``
``from_tensor_slices((...))``; statements that compute per-record values
move, in order, into a nested ``per_record`` function mapped with
``num_parallel_calls=AUTOTUNE`` (a nested function, so the plain values it
uses stay visible); a batching call becomes ``shuffle`` / ``batch`` /
``padded_batch`` / ``prefetch``; what the function computes from the batches
becomes a ``map`` over the batched Dataset; summaries of batches are dropped
and reported. Plain statements stay where they were, and the assignments
nothing reads any more (the table lookup of the legacy module, a thread
count) are dropped. Anything else (``py_func``, a ``maybe_*`` call's
``keep_input``, a reader key the code reads) stops the migration with its
file:line and reason.
"""

from __future__ import annotations

import dataclasses
import re
from typing import cast

import libcst as cst
import libcst.matchers as m
import numpy as np
import tensorflow as tf

from queue_pipeline._migrate import chains, preloaded
from queue_pipeline._migrate.foreign import BUILDS_INPUT
from queue_pipeline._migrate.graph_checks import reads_model
from queue_pipeline._migrate.syntax import (
    all_params,
    assigned_names,
    attributes_read,
    bare,
    bind_arguments,
    call_text,
    callee,
    dead_code,
    filled_blocks,
    list_of_reads,
    mutated_names,
    names_in,
)
from queue_pipeline._migrate.trace import MigrateError, Trace, attribute
from queue_pipeline._migrate.base import (
    API,
    BATCHING,
    OWN_QUEUE_CALLS,
    PRODUCERS,
    READER_CLASSES,
    READS,
    Function,
    State,
    Step,
    batch_params,
    fresh,
)
from queue_pipeline._migrate.returns import Returns

__all__ = ["Rewrite", "Step", "rewrite"]

# What a per-batch map cannot make (NOTE [ Per-batch code after the batching call ])
_NOT_PER_BATCH = frozenset(
    {"Variable", "get_variable", "placeholder", "placeholder_with_default", "Session"}
)

# what the tf.data version of a branch that feeds placeholders raises
_RAISES = "this branch feeds placeholders; a tf.data.Dataset has none (use the legacy code)"

# calls that may take a queue: the stages migrate rewrites, and a queue's own methods
_FOLLOWED = frozenset(
    PRODUCERS
    + BATCHING
    + READS
    + ("slice_input_producer", "QueueRunner", "add_queue_runner")
    + ("enqueue", "enqueue_many", "dequeue", "dequeue_many", "dequeue_up_to", "size", "close")
)

_EMPTY_LIST = re.compile(r"(\w+) = \[\]")

# ``tf.train.match_filenames_once(`` however TF is spelled (see _matched_files)
_MATCH_ONCE = re.compile(r"\b(?:[\w.]+\.)?match_filenames_once\(")


@dataclasses.dataclass
class Rewrite:
    """The migrated source and its report.

    Attributes:
      source: the module's source with the tf.data functions added.
      added: just the added functions, in source order.
      function: the name of the target function's tf.data version.
      steps: each legacy call and what replaced it.
      dropped: statements left out, with why (file:line).
      differences: where the migrated code differs on purpose.
      batched: the functions that decode whole batches (batch-then-decode).
      loaders: the loaders the new function returns after its Dataset that the
        legacy one did not (NOTE [ Preloaded arrays in a migrated TF1-mode program ]).
      names: the functions migrated (originals and their new versions).
    """

    source: str
    added: str
    function: str
    steps: list[Step]
    dropped: list[str]
    differences: list[str]
    batched: list[str] = dataclasses.field(default_factory=list)
    loaders: list[str] = dataclasses.field(default_factory=list)
    names: list[str] = dataclasses.field(default_factory=list)


class _Rewriter(Returns):
    """One rewrite of a traced function and the helpers on its path."""

    # ----------------------------------------------------------- record helpers

    # -------------------------------------------------------------- pipelines

    def pipeline(self, fn: Function) -> str:
        """Writes `fn`'s tf.data version; returns its name."""
        role = fn.role
        name = f"{fn.name}_dataset"
        if fn.name in self.generated and name in self.generated[fn.name]:
            return name
        state = State()
        params = list(fn.params)
        if role == "batch":
            record_params = [p for p in fn.params if fn.kind(p) == "record"]
            state.element = record_params
            at = params.index(record_params[0])
            params = [p for p in params if p not in record_params]
            params.insert(at, "dataset")
        stmts = list(fn.node.body.body)
        lines = filled_blocks(dead_code(self._block(fn, stmts, state, depth=1)))
        lines = self._matched_files(fn, lines)
        # NOTE [ Copies of the per-record code for a join ]: the list of copies goes
        lines = [ln for ln in lines if not self._copy_list(ln)]
        lines = preloaded.drop_constant_lines(lines, state.unwrapped)
        used = "".join(lines)
        if fn.name != self.trace.function:  # a helper: keep only what its version uses
            params = [p for p in params if p == "dataset" or re.search(rf"\b{p}\b", used)]
        header = self._header(fn, name, params)
        text = header + "".join(lines)
        if state.loaders:
            self.loaders[name] = list(state.loaders)
        self.generated.setdefault(fn.name, "")
        self.generated[fn.name] += "\n\n" + text
        return name

    def _copy_list(self, line: str) -> bool:
        """Whether `line` makes an empty list of copies for a join (``lists = []``)."""
        found = _EMPTY_LIST.fullmatch(line.strip())
        return found is not None and found.group(1) in self.copy_lists

    def _matched_files(self, fn: Function, lines: list[str]) -> list[str]:
        """``match_filenames_once(pattern)`` as ``tf.io.matching_files(pattern)``.

        TF's is a local variable holding the sorted matches, set by the local
        variables' initializer; a Dataset cannot read an uninitialized variable
        (a one-shot iterator captures none), and ``matching_files`` is the op
        that variable is initialized from: the same names, in the same order.
        """
        out = [_MATCH_ONCE.sub("tf.io.matching_files(", line) for line in lines]
        if out != lines:
            source = self.code(fn.node).splitlines()
            at = next((i for i, t in enumerate(source) if _MATCH_ONCE.search(t)), 0)
            self.steps.append(
                Step(fn.first + at, "match_filenames_once", "tf.io.matching_files (no variable)")
            )
        return out

    def _header(self, fn: Function, name: str, keep: list[str]) -> str:
        """``def name(...):`` with `fn`'s own spelling (annotations, defaults) of the `keep` params.

        A ``dataset`` in `keep` that `fn` does not have is inserted there.
        """
        params = fn.node.params
        replaced = next((p for p in all_params(params) if fn.kind(p.name.value) == "record"), None)
        dataset = cst.Param(
            cst.Name("dataset"),
            comma=replaced.comma
            if replaced is not None
            else cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
        )

        def kept(group) -> list:
            out = []
            for p in group:
                if p is replaced and "dataset" in keep:
                    out.append(dataset)
                elif p.name.value in keep:
                    out.append(p)
            if out and group and out[-1] is not group[-1]:
                out[-1] = out[-1].with_changes(comma=group[-1].comma)
            return out

        groups = {"posonly_params": kept(params.posonly_params), "params": kept(params.params)}
        kwonly = kept(params.kwonly_params)
        star = params.star_arg
        if isinstance(star, cst.ParamStar) and not kwonly:
            star = cst.MaybeSentinel.DEFAULT
            if groups["params"] and params.kwonly_params:
                groups["params"][-1] = groups["params"][-1].with_changes(
                    comma=params.kwonly_params[-1].comma
                )
        new = params.with_changes(**groups, kwonly_params=kwonly, star_arg=star)
        definition = fn.node.with_changes(
            name=cst.Name(name),
            params=new,
            returns=None,
            decorators=[],
            leading_lines=[],
            body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])]),
        )
        text = self.code(definition)
        header = text[: text.rindex("pass")].rstrip() + "\n"
        self.kept_params[name] = [p.name.value for p in all_params(new) if isinstance(p, cst.Param)]
        return header

    def _block(self, fn: Function, stmts, state: State, depth: int) -> list[str]:
        out: list[str] = []
        for i, stmt in enumerate(stmts):
            if (
                i == 0
                and depth == 1
                and m.matches(
                    stmt,
                    m.SimpleStatementLine(
                        body=[m.Expr(value=m.SimpleString() | m.ConcatenatedString())]
                    ),
                )
            ):
                out.append(self.text(stmt, depth))
                self.flag_queue_docstring(fn, stmt)
                continue
            out += self._statement(fn, stmt, state, depth)
        return out

    def _statement(self, fn: Function, stmt, state: State, depth: int) -> list[str]:
        pad = "    " * depth
        calls = self.calls_in(stmt)
        names = names_in(stmt)
        line = fn.line(stmt)
        if isinstance(stmt, (cst.With, cst.If)) and self._has_stage(fn, stmt):
            if isinstance(stmt, cst.If) and (
                self._per_record_if(fn, stmt, state) or self._per_batch_if(fn, stmt, state)
            ):
                return []
            return self._flush_before(fn, stmt, state, depth) + self._compound(
                fn, stmt, state, depth
            )
        if isinstance(stmt, cst.For):
            loop = self.own_reader_loop(fn, stmt, state, depth)
            if loop is None:  # NOTE [ Copies of the per-record code for a join ]
                loop = self.join_copies_loop(fn, stmt, state, depth)
            if loop is not None:
                return loop
        if self._restores_shapes(fn, stmt):
            self.dropped.append(
                f"{self.where(line)}: `{self.code(stmt).strip().splitlines()[0]}`: it restores "
                "the static shapes a queue loses; a Dataset keeps them"
            )
            return []
        own = self.own_queue_statement(fn, stmt, calls, state, depth)
        if own is not None:  # NOTE [ Migrating the function's own queue ]
            return own
        producer = next((c for c in calls if callee(c) in PRODUCERS), None)
        if producer is not None:
            return self._producer(fn, stmt, producer, state, depth)
        slicer = next((c for c in calls if callee(c) == "slice_input_producer"), None)
        if slicer is not None:
            return self._slice(fn, stmt, slicer, state, depth)
        batcher = next((c for c in calls if callee(c) in BATCHING), None)
        if batcher is not None:
            return self._batching(fn, stmt, batcher, state, depth)
        comp = list_of_reads(stmt)
        if comp is not None and self.helper_of(cast(cst.Call, comp.elt)) is not None:
            out = self._interleave(fn, stmt, comp, state, depth)
            state.joined.update(assigned_names(stmt))
            return out
        helper = next((h for c in calls if (h := self.helper_of(c)) is not None), None)
        if helper is not None:
            call = next(c for c in calls if self.helper_of(c) is helper)
            return self._helper_call(fn, stmt, call, helper, state, depth)
        self._refuse_unfollowed_queue(fn, stmt, calls, line)
        ctor = self._reader_ctor(fn, stmt)
        if ctor is not None and not any(callee(c) in READS for c in calls):
            target = assigned_names(stmt)
            state.readers[target[0] if target else ""] = ctor
            return []
        if self._makes_a_read_reader(fn, stmt, calls):
            # `reader = self.dataset.reader()` (a branch the run did not take):
            # the reads of it become the Dataset's
            return []
        reads = [c for c in calls if callee(c) in READS]
        if reads and any(fn.kind_at(n, line) in ("queue", "reader") for n in names):
            kind, reader_fn, value, key_used = self._read(fn, stmt, reads[0], state.readers)
            files = self._files(fn, stmt, reads[0], state)
            if state.parallel_readers:  # NOTE [ Migrating the function's own queue ]
                if key_used:
                    raise self.fail(fn, stmt, "a key read by one of several parallel readers")
                records = (
                    f"{files}.interleave(\n    {reader_fn}, cycle_length={state.parallel_readers}, "
                    f"num_parallel_calls={chains.AUTOTUNE}\n)"
                )
                state.element = [value]
                self.steps.append(
                    Step(
                        line,
                        f"{kind}.{callee(reads[0])} x {state.parallel_readers}",
                        " ".join(records.split()),
                    )
                )
                return [f"{pad}records = {records.replace(chr(10), chr(10) + pad)}\n"]
            if key_used:  # (key, value) pairs with the legacy reader's key strings
                spec = self._reader_spec(fn, stmt, reads[0], state.readers)
                try:
                    records = chains.keyed_records_of(spec[0], spec[1], files)
                except chains.Unsupported as e:
                    raise self.fail(fn, stmt, str(e)) from e
                state.element = [self._read_key(stmt), value]
            else:
                records = chains.records_of(reader_fn, files)
                state.element = [value]
            self.steps.append(Step(line, f"{kind}.{callee(reads[0])}", records))
            records = records.replace("\n", "\n" + pad)
            return [f"{pad}records = {records}\n"]
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Return):
            return self._return(fn, stmt, state, depth)
        kinds = {self._kind_used(fn, stmt, n, line) for n in names}
        if names & state.batch_names:  # computed from the batches after the batching call
            kinds.add("batch")
        pending_names = {n for st, _ in state.pending for n in assigned_names(st)}
        if (
            "record" in kinds
            or (set(assigned_names(stmt)) & set(state.element))
            or (names & set(state.element))  # reads the record
            # reads or changes (`defaults[4] = ...`) what a per-record statement defined
            or ((names | mutated_names(stmt)) & pending_names)
            or (state.element and not state.batch_element and self._collects_records(fn, stmt))
        ):
            state.pending.append((stmt, ()))
            return []
        if "batch" in kinds:
            if not assigned_names(stmt):
                self.dropped.append(
                    f"{self.where(line)}: `{self.code(stmt).strip()}`: it uses the batch tensors "
                    "outside the Dataset (add it to the training step)"
                )
                return []
            made = {callee(c) for c in calls} & _NOT_PER_BATCH
            model = self._model_names(fn, stmt)
            if model:
                raise self.fail(
                    fn, stmt, f"it builds the model on the batches (`{model[0]}` reads a "
                    "variable or placeholder): the tf.data version returns the input; return "
                    "the batches and build the model on them after the call"
                )  # fmt: skip
            if made or not state.batch_element:
                why = f" (it makes a {sorted(made)[0]})" if made else ""
                raise self.fail(
                    fn, stmt, f"it computes from the batches before the function returns{why}: "
                    "a Dataset.map cannot hold it; move it after the call, into the model"
                )  # fmt: skip
            # NOTE [ Per-batch code after the batching call ]
            state.after_batch.append((stmt, ()))
            state.batch_names.update(assigned_names(stmt))
            return []
        if "queue" in kinds or "reader" in kinds:
            raise self.fail(
                fn, stmt, "it uses a queue or reader in a way the migration does not know"
            )
        return [self.text(stmt, depth)]

    def _refuse_unfollowed_queue(self, fn: Function, stmt, calls, line: int) -> None:
        """Refuses a call handing a queue to code the migration does not follow.

        ``image, label = self._file_reader(filename_queue)``: a method (or a
        function of another module) reading the queue is not a helper of this
        file, so its reads cannot become the Dataset's.
        """
        for call in calls:
            if callee(call) in _FOLLOWED or self.helper_of(call) is not None:
                continue
            for arg in call.args:
                value = arg.value
                if isinstance(value, cst.Name) and fn.kind_at(value.value, line) == "queue":
                    raise self.fail(
                        fn, stmt, f"it hands the queue `{value.value}` to "
                        f"`{self.code(call.func)}`, which the migration does not follow (a "
                        "method, or a function of another module); make the function that "
                        "reads it a module-level function of this file, then migrate"
                    )  # fmt: skip

    def _makes_a_read_reader(self, fn: Function, stmt, calls) -> bool:
        """Whether `stmt` only assigns, from a call, a name that a later ``<name>.read(...)``
        of `fn` reads with (a reader a function of the program makes)."""
        targets = assigned_names(stmt)
        if len(targets) != 1 or not calls or any(callee(c) in READS for c in calls):
            return False
        if fn.kind(targets[0]) not in ("plain", "reader"):
            return False
        return any(
            callee(c) in READS
            and isinstance(c.func, cst.Attribute)
            and isinstance(c.func.value, cst.Name)
            and c.func.value.value == targets[0]
            for c in m.findall(fn.node, m.Call())
            if isinstance(c, cst.Call) and fn.line(c) > fn.line(stmt)
        )

    def _kind_used(self, fn: Function, stmt, name: str, line: int) -> str:
        """What `stmt` uses of `name`: an object used only through its attributes is what
        those attributes hold (``self.size = size`` uses nothing of a ``self`` that keeps a
        reader; ``self.images`` is a batch)."""
        kind = fn.kind_at(name, line)
        value = fn.call.local_values.get(name) if fn.call is not None else None
        if kind == "plain" or value is None or isinstance(value, (tf.Tensor, tf.SparseTensor)):
            return kind
        read = attributes_read(stmt, name)
        if read is None:
            return kind
        kinds = {self.trace.kind_of(attribute(value, a)) for a in read}
        return next((k for k in ("queue", "reader", "record", "batch") if k in kinds), "plain")

    def _has_stage(self, fn: Function, stmt) -> bool:
        for call in self.calls_in(stmt):
            if callee(call) in PRODUCERS + BATCHING + READS + ("slice_input_producer",):
                return True
            if self.helper_of(call) is not None:
                return True
        names = names_in(stmt)
        return any(fn.kind(n) in ("record", "queue", "reader", "batch") for n in names)

    def _compound(self, fn: Function, stmt, state: State, depth: int) -> list[str]:
        pad = "    " * depth
        out: list[str] = []
        # The comments and blank lines above the statement, then its header alone.
        out += [
            f"{pad}{self.code(line).strip()}\n" if line.comment else "\n"
            for line in stmt.leading_lines
        ]
        if isinstance(stmt, cst.With):
            bare = stmt.with_changes(
                leading_lines=[], body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])])
            )
            header = self.code(bare).rsplit("pass", 1)[0].strip()
            inner = self._block(fn, list(stmt.body.body), state, depth + 1)
            out.append(f"{pad}{header}\n")
            out += inner or [f"{pad}    pass\n"]
            return out
        assert isinstance(stmt, cst.If)
        out.append(f"{pad}if {self.code(stmt.test)}:\n")
        saved = dataclasses.replace(state, pending=list(state.pending), element=list(state.element))
        lines = self._branch(fn, list(stmt.body.body), state, depth + 1)
        feeds = _RAISES in "".join(lines)
        out += lines
        orelse = stmt.orelse
        while orelse is not None:
            other = dataclasses.replace(
                saved, pending=list(saved.pending), element=list(saved.element)
            )
            body = list(orelse.body.body)
            if isinstance(orelse, cst.If):
                out.append(f"{pad}elif {self.code(orelse.test)}:\n")
                orelse = orelse.orelse
            else:
                out.append(f"{pad}else:\n")
                orelse = None
            lines = self._branch(fn, body, other, depth + 1)
            out += lines
            if feeds and _RAISES not in "".join(lines):
                # the first branch feeds placeholders: what follows the `if` goes on
                # from this one (NOTE [ A branch that feeds placeholders ])
                for field in dataclasses.fields(State):
                    setattr(state, field.name, getattr(other, field.name))
                feeds = False
        return out

    def _flush_before(self, fn: Function, stmt, state: State, depth: int) -> list[str]:
        """The per-record code so far, mapped before an ``if`` whose branches hold a stage
        (magenta's ``if shuffle: input_tensors = _shuffle_inputs(input_tensors, ...)``):
        each branch, and what follows, starts from the same records. The map returns
        what the rest of the function reads of it."""
        if not state.pending or state.batch_element or not self._stage_calls(stmt):
            return []
        if _every_branch_returns(stmt):  # each branch maps the records its own way
            return []
        line = fn.line(stmt)
        later = {
            n.value
            for n in m.findall(fn.node.body, m.Name())
            if isinstance(n, cst.Name) and self.positions[n].start.line >= line
        }
        made = [n for st, _ in state.pending for n in assigned_names(st)]
        names = [n for n in dict.fromkeys([*state.element, *made]) if n in later]
        if not names:
            return []
        returns = ", ".join(self._element_of(n, fn) for n in names)
        out = self._flush(state, returns, depth)
        state.element = self._element_names(fn, names, state)
        return out

    def _model_names(self, fn: Function, stmt) -> list[str]:
        """The names `stmt` assigns that the run left holding the model's tensors."""
        values = fn.call.local_values if fn.call is not None else {}
        found = []
        for name in assigned_names(stmt):
            value = values.get(name)
            tensors = value if isinstance(value, (list, tuple)) else [value]
            if any(isinstance(t, tf.Tensor) and reads_model(t) for t in tensors):
                found.append(name)
        return found

    def _per_record_if(self, fn: Function, stmt: cst.If, state: State) -> bool:
        """Moves an ``if`` of per-record statements (no stage in it) into the per-record
        code whole: ``if is_grayscale: image = tf.image.rgb_to_grayscale(image)`` keeps
        its test (its statements alone would run whatever the test)."""
        if not state.element or state.batch_element or self._stage_calls(stmt):
            return False
        pending = {n for st, _ in state.pending for n in assigned_names(st)}
        if not names_in(stmt) & (set(state.element) | pending):
            return False
        unrun = self._unrun_builder(stmt)
        if unrun:
            raise self.fail(
                fn, stmt, f"a branch this run did not take calls `{unrun}`, which builds queue "
                "stages the run did not see; migrate with arguments that take that branch "
                "(--call)"
            )  # fmt: skip
        state.pending.append((stmt, ()))
        return True

    def _collects_records(self, fn: Function, stmt) -> bool:
        """Whether `stmt` makes empty lists that later per-record code appends to.

        The video prediction input's ``image_seq, state_seq = [], []``, then a
        loop over the time steps appending each step's decoded frame, then
        ``tf.concat(image_seq, 0)``: the lists belong to one record, so they
        are made in the per-record function too (not once, outside it).
        """
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if not isinstance(assign, cst.Assign):
            return False
        value = assign.value
        values = value.elements if isinstance(value, cst.Tuple) else [value]
        parts = [v.value if isinstance(v, cst.Element) else v for v in values]
        if not parts or not all(
            isinstance(p, (cst.List, cst.Dict)) and not p.elements for p in parts
        ):
            return False
        targets = set(assigned_names(stmt))
        line = fn.line(stmt)
        later = [
            c
            for c in m.findall(fn.node.body, m.Call())
            if isinstance(c, cst.Call) and self.positions[c].start.line > line
        ]
        for call in later:  # the copies of a join (NOTE [ Copies of the per-record code ...])
            if (callee(call) in BATCHING or self.helper_of(call) is not None) and any(
                isinstance(a.value, cst.Name) and a.value.value in targets for a in call.args
            ):
                return False
        for call in later:
            func = call.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in ("append", "extend")
                and isinstance(func.value, cst.Name)
                and func.value.value in targets
                and any(fn.kind(n) == "record" for a in call.args for n in names_in(a.value))
            ):
                return True
        return False

    def _unrun_builder(self, stmt) -> str:
        """A function of the file called in `stmt` that the run never called and whose
        code builds queue stages (a reader, producer, queue or batching call), or ""."""
        for call in self.calls_in(stmt):
            name = callee(call) if isinstance(call.func, cst.Name) else ""
            helper = self.functions.get(name)
            if helper is not None and helper.call is None:
                if BUILDS_INPUT.search(self.code(helper.node)):
                    return name
        return ""

    def _stage_calls(self, stmt) -> bool:
        """Whether `stmt` holds a stage: a producer, reader, batching call, queue,
        placeholder or variable, or a helper that builds one."""
        calls = self.calls_in(stmt)
        stages = set(PRODUCERS + BATCHING + READS + READER_CLASSES + OWN_QUEUE_CALLS)
        stages |= {"slice_input_producer", "dequeue", "dequeue_many", "dequeue_up_to"}
        stages |= {"enqueue", "enqueue_many"} | _NOT_PER_BATCH
        return any(callee(c) in stages or self.helper_of(c) is not None for c in calls)

    def _per_batch_if(self, fn: Function, stmt: cst.If, state: State) -> bool:
        """Moves an ``if`` on the batches after the batching call into the per-batch
        code, whole (NOTE [ Per-batch code after the batching call ]): ``if
        size == 64: images = tf.image.resize_images(images, ...)`` keeps its test."""
        if not state.batch_element or self._stage_calls(stmt):
            return False
        assigned = {
            n.value
            for t in m.findall(stmt, m.AssignTarget())
            for n in m.findall(t, m.Name())
            if isinstance(n, cst.Name)
        }
        if not assigned & (state.batch_names | set(state.batch_element)):
            return False
        state.after_batch.append((stmt, ()))
        state.batch_names.update(assigned)
        return True

    def _branch(self, fn: Function, body: list, state: State, depth: int) -> list[str]:
        """One branch of an ``if`` holding a stage.

        NOTE [ A branch that feeds placeholders ]
        Model code often makes its batches one of two ways: ``if
        use_tfrecords:`` the pipeline, ``else:`` placeholders of the same names
        for a feed_dict (im2txt's inference mode). A Dataset has no placeholders,
        so such a branch (it makes a ``placeholder`` and assigns a name that
        holds batches) becomes a ``raise ValueError`` saying so, and is listed
        among the statements not migrated; the legacy function keeps it. What
        follows the ``if`` goes on from the branch that builds the pipeline.
        """
        pad = "    " * depth
        makes = {"placeholder", "placeholder_with_default"}
        feeds = any(makes & {callee(c) for c in self.calls_in(stmt)} for stmt in body) and any(
            fn.kind(n.value) in ("batch", "record")
            for stmt in body
            for t in m.findall(stmt, m.AssignTarget())
            for n in m.findall(t, m.Name())
            if isinstance(n, cst.Name)
        )
        if not feeds:
            return self._block(fn, body, state, depth) or [f"{pad}pass\n"]
        first, last = fn.line(body[0]), self.positions[body[-1]].end.line
        self.dropped.append(
            f"{self.where(first)}: a branch ({last - first + 1} lines) that makes the batches "
            "as placeholders (fed by feed_dict): a Dataset has none; the tf.data version "
            "raises ValueError there, the legacy function keeps it"
        )
        return [f"{pad}raise ValueError({_RAISES!r})\n"]

    def _helper_call(self, fn, stmt, call, helper: Function, state: State, depth: int) -> list[str]:
        pad = "    " * depth
        role = helper.role
        if role == "record":
            new, kind, reader_fn, extra, value = self.record_helper(helper)
            files = self._files(fn, stmt, call, state)
            args = self._extra_args(helper, call, extra) if extra else []
            records = chains.records_of(reader_fn, files)
            state.element = [value]
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
                legacy = self.caller_batching(fn, stmt, call, helper)
                returned = isinstance(stmt.body[0], cst.Return)
                state.direct = (stmt, new if not args else "") if returned else (None, "")
                read += self._batching(fn, stmt, call, state, depth, legacy=legacy)
            return read
        if role == "pipeline":
            self._second_source(fn, stmt, state)  # one Dataset holds one pipeline
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
            bound = bind_arguments(getattr(self.trace.module, helper.name), call, self.module)
            record_params = [p for p in helper.params if helper.kind(p) == "record"]
            returns = ", ".join(bound[p] for p in record_params if p in bound)
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

    def _restores_shapes(self, fn: Function, stmt) -> bool:
        """Whether `stmt`, in a batching helper, only sets the shapes of what it dequeued
        from those of its record parameters (``for i in range(len(input_tensors)):
        output_tensors[i].set_shape(input_tensors[i].shape)``)."""
        if fn.role != "batch":
            return False
        calls = {callee(c) for c in self.calls_in(stmt)}
        if "set_shape" not in calls or calls - {"set_shape", "range", "len", "enumerate", "zip"}:
            return False
        return bool(names_in(stmt) & {p for p in fn.params if fn.kind(p) == "record"})

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

    def _element_names(self, fn: Function, names: list[str], state: State) -> list[str]:
        """`names`, the element from now on; a name the run left holding a list takes
        the element's values as ``*name`` in a per-record function (a Dataset hands
        them one by one)."""
        values = fn.call.local_values if fn.call is not None else {}
        state.starred = {n for n in names if isinstance(values.get(n), list)}
        return list(names)

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


def rewrite(trace: Trace, source: str, *, batch_decode: bool = False) -> Rewrite:
    """The module's source with a tf.data version of the traced function and its helpers.

    See NOTE [ How a legacy function is rewritten ].

    Raises:
      MigrateError: a statement cannot be migrated (its file:line and why).
    """
    rw = _Rewriter(trace, source, batch_decode)
    fn = rw.functions.get(trace.function)
    if fn is None:
        raise MigrateError(
            f"{API}: {trace.path} defines no module-level function {trace.function!r}."
        )
    if fn.role != "pipeline":
        raise MigrateError(
            f"{API}: {trace.function}() takes a queue or per-record tensors; name the function "
            "that builds the whole pipeline (the one that makes the queue and calls "
            f"{trace.function}), or the script that does (FILE.py without a FUNCTION)."
        )
    name = rw.pipeline(fn)
    _drop_unused_record_helpers(rw)
    if rw.preloaded:  # NOTE [ Preloaded arrays in a migrated TF1-mode program ]
        alias = next((k for k, v in vars(trace.module).items() if v is np), "")
        rw.generated[fn.name] = (
            "\n\n" + preloaded.helper_source(rw.preloaded, alias) + rw.generated[fn.name]
        )
    return Rewrite(
        source=_insert(rw, source),
        added="\n\n".join(
            rw.generated[n].strip("\n") + "\n"
            for n in sorted(rw.generated, key=lambda n: rw.functions[n].last)
        ),
        function=name,
        steps=rw.steps,
        dropped=rw.dropped,
        differences=rw.differences,
        batched=rw.batched,
        loaders=rw.loaders.get(name, []),
        names=sorted(
            set(rw.generated)
            | set(re.findall(r"^def (\w+)\(", "".join(rw.generated.values()), re.M))
        ),
    )


def _drop_unused_record_helpers(rw: _Rewriter) -> None:
    """Removes ``<name>_record`` functions that only their batched versions replaced."""
    for owner, (name, *_rest) in rw.record_helpers.items():
        code = rw.generated.get(owner, "")
        start = code.find(f"def {name}(")
        if start < 0:
            continue
        end = code.find("\n\n\ndef ", start)
        end = len(code) if end < 0 else end
        own = code[start:end]
        others = "".join(v for k, v in rw.generated.items() if k != owner) + code.replace(own, "")
        if not re.search(rf"\b{re.escape(name)}\b", others):
            rw.generated[owner] = code.replace(own, "").replace("\n\n\n\n\n", "\n\n")


def _every_branch_returns(stmt: cst.If) -> bool:
    """Whether every branch of `stmt` (an ``else`` included) ends with a ``return``."""
    branch: cst.If | cst.Else = stmt
    while True:
        body = branch.body.body if isinstance(branch.body, cst.IndentedBlock) else ()
        last = body[-1] if body else None
        if not (
            isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)
        ):
            return False
        if isinstance(branch, cst.Else):
            return True
        if branch.orelse is None:
            return False
        branch = branch.orelse


def _insert(rw: _Rewriter, source: str) -> str:
    """`source` with each function's generated versions right after it."""
    lines = source.splitlines(keepends=True)
    for name in sorted(rw.generated, key=lambda n: rw.functions[n].last, reverse=True):
        fn = rw.functions[name]
        lines.insert(fn.last, rw.generated[name].rstrip("\n") + "\n")
    text = "".join(lines)
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError as e:  # pragma: no cover - a rewriter bug
        raise MigrateError(
            f"{API}: the rewritten code does not parse ({e}); please report this."
        ) from e
    return text
