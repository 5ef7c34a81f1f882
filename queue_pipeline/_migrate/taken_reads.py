"""A reading helper's read inside an ``if`` on a Python value: the branch the run took.

NOTE [ A read in the branch the run took ]
A reading helper may choose its read by a Python value it is given
(hGRU's ``if number_of_files == 1: _, s = reader.read(queue); features =
tf.parse_single_example(s, ...)`` ``else: _, s = reader.read_up_to(queue,
number_of_files); features = tf.parse_example(s, ...)``). The test is
decided when the function runs, so the run took one branch: its statements
are the helper's (its read becomes the caller's Dataset of records, the
rest its record function), kept under the ``if`` with its test (the
test's names become the record function's parameters). Each branch the run
did not take is written as a ``raise ValueError`` naming its line (its read
is another Dataset, which the run did not show), and listed among the
statements not migrated; the legacy function keeps it. A branch is taken
when the run recorded a read on its lines; an ``if`` with no recorded read
is left to the usual rules.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from queue_pipeline._migrate.base import READS
from queue_pipeline._migrate.syntax import callee, names_in

__all__ = [
    "Guard",
    "refuse_repeated_reads",
    "repeated_reads",
    "taken_statements",
    "test_names",
    "written_guarded",
]


@dataclasses.dataclass(eq=False)
class Guard:
    """An ``if`` whose branch the run took, holding a read."""

    node: cst.If
    branches: list[tuple[str, cst.BaseSuite, int]]  # (header, body, header's line)
    taken: int


def taken_statements(rw, fn, stmts: list) -> tuple[list, list]:
    """`stmts` with each ``if`` holding a read replaced by the statements of the branch the
    run took; the parallel list of each statement's :class:`Guard` (None: not in one)."""
    out: list = []
    guards: list = []
    for stmt in stmts:
        guard = _guard(rw, fn, stmt)
        if guard is None:
            out.append(stmt)
            guards.append(None)
            continue
        body = list(guard.branches[guard.taken][1].body)
        out += body
        guards += [guard] * len(body)
        for index, (header, suite, line) in enumerate(guard.branches):
            if index != guard.taken:
                last = rw.positions[suite].end.line
                rw.dropped.append(
                    f"{rw.where(line)}: `{header}` ({last - line + 1} lines): a branch the run "
                    f"did not take (it took line {guard.branches[guard.taken][2]}): its read "
                    "makes another Dataset the run did not show; the tf.data version raises "
                    "ValueError there, the legacy function keeps it (migrate with arguments "
                    "that take it to have it written)"
                )
    return out, guards


def test_names(guards: list) -> set[str]:
    """The names the tests of `guards` read."""
    return set().union(*(_test_names(g) for g in guards if g is not None))


def _test_names(guard: Guard) -> set[str]:
    names: set[str] = set()
    branch: cst.If | cst.Else | None = guard.node
    while isinstance(branch, cst.If):
        names |= names_in(branch.test)
        branch = branch.orelse
    return names


def written_guarded(rw, pieces: list[tuple[list[str], Guard | None]]) -> list[str]:
    """The record function's body from `pieces` (each statement's written text and its
    guard): a run of statements of one guard written inside its ``if``."""
    out: list[str] = []
    index = 0
    while index < len(pieces):
        texts, guard = pieces[index]
        if guard is None:
            out += texts
            index += 1
            continue
        inner: list[str] = []
        while index < len(pieces) and pieces[index][1] is guard:
            inner += pieces[index][0]
            index += 1
        out += _guarded(rw, guard, inner)
    return out


def _guarded(rw, guard: Guard, inner: list[str]) -> list[str]:
    out = []
    for number, (header, _, line) in enumerate(guard.branches):
        out.append(f"    {header}\n")
        if number == guard.taken:
            text = "".join(inner)
            out.append(
                "".join(("    " + t if t.strip() else t) for t in text.splitlines(keepends=True))
                if text.strip()
                else "        pass\n"
            )
            continue
        message = (
            f"queue-pipeline migrate: {rw.where(line)}: this branch was not migrated (the run "
            "took another): migrate with arguments that take it, or use the legacy function"
        )
        out.append(f"        raise ValueError({message!r})\n")
    return out


