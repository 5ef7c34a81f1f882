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
:func:`~queue_pipeline._migrate.base.with_outer_values`). A statement that
cannot go into the map (it builds a stage, or uses the batches) is refused
at its line.

A plain value the moved code leaves and the code after the map reads
(``names, tensors = zip(*data_dict.items())`` before the batching call,
``dict(zip(names, tensors))`` after it) is handed out of the map:
``Dataset.map`` traces ``per_record`` once, when it is called, and
``per_record_values`` then holds what the moved lines left, which is what the
legacy code read after them. A tensor cannot leave a map; those are the
record's element, or refused elsewhere.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
import tensorflow as tf

from queue_pipeline._migrate.syntax import assigned_names, mutated_names, names_in

__all__ = ["HOLDER", "changes_moved", "handed_out", "holder_lines", "with_outer_values"]

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


def _holds_tensor(value) -> bool:
    try:
        flat = tf.nest.flatten(value)
    except (TypeError, ValueError):  # pragma: no cover - an object nest cannot walk
        return True
    return any(isinstance(v, (tf.Tensor, tf.SparseTensor, tf.Operation)) for v in flat)


def handed_out(rw, fn, pending) -> list[str]:
    """The plain names the pending statements bind that code after them reads.

    Args:
      rw: the rewriter (its positions of the user's nodes).
      fn: the :class:`~queue_pipeline._migrate.base.Function` being rewritten,
        or None (nothing is handed out).
      pending: the statements moving into the map.
    """
    if fn is None or not pending:
        return []
    values = fn.call.local_values if fn.call is not None else {}
    bound = {n for st in pending for n in assigned_names(st) if isinstance(n, str)}
    bound = {n for n in bound if n in values and not _holds_tensor(values[n])}
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
    for st in stmts:
        if not isinstance(st, cst.SimpleStatementLine):  # a block: only what it assigns
            done |= names_in(st)
            continue
        line = st.body[0] if st.body else None
        value = line.value if isinstance(line, (cst.Assign, cst.AugAssign)) else None
        reads = names_in(value) if value is not None else names_in(st)
        if isinstance(line, cst.AugAssign):
            reads |= names_in(line.target)
        reads |= mutated_names(st)
        outer += sorted((reads & assigned) - done - own - set(outer))
        done |= _rebound(st)
    if not outer:
        return params
    return ", ".join([*([params] if params else []), *(f"{n}={n}" for n in outer)])


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
