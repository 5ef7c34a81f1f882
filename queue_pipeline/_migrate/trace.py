"""Running a legacy input function once, to learn what each of its lines built.

``queue-pipeline migrate`` rewrites source code, but it does not guess from
names what a call does: the user may spell ``tf.train.shuffle_batch`` as
``train.shuffle_batch`` through a table of modules, wrap the reader in a
helper or build the batch in another function. :func:`trace` runs the
function once in a fresh graph, under :func:`queue_pipeline.install` (so
TensorFlow's own legacy names build queue_pipeline's recorded stages), and
keeps what the source rewriter needs:

* the plan of every producer, reader and batching call the outputs depend
  on, each with the chain of the user's source lines that made it (from the
  creation traceback of its ops, outermost frame first);
* the locals and the return value of every call of a function of the file
  (a profile hook for the duration of the call), so that each variable is
  known to hold a queue, a reader, a per-record tensor (between a reader or
  ``slice_input_producer`` and a batching call), a batch or a plain value.

Nothing of the user's graph is kept running: no session is created.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import types
from typing import Any, Callable, Iterator, Sequence

import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._core import graph as graph_facts
from queue_pipeline._migrate import loading
from queue_pipeline._migrate.arguments import (
    GraphCall,
    call_arguments,
    has,
    parse_call,
    spell,
)
from queue_pipeline._migrate.constant_queues import constant_filled, drawn_queue, filled_by_hand
from queue_pipeline._migrate.failure_hints import called, failed_call, failure_fix
from queue_pipeline._migrate.loading import MigrateError, NoPipelineError
from queue_pipeline._migrate.python_filled_queues import (
    fed_from_python,
    fed_queue_read,
    made_at,
    python_filled_queue,
)
from queue_pipeline._migrate.returned_builders import returned_builder
from queue_pipeline._rebuild import graph_model
from queue_pipeline._rebuild.walk import Walker
from queue_pipeline.errors import NotRebuildableError

__all__ = [
    "Call",
    "GraphCall",
    "MigrateError",
    "Trace",
    "call_arguments",
    "load_module",
    "parse_call",
    "trace",
]


_API = "queue-pipeline migrate"
_READ_SUFFIXES = (".read", ".read_up_to")
PRODUCERS = plan.PRODUCER_KINDS


@dataclasses.dataclass
class Call:
    """One finished call of a function of the file: its arguments, locals and what it returned."""

    name: str
    first_line: int
    local_values: dict[str, Any]
    returned: Any
    arguments: dict[str, Any] = dataclasses.field(default_factory=dict)  # as called


@dataclasses.dataclass
class Trace:
    """What one run of the function built.

    Attributes:
      path: the real path of the source file.
      module: the imported module.
      function: the function's name.
      outputs: what the function returned.
      nodes: the plan nodes the call recorded, in order.
      sites: plan node index -> the (function name, line) frames of the file
        that built it, outermost first.
      reader_sites: plan node index of a read -> the frames that created its
        reader.
      calls: (function name, first line) -> its last finished call.
      record: names of the per-record tensors (sources included).
      batch: names of the batch tensors and of what was computed from them.
      queue_sites: the frames that built the function's own queues, their
        enqueues and dequeues (NOTE [ Migrating the function's own queue ]).
      array_queues: the names of the queue ops runners fill from arrays the graph
        holds (NOTE [ A queue filled from arrays in memory ]).
    """

    path: str
    module: types.ModuleType
    function: str
    outputs: Any
    nodes: tuple[plan.PlanNode, ...]
    sites: dict[int, tuple[tuple[str, int], ...]]
    reader_sites: dict[int, tuple[tuple[str, int], ...]]
    calls: dict[tuple[str, int], Call]
    record: set[str]
    batch: set[str]
    queue_sites: tuple[tuple[str, int], ...] = ()
    array_queues: frozenset[str] = frozenset()

    def kind_of(self, value: Any) -> str:
        """``queue``, ``reader``, ``record``, ``batch`` or ``plain`` for a value of the run."""
        seen: set[int] = set()
        return _kind(self, value, seen)


def loader_count(outputs: Any) -> int:
    """How many plain callables end a function's `outputs` (``batches..., load``).

    The preloaded-variable program returns ``images, labels, load``: its
    ``load(sess)`` feeds the arrays to the variables the pipeline reads, after
    the variable initializers. 0 when `outputs` is not a tuple or list that
    ends in callables after at least one other value.
    """
    if not isinstance(outputs, (tuple, list)):
        return 0
    count = 0
    for value in reversed(outputs):
        if not callable(value) or isinstance(value, (tf.Tensor, tf.data.Dataset)):
            break
        count += 1
    return count if count < len(outputs) else 0


def _kind(t: Trace, value: Any, seen: set[int]) -> str:
    if id(value) in seen:
        return "plain"
    seen.add(id(value))
    if isinstance(value, (type, types.ModuleType)) or callable(value):
        return "plain"
    if has(value, "queue_ref"):
        return "queue"
    if has(value, "reader_ref"):
        return "reader"
    if isinstance(value, (tf.Tensor, tf.SparseTensor)):
        names = {c.name for c in graph_facts.components(value)}
        if names & t.record:
            return "record"
        if names & t.batch:
            return "batch"
        return "plain"
    if isinstance(value, (list, tuple)):
        parts = list(value)
    elif isinstance(value, dict):
        parts = list(value.values())
    elif has(value, "__dict__") and isinstance(getattr(value, "__dict__", None), dict):
        parts = list(vars(value).values())
    else:
        return "plain"
    kinds = {_kind(t, p, seen) for p in parts}
    for k in ("queue", "reader", "record", "batch"):
        if k in kinds:
            return k
    return "plain"


def load_module(
    path: str, function: str | None = None, argv: Sequence[str] = (), call: str | None = None
) -> tuple[types.ModuleType, str]:
    """Loads what `function` needs of the file at `path`; returns the module and its name.

    The file is never imported: NOTE [ What migrate runs of the user's file ]
    in :mod:`queue_pipeline._migrate.loading` (the skipped statements are the
    module's ``__qp_skipped__``). `argv` is the program's own command line;
    the names `call` (``--call``) reads are needed too.

    Raises:
      MigrateError: no such file, or the file does not parse, or a statement
        the function needs fails.
    """
    real, source = read_source(path)
    loaded = loading.load(real, source, function, argv, also=loading.names_read(call))
    loaded.module.__dict__["__qp_skipped__"] = loaded.skipped_lines(real)
    return loaded.module, loaded.name


def read_source(path: str) -> tuple[str, str]:
    """The real path of a Python file and its text, checked to parse (nothing is run).

    Raises:
      MigrateError: no such file, or the file does not parse.
    """
    real = os.path.realpath(path)
    if not os.path.isfile(real):
        raise MigrateError(f"{_API}: `FILE` {real!r} does not exist. Fix: give a Python file.")
    with open(real, encoding="utf-8") as f:
        source = f.read()
    try:
        compile(source, real, "exec")
    except SyntaxError as e:
        raise MigrateError(
            f"{_API}: {real}:{e.lineno}: the file does not parse ({e.msg}). Fix: give a "
            "Python file that runs."
        ) from e
    return real, source


def graph_of(outputs: Any) -> tf.Graph:
    """The graph of the first tensor in `outputs` (a new, empty graph if none)."""
    leaves = [t for t in tf.nest.flatten(outputs, expand_composites=True) if has(t, "graph")]
    return leaves[0].graph if leaves else tf.Graph()


@contextlib.contextmanager
def _recording(path: str, calls: dict) -> Iterator[None]:
    entries: dict[int, dict[str, Any]] = {}  # frame id -> its arguments as called

    def profile(frame, event, arg):
        if frame.f_code.co_filename != path:
            return
        if event == "call":
            entries[id(frame)] = dict(frame.f_locals)
        elif event == "return":
            code = frame.f_code
            calls[(code.co_name, code.co_firstlineno)] = Call(
                code.co_name,
                code.co_firstlineno,
                dict(frame.f_locals),
                arg,
                entries.pop(id(frame), {}),
            )

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


def _first_op(node: plan.PlanNode) -> tf.Operation | None:
    for out in node.outputs:
        op = graph_facts.queue_op(out) if has(out, "queue_ref") else getattr(out, "op", None)
        if op is not None:
            return op
    return None


def _frames(op: tf.Operation | None, path: str) -> tuple[tuple[str, int], ...]:
    if op is None:
        return ()
    return tuple((f.name, f.lineno) for f in op.traceback if os.path.realpath(f.filename) == path)


def trace(
    path: str,
    function: str,
    args: tuple = (),
    kwargs: dict | None = None,
    *,
    module: types.ModuleType | None = None,
    argv: Sequence[str] = (),
    graph_call: GraphCall | None = None,
) -> Trace:
    """Runs ``function(*args, **kwargs)`` of the file at `path` once and records what it built.

    Args:
      module: the file as :func:`load_module` loaded it (else it is loaded
        here with `argv`); the call runs with ``sys.argv`` the program's own.
      graph_call: arguments made in the trace's graph instead of `args`,
        `kwargs` (see :class:`GraphCall`).

    Raises:
      MigrateError: the function does not exist, fails, or builds no queue
        pipeline.
    """
    from queue_pipeline._scripts.install import install  # noqa: PLC0415 - no cycle at import

    if module is None:
        module, _ = load_module(path, function, argv)
    real = os.path.realpath(module.__dict__.get("__qp_code_path__") or module.__file__ or path)
    fn: Callable | None = getattr(module, function, None)
    if not callable(fn):
        raise MigrateError(
            f"{_API}: {real} has no function {function!r}. Fix: name a function of the "
            "file (FILE.py:FUNCTION)."
        )
    calls: dict[tuple[str, int], Call] = {}
    graph = tf.Graph()
    try:
        with (
            graph.as_default(),
            install(),
            _recording(real, calls),
            loading.own_argv(module.__file__ or real, argv),
        ):
            if graph_call is not None:
                args, kwargs = graph_call.arguments()
            outputs = fn(*args, **(kwargs or {}))
    except MigrateError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's function failed
        # NOTE [ A function that fails under its arguments ]
        usual = failure_fix(fn, args, kwargs, e, real)
        raise failed_call(called(function, spell(args, kwargs)), e, real, usual) from e
    # The graph is fresh: everything recorded on it is this call's pipeline,
    # including the stages behind a queue no builder recorded (a prefetch).
    # Stages TF built (a reader class passed in, a name bound before install())
    # are read from the graph: NOTE [ Stages read from the graph ].
    nodes: tuple[plan.PlanNode, ...] = ()
    if outputs is not None:
        recorded = plan.plan_nodes(graph)
        read = graph_model.graph_nodes(graph, recorded)
        nodes = recorded + tuple(n for n in read if not filled_by_hand(n))
    if not nodes and outputs is None and plan.plan_nodes(graph):
        raise MigrateError(
            f"{_API}: {function}() in {real} builds a queue pipeline but returns nothing "
            "(None): migrate rewrites a function that returns the pipeline's tensors. Fix: "
            "return them (e.g. `return images, labels`), or migrate the function that "
            "runs the session on them."
        )
    # NOTE [ A queue filled from arrays in memory ]: a source of its own (not a producer's)
    arrays = constant_filled(graph, _producer_queues(nodes)) if outputs is not None else {}
    if not nodes and not arrays:
        fed = fed_from_python(outputs)
        if fed is not None:  # NOTE [ A queue the program feeds from Python ]
            frames = _frames(fed, real)
            where = f"{real}:{frames[-1][1]}" if frames else real
            raise MigrateError(
                f"{_API}: {where}: {function}() dequeues from a queue the program fills "
                f"from Python (`{fed.name}`: an enqueue of placeholders, run with feed_dict "
                "by a thread of the program), so no graph stage reads its data. Fix: write "
                "the thread's loop as a generator for tf.data.Dataset.from_generator (then "
                ".padded_batch), or migrate a function that reads its files with a reader."
            )
        filled = python_filled_queue(graph, real, f"{function}()")
        if filled:  # NOTE [ A queue filled from Python state ]
            raise MigrateError(filled)
        if drawn := drawn_queue(graph, real, f"{function}()"):  # a random draw: constant_queues
            raise MigrateError(drawn)
        # NOTE [ A factory of input functions ]
        factory = returned_builder(function, outputs, real, f"{function}({spell(args, kwargs)})")
        if factory is not None:
            raise factory
        raise NoPipelineError(
            f"{_API}: {function}() in {real} builds no queue pipeline (nothing it returns "
            "comes from a producer, reader or batching call). Fix: name the function that "
            "returns the pipeline's tensors.",
            function,
        )
    sites = {n.index: _frames(_first_op(n), real) for n in nodes}
    reader_sites = {}
    for n in nodes:
        if n.kind.endswith(_READ_SUFFIXES):
            read_op = _first_op(n)
            if read_op is not None and read_op.inputs:
                reader_sites[n.index] = _frames(read_op.inputs[0].op, real)
    # NOTE [ A queue the program feeds from Python ]: refused at the read, before
    # the stages behind it are looked at (a placeholder there is the same cause)
    fed_read = fed_queue_read(
        [op for n in nodes if n.kind.endswith(_READ_SUFFIXES) for op in [_first_op(n)] if op],
        _producer_queues(nodes),
        real,
    )
    if fed_read:
        raise MigrateError(fed_read)
    own = _own_queues(graph, nodes)
    # the ops on a queue's arrays run on the whole arrays: plain values, not records
    record, batch = _classify(nodes, outputs, real, own, set(arrays))
    queue_sites = tuple(
        frame
        for queue_op, enqueues in own.items()
        for op in [queue_op, *enqueues, *_dequeues(queue_op)]
        for frame in _frames(op, real)
    )
    return Trace(
        real, module, function, outputs, nodes, sites, reader_sites, calls, record, batch,
        queue_sites, frozenset(q.name for q in arrays),
    )  # fmt: skip


def _own_queues(graph: tf.Graph, nodes) -> dict:
    """The queues runners fill with records that no stage built (the function's own).

    Returns queue op -> its enqueue ops. A queue of whole batches (a prefetch
    queue after a batching call) is not one: it keeps its own rules.
    """
    batches = {
        t.name
        for n in nodes
        if n.kind in plan.BATCHING_KINDS
        for out in n.outputs
        for t in _components(out)
    }
    builders = _producer_queues(nodes)
    own: dict[tf.Operation, list[tf.Operation]] = {}
    for qr in graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS):
        queue_op = graph_facts.queue_op(getattr(qr, "queue", None))
        if queue_op is None or queue_op.name in builders:
            continue
        enqueues = graph_facts.enqueue_ops([qr])
        if _reads_batches(enqueues, batches):
            continue
        ops = own.setdefault(queue_op, [])
        ops += [op for op in enqueues if all(op is not o for o in ops)]
    return own


def _producer_queues(nodes) -> set[str | None]:
    """The names of the queues the recorded stages build or fill."""
    builders = {graph_facts.queue_op_name(n.fills) for n in nodes}
    return builders | {
        op.name
        for n in nodes
        for out in n.outputs
        if has(out, "queue_ref") and (op := graph_facts.queue_op(out)) is not None
    }


def _reads_batches(enqueues: list, batches: set) -> bool:
    """Whether the values `enqueues` enqueue are computed from batching calls' batches."""
    stack = [t for e in enqueues for t in e.inputs[1:]]
    seen: set[str] = set()
    while stack and len(seen) < graph_facts.MAX_WALK_OPS:
        t = stack.pop()
        if t.name in batches:
            return True
        if t.name in seen or t.op.type in graph_facts.DEQUEUE_OPS:
            continue
        seen.add(t.name)
        stack.extend(t.op.inputs)
    return False


def _dequeues(queue_op: tf.Operation) -> list[tf.Operation]:
    return [c for t in queue_op.outputs for c in t.consumers() if c.type in graph_facts.DEQUEUE_OPS]


def _classify(nodes, outputs, real: str, own=None, arrays=()) -> tuple[set[str], set[str]]:
    """The names of the per-record tensors and of the batch tensors; see the module doc.

    `own`: the function's own queues -> their enqueue ops; what they enqueue
    is per record, what ``dequeue_many`` / ``dequeue_up_to`` hand out a batch;
    the ops on the arrays of `arrays` (queues filled from arrays in memory) run
    on the whole arrays: they are plain values, not records.
    An op no Dataset can hold is refused at the user's line (`real`'s) that built it.
    """
    own = own or {}
    stage_outputs: set[str] = set()
    for n in nodes:
        if n.kind.endswith(_READ_SUFFIXES) or n.kind == "slice_input_producer":
            for out in n.outputs:
                stage_outputs.update(c.name for c in graph_facts.components(out))
    batching = [n for n in nodes if n.kind in plan.BATCHING_KINDS]
    frontier = [t for n in batching for out in n.outputs for t in _components(out)]
    # rows a producer's queue hands out n at a time (``names = queue.dequeue_many(n)``)
    producers = [graph_facts.queue_op(n.outputs[0]) for n in nodes if n.kind in PRODUCERS]
    frontier += [
        t
        for queue_op in [*own, *(q for q in producers if q is not None)]
        for d in _dequeues(queue_op)
        if d.type in graph_facts.BATCHED_DEQUEUE_OPS
        for t in d.outputs
    ]
    batch = {t.name for t in graph_facts.walk_forward(frontier)}
    if batching:
        sinks = [c for n in batching for x in n.inputs for c in _components(x)]
    else:
        sinks = [
            c
            for x in tf.nest.flatten(outputs, expand_composites=False)
            for c in _components(x)
            if c.name not in batch  # computed from an own queue's dequeue_many
        ]
    walker = Walker(
        _API,
        lambda t: t.name in stage_outputs or t.op.type in graph_facts.DEQUEUE_OPS,
        follow_control=False,
        py_funcs=True,  # a py_func stage is per-record code like any other (written as it is)
    )
    sinks += [t for q, es in own.items() if q not in arrays for e in es for t in e.inputs[1:]]
    try:
        walker.walk(sinks)
    except NotRebuildableError as e:
        op = _op_named(sinks, e.op_name)
        at = f"{_API}: {made_at(op, real)}:" if op is not None else f"{_API}:"
        raise MigrateError(str(e).replace("queue-pipeline migrate:", at, 1)) from e
    record = set(stage_outputs) | set(walker.aliases)
    for op in walker.ops.values():
        record.update(t.name for t in op.outputs)
    return record, batch


def _op_named(tensors: list, name: str | None) -> tf.Operation | None:
    """The op called `name` in the graph of `tensors`, or None."""
    if not tensors or name is None:
        return None
    try:
        return tensors[0].graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return None


def _components(x) -> list[tf.Tensor]:
    if isinstance(x, (tf.Tensor, tf.SparseTensor)):
        return graph_facts.components(x)
    return []
