"""The session code that calls a migrated function: the smallest change that keeps its loop.

NOTE [ Rewriting the callers of a migrated function ]
A session script calls the input function and runs the classic loop::

    images, labels = inputs(train_file, batch_size, num_epochs)
    ...
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess=sess, coord=coord)
    try:
        while not coord.should_stop():
            sess.run(train_op)
    except tf.errors.OutOfRangeError:
        print("Done")
    finally:
        coord.request_stop()
    coord.join(threads)

With ``callers=True`` each function of the file that calls the migrated
function keeps its loop and changes in as few places as possible: the call
becomes ``dataset = inputs_dataset(...)`` and
``tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()`` (the same
tensors, fed by tf.data; the end of the input is still ``OutOfRangeError``),
and, when no other queue pipeline remains in that
function, the Coordinator and ``start_queue_runners`` lines go:
``coord.join(...)`` is removed, ``while not coord.should_stop():`` becomes
``while True:``, a ``coord.request_stop()`` inside the loop becomes ``break``
(the loop's own way to stop early) and one elsewhere (``finally:``) is
removed, with the ``finally`` clause if nothing else is left in it. A
function where another queue pipeline remains keeps its Coordinator.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.base import BATCHING, PRODUCERS, READER_CLASSES
from queue_pipeline._migrate.syntax import callee, without_empty_finally, without_stop_test

__all__ = ["drop_queue_runners", "rewrite_callers"]

# What builds a queue: a function of the file that calls one of these still
# has a queue pipeline, so its Coordinator stays.
_QUEUE_NAMES = frozenset(
    PRODUCERS
    + BATCHING
    + READER_CLASSES
    + ("slice_input_producer", "QueueRunner", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue")
)


def _method_of(node: cst.CSTNode, names: set[str], method: str) -> bool:
    """Whether `node` is ``<one of names>.<method>(...)``."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value == method
        and isinstance(node.func.value, cst.Name)
        and node.func.value.value in names
    )