def _guard(rw, fn, stmt) -> Guard | None:
    """The :class:`Guard` of `stmt` when it is an ``if`` holding a read on a branch the
    run recorded a read in; else None."""
    if not isinstance(stmt, cst.If) or not any(
        callee(c) in READS for c in rw.calls_in(stmt)
    ):  # fmt: skip
        return None
    branches: list[tuple[str, cst.BaseSuite, int]] = []
    branch: cst.If | cst.Else | None = stmt
    first = True
    while branch is not None:
        line = rw.positions[branch].start.line
        if isinstance(branch, cst.If):
            word = "if" if first else "elif"
            branches.append((f"{word} {rw.code(branch.test)}:", branch.body, line))
            branch = branch.orelse
        else:
            branches.append(("else:", branch.body, line))
            branch = None
        first = False
    taken = [
        index
        for index, (_, suite, _) in enumerate(branches)
        if rw._recorded_node(fn, rw.positions[suite].start.line, rw.positions[suite].end.line)
        is not None
    ]
    if len(taken) != 1:
        return None
    suite = branches[taken[0]][1]
    if not isinstance(suite, cst.IndentedBlock) or any(
        isinstance(s, cst.If) and any(callee(c) in READS for c in rw.calls_in(s))
        for s in suite.body
    ):
        return None
    return Guard(stmt, branches, taken[0])


def repeated_reads(rw, fn, stmt, helper) -> int:
    """How many reads the run made through `helper` called at `stmt` in `fn`, on one of
    its read lines (more than one: the call ran in a loop, each call a reader of its own;
    NOTE [ Readers in lockstep on one queue ])."""
    first, last = rw.positions[stmt].start.line, rw.positions[stmt].end.line
    counts: dict[int, int] = {}
    for node in rw.trace.nodes:
        if not node.kind.endswith(tuple("." + m for m in READS)):
            continue
        frames = rw.trace.sites.get(node.index, ())
        if not any(name == fn.name and first <= line <= last for name, line in frames):
            continue
        for name, line in frames:
            if name == helper.name and helper.first <= line <= helper.last:
                counts[line] = counts.get(line, 0) + 1
    return max(counts.values(), default=0)


def refuse_repeated_reads(rw, fn, stmt, helper) -> None:
    """Refuses a reading helper called in a loop, each call a reader of the same queue.

    NOTE [ Readers in lockstep on one queue ]
    hGRU's loader calls its reading helper once per example of a batch (``for
    idx in range(batch_size): images, labels = read_and_decode(queue)``), then
    concatenates the N results into one element: N readers of one file-name
    queue, read in lockstep. In TF 1.x each reader takes a file of its own and
    each step takes one record of each (probed: 3 readers on a one-file queue
    with num_epochs=3 give elements of 3 copies of record j, one pass's worth;
    with num_epochs=1 the readers past the first find the queue closed and TF
    delivers nothing). A Dataset map reads one record per element: the N
    calls would decode that one record N times, a different stream. Refused
    at the call, with the likely intent as the way around.
    """
    count = repeated_reads(rw, fn, stmt, helper)
    if count > 1:
        raise rw.fail(
            fn, stmt, f"`{helper.name}` is called {count} times here (in a loop), each call a "
            "reader of the same queue read in lockstep: in TF 1.x each reader takes a file of "
            "its own and an element holds one record of each (with fewer files per epoch than "
            "readers, the readers left without one end the pipeline, and TF delivers nothing); "
            "a tf.data map reads one record per element, so this is not migrated. The way "
            f"around: call {helper.name} once and batch its records (tf.train.batch or "
            f"shuffle_batch with batch_size={count}: {count} different records per batch), "
            "which migrate rewrites and proves"
        )  # fmt: skip
