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
reader and its read ``flat_map`` / ``interleave`` of the reader's Dataset
(the reader constructor line is dropped), ``slice_input_producer``
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
import inspect
import re
import io
import tokenize
from typing import Any, cast

import libcst as cst
import tensorflow as tf
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider

import queue_pipeline
from queue_pipeline import plan
from queue_pipeline._migrate import chains, vectorize
from queue_pipeline._migrate.trace import MigrateError, Trace

__all__ = ["Rewrite", "Step", "rewrite"]

_API = "queue-pipeline migrate"
PRODUCERS = ("string_input_producer", "input_producer", "range_input_producer")
BATCHING = tuple(sorted(plan.BATCHING_KINDS))
READS = ("read", "read_up_to")
READER_CLASSES = (
    "TextLineReader",
    "TFRecordReader",
    "FixedLengthRecordReader",
    "WholeFileReader",
    "IdentityReader",
)
_SUMMARY = re.compile(r"\bsummary\.\w+\(|\bsummary\.(image|scalar|histogram)\b")


@dataclasses.dataclass
class Step:
    """One line of the report: a legacy call, what replaced it, and its arguments' fates."""

    line: int
    legacy: str
    replacement: str
    fates: list[tuple[str, str]] = dataclasses.field(default_factory=list)


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
      names: the functions migrated (originals and their new versions).
    """

    source: str
    added: str
    function: str
    steps: list[Step]
    dropped: list[str]
    differences: list[str]
    batched: list[str] = dataclasses.field(default_factory=list)
    names: list[str] = dataclasses.field(default_factory=list)


def _callee(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


class _NameCollector(cst.CSTVisitor):
    """The variable names a node reads or writes (not attribute or keyword names)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _names(node: cst.CSTNode) -> set[str]:
    collector = _NameCollector()
    node.visit(collector)
    return collector.names


def _targets(stmt: cst.CSTNode) -> list[str]:
    """Names a statement assigns (tuple targets flattened; attributes count by their base)."""
    out: list[str] = []
    for assign in m.findall(stmt, m.Assign() | m.AugAssign() | m.AnnAssign()):
        if isinstance(assign, cst.Assign):
            targets: list[cst.CSTNode] = [t.target for t in assign.targets]
        elif isinstance(assign, (cst.AugAssign, cst.AnnAssign)):
            targets = [assign.target]
        else:
            continue
        for target in targets:
            out += [n.value for n in m.findall(target, m.Name()) if isinstance(n, cst.Name)]
    return out


class _Function:
    """One module-level function: its CST, its run's locals and its role."""

    def __init__(self, rw: _Rewriter, node: cst.FunctionDef):
        self.rw = rw
        self.node = node
        self.name = node.name.value
        pos = rw.positions[node]
        self.first, self.last = pos.start.line, pos.end.line
        call = None
        for (name, first), c in rw.trace.calls.items():
            if name == self.name and self.first <= first <= self.last:
                call = c
        self.call = call
        self.kinds: dict[str, str] = {}
        if call is not None:
            for var, value in call.local_values.items():
                self.kinds[var] = rw.trace.kind_of(value)
        self.params = [p.name.value for p in _all_params(node.params)]

    def kind(self, name: str) -> str:
        return self.kinds.get(name, "plain")

    @property
    def role(self) -> str:
        """``record``, ``batch`` or ``pipeline``.

        See NOTE [ How a legacy function is rewritten ].
        """
        param_kinds = {self.kind(p) for p in self.params}
        if "queue" in param_kinds:
            return "record"
        if "record" in param_kinds:
            return "batch"
        return "pipeline"

    def line(self, node: cst.CSTNode) -> int:
        return self.rw.positions[node].start.line


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    out = list(params.posonly_params) + list(params.params)
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg)
    out += list(params.kwonly_params)
    if params.star_kwarg is not None:
        out.append(params.star_kwarg)
    return out


