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
    bound: set[str] = set()
    out: list[str] = []
    for stmt in statements:
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
        order = [  # in the order they appear: the pipeline returns them so
            n.value for n in m.findall(stmt, m.Name()) if isinstance(n, cst.Name)
        ]
        out += [n for n in order if n in reads and n not in bound]
        bound |= binds
    return list(dict.fromkeys(out))


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
