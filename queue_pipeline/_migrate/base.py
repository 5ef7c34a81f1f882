"""What every part of the rewriter shares: the functions of the file, the state of one rewrite.

:class:`Function` is one module-level function with its run's locals and its
role (NOTE [ How a legacy function is rewritten ] in
:mod:`queue_pipeline._migrate.codegen`); :class:`RewriterBase` holds the
parsed module, its positions and the output of one rewrite, and renders the
user's statements at a new indentation with their comments.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import libcst as cst
import libcst.matchers as m
import tensorflow as tf

from queue_pipeline._migrate.syntax import (
    all_params,
    assigned_names,
    bind_arguments,
    element_params,
    callee,
    names_in,
    string_lines,
)
from queue_pipeline._migrate.generated_names import mark
from queue_pipeline._migrate.known_names import BATCHING, PRODUCERS, PROVIDER, READS
from queue_pipeline._migrate import record_objects
from queue_pipeline._migrate.record_draws import bound_at, draw_kind
from queue_pipeline._migrate.trace import MigrateError, Trace, graph_of
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider

__all__ = [
    "BATCHING",
    "PRODUCERS",
    "READER_CLASSES",
    "READS",
    "Function",
    "RewriterBase",
    "State",
    "Step",
    "fresh",
    "is_shuffled",
    "param_default",
    "tensor_names",
]

API = "queue-pipeline migrate"
_QUEUE_WORDS = re.compile(
    r"\b(queue runners?|QueueRunners?|queues?|start_queue_runners|Coordinator|"
    r"filename_queue|shuffle_batch|tf\.train\.batch)\b"
)
# The calls that build or read a function's own queue (NOTE [ Migrating the function's own queue ]).
OWN_QUEUES = ("RandomShuffleQueue", "FIFOQueue", "PaddingFIFOQueue")
OWN_QUEUE_CALLS = OWN_QUEUES + ("dequeue_many", "dequeue_up_to", "dequeue")
READER_CLASSES = (
    "TextLineReader",
    "TFRecordReader",
    "FixedLengthRecordReader",
    "WholeFileReader",
    "IdentityReader",
)
# Every call that builds or reads a stage of a queue pipeline, by its name.
STAGE_CALLS = frozenset(
    PRODUCERS
    + BATCHING
    + READS
    + READER_CLASSES
    + OWN_QUEUE_CALLS
    + ("slice_input_producer", PROVIDER)
)


@dataclasses.dataclass
class Step:
    """One line of the report: a legacy call, what replaced it, and its arguments' fates."""

    line: int
    legacy: str
    replacement: str
    fates: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    # the file of `line` when not the migrated file's (a function of another
    # module: NOTE [ Following a function of another module ])
    file: str = ""


