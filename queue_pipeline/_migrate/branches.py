"""The rewriter's compound statements: ``if`` / ``with`` blocks around the stages.

An ``if`` of per-record or per-batch statements moves whole into its map
(its test kept); an ``if`` whose branches hold stages keeps its branches,
each from the same records (the per-record code so far is mapped before it
when the code goes on after it); a branch that makes the batches as
placeholders becomes a ``raise`` (NOTE [ A branch that feeds placeholders ]);
a branch the run did not take that builds stages is refused; model code on
the batches is refused (it reads variables).
"""

from __future__ import annotations

import dataclasses

import libcst as cst
import libcst.matchers as m
import tensorflow as tf

from queue_pipeline._migrate.base import (
    STAGE_CALLS,
    BATCHING,
    Function,
    State,
)
from queue_pipeline._migrate.program_files import BUILDS_INPUT
from queue_pipeline._migrate.graph_checks import reads_model
from queue_pipeline._migrate.returns import Returns
from queue_pipeline._migrate.syntax import assigned_names, callee, names_in

__all__ = ["NOT_PER_BATCH", "Branches"]

# What a per-batch map cannot make (NOTE [ Per-batch code after the batching call ])
NOT_PER_BATCH = frozenset(
    {"Variable", "get_variable", "placeholder", "placeholder_with_default", "Session"}
)

# what the tf.data version of a branch that feeds placeholders raises
_RAISES = "this branch feeds placeholders; a tf.data.Dataset has none (use the legacy code)"


class Branches(Returns):
    """The compound-statement rewrites (a mixin of the rewriter)."""

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
        lines += self._flush_branch_end(fn, stmt, list(stmt.body.body), state, saved, depth + 1)
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
            lines += self._flush_branch_end(fn, stmt, body, other, saved, depth + 1)
            out += lines
            if feeds and _RAISES not in "".join(lines):
                # the first branch feeds placeholders: what follows the `if` goes on
                # from this one (NOTE [ A branch that feeds placeholders ])
                for field in dataclasses.fields(State):
                    setattr(state, field.name, getattr(other, field.name))
                feeds = False
        return out

    def _flush_branch_end(self, fn: Function, stmt, body, state: State, before: State, depth):
        """The per-record statements a branch holding a stage added, mapped at its end
        (``if labels: label = read(labels); inputs.append(label)``): they are the
        branch's, so they do not run where the run takes no branch. The map returns
        what the rest of the function reads of it."""
        if state.batch_element or len(state.pending) <= len(before.pending) or not body:
            return []
        added = [st for st, _ in state.pending[len(before.pending) :]]
        targets = [t for st in added for t in m.findall(st, m.AssignTarget())]
        if any(m.findall(t, m.Attribute()) for t in targets):
            return []  # ``self.wav = ...``: the attribute is the method's (kept as before)
        last = body[-1]
        if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return):
            return []
        end = self.positions[stmt].end.line
        later = {
            n.value
            for n in m.findall(fn.node.body, m.Name())
            if isinstance(n, cst.Name) and self.positions[n].start.line > end
        }
        names = self._carried_names(fn, state, later)
        if not names:
            return []
        out = self._flush(state, ", ".join(self._element_of(n, fn) for n in names), depth)
        state.element = self._element_names(fn, names, state)
        return out

    @staticmethod
    def _carried_names(fn: Function, state: State, later: set[str]) -> list[str]:
        """The record's names and the per-record statements' names that code after a
        flush reads (`later`): what the map returns. A name the run left holding no
        tensor (``dtypes``, ``shapes``: what the records' tensors are, not values of
        them) stays behind: a map cannot return it."""
        values = fn.call.local_values if fn.call is not None else {}
        made = [n for st, _ in state.pending for n in assigned_names(st)]
        return [
            n
            for n in dict.fromkeys([*state.element, *made])
            if n in later
            and (
                n in state.element
                or n not in values
                or any(isinstance(t, (tf.Tensor, tf.SparseTensor)) for t in _leaves(values[n]))
            )
        ]

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
        names = self._carried_names(fn, state, later)
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
        stages = STAGE_CALLS | {"enqueue", "enqueue_many"} | NOT_PER_BATCH
        return any(callee(c) in stages or self.helper_of(c) is not None for c in calls)

    def _per_batch_if(self, fn: Function, stmt: cst.If, state: State) -> bool:
        """Moves an ``if`` on the batches after the batching call into the per-batch
        code, whole (NOTE [ Per-batch code after the batching call ]): ``if
        size == 64: images = tf.image.resize_images(images, ...)`` keeps its test, and
        so does an ``if`` on a Python value that assigns new names from the batches
        (``if one_hot: labels = f(ids) else: labels = g(f(ids))``): its branches moved
        one by one would both run, whatever the test."""
        if not state.batch_element or self._stage_calls(stmt):
            return False
        targets = [*m.findall(stmt, m.AssignTarget())]
        augmented = m.findall(stmt, m.AugAssign())
        targets += [a.target for a in augmented if isinstance(a, cst.AugAssign)]
        assigned = {
            n.value for t in targets for n in m.findall(t, m.Name()) if isinstance(n, cst.Name)
        }
        batches = state.batch_names | set(state.batch_element)
        if not assigned or not (assigned | names_in(stmt)) & batches:
            return False
        if self._model_names(fn, stmt):
            return False  # refused statement by statement, at the line that builds the model
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

    def _element_names(self, fn: Function, names: list[str], state: State) -> list[str]:
        """`names`, the element from now on; a name the run left holding a list takes
        the element's values as ``*name`` in a per-record function (a Dataset hands
        them one by one)."""
        values = fn.call.local_values if fn.call is not None else {}
        state.starred = {n for n in names if isinstance(values.get(n), list)}
        return list(names)


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


def _leaves(value) -> list:
    """`value`'s leaves (lists, tuples and dicts opened), or [] where it cannot be opened."""
    try:
        return tf.nest.flatten(value)
    except Exception:  # noqa: BLE001 - the user's object, whatever it raises
        return []
