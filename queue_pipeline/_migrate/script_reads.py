"""What the code around a script's pipeline reads and needs (see script.py's module doc).

The region :func:`~queue_pipeline._migrate.script.wrap` cuts out returns the
names the code after it reads of it (:func:`read_before_assigned`), and runs
after the statements before it that it needs (:func:`needed_before`), module
level tensors included (:func:`tensor_statements`).

NOTE [ A runner the session code starts ]
A script may make its own QueueRunner and start it in its session code
without registering it (``qr = tf.train.QueueRunner(queue, [enqueue_op] *
4)``, then ``qr.create_threads(sess, coord=coord, start=True)``), before or
after the dequeue: the runner fills the queue all the same. The region holds
the runner's line but not the session code, so :func:`started_runners` finds
those runners, and the wrapper registers each at its end
(``add_queue_runner``), at the line of its ``create_threads``: the traced
graph's queue has its runner, as when the program runs, and the rewrite drops
that line with the other runner lines.
"""

from __future__ import annotations

import collections
import re

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.syntax import assigned_names, callee, names_in

__all__ = [
    "needed_before",
    "quoted_read",
    "read_before_assigned",
    "started_runners",
    "tensor_statements",
]


def tensor_statements(statements: list, module: cst.Module) -> list:
    """The statements of `statements` that assign what a TensorFlow call returns (``x =
    tf.range(1, 10)``): tensors of the graph the file builds at import, not of the graph
    a trace runs in. TensorFlow's names are those `module`'s imports bind to it."""
    code = cst.Module([]).code_for_node
    aliases = {
        a.asname.name.value
        if a.asname and isinstance(a.asname.name, cst.Name)
        else code(a.name).split(".")[0]  # `import tensorflow.compat.v1` binds `tensorflow`
        for s in module.body
        if isinstance(s, cst.SimpleStatementLine)
        for b in s.body
        if isinstance(b, cst.Import)
        for a in b.names
        if code(a.name).split(".")[0] == "tensorflow"
    }

    def makes_tensors(stmt) -> bool:
        simple = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        return isinstance(simple, cst.Assign) and any(
            code(c.func).split(".")[0] in aliases and ".flags" not in code(c.func)
            for c in m.findall(simple.value, m.Call())
            if isinstance(c, cst.Call)
        )

    return [s for s in statements if makes_tensors(s)]


def read_before_assigned(statements: list) -> list[str]:
    """The names `statements` read, in order, before one of them assigns the name again:
    what they read of the code above them.

    An assignment reads its value (and the objects of subscript or attribute
    targets) before it binds its names: a second pipeline's ``_, serialized =
    reader.read(q_test)`` binds ``serialized`` before the rest reads it. A compound
    statement reads a name it names more often than it assigns it (``_`` only
    assigned in a loop is not read).
    """
    out: list[str] = []
    _read_in(statements, set(), out)
    return list(dict.fromkeys(out))


def _read_in(statements, bound: set[str], out: list[str]) -> set[str]:
    """Adds to `out` what `statements` read before binding it, in order, `bound` the names
    bound already; returns the names bound after them.

    NOTE [ Names a session loop binds ]: a block (``with``, ``if``, a loop,
    ``try``) is followed in order, so a name its own statements bind before
    reading it (``example, label = sess.run([example_batch, label_batch])``
    then ``print(example)``, in a ``while`` of a ``try`` of the session's
    ``with``) is no read of the pipeline's ``example``. A branch or a loop's
    body may not run: the names bound after it are those bound before it (and
    by both branches of an ``if`` with an ``else``).
    """
    for stmt in statements:
        if isinstance(stmt, (cst.With, cst.If, cst.For, cst.While, cst.Try)):
            bound = _read_in_block(stmt, bound, out)
            continue
        simple = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        if isinstance(simple, (cst.Assign, cst.AnnAssign)) and simple.value is not None:
            targets = (
                [t.target for t in simple.targets]
                if isinstance(simple, cst.Assign)
                else [simple.target]
            )
            plain = [
                e.value if isinstance(e, cst.Element) else e
                for t in targets
                for e in (t.elements if isinstance(t, (cst.Tuple, cst.List)) else [t])
            ]
            reads = names_in(simple.value).union(
                *(names_in(t) for t in plain if not isinstance(t, (cst.Name, cst.StarredElement)))
            )
            binds = {t.value for t in plain if isinstance(t, cst.Name)}
        else:
            names = names_in(stmt)
            seen = collections.Counter(
                n.value for n in m.findall(stmt, m.Name()) if isinstance(n, cst.Name)
            )
            stored = collections.Counter(assigned_names(stmt))
            reads = {n for n in names if seen[n] > stored[n]}
            binds = set(stored)
        _add_reads(stmt, reads, bound, out)
        bound = bound | binds
    return bound


def _add_reads(node, reads: set[str], bound: set[str], out: list[str]) -> None:
    order = [  # in the order they appear: the pipeline returns them so
        n.value for n in m.findall(node, m.Name()) if isinstance(n, cst.Name)
    ]
    out += [n for n in order if n in reads and n not in bound]


def _body(block) -> list:
    return list(block.body) if isinstance(block, cst.IndentedBlock) else [block]