class Function:
    """One module-level function: its CST, its run's locals and its role."""

    def __init__(self, rw: RewriterBase, node: cst.FunctionDef):
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
        self.argument_kinds: dict[str, str] = {}
        if call is not None:
            for var, value in call.local_values.items():
                self.kinds[var] = rw.trace.kind_of(value)
            for var, value in call.arguments.items():
                self.argument_kinds[var] = rw.trace.kind_of(value)
        self.params = [p.name.value for p in all_params(node.params)]
        self._made: dict[str, int] | None = None
        # NOTE [ A record passed as an object ]: parameter -> the attributes it batches
        given = call.arguments if call is not None else {}
        self.record_objects = record_objects.fields(node, given, rw.trace.kind_of)

    def kind(self, name: str) -> str:
        """What `name` held when the function returned (see :meth:`kind_at`)."""
        return self.kinds.get(name, "plain")

    def kind_at(self, name: str, line: int) -> str:
        """What `name` holds at the statement on `line`: NOTE [ A name's kind at each point ].

        NOTE [ A name's kind at each point ]
        The run tells what each local held when the function returned; a name
        can hold a plain value before that (``label = 0`` counting folders,
        then ``image, label = slice_input_producer(...)``; a parameter given a
        Python list, then ``raw_data = tf.convert_to_tensor(raw_data)``). A
        name counts as a queue, reader, record or batch from the first
        statement that assigns it from a legacy call, a helper that builds
        one, or a name that already is one; before that it is what the
        function was called with (a parameter) or plain.
        """
        if self._made is None:
            self._made = self._first_made()
        made = self._made.get(name)
        if made is None or line < made:
            return self.argument_kinds.get(name, "plain") if name in self.params else "plain"
        return self.kind(name)

    def _first_made(self) -> dict[str, int]:
        made: dict[str, int] = {}
        lines = [s for s in m.findall(self.node.body, m.SimpleStatementLine())]
        lines.sort(key=lambda s: self.rw.positions[s].start.line)
        for stmt in lines:
            at = self.rw.positions[stmt].start.line
            targets = assigned_names(stmt)
            if not targets:
                continue
            calls = self.rw.calls_in(stmt)
            builds = any(
                callee(c) in STAGE_CALLS or self.rw.helper_of(c) is not None for c in calls
            )
            reads = names_in(stmt)
            if not builds:
                builds = any(
                    self.kind(n) != "plain"
                    and (
                        (n in made and made[n] < at)
                        or (n in self.params and self.argument_kinds.get(n, "plain") != "plain")
                    )
                    for n in reads
                )
            # NOTE [ A draw that reads no record ]: `do_flip = tf.random_uniform([])`
            if builds or self.draw(stmt)[0] == "record":
                for t in targets:
                    if self.kind(t) != "plain":
                        made.setdefault(t, at)
        return made

    def draw(self, stmt) -> tuple[str, str]:
        """(``record`` / ``batch`` / ``""``, op type): NOTE [ A draw that reads no record ]."""
        values = self.call.local_values if self.call is not None else {}
        trace = self.rw.trace
        pos = self.rw.positions[stmt]
        lines = range(pos.start.line, pos.end.line + 1)
        bound = bound_at(graph_of(trace.outputs), trace.path, self.name, lines)
        return draw_kind(values, assigned_names(stmt), trace.record, trace.batch, bound)

    @property
    def role(self) -> str:
        """``record``, ``batch`` or ``pipeline``, by what the parameters were called with.

        See NOTE [ How a legacy function is rewritten ].
        """
        arguments = self.call.arguments if self.call is not None else {}
        param_kinds = {
            self.argument_kinds.get(p, self.kind(p))
            for p in self.params
            # an object (``self``) holds what the run put in it, not what it was given:
            # NOTE [ A method reading what its constructor built ]
            if not _is_object(arguments.get(p)) or p in self.record_objects
        }
        if "queue" in param_kinds:
            return "record"
        if "record" in param_kinds:
            return "batch"
        return "pipeline"

    @property
    def record_params(self) -> list[str]:
        """The parameters that held per-record tensors when the function was called: a
        batching helper may rebind them with its batch (``text, label =
        tf.train.shuffle_batch([text, label], n)``), records before, batches after."""
        given = self.call.arguments if self.call is not None else {}
        kinds = {p: self.argument_kinds.get(p, self.kind(p)) for p in self.params}
        objects = {p for p in self.params if _is_object(given.get(p))} - set(self.record_objects)
        return [p for p in self.params if kinds[p] == "record" and p not in objects]

    def element_of(self, param: str, passed: str) -> list[str]:
        """What record parameter `param` stands for in a Dataset's element, spelled from
        `passed` (the caller's text for it, or `param`): NOTE [ A record passed as an object ]."""
        if param in self.record_objects:
            return [f"{passed}.{a}" for a in self.record_objects[param]]
        return [passed]

    def line(self, node: cst.CSTNode) -> int:
        return self.rw.positions[node].start.line


