"""Reader helpers of a migration: ``read_and_decode(queue)`` as ``<name>_record(value)``.

A function that takes a filename queue, reads from it and decodes becomes a
per-record function of the value the reader read (and, where the rules of
NOTE [ Batch-then-decode in migrated code ] allow it, ``<name>_batch`` of a
batch of values); the reader's constructor and read lines become the
Dataset of records that feeds it.

NOTE [ A reading helper that batches ]
Many a ``read_and_decode(filename_queue, batch_size)`` reads, decodes and
batches (``images, labels = tf.train.batch([image, label], batch_size)``,
then ``return images, labels``). Its record function ends at the batching
call, returning what it batched; the batching call, its arguments written in
the caller's terms (each of the helper's parameters replaced by what the
caller passed, or its default), becomes the caller's batching chain after
the map. A statement after the batching call that the return does not need
(a mask nobody reads) is listed as dropped; a return of anything but the
batches, a join, or arguments reading the helper's own locals are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.legacy_api import legacy_api
from queue_pipeline._migrate import vectorize
from queue_pipeline._migrate.syntax import (
    all_params,
    assigned_names,
    bare,
    callee,
    names_in,
    tuple_returns,
)
from queue_pipeline._migrate.readers import Readers
from queue_pipeline._migrate import taken_reads
from queue_pipeline._migrate.base import (
    tensor_names,
    BATCHING,
    READS,
    Function,
    untabbed,
)

__all__ = ["RecordHelpers"]


class RecordHelpers(Readers):
    """The reader-side rewrites (a mixin of the rewriter)."""

    # the lockstep mixin's (NOTE [ Records read in lockstep ])
    helper_lockstep_read: Callable[..., tuple[str, str, str]]
    read_queue_param: Callable[..., str]
    reader_name: Callable[[cst.Call], str]

    def record_helper(self, fn: Function) -> tuple[str, str, str, list[str], str]:
        """`fn` (reads from a queue and decodes) as ``<name>_record(value)``.

        Returns:
          (new name, reader kind, reader Dataset function, kept extra params,
          the name of the record parameter).
        """
        if fn.name in self.record_helpers:
            return self.record_helpers[fn.name]
        body: list[str] = []
        kept_stmts: list[cst.CSTNode] = []
        reader_kind = reader_fn = ""
        value = ""
        readers: dict[str, tuple[str, dict]] = {}
        lockstep: list[tuple[str, str, str]] = []  # NOTE [ Records read in lockstep ]
        first: tuple | None = None  # the first read (statement, call), until a second
        read_by: set[str] = set()
        stmts = list(fn.node.body.body)
        doc = ""
        if stmts and m.matches(
            stmts[0],
            m.SimpleStatementLine(body=[m.Expr(value=m.SimpleString() | m.ConcatenatedString())]),
        ):
            doc = self.text(stmts[0], 1)
            self.flag_queue_docstring(fn, stmts[0])
            stmts = stmts[1:]
        # NOTE [ A read in the branch the run took ]
        stmts, guards = taken_reads.taken_statements(self, fn, stmts)
        marks: list[int] = []  # where each statement's text starts in `body`
        for index, stmt in enumerate(stmts):
            marks.append(len(body))
            batcher = next((c for c in self.calls_in(stmt) if callee(c) in BATCHING), None)
            if batcher is not None and value:  # NOTE [ A reading helper that batches ]
                body.append(self._batching_return(fn, stmt, batcher, stmts[index + 1 :]))
                break
            self._check_queue_dequeue(fn, stmt)
            reads = [c for c in self.calls_in(stmt) if callee(c) in READS]
            inner = self._inner_record_helper(fn, stmt) if not value and not reads else None
            if inner is not None:  # NOTE [ A reading helper that calls one ]
                reader_kind, reader_fn, value, text = inner
                body.append(text)
                kept_stmts.append(stmt)
                continue
            ctor = self._reader_ctor(fn, stmt)
            if ctor is not None and not reads:
                target = assigned_names(stmt)
                readers[target[0] if target else ""] = self._carried(fn, stmt, ctor)
                continue
            if reads and value:  # NOTE [ Records read in lockstep ]
                if first is not None:  # the first read's queue parameter, needed now
                    lockstep = [(self.read_queue_param(fn, *first), reader_fn, value)]
                    first = None
                lockstep.append(self.helper_lockstep_read(fn, stmt, reads[0], readers, read_by))
                continue
            if reads:
                reader_kind, reader_fn, value, key_used = self._read(fn, stmt, reads[0], readers)
                first = (stmt, reads[0])
                read_by = {self.reader_name(reads[0])}
                if key_used:  # the caller reads (key, value) pairs with the reader's keys
                    spec = self._reader_spec(fn, stmt, reads[0], readers)
                    self.record_keys[fn.name] = (self._read_key(stmt), spec)
                continue
            if self._unread_variable(stmt, stmts):
                self.dropped.append(
                    f"{self.where(fn.line(stmt))}: `{self.code(stmt).strip()}`: a variable "
                    "nothing in the record's code reads (a Dataset function cannot make one "
                    "per record)"
                )
                continue
            body.append(self.text(stmt, 1, tuple_returns(stmt)))
            kept_stmts.append(stmt)
        used = set().union(*(names_in(st) for st in kept_stmts)) if kept_stmts else set()
        if any(guards):
            used |= taken_reads.test_names(guards)
            ends = [*marks[1:], len(body)]
            body = taken_reads.written_guarded(
                self, [(body[a:b], g) for a, b, g in zip(marks, ends, guards)]
            )
        if len(lockstep) > 1:
            self.record_lockstep[fn.name] = lockstep
            value = ", ".join(v for _, _, v in lockstep)
        queue_params = [p for p in fn.params if fn.kind(p) == "queue"]
        extra = [p for p in fn.params if p not in queue_params and p in used]
        name = f"{fn.name}_record"
        key = [self.record_keys[fn.name][0]] if fn.name in self.record_keys else []
        params = ", ".join(key + [value] + extra)
        text = (
            f"def {name}({params}):\n"
            + (doc or f'    """{fn.name} after the reader: one record, decoded."""\n')
            + "".join(body)
        )
        self.generated.setdefault(fn.name, "")
        self.generated[fn.name] += "\n\n" + text
        if self.batch_decode and not extra and not key and len(lockstep) < 2:
            self._batch_helper(fn, name, value, doc, kept_stmts)
        self.record_helpers[fn.name] = (name, reader_kind, reader_fn, extra, value)
        return self.record_helpers[fn.name]

    def _check_queue_dequeue(self, fn: Function, stmt) -> None:
        """Refuses a dequeue of the queue a reading helper's reader reads (``lin =
        queue.dequeue()`` beside ``reader.read(queue)``): each run takes a file name away
        from the reader, which a Dataset of the records cannot do."""
        for c in self.calls_in(stmt):
            receiver = c.func.value if isinstance(c.func, cst.Attribute) else None
            if (
                callee(c) in ("dequeue", "dequeue_many", "dequeue_up_to")
                and isinstance(receiver, cst.Name)
                and receiver.value in fn.params
                and fn.kind(receiver.value) == "queue"
            ):
                raise self.fail(
                    fn, stmt, f"it dequeues `{receiver.value}`, the file-name queue "
                    f"{fn.name}'s reader reads: whenever its value is run it takes a file "
                    "name away from the reader, so which files are read depends on when "
                    "the session runs it, and a Dataset of the records cannot take names "
                    f"from its files; Fix: take the file names from the list given to the "
                    f"producer (not from its queue), or drop the dequeue, then migrate"
                )  # fmt: skip

    def _inner_record_helper(self, fn: Function, stmt) -> tuple[str, str, str, str] | None:
        """A statement of reading helper `fn` that hands its queue to another reading
        helper: (reader kind, reader Dataset function, the record's name, the
        statement calling that helper's record function).

        NOTE [ A reading helper that calls one ]
        ``read_and_decode(queue, batch_size)`` may read through another helper
        (``image, label = read_record(queue)``, then ``shuffle_batch``): the
        inner helper becomes ``read_record_record(value)`` as usual, and the
        outer one's record function starts by calling it with its own record
        parameter (named as the inner one's). The reader is the inner one's.
        """
        for call in self.calls_in(stmt):
            inner = self.helper_of(call)
            if inner is None or inner is fn or inner.role != "record":
                continue
            if inner.name in self.record_keys:
                raise self.fail(fn, stmt, "a reader key read through two reading helpers")
            new, kind, reader_fn, extra, value = self.record_helper(inner)
            if inner.name in self.record_lockstep:
                raise self.fail(
                    fn, stmt, f"a reading helper handing its queues on to {inner.name}, which "
                    "reads them in lockstep: call it from the function that makes the queues"
                )  # fmt: skip
            args = self._extra_args(inner, call, extra) if extra else []
            replace = [(call, f"{new}({', '.join([value, *args])})"), *tuple_returns(stmt)]
            return kind, reader_fn, value, self.text(stmt, 1, replace)
        return None

    def _element_of(self, tensors: str, fn: Function | None = None) -> str:
        """What the mapped function returns for a batching call's `tensors` (never a list:
        tf.data would stack one; a name `fn`'s run left holding a list is a tuple)."""
        text = tensors.strip()
        value = fn.call.local_values.get(text) if fn is not None and fn.call is not None else None
        if isinstance(value, list) and text.isidentifier():
            return f"tuple({text})"
        if text.startswith("list(") and text.endswith(")"):
            return "tuple(" + text[len("list(") :]
        if text.startswith("[") and text.endswith("]"):
            # A list of one tensor batches to that tensor alone, as in TF 1.x.
            try:
                node = cst.parse_expression(text)
            except cst.ParserSyntaxError:
                return text[1:-1].strip().rstrip(",")
            if isinstance(node, cst.List):  # one line, whatever lines the list took
                return ", ".join(self.code(e.value) for e in node.elements)
            return text[1:-1].strip().rstrip(",")
        return text

    def _batching_return(self, fn: Function, stmt, call: cst.Call, rest: list) -> str:
        """The record function's ``return`` of what `fn`'s batching call batches; the call
        itself is kept for the caller (NOTE [ A reading helper that batches ])."""
        kind = callee(call)
        try:
            args = self.bound(legacy_api(kind), call)
        except TypeError as e:
            raise self.fail(fn, stmt, str(e)) from e
        if kind.endswith("_join"):
            raise self.fail(fn, stmt, "a reading helper that joins several readers itself")
        batchers = [callee(c) for c in self.calls_in(stmt) if callee(c) in BATCHING]
        branches = self._batching_branches(fn, stmt) if len(batchers) > 1 else None
        if branches is not None:  # NOTE [ A reading helper that batches two ways ]
            self.record_branches[fn.name] = branches
            kind, args, _ = branches[1][0]
        elif len(batchers) > 1:
            raise self.fail(
                fn, stmt, f"a reading helper handed a queue ends where its caller batches, and "
                f"this one batches in {len(batchers)} ways ({', '.join(batchers)}) by a test "
                f"of its own; Fix: let {fn.name} return the records it batches and move the "
                "test with its batching calls to its caller, then migrate"
            )  # fmt: skip
        targets = list(dict.fromkeys(assigned_names(stmt)))
        for later in rest:
            ret = later.body[0] if isinstance(later, cst.SimpleStatementLine) else None
            if isinstance(ret, cst.Return):
                returned = self.code(ret.value).replace(" ", "").strip("()[]") if ret.value else ""
                if returned != ",".join(targets):
                    raise self.fail(
                        fn, later, "it returns something else than the batches it made; "
                        "return the batches (and compute the rest after the call)"
                    )  # fmt: skip
                break
            self.dropped.append(
                f"{self.where(fn.line(later))}: `{self.code(later).strip().splitlines()[0]}`: "
                f"after {fn.name}'s batching call, and not returned"
            )
        self.record_batching[fn.name] = (kind, args, fn.line(stmt))
        return f"    return {self._element_of(args['tensors'])}\n"

    def _batching_branches(self, fn: Function, stmt) -> tuple | None:
        """(test, [(kind, arguments, line)] * 2) when `stmt` is an ``if`` / ``else`` each of
        whose branches is one batching call of the same tensors to the same names; else None.

        NOTE [ A reading helper that batches two ways ]
        A reading helper handed a queue often picks its batching by a parameter
        (a shape-completion reader's ``if shuffle_batch: datas, targets =
        tf.train.shuffle_batch([data, target], ...) else: ... tf.train.batch(
        [data, target], ...)``). Its record function ends before the ``if``, as
        for one batching call (NOTE [ A reading helper that batches ]); the
        caller makes the records once and keeps the ``if``, its test written in
        the caller's terms (the parameter replaced by what the call passes, or
        its default), each branch the chain of its batching call.
        """
        if not isinstance(stmt, cst.If) or not isinstance(stmt.orelse, cst.Else):
            return None
        parts = []
        for block in (stmt.body, stmt.orelse.body):
            body = list(block.body) if isinstance(block, cst.IndentedBlock) else []
            line = body[0] if len(body) == 1 else None
            if not isinstance(line, cst.SimpleStatementLine):
                return None
            assign = line.body[0]
            if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
                return None
            kind = callee(assign.value)
            if kind not in BATCHING or kind.endswith("_join"):
                return None
            try:
                args = self.bound(legacy_api(kind), assign.value)
            except TypeError:
                return None
            parts.append((assigned_names(line), kind, args, fn.line(line)))
        (names, _, first, _), (others, _, second, _) = parts
        if names != others or bare(first.get("tensors", "")) != bare(second.get("tensors", "")):
            return None
        return self.code(stmt.test), [(k, a, n) for _, k, a, n in parts]

    def caller_values(self, call: cst.Call, helper: Function) -> dict[str, str]:
        """Each parameter of `helper` as the code `call` passes for it (or its default)."""
        passed = self.bound(getattr(self.trace.module, helper.name), call)
        values = {}
        for p in helper.params:
            if p in passed:
                values[p] = passed[p]
            else:
                default = next(
                    (q.default for q in all_params(helper.node.params) if q.name.value == p), None
                )
                if default is not None:
                    values[p] = self.code(default)
        return values

    def in_caller_terms(self, text: str, call: cst.Call, helper: Function) -> str:
        """The expression `text` of `helper`, its parameters as `call` passes them."""
        node = cst.parse_expression(text).visit(_Substitute(self.caller_values(call, helper)))
        return self.code(cast(cst.CSTNode, node))

    def caller_batching(
        self, fn: Function, stmt, call: cst.Call, helper: Function, batching=None
    ) -> tuple:
        """The `legacy` arguments of the batching that `helper` (called by `call`) ends with
        (`batching`: one branch's, NOTE [ A reading helper that batches two ways ]),
        written in the caller's terms (NOTE [ A reading helper that batches ])."""
        kind, args, line = batching or self.record_batching[helper.name]
        values = self.caller_values(call, helper)
        locals_ = set(helper.kinds) - set(helper.params)
        written = {}
        for name, text in args.items():
            if name == "tensors":
                continue
            node = cst.parse_expression(text)
            read = names_in(node)
            if read & locals_:
                raise self.fail(
                    helper, self._statement_at(helper, line), f"its batching argument {name}="
                    f"{text} reads {', '.join(sorted(read & locals_))}, a local of {helper.name}: "
                    "compute it from the parameters, or migrate a function that batches itself"
                )  # fmt: skip
            written[name] = self.code(cast(cst.CSTNode, node.visit(_Substitute(values))))
        targets = assigned_names(stmt)  # `return helper(queue, n)`: the helper's own names
        written["tensors"] = "[" + ", ".join(targets) + "]" if targets else args["tensors"]
        return kind, written, f"{kind} (in {helper.name})"

    def _statement_at(self, fn: Function, line: int):
        """The statement of `fn` on `line` (for a refusal's file:line)."""
        return next(
            (s for s in m.findall(fn.node.body, m.SimpleStatementLine()) if fn.line(s) == line),
            fn.node,
        )

    def _unread_variable(self, stmt, stmts: list) -> bool:
        """Whether `stmt` only makes a ``tf.Variable`` under names no later statement reads."""
        calls = self.calls_in(stmt)
        if not calls or not all(callee(c) in ("Variable", "get_variable") for c in calls):
            return False
        targets = set(assigned_names(stmt))
        later = stmts[stmts.index(stmt) + 1 :]
        return bool(targets) and not any(targets & names_in(st) for st in later)

    def _batch_helper(self, fn: Function, name: str, value: str, doc: str, stmts) -> None:
        """``<name>_batch``: the record helper on whole batches, if the rules allow it.

        See NOTE [ Batch-then-decode in migrated code ].
        """
        try:
            self._batch_plain_functions(stmts)
            body = "".join(self.batched_text(fn, st, 1, {}) for st in stmts)
        except vectorize.Unbatchable:
            return
        batch_name = name[: -len("_record")] + "_batch"
        self._pending_batch_code[batch_name] = (
            fn.name,
            f"def {batch_name}({value}):\n"
            + f'    """{fn.name} on a batch of records (batch-then-decode)."""\n'
            + body,
        )
        self.batch_helpers[name] = batch_name

    def _batch_plain_functions(self, stmts) -> None:
        """``<g>_batch`` for each function of the file the per-record statements call.

        A decoder is often its own function (``decode(serialized)`` called by
        ``read_and_decode``); its batched version is written beside it when
        the rules allow, and the batched statements call it.

        Raises:
          vectorize.Unbatchable: such a function cannot be batched.
        """
        for stmt in stmts:
            for call in self.calls_in(stmt):
                g = self.functions.get(callee(call)) if isinstance(call.func, cst.Name) else None
                if g is None or g.name in self.batch_helpers or g.call is None:
                    continue
                body = list(g.node.body.body)
                doc = ""
                if body and m.matches(
                    body[0], m.SimpleStatementLine(body=[m.Expr(value=m.SimpleString())])
                ):
                    body = body[1:]
                    doc = f"{g.name} on a batch of records (batch-then-decode)."
                self._batch_plain_functions(body)
                text = "".join(self.batched_text(g, st, 1, {}) for st in body)
                params = self.code(g.node.params)
                batch_name = f"{g.name}_batch"
                self._pending_batch_code[batch_name] = (
                    g.name,
                    f"def {batch_name}({params}):\n" + (f'    """{doc}"""\n' if doc else "") + text,
                )
                self.batch_helpers[g.name] = batch_name

    def batched_text(self, fn: Function, stmt, depth: int, replace: dict) -> str:
        """`stmt` batched (vectorize.batch_statement), at indentation `depth`."""
        ids = {id(node): text for node, text in replace.items()} if replace else {}
        new = vectorize.batch_statement(stmt, self.batch_helpers, ids, tensor_names(fn))
        for node, text in tuple_returns(new):
            new = new.deep_replace(node, cst.parse_expression(text))
        code = self.code(new)
        column = self.positions[stmt].start.column
        lines = (" " * column + code).splitlines(keepends=True)
        out = []
        for line in lines:
            if not line.strip():
                out.append("\n")
                continue
            out.append("    " * depth + untabbed(line, column))
        return "".join(out)


class _Substitute(cst.CSTTransformer):
    """Each name of `values` (a parameter) replaced by the code passed for it, parenthesized."""

    def __init__(self, values: dict[str, str]):
        self.values = values

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if updated.value not in self.values:
            return updated
        value = cst.parse_expression(self.values[updated.value])
        atoms = (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Attribute, cst.Call)
        if isinstance(value, atoms + (cst.Subscript, cst.List, cst.Tuple, cst.Dict)):
            return value
        return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