def _bind(api: Any, call: cst.Call, module: cst.Module, skip_self: bool = False) -> dict[str, str]:
    """Source text of each argument of `call`, by `api`'s parameter names."""
    params = [
        p
        for p in inspect.signature(api).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if skip_self and params and params[0].name == "self":
        params = params[1:]
    out: dict[str, str] = {}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    i = 0
    for arg in call.args:
        text = module.code_for_node(arg.value)
        if arg.star:
            raise chains.Unsupported(f"a `{arg.star}` argument in a call of {_callee(call)}")
        if arg.keyword is not None:
            out[arg.keyword.value] = text
        else:
            if i >= len(positional):
                raise chains.Unsupported(f"too many positional arguments to {_callee(call)}")
            out[positional[i].name] = text
            i += 1
    return out


@dataclasses.dataclass
class _State:
    """Where a pipeline function's Dataset stands while its statements are rewritten."""

    element: list[str] = dataclasses.field(default_factory=list)  # names of one record
    # per-record statements, each with (node, replacement text) pairs
    pending: list[tuple[Any, tuple]] = dataclasses.field(default_factory=list)
    queues: dict[str, str] = dataclasses.field(default_factory=dict)  # queue var -> Dataset var
    readers: dict[str, tuple[str, dict]] = dataclasses.field(default_factory=dict)
    batch_element: list[str] = dataclasses.field(default_factory=list)
    joined: set = dataclasses.field(default_factory=set)  # names of joined reader lists
    direct: tuple = (None, "")  # (helper statement, helper version to map directly)


class _Rewriter:
    def __init__(self, trace: Trace, source: str, batch_decode: bool = False):
        self.trace = trace
        self.batch_decode = batch_decode
        self.batched: list[str] = []  # functions that decode whole batches
        try:
            self.module = cst.parse_module(source)
        except cst.ParserSyntaxError as e:
            raise MigrateError(f"{_API}: {trace.path}: the file does not parse: {e}") from e
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.positions = wrapper.resolve(PositionProvider)
        self.spans = wrapper.resolve(WhitespaceInclusivePositionProvider)
        self.lines = source.splitlines(keepends=True)
        self.in_string = _string_lines(source)
        self.functions = {
            f.name.value: _Function(self, f)
            for f in self.module.body
            if isinstance(f, cst.FunctionDef)
        }
        self.generated: dict[str, str] = {}  # original function -> code of its versions
        self.steps: list[Step] = []
        self.dropped: list[str] = []
        self.differences: list[str] = []
        self.reader_sites = {line for frames in trace.reader_sites.values() for _, line in frames}
        self.record_helpers: dict[str, tuple[str, str, str, list[str], str]] = {}
        self.kept_params: dict[str, list[str]] = {}
        self.batch_helpers: dict[str, str] = {}  # <name>_record -> <name>_batch
        self._pending_batch_code: dict[str, tuple[str, str]] = {}  # written when used

    # ------------------------------------------------------------------ helpers

    def where(self, line: int) -> str:
        return f"{self.trace.path}:{line}"

    def fail(self, fn: _Function, node: cst.CSTNode, why: str) -> MigrateError:
        return MigrateError(
            f"{_API}: {self.where(fn.line(node))}: cannot migrate "
            f"`{self.code(node).strip().splitlines()[0]}`: {why}."
        )

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def raw(self, node: cst.CSTNode) -> str:
        """The node's exact source text (no leading or trailing whitespace)."""
        pos = self.positions[node]
        lines = self.lines[pos.start.line - 1 : pos.end.line]
        if len(lines) == 1:
            return lines[0][pos.start.column : pos.end.column]
        return lines[0][pos.start.column :] + "".join(lines[1:-1]) + lines[-1][: pos.end.column]

    def text(self, stmt: cst.CSTNode, depth: int, replace=()) -> str:
        """`stmt`'s source lines (its comments included) at indentation `depth`.

        Args:
          replace: (node, text) pairs: each node's source replaced by the text.
        """
        span = self.spans[stmt]
        end = span.end.line - 1 if span.end.column == 0 else span.end.line
        first = span.start.line
        chunk = "".join(self.lines[first - 1 : end])
        for node, new in replace:
            old = self.raw(node)
            start = self.lines[self.positions[node].start.line - 1]
            base = " " * (len(start) - len(start.lstrip(" ")))
            new = new.replace("\n", "\n" + base)
            chunk = chunk.replace(old, new, 1)
        column = self.positions[stmt].start.column
        out = []
        for offset, line in enumerate(chunk.splitlines(keepends=True)):
            if first + offset in self.in_string or not line.strip():
                out.append(line if line.strip() else "\n")
                continue
            spaces = len(line) - len(line.lstrip(" "))
            out.append("    " * depth + line[min(spaces, column) :])
        return "".join(out)

    def helper_of(self, call: cst.Call) -> _Function | None:
        name = _callee(call) if isinstance(call.func, cst.Name) else ""
        fn = self.functions.get(name)
        if fn is not None and fn.call is not None and self._builds(fn):
            return fn
        return None

    def _builds(self, fn: _Function) -> bool:
        """Whether a legacy call was made inside `fn` (directly or through its helpers)."""
        for frames in list(self.trace.sites.values()) + list(self.trace.reader_sites.values()):
            for name, line in frames:
                if name == fn.name and fn.first <= line <= fn.last:
                    return True
        return False

    def calls_in(self, node: cst.CSTNode) -> list[cst.Call]:
        return [c for c in m.findall(node, m.Call()) if isinstance(c, cst.Call)]

    # ----------------------------------------------------------- record helpers

    def record_helper(self, fn: _Function) -> tuple[str, str, str, list[str], str]:
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
        stmts = list(fn.node.body.body)
        doc = ""
        if stmts and m.matches(
            stmts[0],
            m.SimpleStatementLine(body=[m.Expr(value=m.SimpleString() | m.ConcatenatedString())]),
        ):
            doc = self.text(stmts[0], 1)
            stmts = stmts[1:]
        for stmt in stmts:
            reads = [c for c in self.calls_in(stmt) if _callee(c) in READS]
            ctor = self._reader_ctor(fn, stmt)
            if ctor is not None and not reads:
                target = _targets(stmt)
                readers[target[0] if target else ""] = ctor
                continue
            if reads:
                reader_kind, reader_fn, value, key_used = self._read(
                    fn, stmt, reads[0], readers, stmts
                )
                if key_used:
                    raise self.fail(
                        fn,
                        stmt,
                        "the code uses the reader's key (tf.data readers give no key); "
                        "migrate by hand with keys from the file name",
                    )
                continue
            body.append(self.text(stmt, 1, _tuple_returns(stmt)))
            kept_stmts.append(stmt)
        used = set().union(*(_names(st) for st in kept_stmts)) if kept_stmts else set()
        queue_params = [p for p in fn.params if fn.kind(p) == "queue"]
        extra = [p for p in fn.params if p not in queue_params and p in used]
        name = f"{fn.name}_record"
        params = ", ".join([value] + extra)
        text = (
            f"def {name}({params}):\n"
            + (doc or f'    """{fn.name} after the reader: one record, decoded."""\n')
            + "".join(body)
        )
        self.generated.setdefault(fn.name, "")
        self.generated[fn.name] += "\n\n" + text
        if self.batch_decode and not extra:
            self._batch_helper(fn, name, value, doc, kept_stmts)
        self.record_helpers[fn.name] = (name, reader_kind, reader_fn, extra, value)
        return self.record_helpers[fn.name]

    def _batch_helper(self, fn: _Function, name: str, value: str, doc: str, stmts) -> None:
        """``<name>_batch``: the record helper on whole batches, if the rules allow it.

        See NOTE [ Batch-then-decode in migrated code ].
        """
        try:
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

    def batched_text(self, fn: _Function, stmt, depth: int, replace: dict) -> str:
        """`stmt` batched (vectorize.batch_statement), at indentation `depth`."""
        ids = {id(node): text for node, text in replace.items()} if replace else {}
        new = vectorize.batch_statement(stmt, self.batch_helpers, ids, _tensor_names(fn))
        for node, text in _tuple_returns(new):
            new = new.deep_replace(node, cst.parse_expression(text))
        code = self.module.code_for_node(new)
        column = self.positions[stmt].start.column
        lines = (" " * column + code).splitlines(keepends=True)
        out = []
        for line in lines:
            if not line.strip():
                out.append("\n")
                continue
            spaces = len(line) - len(line.lstrip(" "))
            out.append("    " * depth + line[min(spaces, column) :])
        return "".join(out)

    def _reader_ctor(self, fn: _Function, stmt: cst.CSTNode) -> tuple[str, dict] | None:
        """(reader kind, its arguments) if `stmt` creates a reader.

        A reader of a traced read is known by the run, however its class is
        spelled (``IMPLS[impl]["TFRecordReader"]()``); in a branch the run did
        not take, by the class name (``tf.compat.v1.TextLineReader()``).
        """
        first, last = self.positions[stmt].start.line, self.positions[stmt].end.line
        kinds = [
            node.kind.rpartition(".")[0]
            for node in self.trace.nodes
            if any(
                name == fn.name and first <= line <= last
                for name, line in self.trace.reader_sites.get(node.index, ())
            )
        ]
        for call in self.calls_in(stmt):
            if _callee(call) in READS:
                continue
            for kind in kinds or ([_callee(call)] if _callee(call) in READER_CLASSES else []):
                try:
                    reader_init = getattr(queue_pipeline, kind).__init__
                    return kind, _bind(reader_init, call, self.module, skip_self=True)
                except (chains.Unsupported, TypeError, ValueError, AttributeError):
                    continue
        return None

    def _read(self, fn, stmt, read_call, readers, stmts):
        """The reader kind, Dataset function and value variable of a read statement."""
        receiver = read_call.func.value if isinstance(read_call.func, cst.Attribute) else None
        spec = None
        if isinstance(receiver, cst.Name):
            spec = readers.get(receiver.value)
        elif isinstance(receiver, cst.Call):
            spec = self._reader_ctor(fn, stmt)
        if spec is None:
            raise self.fail(fn, stmt, "its reader was not created by a traced reader constructor")
        kind, args = spec
        if _callee(read_call) == "read_up_to":
            raise self.fail(fn, stmt, "read_up_to (batch the records with Dataset.batch by hand)")
        try:
            reader_fn = chains.reader_dataset(kind, args)
        except chains.Unsupported as e:
            raise self.fail(fn, stmt, str(e)) from e
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        key, value = "", ""
        if isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Tuple):
            elements = assign.targets[0].target.elements
            key, value = (self.code(e.value) for e in elements)
        if not value or not re.fullmatch(r"\w+", value):
            raise self.fail(fn, stmt, "the read must assign `key, value = reader.read(queue)`")
        later = "".join(self.code(s) for s in stmts[stmts.index(stmt) + 1 :])
        key_used = (
            bool(key)
            and key != "_"
            and bool(re.search(rf"(?<![\w.]){re.escape(key)}(?!\w)", later))
        )
        if key and not re.fullmatch(r"\w+", key):
            self.dropped.append(
                f"{self.where(fn.line(stmt))}: `{key}` (the reader's key): tf.data's readers give "
                "no key"
            )
        if kind == "WholeFileReader":
            reader_fn = "tf.io.read_file"
        return kind, reader_fn, value, key_used

    # -------------------------------------------------------------- pipelines

    def pipeline(self, fn: _Function) -> str:
        """Writes `fn`'s tf.data version; returns its name."""
        role = fn.role
        name = f"{fn.name}_dataset"
        if fn.name in self.generated and name in self.generated[fn.name]:
            return name
        state = _State()
        params = list(fn.params)
        if role == "batch":
            record_params = [p for p in fn.params if fn.kind(p) == "record"]
            state.element = record_params
            at = params.index(record_params[0])
            params = [p for p in params if p not in record_params]
            params.insert(at, "dataset")
        stmts = list(fn.node.body.body)
        lines = _dead_code(self._block(fn, stmts, state, depth=1))
        used = "".join(lines)
        if fn.name != self.trace.function:  # a helper: keep only what its version uses
            params = [p for p in params if p == "dataset" or re.search(rf"\b{p}\b", used)]
        header = self._header(fn, name, params)
        text = header + "".join(lines)
        self.generated.setdefault(fn.name, "")
        self.generated[fn.name] += "\n\n" + text
        return name

    def _header(self, fn: _Function, name: str, keep: list[str]) -> str:
        """``def name(...):`` with `fn`'s own spelling (annotations, defaults) of the `keep` params.

        A ``dataset`` in `keep` that `fn` does not have is inserted there.
        """
        params = fn.node.params
        replaced = next((p for p in _all_params(params) if fn.kind(p.name.value) == "record"), None)
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
        self.kept_params[name] = [
            p.name.value for p in _all_params(new) if isinstance(p, cst.Param)
        ]
        return header

    def _block(self, fn: _Function, stmts, state: _State, depth: int) -> list[str]:
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
                continue
            out += self._statement(fn, stmt, state, depth)
        return out

    def _statement(self, fn: _Function, stmt, state: _State, depth: int) -> list[str]:
        pad = "    " * depth
        calls = self.calls_in(stmt)
        names = _names(stmt)
        line = fn.line(stmt)
        if isinstance(stmt, (cst.With, cst.If)) and self._has_stage(fn, stmt):
            return self._compound(fn, stmt, state, depth)
        producer = next((c for c in calls if _callee(c) in PRODUCERS), None)
        if producer is not None:
            return self._producer(fn, stmt, producer, state, depth)
        slicer = next((c for c in calls if _callee(c) == "slice_input_producer"), None)
        if slicer is not None:
            return self._slice(fn, stmt, slicer, state, depth)
        batcher = next((c for c in calls if _callee(c) in BATCHING), None)
        if batcher is not None:
            return self._batching(fn, stmt, batcher, state, depth)
        comp = _list_of_reads(stmt)
        if comp is not None and self.helper_of(cast(cst.Call, comp.elt)) is not None:
            out = self._interleave(fn, stmt, comp, state, depth)
            state.joined.update(_targets(stmt))
            return out
        helper = next((h for c in calls if (h := self.helper_of(c)) is not None), None)
        if helper is not None:
            call = next(c for c in calls if self.helper_of(c) is helper)
            return self._helper_call(fn, stmt, call, helper, state, depth)
        ctor = self._reader_ctor(fn, stmt)
        if ctor is not None and not any(_callee(c) in READS for c in calls):
            target = _targets(stmt)
            state.readers[target[0] if target else ""] = ctor
            return []
        reads = [c for c in calls if _callee(c) in READS]
        if reads and any(fn.kind(n) in ("queue", "reader") for n in names):
            kind, reader_fn, value, key_used = self._read(
                fn, stmt, reads[0], state.readers, list(fn.node.body.body)
            )
            if key_used:
                raise self.fail(
                    fn, stmt, "the code uses the reader's key (tf.data readers give no key)"
                )
            files = self._files(fn, stmt, reads[0], state)
            self.steps.append(
                Step(
                    line,
                    f"{kind}.{_callee(reads[0])}",
                    f"{files}.flat_map({reader_fn})",
                )
            )
            state.element = [value]
            return [f"{pad}records = {files}.flat_map({reader_fn})\n"]
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Return):
            return self._return(fn, stmt, state, depth)
        kinds = {fn.kind(n) for n in names}
        if "record" in kinds or (set(_targets(stmt)) & set(state.element)):
            state.pending.append((stmt, ()))
            return []
        if "batch" in kinds:
            if not _targets(stmt):
                self.dropped.append(
                    f"{self.where(line)}: `{self.code(stmt).strip()}`: it uses the batch tensors "
                    "outside the Dataset (add it to the training step)"
                )
                return []
            raise self.fail(
                fn,
                stmt,
                "it computes from the batches before the function "
                "returns (move it into a Dataset.map by hand)",
            )
        if "queue" in kinds or "reader" in kinds:
            raise self.fail(
                fn, stmt, "it uses a queue or reader in a way the migration does not know"
            )
        return [self.text(stmt, depth)]

    def _has_stage(self, fn: _Function, stmt) -> bool:
        for call in self.calls_in(stmt):
            if _callee(call) in PRODUCERS + BATCHING + READS + ("slice_input_producer",):
                return True
            if self.helper_of(call) is not None:
                return True
        names = _names(stmt)
        return any(fn.kind(n) in ("record", "queue", "reader", "batch") for n in names)

    def _compound(self, fn: _Function, stmt, state: _State, depth: int) -> list[str]:
        pad = "    " * depth
        out: list[str] = []
        if isinstance(stmt, cst.With):
            header = self.code(stmt).split("\n", 1)[0]
            inner = self._block(fn, list(stmt.body.body), state, depth + 1)
            out.append(f"{pad}{header.strip()}\n")
            out += inner or [f"{pad}    pass\n"]
            return out
        assert isinstance(stmt, cst.If)
        out.append(f"{pad}if {self.code(stmt.test)}:\n")
        saved = dataclasses.replace(state, pending=list(state.pending), element=list(state.element))
        out += self._block(fn, list(stmt.body.body), state, depth + 1) or [f"{pad}    pass\n"]
        orelse = stmt.orelse
        while orelse is not None:
            other = dataclasses.replace(
                saved, pending=list(saved.pending), element=list(saved.element)
            )
            if isinstance(orelse, cst.If):
                out.append(f"{pad}elif {self.code(orelse.test)}:\n")
                out += self._block(fn, list(orelse.body.body), other, depth + 1) or [
                    f"{pad}    pass\n"
                ]
                orelse = orelse.orelse
            else:
                out.append(f"{pad}else:\n")
                out += self._block(fn, list(orelse.body.body), other, depth + 1) or [
                    f"{pad}    pass\n"
                ]
                orelse = None
        return out

    def _files(self, fn, stmt, read_call, state: _State) -> str:
        queue = read_call.args[0].value if read_call.args else None
        if isinstance(queue, cst.Name) and queue.value in state.queues:
            return state.queues[queue.value]
        raise self.fail(fn, stmt, "it reads from a queue no producer of this function filled")

    def _producer(self, fn, stmt, call, state: _State, depth: int) -> list[str]:
        pad = "    " * depth
        kind = _callee(call)
        try:
            args = _bind(getattr(queue_pipeline, kind), call, self.module)
        except (chains.Unsupported, TypeError) as e:
            raise self.fail(fn, stmt, str(e)) from e
        targets = _targets(stmt)
        if not targets:
            raise self.fail(fn, stmt, "the producer's queue is not assigned to a variable")
        single = self._single_row(args)
        files = _fresh(fn, "filenames", "files", "file_names")
        try:
            chain = chains.producer_lines(kind, args, files, single)
        except chains.Unsupported as e:
            raise self.fail(fn, stmt, str(e)) from e
        state.queues[targets[0]] = files
        self.steps.append(Step(fn.line(stmt), kind, " / ".join(chain.lines), chain.fates))
        if single and _is_shuffled(args):
            self.differences.append(
                f"{self.where(fn.line(stmt))}: {kind} shuffles one row: nothing to shuffle, "
                "so no shuffle is written"
            )
        return [f"{pad}{line}\n" for line in chain.lines]

    @staticmethod
    def _single_row(args) -> bool:
        """Whether the producer's input is written as a list of one row (``[filename]``)."""
        first = args.get("string_tensor") or args.get("input_tensor") or ""
        try:
            node = cst.parse_expression(first)
        except cst.ParserSyntaxError:
            return False
        return isinstance(node, cst.List) and len(node.elements) == 1

    def _slice(self, fn, stmt, call, state: _State, depth: int) -> list[str]:
        pad = "    " * depth
        try:
            args = _bind(queue_pipeline.slice_input_producer, call, self.module)
            chain = chains.slice_lines(args, "records")
        except (chains.Unsupported, TypeError) as e:
            raise self.fail(fn, stmt, str(e)) from e
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

    def _flush(self, state: _State, returns: str, depth: int) -> list[str]:
        """The pending per-record statements as a nested function mapped over ``records``."""
        pad = "    " * depth
        params = ", ".join(state.element)
        stmt, direct = state.direct
        if (
            direct
            and len(state.pending) == 1
            and state.pending[0][0] is stmt
            and _bare(self.code(stmt.body[0].targets[0].target)) == _bare(returns)
        ):
            state.pending = []
            return [f"{pad}records = records.map({direct}, num_parallel_calls={chains.AUTOTUNE})\n"]
        call = _parse_expression(returns)
        if (
            not state.pending
            and isinstance(call, cst.Call)
            and isinstance(call.func, (cst.Name, cst.Attribute))
            and [self.code(a.value) for a in call.args if a.keyword is None] == state.element
            and len(call.args) == len(state.element)
        ):
            function = self.code(call.func)
            return [
                f"{pad}records = records.map({function}, num_parallel_calls={chains.AUTOTUNE})\n"
            ]
        if not state.pending and returns.replace(" ", "") in (
            params.replace(" ", ""),
            f"({params})",
        ):
            return []
        body = "".join(self.text(st, depth + 1, rep) for st, rep in state.pending)
        body += f"{pad}    return {returns}\n"
        state.pending = []
        return [
            "\n",
            f"{pad}def per_record({params}):\n",
            body,
            "\n",
            f"{pad}records = records.map(per_record, num_parallel_calls={chains.AUTOTUNE})\n",
        ]

    def _batched_flush(self, fn, state: _State, returns: str, args, kind, depth):
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
        stmt, direct = state.direct
        if (
            direct
            and len(state.pending) == 1
            and state.pending[0][0] is stmt
            and _bare(self.code(stmt.body[0].targets[0].target)) == _bare(returns)
        ):
            batched = self.batch_helpers.get(direct)
            if batched is None:
                return None
            self._use_batch_helper(batched)
            state.pending = []
            self.batched.append(batched)
            return [
                f"{pad}dataset = dataset.map({batched}, num_parallel_calls={chains.AUTOTUNE})\n"
            ]
        if not state.pending:
            return None
        try:
            body = "".join(
                self.batched_text(fn, st, depth + 1, dict(rep)) for st, rep in state.pending
            )
            returned = vectorize.batch_statement(
                cst.parse_expression(returns), self.batch_helpers, {}, _tensor_names(fn)
            )
        except vectorize.Unbatchable:
            return None
        for helper, batched in self.batch_helpers.items():
            if helper in body:
                self._use_batch_helper(batched)
        state.pending = []
        self.batched.append(f"{fn.name}'s per_batch")
        params = ", ".join(state.element)
        return [
            "\n",
            f"{pad}def per_batch({params}):\n",
            body,
            f"{pad}    return {self.module.code_for_node(returned)}\n",
            "\n",
            f"{pad}dataset = dataset.map(per_batch, num_parallel_calls={chains.AUTOTUNE})\n",
        ]

    def _use_batch_helper(self, name: str) -> None:
        if name in self._pending_batch_code:
            owner, code = self._pending_batch_code.pop(name)
            self.generated[owner] += "\n\n" + code

    def _element_of(self, tensors: str) -> str:
        """What the mapped function returns for a batching call's `tensors` (never a list)."""
        text = tensors.strip()
        if text.startswith("list(") and text.endswith(")"):
            return "tuple(" + text[len("list(") :]
        if text.startswith("[") and text.endswith("]"):
            # A list of one tensor batches to that tensor alone, as in TF 1.x.
            return text[1:-1].strip().rstrip(",")
        return text

    def _batching(self, fn, stmt, call, state: _State, depth: int) -> list[str]:
        pad = "    " * depth
        kind = _callee(call)
        try:
            args = _bind(getattr(queue_pipeline, kind), call, self.module)
        except (chains.Unsupported, TypeError) as e:
            raise self.fail(fn, stmt, str(e)) from e
        out: list[str] = []
        after: list[str] | None = None
        first = "tensors_list" if kind.endswith("_join") else "tensors"
        if kind.endswith("_join"):
            out += self._join_records(fn, stmt, call, args, state, depth)
            source = "records"
        elif fn.role == "batch" and not state.pending:
            element = self._element_of(args[first])
            if element.replace(" ", "").rstrip(",") != ",".join(state.element):
                out.append(
                    f"{pad}dataset = dataset.map(lambda {', '.join(state.element)}: ({element}))\n"
                )
            source = "dataset"
        else:
            after = self._batched_flush(fn, state, self._element_of(args[first]), args, kind, depth)
            if after is None:
                out += self._flush(state, self._element_of(args[first]), depth)
            source = "records"
        try:
            chain = chains.batching_lines(kind, args, "dataset")
        except chains.Unsupported as e:
            raise self.fail(fn, stmt, str(e)) from e
        lines = list(chain.lines)
        lines[0] = lines[0].replace("= dataset.", f"= {source}.", 1)
        out += [f"{pad}{line}\n" for line in lines]
        if after is not None:
            out += after
        self.steps.append(Step(fn.line(stmt), kind, " / ".join(lines), chain.fates))
        if "shuffle" in kind:
            self.differences.append(
                f"{self.where(fn.line(stmt))}: {kind}: a shuffle buffer is not a "
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
            out.append(f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n")
        elif isinstance(target, cst.Assign):
            t = target.targets[0].target
            if isinstance(t, (cst.Tuple, cst.List)):
                state.batch_element = [self.code(e.value) for e in t.elements]
            else:
                state.batch_element = ["*" + self.code(t)]
        else:
            raise self.fail(fn, stmt, "assign or return the batching call's result")
        return out

    def _join_records(self, fn, stmt, call, args, state: _State, depth: int) -> list[str]:
        tensors = call.args[0].value if call.args and call.args[0].keyword is None else None
        if tensors is None:
            for a in call.args:
                if a.keyword is not None and a.keyword.value == "tensors_list":
                    tensors = a.value
        if isinstance(tensors, cst.Name) and tensors.value in state.joined:
            return []
        if isinstance(tensors, cst.ListComp) and isinstance(tensors.elt, cst.Call):
            return self._interleave(fn, stmt, tensors, state, depth)
        raise self.fail(
            fn, stmt, "the join's lists must be `[reader_helper(queue) for _ in range(n)]`"
        )

    def _interleave(self, fn, stmt, comp: cst.ListComp, state: _State, depth: int) -> list[str]:
        """N readers sharing one queue (``[read(queue) for _ in range(n)]``) as an interleave."""
        pad = "    " * depth
        elt = comp.elt
        helper = self.helper_of(elt) if isinstance(elt, cst.Call) else None
        if helper is None or helper.role != "record" or not isinstance(elt, cst.Call):
            raise self.fail(fn, stmt, "the join's lists must come from one reading helper")
        new, kind, reader_fn, extra, _ = self.record_helper(helper)
        queue = elt.args[0].value if elt.args else None
        if not isinstance(queue, cst.Name) or queue.value not in state.queues:
            raise self.fail(fn, stmt, "the helper must read from a producer of this function")
        files = state.queues[queue.value]
        count = self.code(comp.for_in.iter)
        match = re.fullmatch(r"range\((.+)\)", count.strip())
        readers = match.group(1) if match else f"len({count})"
        mapped = new
        if extra:
            passed = ", ".join(self._extra_args(helper, elt, extra))
            mapped = f"lambda value: {new}(value, {passed})"
        self.steps.append(
            Step(
                fn.line(stmt),
                f"{kind}.read x {readers} (in {helper.name})",
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

    def _extra_args(self, helper: _Function, call: cst.Call, extra: list[str]) -> list[str]:
        bound = _bind(helper.call and getattr(self.trace.module, helper.name), call, self.module)
        return [bound[p] if p in bound else self.code(_default(helper, p)) for p in extra]

    def _helper_call(
        self, fn, stmt, call, helper: _Function, state: _State, depth: int
    ) -> list[str]:
        pad = "    " * depth
        role = helper.role
        if role == "record":
            new, kind, reader_fn, extra, value = self.record_helper(helper)
            files = self._files(fn, stmt, call, state)
            args = self._extra_args(helper, call, extra) if extra else []
            state.element = [value]
            state.pending.append((stmt, ((call, f"{new}({', '.join([value] + args)})"),)))
            state.direct = (stmt, new if not args else "")
            self.steps.append(
                Step(
                    fn.line(stmt),
                    f"{kind}.read (in {helper.name})",
                    f"{files}.flat_map({reader_fn}), then {new} in Dataset.map",
                )
            )
            return [f"{pad}records = {files}.flat_map({reader_fn})\n"]
        new = self.pipeline(helper)
        kept = self.kept_params[new]
        out: list[str] = []
        replace: dict[str, str] = {}
        if role == "batch":
            bound = _bind(getattr(self.trace.module, helper.name), call, self.module)
            record_params = [p for p in helper.params if helper.kind(p) == "record"]
            returns = ", ".join(bound[p] for p in record_params if p in bound)
            if state.pending or _bare(returns) != _bare(", ".join(state.element)):
                out += self._flush(state, returns, depth)
            replace = {p: "" for p in record_params}
            replace[record_params[0]] = "records"
        new_call = self._new_call(helper, call, new, kept, replace)
        self.steps.append(Step(fn.line(stmt), f"{helper.name}(...)", new_call))
        replacements: list[tuple[cst.CSTNode, str]] = []
        target = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if isinstance(target, cst.Assign):
            t = target.targets[0].target
            state.batch_element = (
                [self.code(e.value) for e in t.elements]
                if isinstance(t, (cst.Tuple, cst.List))
                else ["*" + self.code(t)]
            )
            replacements.append((t, "dataset"))
        replacements.append((call, new_call))
        out.append(self.text(stmt, depth, replacements))
        return out

    def _prefetched(self, fn: _Function, expr: cst.CSTNode, state: _State) -> bool:
        """Whether `expr` is ``helper(batches, ...).dequeue()`` of a helper returning a queue.

        Such a helper is a prefetch queue filled by its own QueueRunner (the
        Object Detection API's prefetcher); the Dataset's ``prefetch``
        already does its work.
        """
        if not (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "dequeue"
            and isinstance(expr.func.value, cst.Call)
            and isinstance(expr.func.value.func, cst.Name)
        ):
            return False
        inner = expr.func.value
        if not isinstance(inner, cst.Call) or not isinstance(inner.func, cst.Name):
            return False
        helper = self.functions.get(inner.func.value)
        if helper is None or helper.call is None:
            return False
        if self.trace.kind_of(helper.call.returned) != "queue" or not inner.args:
            return False
        first = inner.args[0].value
        if not (
            isinstance(first, cst.Name)
            and first.value in [e.lstrip("*") for e in state.batch_element]
        ):
            return False
        self.steps.append(
            Step(
                fn.line(expr),
                f"{helper.name}(...).dequeue() (a prefetch queue and its QueueRunner)",
                "Dataset.prefetch(AUTOTUNE) where the function returns the Dataset",
            )
        )
        self.dropped.append(
            f"{self.where(helper.first)}: {helper.name}: the queue's fill summary "
            "(a Dataset has no queue to measure)"
        )
        return True

    def _new_call(self, helper: _Function, call: cst.Call, new: str, kept, replace) -> str:
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
        return _call_text(new, pieces)

    def _return(self, fn, stmt, state: _State, depth: int) -> list[str]:
        pad = "    " * depth
        ret = stmt.body[0]
        value = self.code(ret.value) if ret.value is not None else ""
        names = _names(ret)
        if state.batch_element and ret.value is not None and self._prefetched(fn, ret.value, state):
            return [f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n"]
        if state.batch_element:
            element = [e.lstrip("*") for e in state.batch_element]
            if value.replace(" ", "").strip("()[]") == ",".join(element):
                return [f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n"]
            if "record" in {fn.kind(n) for n in names}:
                raise self.fail(fn, stmt, "it returns per-record tensors beside the batches")
            parts = ret.value.elements if isinstance(ret.value, (cst.Tuple, cst.List)) else []
            values = fn.call.local_values if fn.call is not None else {}
            extra = [
                p.value.value
                for p in parts
                if isinstance(p.value, cst.Name)
                and p.value.value in values
                and not isinstance(values[p.value.value], (tf.Tensor, tf.SparseTensor))
                and fn.kind(p.value.value) == "plain"
            ]
            if extra:
                raise self.fail(
                    fn,
                    stmt,
                    f"it returns {', '.join(extra)} beside the batches; a Dataset holds only "
                    "the batches (migrate the function that builds just the pipeline, e.g. "
                    "the helper it calls)",
                )
            params = ", ".join(state.batch_element)
            mapping = f"lambda {params}: ({value})"
            line = f"{pad}dataset = dataset.map({mapping})\n"
            if len(line) > 100:
                line = f"{pad}dataset = dataset.map(\n{pad}    {mapping}\n{pad})\n"
            return [
                line,
                f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n",
            ]
        if fn.role == "batch" or state.element:
            if fn.role == "batch" and not state.pending:
                return [f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n"]
            return self._flush(state, value, depth) + [
                f"{pad}return records.prefetch({chains.AUTOTUNE})\n"
            ]
        return [self.text(stmt, depth)]


def _call_text(name: str, pieces: list[str]) -> str:
    """``name(a, b)``, or one argument per line when that is long (as a formatter would)."""
    flat = f"{name}({', '.join(pieces)})"
    if len(flat) <= 72:
        return flat
    return f"{name}(\n" + "".join(f"    {p},\n" for p in pieces) + ")"


def _tuple_returns(stmt) -> list[tuple[cst.CSTNode, str]]:
    """``return [a, b]`` as ``return a, b``: tf.data would stack a list into one tensor."""
    out: list[tuple[cst.CSTNode, str]] = []
    for ret in m.findall(stmt, m.Return(value=m.List())):
        if not isinstance(ret, cst.Return) or not isinstance(ret.value, cst.List):
            continue
        elements = [cst.Module([]).code_for_node(e.value) for e in ret.value.elements]
        out.append((ret.value, ", ".join(elements) + ("," if len(elements) == 1 else "")))
    return out


def _list_of_reads(stmt) -> cst.ListComp | None:
    """The list comprehension `stmt` assigns, if it is ``x = [helper(...) for ...]``."""
    if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
        value = stmt.body[0].value
        if isinstance(value, cst.ListComp) and isinstance(value.elt, cst.Call):
            return value
    return None


def _tensor_names(fn: _Function) -> set[str]:
    """The locals of `fn`'s run that held a tensor (so ``x[i]`` indexes a tensor, not a list)."""
    values = fn.call.local_values if fn.call is not None else {}
    return {k for k, v in values.items() if isinstance(v, (tf.Tensor, tf.SparseTensor))}


def _fresh(fn: _Function, *candidates: str) -> str:
    """The first of `candidates` that `fn` does not use as a name."""
    used = _names(fn.node)
    for name in candidates:
        if name not in used:
            return name
    return candidates[-1] + "_ds"


def _parse_expression(text: str) -> cst.BaseExpression | None:
    try:
        return cst.parse_expression(text.strip())
    except cst.ParserSyntaxError:
        return None


def _bare(text: str) -> str:
    """`text` without spaces, outer brackets and a trailing comma, for comparing element lists."""
    text = text.replace(" ", "").replace("\n", "")
    if text[:1] in "([" and text[-1:] in ")]":
        text = text[1:-1]
    return text.rstrip(",")


def _string_lines(source: str) -> set[int]:
    """Line numbers that continue a multi-line string (never re-indented)."""
    lines: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                lines.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return lines


def _default(fn: _Function, param: str) -> cst.CSTNode:
    for p in _all_params(fn.node.params):
        if p.name.value == param and p.default is not None:
            return p.default
    raise MigrateError(f"{_API}: {fn.name}'s parameter {param!r} has no value to pass")


def _is_keyword(call: cst.Call, param: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == param for a in call.args)


def _is_shuffled(args) -> bool:
    return args.get("shuffle", "True").strip() == "True"


def _dim(d) -> int | None:
    return getattr(d, "value", d)


_PLAIN_ASSIGN = re.compile(r"^(\s*)([\w, ]+?)\s*=\s*(?!=)(.*)$", re.S)


def _dead_code(lines: list[str]) -> list[str]:
    """Drops assignments without calls whose targets nothing later reads."""
    out = list(lines)
    changed = True
    while changed:
        changed = False
        for i in range(len(out) - 1, -1, -1):
            text = out[i]
            match = _PLAIN_ASSIGN.match(text)
            if match is None or "\n" in text.rstrip("\n") or "(" in match.group(3):
                continue
            targets = [t.strip() for t in match.group(2).split(",") if t.strip()]
            later = "".join(out[i + 1 :])
            if targets and not any(
                re.search(rf"(?<![\w.]){re.escape(t)}(?!\w)", later) for t in targets
            ):
                del out[i]
                changed = True
    return out


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
            f"{_API}: {trace.path} defines no module-level function {trace.function!r}."
        )
    if fn.role != "pipeline":
        raise MigrateError(
            f"{_API}: {trace.function}() takes a queue or per-record tensors; name the function "
            "that builds the whole pipeline."
        )
    name = rw.pipeline(fn)
    _drop_unused_record_helpers(rw)
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
            f"{_API}: the rewritten code does not parse ({e}); please report this."
        ) from e
    return text