@dataclasses.dataclass
class State:
    """Where a pipeline function's Dataset stands while its statements are rewritten."""

    element: list[str] = dataclasses.field(default_factory=list)  # names of one record
    # element names holding a list (``*name`` in a per-record function's parameters)
    starred: set = dataclasses.field(default_factory=set)
    # per-record statements, each with (node, replacement text) pairs
    pending: list[tuple[Any, tuple]] = dataclasses.field(default_factory=list)
    queues: dict[str, str] = dataclasses.field(default_factory=dict)  # queue var -> Dataset var
    readers: dict[str, tuple[str, dict]] = dataclasses.field(default_factory=dict)
    batch_element: list[str] = dataclasses.field(default_factory=list)
    joined: set = dataclasses.field(default_factory=set)  # names of joined reader lists
    # NOTE [ Per-batch code after the batching call ]: its statements, the names they set
    after_batch: list[tuple[Any, tuple]] = dataclasses.field(default_factory=list)
    batch_names: set = dataclasses.field(default_factory=set)
    # NOTE [ Copies of the per-record code for a join ]: list -> (element, copies)
    copies: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    direct: tuple = (None, "")  # (helper statement, helper version to map directly)
    # loaders the function's version returns after its Dataset (``load(sess)``)
    loaders: list[str] = dataclasses.field(default_factory=list)
    # names of ``tf.constant(x)`` whose `x` the variables are fed (their lines go)
    unwrapped: list[str] = dataclasses.field(default_factory=list)
    # NOTE [ Migrating the function's own queue ]: queue var -> (class, its arguments)
    # own queues made before any record: their shuffle is written at the enqueue
    deferred: set = dataclasses.field(default_factory=set)
    own_queues: dict[str, tuple[str, dict]] = dataclasses.field(default_factory=dict)
    # queue var -> (the enqueued values' text, enqueue_many)
    enqueued: dict[str, tuple[str, bool]] = dataclasses.field(default_factory=dict)
    # FIFO queues whose records pass on to the dequeue unmapped: queue var -> values
    # (NOTE [ A FIFO queue read one record at a time ], in own_queues.py)
    passed_on: dict[str, str] = dataclasses.field(default_factory=dict)
    # inside a loop of N readers filling an own queue: N (as written); else ""
    parallel_readers: str = ""
    # NOTE [ Records read in lockstep ]: the file-name Datasets the record's reads read,
    # the readers they read with, and those of producers that shuffle
    read_from: list[str] = dataclasses.field(default_factory=list)
    read_by: set = dataclasses.field(default_factory=set)
    shuffled: set = dataclasses.field(default_factory=set)
    # tf-slim providers built: name -> (dataset text, record_key text) (data_providers.py)
    providers: dict = dataclasses.field(default_factory=dict)
    # a shuffled one -> (its op seed, rows, epochs) as run, when the seed is given
    shuffled_alike: dict[str, tuple | None] = dataclasses.field(default_factory=dict)
    fn: Any = None  # the Function rewritten (its statements read after the map)
    # a batching helper's records mapped (its Dataset is ``records`` from then on)
    mapped: bool = False


def _is_object(value: Any) -> bool:
    """Whether `value` is an instance of a user's class (not a tensor, reader or container)."""
    if value is None or isinstance(value, (tf.Tensor, tf.SparseTensor, list, tuple, dict, type)):
        return False
    if any(hasattr(type(value), a) for a in ("queue_ref", "reader_ref")):
        return False
    return isinstance(getattr(value, "__dict__", None), dict)


def tensor_names(fn: Function) -> set[str]:
    """The locals of `fn`'s run that held a tensor (so ``x[i]`` indexes a tensor, not a list)."""
    values = fn.call.local_values if fn.call is not None else {}
    return {k for k, v in values.items() if isinstance(v, (tf.Tensor, tf.SparseTensor))}


def batch_params(fn: Function, target: str) -> list[str]:
    """The parameters naming a Dataset element that `fn` assigned to one name, `target`.

    ``batch = tf.train.batch([x], n)`` holds a tensor (TF returns a list of one
    as its tensor): one parameter; a list of several is ``*batch``; a dict (the
    batch of a dict of tensors) is one parameter too: a Dataset of dicts hands
    its map function one dict.
    """
    values = fn.call.local_values if fn.call is not None else {}
    if isinstance(values.get(target), (tf.Tensor, tf.SparseTensor, dict)):
        return [target]
    return ["*" + target]


def fresh(fn: Function, *candidates: str) -> str:
    """The first of `candidates` that `fn` does not use as a name."""
    used = names_in(fn.node)
    for name in candidates:
        if name not in used:
            return name
    return candidates[-1] + "_ds"


