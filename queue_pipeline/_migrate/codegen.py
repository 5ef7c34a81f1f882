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
line is dropped), ``slice_input_producer`` ``from_tensor_slices((...))``;
statements that compute per-record values move, in order, into a nested
``per_record`` function mapped with ``num_parallel_calls=AUTOTUNE`` (a
nested function, so the plain values it uses stay visible); a batching call
becomes ``shuffle`` / ``batch`` / ``padded_batch`` / ``prefetch``; what the
function computes from the batches becomes a ``map`` over the batched
Dataset; summaries of batches are dropped and reported. Plain statements
stay where they were, and the assignments nothing reads any more (the table
lookup of the legacy module, a thread count) are dropped. Anything else
(a reader key the code reads, a ``maybe_*`` join's ``keep_input`` over several
lists: NOTE [ keep_input as a filter ]) stops the migration with its file:line
and reason.
"""

from __future__ import annotations

import dataclasses
import re
from typing import cast

import libcst as cst
import libcst.matchers as m
import numpy as np
import tensorflow as tf

from queue_pipeline._migrate import (
    batching_helpers,
    epoch_limits,
    generated_names,
    headers,
    internal_errors,
    legacy_aliases,
    map_values,
    module_stages,
    preloaded,
    untaken_branches,
)
from queue_pipeline._migrate.syntax import assigned_names, attributes_read, callee, dead_code
from queue_pipeline._migrate.syntax import filled_blocks, list_of_reads, mutated_names, names_in
from queue_pipeline._migrate.syntax import registers_runner
from queue_pipeline._migrate.arguments import attribute
from queue_pipeline._migrate.trace import MigrateError, Trace
from queue_pipeline._migrate.base import (
    STAGE_CALLS,
    API,
    BATCHING,
    PRODUCERS,
    READS,
    Function,
    State,
    Step,
)
from queue_pipeline._migrate.branches import NOT_PER_BATCH
from queue_pipeline._migrate.data_providers import DataProviders
from queue_pipeline._migrate.helper_calls import HelperCalls

__all__ = ["Rewrite", "Step", "rewrite"]

# calls that may take a queue: the stages migrate rewrites, and a queue's own methods
_FOLLOWED = frozenset(
    PRODUCERS
    + BATCHING
    + READS
    + ("slice_input_producer", "QueueRunner", "add_queue_runner")
    + ("enqueue", "enqueue_many", "dequeue", "dequeue_many", "dequeue_up_to", "size", "close")
)

_EMPTY_LIST = re.compile(r"(\w+) = \[\]")

# ``tf.train.match_filenames_once(`` however TF is spelled, spaces around the dots too
_MATCH_ONCE = re.compile(r"(?<![\w.])(?:\w+\s*\.\s*)*match_filenames_once\s*\(")


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


class _Rewriter(DataProviders, HelperCalls):
    """One rewrite of a traced function and the helpers on its path."""

    # -------------------------------------------------------------- pipelines

    def pipeline(self, fn: Function) -> str:
        """Writes `fn`'s tf.data version; returns its name."""
        with generated_names.kept_apart(self, fn) as user_names:
            return self._pipeline(fn, user_names)

    def _pipeline(self, fn: Function, user_names: frozenset[str]) -> str:
        role = fn.role
        name = f"{fn.name}_dataset"
        if fn.name in self.generated and name in self.generated[fn.name]:
            return name
        state = State(fn=fn)
        params = list(fn.params)
        if role == "batch":
            record_params = fn.record_params
            state.element = batching_helpers.element(fn)
            at = params.index(record_params[0])
            params = [p for p in params if p not in record_params]
            params.insert(at, "dataset")
        stmts = module_stages.body(self, fn)  # NOTE [ A queue made at module level ]
        lines = filled_blocks(dead_code(self._block(fn, stmts, state, depth=1)))
        lines = self._matched_files(fn, lines)
        # NOTE [ Copies of the per-record code for a join ]: the list of copies goes
        lines = [ln for ln in lines if not self._copy_list(ln)]
        lines = preloaded.drop_constant_lines(lines, state.unwrapped)
        if role == "batch":  # NOTE [ A batching helper computing on its records ]
            lines = batching_helpers.finished(fn, lines)
        used = "".join(lines)
        if fn.name != self.trace.function:  # a helper: keep only what its version uses
            params = [
                p for p in params if p == "dataset" or generated_names.uses(used, p, user_names)
            ]
        header, self.kept_params[name] = headers.dataset_header(fn, name, params, self.code)
        text = generated_names.renamed(header + "".join(lines), user_names, names_in(fn.node))
        untaken_branches.check_branches(self, fn, text)  # NOTE [ A branch that makes no Dataset ]
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
            with internal_errors.reported(self, fn, stmt):  # NOTE [ An internal error of migrate ]
                moved = list(state.pending)
                written = self._statement(fn, stmt, state, depth)
                out += self._comments_kept(stmt, written, depth) + written
            # NOTE [ Python values changed between per-record lines ]: never run out of order
            if written and moved and state.pending[: len(moved)] == moved:
                map_values.check_order(self, fn, stmt, moved, state.pending)
        return out

    def _comments_kept(self, stmt, written: list[str], depth: int) -> list[str]:
        """The comment lines above a simple statement the rewrite replaced (a batching
        call's, a read's), to stand above its replacement; [] where the written lines
        hold them already (a statement copied as written) or there is none."""
        if not written or not isinstance(stmt, cst.SimpleStatementLine):
            return []
        comments = [
            "    " * depth + self.code(line).strip() + "\n"
            for line in stmt.leading_lines
            if line.comment is not None
        ]
        text = "".join(written)
        if not comments or comments[0].strip() in text:
            return []
        return comments

    def _statement(self, fn: Function, stmt, state: State, depth: int) -> list[str]:
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
        provided = self.provider_statement(fn, stmt, calls, state, depth)
        if provided is not None:  # NOTE [ Migrating tf-slim's DatasetDataProvider ]
            return provided
        own = self.own_queue_statement(fn, stmt, calls, state, depth)
        if own is not None:  # NOTE [ Migrating the function's own queue ]
            return own
        rows = self.producer_dequeue(fn, stmt, calls, state, depth)
        if rows is not None:  # NOTE [ Records read in lockstep ]
            return rows
        # a function of the file named as an API (its own `input_producer`) is its own
        api = [
            c
            for c in calls
            if not (isinstance(c.func, cst.Name) and c.func.value in self.functions)
        ]
        producer = next((c for c in api if callee(c) in PRODUCERS), None)
        if producer is not None:  # NOTE [ A queue made in the call that reads it ]
            return self.producer_and_reader(fn, stmt, producer, state, depth)
        slicer = next((c for c in api if callee(c) == "slice_input_producer"), None)
        if slicer is not None:
            return self._slice(fn, stmt, slicer, state, depth)
        batcher = next((c for c in api if callee(c) in BATCHING), None)
        if batcher is not None:
            return self._batching(fn, stmt, batcher, state, depth)
        comp = list_of_reads(stmt)
        if comp is not None and self.helper_of(cast(cst.Call, comp.elt)) is not None:
            out = self._interleave(fn, stmt, comp, state, depth)
            state.joined.update(assigned_names(stmt))
            return out
        if comp is not None and self.join_copies_comprehension(fn, stmt, comp, state):
            return []
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
            return self.read_records(fn, stmt, reads[0], state, depth)
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Return):
            return self._return(fn, stmt, state, depth)
        kinds = {self._kind_used(fn, stmt, n, line) for n in names}
        if names & state.batch_names:  # computed from the batches after the batching call
            kinds.add("batch")
        draw, drawn = fn.draw(stmt)  # NOTE [ A draw that reads no record ]
        if draw == "batch" and not state.batch_element:
            raise self.fail(
                fn, stmt, f"it draws at random ({drawn}) for the code on the batches, which "
                "the legacy graph runs at every step; move it after the batching call"
            )  # fmt: skip
        kinds.update({draw} - {""})
        pending_names = map_values.changed_by(state.pending)  # bound or changed there
        # a record's name the batching rebound (`stars, text = batch([stars, text])`) is the batch
        record = set(state.element) - {e.lstrip("*") for e in state.batch_element}
        if (
            "record" in kinds
            or (set(assigned_names(stmt)) & record)
            or (names & record)  # reads the record
            # reads or changes (`defaults[4] = ...`) what a per-record statement defined
            or ((names | mutated_names(stmt)) & pending_names)
            # rebinds what they read: NOTE [ Python values changed between per-record lines ]
            or map_values.changes_moved(stmt, state.pending)
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
            made = {callee(c) for c in calls} & NOT_PER_BATCH
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
            if callee(call) in _FOLLOWED or registers_runner(call) or self.helper_of(call):
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
            if callee(call) in STAGE_CALLS:
                return True
            if self.helper_of(call) is not None:
                return True
        names = names_in(stmt)
        return any(fn.kind(n) in ("record", "queue", "reader", "batch") for n in names)


def rewrite(trace: Trace, source: str, *, batch_decode: bool = False) -> Rewrite:
    """The module's source with a tf.data version of the traced function and its helpers.

    See NOTE [ How a legacy function is rewritten ], [ A legacy function called through a name ].

    Raises:
      MigrateError: a statement cannot be migrated (its file:line and why).
    """
    aliases = legacy_aliases.resolved(trace, source)
    # NOTE [ limit_epochs in a migrated function ]
    limits = epoch_limits.unlimited(aliases.source, trace)
    rw = _Rewriter(trace, limits.source, batch_decode)
    fn = rw.functions.get(trace.function)
    if fn is None:
        raise MigrateError(
            f"{API}: {trace.path} defines no module-level function {trace.function!r}."
        )
    if fn.role != "pipeline":
        raise MigrateError(
            f"{API}: {rw.where(fn.line(fn.node.name))}: {trace.function}() takes a queue or "
            "per-record tensors; name the function "
            "that builds the whole pipeline (the one that makes the queue and calls "
            f"{trace.function}), or the script that does (FILE.py without a FUNCTION)."
        )
    name = aliases.rewritten(rw, fn)
    limits.report(rw)
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