def _read_in_block(stmt, bound: set[str], out: list[str]) -> set[str]:
    """:func:`_read_in` for one block statement (NOTE [ Names a session loop binds ])."""
    if isinstance(stmt, cst.With):
        for item in stmt.items:
            _add_reads(item.item, names_in(item.item), bound, out)
            if item.asname is not None:
                bound = bound | set(names_in(item.asname.name))
        return _read_in(_body(stmt.body), bound, out)
    if isinstance(stmt, cst.If):
        _add_reads(stmt.test, names_in(stmt.test), bound, out)
        then = _read_in(_body(stmt.body), bound, out)
        orelse = stmt.orelse
        if orelse is None:
            return bound
        other = _read_in_block(orelse, bound, out) if isinstance(orelse, cst.If) else None
        if other is None:
            other = _read_in(_body(orelse.body), bound, out)
        return then & other
    if isinstance(stmt, cst.For):
        _add_reads(stmt.iter, names_in(stmt.iter), bound, out)
        _read_in(_body(stmt.body), bound | set(names_in(stmt.target)), out)
    elif isinstance(stmt, cst.While):
        _add_reads(stmt.test, names_in(stmt.test), bound, out)
        _read_in(_body(stmt.body), bound, out)
    else:  # try
        after = _read_in(_body(stmt.body), bound, out)
        for handler in stmt.handlers:
            inner = bound
            if handler.type is not None:
                _add_reads(handler.type, names_in(handler.type), bound, out)
            if handler.name is not None:
                inner = bound | set(names_in(handler.name.name))
            _read_in(_body(handler.body), inner, out)
        if stmt.orelse is not None:
            after = _read_in(_body(stmt.orelse.body), after, out)
        if stmt.finalbody is not None:
            _read_in(_body(stmt.finalbody.body), bound, out)
        return bound if stmt.handlers else after
    if stmt.orelse is not None:
        _read_in(_body(stmt.orelse.body), bound, out)
    return bound


def needed_before(before: list, region: list) -> list:
    """The statements of `before` the region needs: those assigning what it reads
    (through one another), and those assigning nothing that read only what is kept
    (a seed, a log level). The model an earlier pipeline fed is not run to trace a
    later one (NOTE [ Several pipelines in one function ])."""
    needed = set().union(*(names_in(s) for s in region))
    keep = set()
    for k in range(len(before) - 1, -1, -1):
        targets = set(assigned_names(before[k]))
        if not targets or targets & needed:
            keep.add(k)
            needed |= names_in(before[k])
    dropped: set[str] = set()
    kept = []
    for k, stmt in enumerate(before):
        targets = set(assigned_names(stmt))
        if k in keep and (targets or not names_in(stmt) & dropped):
            kept.append(stmt)
            dropped -= targets
        else:
            dropped |= targets
    return kept


def started_runners(after: list, region: list) -> list[tuple[str, cst.CSTNode]]:
    """(name, statement) of each runner of `region` that `after` starts with
    ``name.create_threads(...)`` and `region` does not register (NOTE [ A runner the
    session code starts ])."""
    bound = {n for s in region for n in assigned_names(s)}
    registered = {
        n.value
        for s in region
        for c in m.findall(s, m.Call())
        if isinstance(c, cst.Call) and callee(c) in ("add_queue_runner", "add_to_collection")
        for a in c.args
        for n in [a.value]
        if isinstance(n, cst.Name)
    }
    out: list[tuple[str, cst.CSTNode]] = []
    for stmt in after:
        for c in m.findall(stmt, m.Call()):
            func = c.func if isinstance(c, cst.Call) else None
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "create_threads"
                and isinstance(func.value, cst.Name)
                and func.value.value in bound - registered
                and func.value.value not in [n for n, _ in out]
            ):
                out.append((func.value.value, stmt))
    return out


def quoted_read(message: str, names: list[str], source: str, path: str, after: int) -> str:
    """A refusal of the wrapper's ``return NAMES`` told at the file's line that reads them.

    NOTE [ A refusal at the line that reads the pipeline's names ]
    The wrapper's ``return`` is migrate's own statement (the names the code
    after the region reads of it), not the file's: a refusal quoting it (a
    reader's unbatched ``key, value`` returned beside the batches) points
    instead to the first statement after the region (after line `after`)
    that reads the names the message is about (those in its first
    parentheses, else any it names, else any returned), quoted as the file
    has it: ``sess.run([passenger_id, survived, key, value])``.
    """
    returned = f"return {', '.join(names)}"
    found = re.search(rf"{re.escape(path)}:\d+: cannot migrate `{re.escape(returned)}`: ", message)
    if found is None:
        return message
    why = message[found.end() :]
    words = set(re.findall(r"\w+", (re.findall(r"\(([^)]*)\)", why) or [why])[0]))
    wanted = [n for n in names if n in words] or [n for n in names if re.search(rf"\b{n}\b", why)]
    wrapper = cst.MetadataWrapper(cst.parse_module(source))
    lines = wrapper.resolve(cst.metadata.PositionProvider)
    reads = sorted(
        (lines[s].start.line, s)
        for s in m.findall(wrapper.module, m.SimpleStatementLine())
        if isinstance(s, cst.SimpleStatementLine) and lines[s].start.line > after
        and names_in(s) & set(wanted or names)
    )  # fmt: skip
    if not reads:
        return message
    line, stmt = reads[0]
    text = cst.Module([]).code_for_node(stmt.with_changes(leading_lines=())).strip()
    why = re.sub(r"^it returns ", "it reads ", why)
    return (
        message[: found.start()] + f"{path}:{line}: cannot migrate `{text.splitlines()[0]}`: {why}"
    )