def param_default(fn: Function, param: str) -> cst.CSTNode:
    for p in all_params(fn.node.params):
        if p.name.value == param and p.default is not None:
            return p.default
    raise MigrateError(f"{API}: {fn.name}'s parameter {param!r} has no value to pass")


def static_dim(d) -> int | None:
    return getattr(d, "value", d)


def is_shuffled(args) -> bool:
    return args.get("shuffle", "True").strip() == "True"


def untabbed(line: str, column: int) -> str:
    """`line` without the first `column` characters of its indentation, its other
    leading tabs as four spaces each (a file indented with tabs: the new code uses spaces)."""
    indent = len(line) - len(line.lstrip(" \t"))
    rest = line[min(indent, column) :]
    tabs = len(rest) - len(rest.lstrip("\t"))
    return "    " * tabs + rest[tabs:]


class RewriterBase:
    """The parsed module, its positions and what one rewrite produced so far."""

    def __init__(self, trace: Trace, source: str, batch_decode: bool = False):
        self.trace = trace
        self.batch_decode = batch_decode
        self.batched: list[str] = []  # functions that decode whole batches
        try:
            self.module = cst.parse_module(source)
        except cst.ParserSyntaxError as e:
            raise MigrateError(f"{API}: {trace.path}: the file does not parse: {e}") from e
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.positions = wrapper.resolve(PositionProvider)
        self.spans = wrapper.resolve(WhitespaceInclusivePositionProvider)
        self.lines = source.splitlines(keepends=True)
        self.in_string = string_lines(source)
        self.functions = {
            f.name.value: Function(self, f)
            for f in self.module.body
            if isinstance(f, cst.FunctionDef)
        }
        self.generated: dict[str, str] = {}  # original function -> code of its versions
        self.steps: list[Step] = []
        self.dropped: list[str] = []
        self.differences: list[str] = []
        self.reader_sites = {line for frames in trace.reader_sites.values() for _, line in frames}
        self.record_helpers: dict[str, tuple[str, str, str, list[str], str]] = {}
        # record helper name -> (the key's name, the reader's (kind, args)) when it reads the key
        self.record_keys: dict[str, tuple[str, tuple[str, dict]]] = {}
        # NOTE [ Records read in lockstep ]: reading helper -> per read, (its queue
        # parameter, its reader's Dataset function, its value's name)
        self.record_lockstep: dict[str, list[tuple[str, str, str]]] = {}
        # record helper name -> (kind, arguments, line) of the batching call it
        # ends with (NOTE [ A reading helper that batches ])
        self.record_batching: dict[str, tuple[str, dict[str, str], int]] = {}
        # NOTE [ A reading helper that batches two ways ]: helper -> (its test, each
        # branch's (kind, arguments, line))
        self.record_branches: dict[str, tuple[str, list[tuple[str, dict[str, str], int]]]] = {}
        # lists of copies for a join (NOTE [ Copies of the per-record code for a join ])
        self.copy_lists: set[str] = set()
        self.kept_params: dict[str, list[str]] = {}
        self.batch_helpers: dict[str, str] = {}  # <name>_record -> <name>_batch
        self._pending_batch_code: dict[str, tuple[str, str]] = {}  # written when used
        self.preloaded = ""  # the name of the preloaded-variables helper, once one is used
        self.loaders: dict[str, list[str]] = {}  # pipeline version -> the loaders it returns
        self.user_names: frozenset[str] = frozenset()  # NOTE [ Names the written code binds ]

    def preloaded_helper(self) -> str:
        """The name of the module helper that holds arrays in variables (written once).

        NOTE [ Preloaded arrays in a migrated TF1-mode program ].
        """
        if not self.preloaded:
            taken = {n for n in vars(self.trace.module)} | set(self.functions)
            self.preloaded = next(
                n
                for n in ("_in_variables", "_arrays_in_variables", "_preloaded_in_variables")
                + tuple(f"_in_variables_{i}" for i in range(2, 100))
                if n not in taken
            )
        return self.preloaded

    # ------------------------------------------------------------------ helpers

    def where(self, line: int) -> str:
        return f"{self.trace.path}:{line}"

    def fail(self, fn: Function, node: cst.CSTNode, why: str) -> MigrateError:
        return MigrateError(
            f"{API}: {self.where(fn.line(node))}: cannot migrate "
            f"`{self.code(_bare_statement(node)).strip().splitlines()[0]}`: {why.rstrip('.')}."
        )

    def code(self, node: cst.CSTNode) -> str:
        return mark(self.module.code_for_node(node), self.user_names)

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
        chunk = mark("".join(self.lines[first - 1 : end]), self.user_names)
        for node, new in replace:
            old = mark(self.raw(node), self.user_names)
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
            out.append("    " * depth + untabbed(line, column))
        return "".join(out)

    def bound(self, api: Any, call: cst.Call, *, skip_self: bool = False) -> dict[str, str]:
        """`call`'s arguments' source text by `api`'s parameter names, as the written code
        copies them (the user's names kept apart: NOTE [ Names the written code binds ])."""
        bound = bind_arguments(api, call, self.module, skip_self)
        return {p: mark(text, self.user_names) for p, text in bound.items()}

    def _extra_args(self, helper: Function, call: cst.Call, extra: list[str]) -> list[str]:
        """What `call` passes to each of `helper`'s `extra` parameters (or its default)."""
        bound = self.bound(helper.call and getattr(self.trace.module, helper.name), call)
        return [bound[p] if p in bound else self.code(param_default(helper, p)) for p in extra]

    def helper_of(self, call: cst.Call) -> Function | None:
        name = callee(call) if isinstance(call.func, cst.Name) else ""
        fn = self.functions.get(name)
        if fn is not None and fn.call is not None and self._builds(fn):
            return fn
        return None

    def _builds(self, fn: Function) -> bool:
        """Whether a legacy call was made inside `fn` (directly or through its helpers)."""
        frames = [f for fs in self.trace.sites.values() for f in fs]
        frames += [f for fs in self.trace.reader_sites.values() for f in fs]
        frames += self.trace.queue_sites  # NOTE [ Migrating the function's own queue ]
        return any(name == fn.name and fn.first <= line <= fn.last for name, line in frames)

    def flag_queue_docstring(self, fn: Function, stmt: cst.CSTNode) -> None:
        """Reports a docstring kept in `fn`'s tf.data version that still speaks of queues."""
        words = _QUEUE_WORDS.findall(self.code(stmt))
        if words:
            self.differences.append(
                f"{self.where(fn.line(stmt))}: the docstring of {fn.name}, kept in its tf.data "
                f"version, speaks of {', '.join(sorted(set(words)))}: update it to say a "
                "tf.data.Dataset is returned"
            )

    def calls_in(self, node: cst.CSTNode) -> list[cst.Call]:
        return [c for c in m.findall(node, m.Call()) if isinstance(c, cst.Call)]


def _bare_statement(node: cst.CSTNode) -> cst.CSTNode:
    """`node` without the comments and blank lines above it (a refusal quotes the statement)."""
    if getattr(node, "leading_lines", None):
        return node.with_changes(leading_lines=[])
    return node


def starred_params(element: list[str], starred: set) -> tuple[str, list[str]]:
    """A per-record function's parameters for `element` and the lines that bind its
    names: a name the run left holding a list (`starred`) takes its values as a list
    (``*name``, then ``name = list(name)``; before other names, through ``*values``)."""
    lists = [i for i, e in enumerate(element) if e in starred]
    if not lists:  # NOTE [ Unpacking targets as parameters ]
        params, lines = element_params(element)
        return ", ".join(params), lines
    first = lists[0]
    if first == len(element) - 1:
        name = element[first]
        return ", ".join([*element[:first], f"*{name}"]), [f"{name} = list({name})"]
    after = len(element) - first - 1  # names after the list: one value each
    lines = [f"{e} = values[{k}]" for k, e in enumerate(element[:first])]
    lines.append(f"{element[first]} = list(values[{first}:-{after}])")
    lines += [f"{e} = values[{k - after}]" for k, e in enumerate(element[first + 1 :])]
    return "*values", lines
