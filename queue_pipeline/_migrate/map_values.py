"""Python values the per-record code changes: kept in order, handed out of the map.

NOTE [ Python values changed between per-record lines ]
A binary-record reader (hand3d's) walks its record with a byte counter::

    bytes_read = 0
    as_float = tf.decode_raw(value, tf.float32)
    xyz = tf.slice(as_float, [bytes_read // 4], [n]); bytes_read += 4 * n
    uv = tf.slice(as_float, [bytes_read // 4], [k]); bytes_read += 4 * k

The per-record lines move, in order, into ``per_record``; a plain statement
left where it was runs before all of them (was: every slice read the final
count, and the proof failed on the twin side, or the twin read other bytes).
So a statement that rebinds or changes (``+=``, ``x[k] = v``,
``names.append(v)``) a name the moved statements read or bind goes into the
map at its place, after the lines that read the old value; the value it
starts from comes in as a default (``bytes_read=bytes_read``, see
:func:`with_outer_values`); a statement reading what the moved code changes
(``count = len(names)``) follows it in. A statement still written in place
while per-record lines wait for the map (the shell of a block around a
stage, a helper's call) that changes what they use would run before them:
it is refused at its line (:func:`check_order`), never written out of order.

A plain value the moved code leaves and the code after the map reads
(``names, tensors = zip(*data_dict.items())`` before the batching call,
``dict(zip(names, tensors))`` after it) is handed out of the map:
``Dataset.map`` traces ``per_record`` once, when it is called, and
``per_record_values`` then holds what the moved lines left, which is what the
legacy code read after them. A tensor cannot leave a map; those are the
record's element, or refused elsewhere.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m
import numpy as np
import tensorflow as tf

from queue_pipeline._migrate.base import STAGE_CALLS
from queue_pipeline._migrate.syntax import assigned_names, callee, mutated_names, names_in

__all__ = [
    "HOLDER",
    "changed_by",
    "changes_moved",
    "check_order",
    "handed_out",
    "holder_lines",
    "with_outer_values",
]

# the dict the written ``per_record`` leaves its plain values in
HOLDER = "per_record_values"


def changes_moved(stmt: cst.CSTNode, pending) -> set[str]:
    """The names `stmt` rebinds or changes that the pending per-record statements use.

    Args:
      stmt: a statement of the function being rewritten.
      pending: the (statement, replacements) pairs already moved into the map.
    """
    moved: set[str] = set()
    for st, _ in pending:
        moved |= names_in(st)
    return (set(assigned_names(stmt)) | mutated_names(stmt)) & moved


def check_order(rw, fn, stmt: cst.CSTNode, moved, pending) -> None:
    """Refuses `stmt`, written in place while `moved` wait for the map, if it changes what
    they use: it would run before them (a statement the map cannot hold: a helper's call,
    a block with a stage).

    Raises:
      MigrateError: at `stmt`'s line.
    """
    if any(callee(c) in STAGE_CALLS for c in rw.calls_in(stmt)):
        return  # a read, producer or batching call: its own rewrite keeps the order
    into_map = {id(n) for st, _ in pending for n in m.findall(st, m.SimpleStatementLine())}
    changed: set[str] = set()
    for line in m.findall(stmt, m.SimpleStatementLine()):  # its lines written in place
        if id(line) not in into_map:
            changed |= changes_moved(line, moved)
    if changed:
        name = sorted(changed)[0]
        first = min(fn.line(st) for st, _ in moved if name in names_in(st))
        raise rw.fail(
            fn, stmt, f"it changes `{name}`, which the per-record code above it reads (line "
            f"{first}); that code runs in Dataset.map, after this statement, and would see "
            f"the changed value. Fix: compute `{name}` for each use before the first "
            "per-record line, or move this statement into the per-record code"
        )  # fmt: skip


_PLAIN = (int, float, bool, str, bytes, type(None), np.generic, np.ndarray)


def _plain(value) -> bool:
    """Whether `value` is a nest of plain Python and numpy values (no tensor, no object)."""
    try:
        return all(isinstance(v, _PLAIN) for v in tf.nest.flatten(value))
    except (TypeError, ValueError):  # pragma: no cover - a nest tf.nest cannot walk
        return False


def handed_out(rw, fn, pending, returns: str = "") -> list[str]:
    """The plain names the pending statements bind that code after them reads.

    Args:
      rw: the rewriter (its positions of the user's nodes).
      fn: the :class:`~queue_pipeline._migrate.base.Function` being rewritten,
        or None (nothing is handed out).
      pending: the statements moving into the map.
      returns: what ``per_record`` returns (its names are the element, not handed out).
    """
    if fn is None or not pending:
        return []
    values = fn.call.local_values if fn.call is not None else {}
    bound = {n for st in pending for n in assigned_names(st) if isinstance(n, str)}
    try:
        bound -= names_in(cst.parse_expression(returns)) if returns.strip() else set()
    except cst.ParserSyntaxError:  # pragma: no cover - a starred element list
        bound -= set(re.findall(r"\w+", returns))
    bound = {n for n in bound if n in values and _plain(values[n])}
    if not bound:
        return []
    last = max(rw.positions[st].end.line for st in pending)
    later = m.SimpleStatementLine() | m.If() | m.For() | m.While() | m.With() | m.Try()
    read: set[str] = set()
    for st in m.findall(fn.node.body, later):
        if rw.positions[st].start.line > last:
            read |= names_in(st) & bound
    return sorted(read)


def holder_lines(names: list[str], pad: str) -> tuple[list[str], str, list[str]]:
    """(lines before ``def per_record``, its last line before ``return``, lines after the map)."""
    if not names:
        return [], "", []
    kept = ", ".join(f"{n}={n}" for n in names)
    return (
        [f"{pad}{HOLDER} = {{}}  # what per_record leaves, read after the map\n", "\n"],
        f"{pad}    {HOLDER}.update({kept})\n",
        [f'{pad}{n} = {HOLDER}["{n}"]\n' for n in names],
    )


def with_outer_values(params: str, stmts) -> str:
    """`params` of a function holding `stmts`, with ``name=name`` for each name they
    read from the enclosing function before they assign it.

    entnet's ``context_features, sequence_features =
    tf.parse_single_sequence_example(serialized, context_features=context_features,
    ...)`` reads the feature specs made outside, then reuses their names: moved
    into ``per_record`` as is, the names would be its locals, unbound when read
    (UnboundLocalError). As defaults, the enclosing values are read once, when the
    function is defined; ``Dataset.map`` passes only the elements. A name changed
    in place (``data_dict["xyz"] = xyz``, ``offset += 8``) is read there, not
    bound: hand3d fills ``data_dict`` made outside, then empties it in a branch.
    """
    stmts = list(stmts)
    assigned = {n for st in stmts for n in _rebound(st)}
    own = {p.strip().lstrip("*").split("=")[0].strip() for p in params.split(",")}
    done: set[str] = set()
    outer: list[str] = []
    for st in _in_order(stmts):
        reads, binds = _reads_and_binds(st)
        outer += sorted((reads & assigned) - done - own - set(outer))
        done |= binds
    if not outer:
        return params
    return ", ".join([*([params] if params else []), *(f"{n}={n}" for n in outer)])


_STEPS = m.SimpleStatementLine() | m.For() | m.If() | m.While() | m.With()


def _in_order(stmts) -> list[cst.CSTNode]:
    """`stmts` and the statements and block headers inside them, in the order they run
    first (a loop's body after its header)."""
    out: list[cst.CSTNode] = []
    for st in stmts:
        inner = [st, *(n for n in m.findall(st, _STEPS) if n is not st)]
        out += [n for n in inner if isinstance(n, cst.CSTNode)]
    return out


def _reads_and_binds(st: cst.CSTNode) -> tuple[set[str], set[str]]:
    """What one statement, or one block's header, reads and binds anew."""
    if isinstance(st, cst.For):
        return names_in(st.iter), _rebound(cst.Assign([cst.AssignTarget(st.target)], st.iter))
    if isinstance(st, (cst.If, cst.While)):
        return names_in(st.test), set()
    if isinstance(st, cst.With):
        return set().union(*(names_in(item.item) for item in st.items)), set()
    if not isinstance(st, cst.SimpleStatementLine):
        return set(), set()
    line = st.body[0] if st.body else None
    value = line.value if isinstance(line, (cst.Assign, cst.AugAssign)) else None
    reads = names_in(value) if value is not None else names_in(st)
    if isinstance(line, cst.AugAssign):
        reads |= names_in(line.target)
    return reads | mutated_names(st), _rebound(st)


def changed_by(pending) -> set[str]:
    """The names the pending statements bind or change in place, in blocks too."""
    out: set[str] = set()
    for st, _ in pending:
        out |= set(assigned_names(st))
        for line in m.findall(st, m.SimpleStatementLine()):
            out |= mutated_names(line)
    return out


def _rebound(stmt: cst.CSTNode) -> set[str]:
    """The names `stmt` binds anew (``x = ...``, ``a, b = ...``, ``x += ...``), not those it
    changes in place (``x[k] = ...``, ``x.a = ...``)."""
    out: set[str] = set()

    def bind(target) -> None:
        if isinstance(target, cst.Name):
            out.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                bind(element.value)
        elif isinstance(target, cst.StarredElement):
            bind(target.value)

    for node in m.findall(stmt, m.Assign() | m.AugAssign() | m.AnnAssign()):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                bind(t.target)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            bind(node.target)
    return out