class _Caller(cst.CSTTransformer):
    def __init__(
        self, function: str, new: str, loaders: int = 0, added: int = 0, beside: int | str = 0
    ):
        self.function, self.new, self.loaders = function, new, loaders
        # Nones (no labels) after the batches that the new function leaves out
        self.absent = 0  # NOTE [ No labels: a None beside the batches ]
        # the plain values the function returns beside its batches: how many
        # follow them in a tuple, or the name of the namedtuple (or "dict")
        # holding them (NOTE [ A namedtuple with plain values beside the batches ])
        self.beside = beside
        self.plain = "plain"  # the caller's name for the dict of plain fields
        # loaders the new function returns that the legacy one did not: the
        # caller gets them with the Dataset and runs them where its runners started
        self.added = added
        self.loads: list[str] = []  # the names the caller gives the added loaders
        self.placed = False  # whether the loads went where start_queue_runners was
        self.iterator = "iterator"  # the initializable iterator, for a function with loaders
        self.loader_names: set[str] = set()
        self.unsupported = ""  # why this caller cannot be rewritten, if it cannot
        self.coords: set[str] = set()
        self.threads: set[str] = set()
        self.loops = 0
        self.replaced = 0
        self.removed: list[str] = []
        self.removed_nodes: list[cst.CSTNode] = []  # the statements removed
        self.initializer = ""  # an iterator's initializer to run in place of the runners
        self.keep_queues = False
        self.datasets: list[cst.Call] = []  # f_dataset(...) calls to assign first
        self.name = "dataset"

    # the call itself: `dataset = f_dataset(...)`, then the iterator's tensors
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if isinstance(updated.func, cst.Name) and updated.func.value == self.function:
            self.replaced += 1
            self.datasets.append(updated.with_changes(func=cst.Name(self.new)))
            if self.loaders or self.added:
                return cst.parse_expression(f"{self.iterator}.get_next()")
            batches = f"tf.compat.v1.data.make_one_shot_iterator({self.name}).get_next()"
            if isinstance(self.beside, str):  # the structure again, from both parts
                kind = self.beside
                both = f"**{batches}, **{self.plain}"
                return cst.parse_expression(f"{{{both}}}" if kind == "dict" else f"{kind}({both})")
            return cst.parse_expression(batches)
        return updated

    def _with_loaders(self, updated: cst.SimpleStatementLine) -> list[cst.BaseStatement]:
        """``a, b, load = f(...)`` as the Dataset, its loaders and an initializable iterator.

        ``dataset, load = f_dataset(...)``, ``iterator =
        make_initializable_iterator(dataset)``, ``a, b = iterator.get_next()``;
        each later ``load(sess)`` is followed by ``sess.run(iterator.initializer)``.
        """
        small = updated.body[0]
        target = small.targets[0].target if isinstance(small, cst.Assign) else None
        count = self.loaders or int(self.beside) or self.absent
        what = f"{count} loader(s)" if self.loaders else f"{count} plain value(s)"
        if (
            len(self.datasets) != 1
            or not isinstance(target, (cst.Tuple, cst.List))
            or len(target.elements) <= count
            or not all(isinstance(e.value, cst.Name) for e in target.elements[-count:])
        ):
            self.unsupported = (
                f"{self.function}(...) returns its batches and {what}: unpack them in one "
                "assignment (`images, labels, extra = ...`) to have it rewritten"
            )
            return [updated]
        assert isinstance(small, cst.Assign) and isinstance(target, (cst.Tuple, cst.List))
        names = [e.value for e in target.elements[-count:]]
        if self.loaders:
            self.loader_names |= {n.value for n in names if isinstance(n, cst.Name)}
        kept = target.elements[:-count]
        code = cst.Module([]).code_for_node
        batches = ", ".join(code(e.value) for e in kept)
        extra = ", ".join(code(n) for n in names)
        if self.absent:  # no labels: the Dataset alone, then None for each
            call = cst.Module([]).code_for_node(self.datasets.pop())
            lines = [
                f"{self.name} = {call}",
                f"{batches} = tf.compat.v1.data.make_one_shot_iterator({self.name}).get_next()",
                *(f"{code(n)} = None" for n in names),
            ]
            first, *rest = [cst.parse_statement(line + "\n") for line in lines]
            return [first.with_changes(leading_lines=updated.leading_lines), *rest]
        if not self.loaders:  # plain values: nothing to initialize
            return [
                *self._dataset_and(extra, updated.leading_lines),
                cst.parse_statement(
                    f"{batches} = tf.compat.v1.data.make_one_shot_iterator({self.name})"
                    ".get_next()\n"
                ),
            ]
        return [
            *self._dataset_and_iterator(extra, updated.leading_lines),
            cst.parse_statement(f"{batches} = {self.iterator}.get_next()\n"),
        ]

    def _dataset_and(self, extra: str, leading_lines) -> list[cst.BaseStatement]:
        """``dataset, <extra> = f_dataset(...)``."""
        call = cst.Module([]).code_for_node(self.datasets[0])
        self.datasets = []
        return [
            cst.parse_statement(f"{self.name}, {extra} = {call}\n").with_changes(
                leading_lines=leading_lines
            )
        ]

    def _dataset_and_iterator(self, loaders: str, leading_lines) -> list[cst.BaseStatement]:
        """``dataset, <loaders> = f_dataset(...)``, then its initializable iterator."""
        return [
            *self._dataset_and(loaders, leading_lines),
            cst.parse_statement(
                f"{self.iterator} = tf.compat.v1.data.make_initializable_iterator({self.name})\n"
            ),
        ]

    def _after_load(self, updated: cst.SimpleStatementLine):
        """``load(sess)`` followed by ``sess.run(iterator.initializer)``."""
        small = updated.body[0]
        value = small.value if isinstance(small, cst.Expr) else None
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value in self.loader_names
            and len(value.args) == 1
        ):
            return None
        sess = cst.Module([]).code_for_node(value.args[0].value)
        self.removed.append(f"{sess}.run({self.iterator}.initializer) after {value.func.value}")
        return cst.FlattenSentinel(
            [updated, cst.parse_statement(f"{sess}.run({self.iterator}.initializer)\n")]
        )

    # the loop
    def visit_While(self, node: cst.While) -> None:
        self.loops += 1

    def leave_While(self, original: cst.While, updated: cst.While) -> cst.While:
        self.loops -= 1
        test = without_stop_test(updated.test, self.coords)
        if self.keep_queues or test is None:
            return updated
        self.removed.append(f"while not coord.should_stop(): -> while {_code(test)}:")
        return updated.with_changes(test=test)

    def _with_added_loaders(self, updated: cst.SimpleStatementLine) -> list[cst.BaseStatement]:
        """``a, b = f(...)`` as ``dataset, load = f_dataset(...)`` and an initializable iterator.

        The caller's ``start_queue_runners`` becomes ``load(sess)`` and the
        iterator's initializer (NOTE [ Preloaded arrays in a migrated TF1-mode
        program ]).
        """
        if len(self.datasets) != 1:
            self.unsupported = (
                f"{self.function}(...) is called more than once in one statement; its "
                "version returns (dataset, load)"
            )
            return [updated]
        self.initializer = f"{self.iterator}.initializer"
        return [
            *self._dataset_and_iterator(", ".join(self.loads), updated.leading_lines),
            updated.with_changes(leading_lines=[]),
        ]

    def _loads_then_initializer(self, updated, value: cst.Call) -> list[cst.BaseStatement]:
        """Each ``load(sess)``, then ``sess.run(initializer)``, where the runners started."""
        sess = next(
            (a.value for a in value.args if a.keyword is None or a.keyword.value == "sess"),
            None,
        )
        runner = (
            cst.Module([]).code_for_node(sess)
            if sess is not None
            else "tf.compat.v1.get_default_session()"
        )
        lines = [f"{load}({runner})" for load in self.loads] + [f"{runner}.run({self.initializer})"]
        self.removed.append(f"{_statement_text(updated)} -> {'; '.join(lines)}")
        self.placed = True
        first, *rest = [cst.parse_statement(line + "\n") for line in lines]
        return [first.with_changes(leading_lines=updated.leading_lines), *rest]

    def leave_SimpleStatementLine(self, original, updated):
        if self.datasets and (
            self.loaders or isinstance(self.beside, int) and self.beside or self.absent
        ):
            return cst.FlattenSentinel(self._with_loaders(updated))
        if self.datasets and isinstance(self.beside, str):
            if len(self.datasets) != 1:
                self.unsupported = (
                    f"{self.function}(...) is called more than once in one statement; its "
                    f"version returns (dataset, {self.plain})"
                )
                return updated
            return cst.FlattenSentinel(
                [
                    *self._dataset_and(self.plain, updated.leading_lines),
                    updated.with_changes(leading_lines=[]),
                ]
            )
        if self.datasets and self.added:
            return cst.FlattenSentinel(self._with_added_loaders(updated))
        if self.loader_names and len(updated.body) == 1:
            after = self._after_load(updated)
            if after is not None:
                return after
        if self.datasets:
            assigns = [
                cst.SimpleStatementLine(
                    [cst.Assign([cst.AssignTarget(cst.Name(self.name))], call)],
                    leading_lines=updated.leading_lines,
                )
                for call in self.datasets
            ]
            self.datasets = []
            return cst.FlattenSentinel([*assigns, updated.with_changes(leading_lines=[])])
        if len(updated.body) != 1:
            return updated
        small = updated.body[0]
        value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        starts = isinstance(value, cst.Call) and callee(value) == "start_queue_runners"
        if self.initializer and starts and (self.loads or not self.keep_queues):
            # where the inputs were ready: the iterator starts there instead
            assert isinstance(value, cst.Call)
            lines = self._loads_then_initializer(updated, value)
            if self.keep_queues:  # the other pipeline's runners still start here
                return cst.FlattenSentinel([*lines, updated.with_changes(leading_lines=[])])
            return cst.FlattenSentinel(lines)
        if self.keep_queues:
            return updated
        if isinstance(small, cst.Assign) and isinstance(value, cst.Call):
            if callee(value) in ("Coordinator", "start_queue_runners"):
                self.removed.append(_statement_text(updated))
                self.removed_nodes.append(original)
                return cst.RemoveFromParent()
        if isinstance(small, cst.Expr) and isinstance(value, cst.Call):
            if _method_of(value, self.coords, "join") or callee(value) == "start_queue_runners":
                self.removed.append(_statement_text(updated))
                self.removed_nodes.append(original)
                return cst.RemoveFromParent()
            if _method_of(value, self.coords, "request_stop"):
                if self.loops:
                    self.removed.append("coord.request_stop() in the loop -> break")
                    return updated.with_changes(body=[cst.Break()])
                self.removed.append("coord.request_stop()")
                self.removed_nodes.append(original)
                return cst.RemoveFromParent()
        return updated

    def leave_If(self, original: cst.If, updated: cst.If):
        """``if coord.should_stop(): break`` goes: no Coordinator is left to ask for a stop."""
        stop = _method_of(updated.test, self.coords, "should_stop")
        if self.keep_queues or updated.orelse is not None or not stop:
            return updated
        self.removed.append(f"{_statement_text(original).splitlines()[0]} ...")
        self.removed_nodes.append(original)
        return cst.RemoveFromParent()

    def leave_Try(self, original: cst.Try, updated: cst.Try):
        return without_empty_finally(updated)

    def leave_IndentedBlock(self, original, updated):
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        first = updated.body[0]
        if (
            any(st is original.body[0] for st in self.removed_nodes)
            and first.leading_lines
            and all(line.comment is None for line in first.leading_lines)
        ):  # the lines above it were removed: no blank line opens the block
            return updated.with_changes(
                body=[first.with_changes(leading_lines=()), *updated.body[1:]]
            )
        return updated


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _statement_text(stmt: cst.CSTNode) -> str:
    """A statement's code without the comments and blank lines above it."""
    if isinstance(stmt, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        stmt = stmt.with_changes(leading_lines=())
    return cst.Module([]).code_for_node(stmt).strip()


def rewrite_callers(
    source: str,
    function: str,
    new: str,
    skip: set[str],
    loaders: int = 0,
    added: int = 0,
    beside: int | str = 0,
    absent: int = 0,
) -> tuple[str, list[tuple[str, str]]]:
    """`source` with the callers of `function` rewritten; see NOTE [ Rewriting the callers ... ].

    Args:
      source: the migrated module's source.
      function: the legacy input function.
      new: its tf.data version.
      skip: functions left alone (the legacy function, its helpers and the
        generated versions).
      loaders: how many loaders (``load(sess)``) the function returns after
        its batches; its callers then read an initializable iterator,
        initialized after each loader runs.
      added: how many loaders the new function returns after its Dataset that
        the legacy one did not (NOTE [ Preloaded arrays in a migrated TF1-mode
        program ]): each caller gets them from the call and runs them, then the
        iterator's initializer, where it called ``start_queue_runners``.
      beside: the plain values the function returns beside its batches: how
        many follow them in a tuple (``x, y, n = f(...)`` becomes ``dataset, n
        = f_dataset(...)`` and ``x, y = ...get_next()``), or the name of the
        namedtuple holding them, or ``"dict"`` (``e = f(...)`` becomes
        ``dataset, plain = f_dataset(...)`` and ``e = Examples(**...get_next(),
        **plain)``).
      absent: how many Nones (no labels) follow the batches that `new` leaves
        out: ``x, y = f(...)`` becomes ``dataset = f_dataset(...)``, ``x =
        ...get_next()`` and ``y = None``.

    Returns:
      The new source and, per caller rewritten, ``(its name, what changed)``.
    """
    module = cst.parse_module(source)
    pipelines = {
        f.name.value
        for f in module.body
        if isinstance(f, cst.FunctionDef)
        and f.name.value != function
        and any(
            isinstance(c, cst.Call) and callee(c) in _QUEUE_NAMES for c in m.findall(f, m.Call())
        )
    }
    notes: list[tuple[str, str]] = []
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        if (
            isinstance(stmt, cst.FunctionDef)
            and stmt.name.value not in skip
            and m.findall(stmt, m.Call(func=m.Name(function)))
        ):
            calls = [c for c in m.findall(stmt, m.Call()) if isinstance(c, cst.Call)]
            remaining = {callee(c) for c in calls} - {function}
            transformer = _Caller(function, new, loaders, added, beside)
            transformer.absent = absent
            used = {n.value for n in m.findall(stmt, m.Name()) if isinstance(n, cst.Name)}
            transformer.name = next(
                n for n in ("dataset", "input_dataset", "migrated_dataset") if n not in used
            )
            transformer.iterator = next(
                n for n in ("iterator", "input_iterator", "dataset_iterator") if n not in used
            )
            free = (n for n in ("load", "load_inputs", "load_arrays") + tuple(
                f"load_{i}" for i in range(2, 100)) if n not in used)  # fmt: skip
            transformer.loads = [next(free) for _ in range(added)]
            transformer.plain = next(
                n for n in ("plain", "plain_values", "values") if n not in used
            )
            transformer.keep_queues = bool(remaining & (_QUEUE_NAMES | pipelines))
            for c in calls:
                if callee(c) == "Coordinator":
                    transformer.coords |= _assigned_to(stmt, c)
            new_stmt = stmt.visit(transformer)
            assert isinstance(new_stmt, cst.FunctionDef)
            if added and not transformer.placed and not transformer.unsupported:
                transformer.unsupported = (
                    f"{new}(...) returns (dataset, {', '.join(transformer.loads)}) and this "
                    "function starts no queue runners to put the loaders in place of: run "
                    f"{', '.join(transformer.loads)}(sess) after the variables initializers, then "
                    "the initializer of its tf.compat.v1.data.make_initializable_iterator(dataset)"
                )
            if transformer.unsupported:
                notes.append((stmt.name.value, f"not rewritten: {transformer.unsupported}"))
                body.append(stmt)
                continue
            stmt = new_stmt
            iterator = (
                "make_initializable_iterator" if loaders or added else "make_one_shot_iterator"
            )
            what = [f"{function}(...) -> {iterator}({new}(...)).get_next()"]
            if transformer.keep_queues:
                what.append("Coordinator kept: another queue pipeline remains")
            notes.append((stmt.name.value, "; ".join(what + transformer.removed)))
        body.append(stmt)
    return module.with_changes(body=body).code, notes


def drop_queue_runners(
    source: str,
    scope: str | None,
    initializer: str = "",
    datasets: frozenset[str] = frozenset(),
    loads: list[str] | None = None,
) -> tuple[str, list[str]]:
    """`source` with the Coordinator lines of one scope removed, when it builds no queue.

    The session code around an inline pipeline that was migrated (NOTE
    [ Migrating an inline pipeline ] in script.py) changes as a caller's body
    does: the Coordinator, ``start_queue_runners`` and ``coord.join`` lines
    go, ``while not coord.should_stop():`` becomes ``while True:``.

    Args:
      source: the file's text.
      scope: the function holding the session code, or None for the module's
        own statements (its functions and classes left alone).
      initializer: an initializable iterator's initializer
        (``iterator.initializer``), run where ``start_queue_runners`` was (the
        place where the program's inputs are ready, e.g. its variables loaded).
      datasets: the names of the migrated code's Datasets (their ``batch``
        and ``shuffle`` calls build no queue).
      loads: loaders (``load(sess)``) to run before `initializer`.

    Returns:
      The new source and what changed.
    """
    module = cst.parse_module(source)
    targets: list[cst.BaseStatement]
    if scope is not None:
        targets = [
            s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == scope
        ]
    else:
        targets = [s for s in module.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
    calls = [c for t in targets for c in m.findall(t, m.Call()) if isinstance(c, cst.Call)]
    queues = {
        callee(c)
        for c in calls
        if not (
            isinstance(c.func, cst.Attribute)
            and isinstance(c.func.value, cst.Name)
            and c.func.value.value in datasets
        )
    }
    if queues & _QUEUE_NAMES:
        return source, ["Coordinator kept: another queue pipeline remains"]
    transformer = _Caller("", "")
    transformer.initializer = initializer
    transformer.loads = list(loads or [])
    for c in calls:
        if callee(c) == "Coordinator":
            transformer.coords |= {n for t in targets for n in _assigned_to(t, c)}
    body = [s.visit(transformer) if any(s is t for t in targets) else s for s in module.body]
    new = module.with_changes(body=[s for s in body if isinstance(s, cst.BaseStatement)])
    return new.code, transformer.removed


def _assigned_to(scope: cst.CSTNode, call: cst.Call) -> set[str]:
    names: set[str] = set()
    for assign in m.findall(scope, m.Assign()):
        if isinstance(assign, cst.Assign) and assign.value is call:
            for target in assign.targets:
                if isinstance(target.target, cst.Name):
                    names.add(target.target.value)
    return names
