"""The names a written tf.data function binds, kept apart from the user's own.

NOTE [ Names the written code binds ]
The written code binds names of its own: ``dataset``, ``records``, its
nested ``per_record`` and ``per_batch``. A legacy function may already use
one for a value of its own (a depth loader's constructor takes ``dataset``,
the name of the data set, and reads it later; a script counts ``records``):
the written line ``dataset = records.batch(...)`` would then overwrite it, and
the user's later reads would get the Dataset. While a pipeline function is
rewritten, every name of the user's code the written code also binds (a
name the function uses from its first read or batching statement on, where
the written code binds its own, holding a plain value: a tensor of the
pipeline is one the rewrite already replaces) is marked where the user's
code is copied (``RewriterBase.code`` and ``text``: the statements and
expressions the written code keeps; a producer's arguments, before the first
read, may come through other ways and are left out); when the function is written, the
written code's own uses of that name, the unmarked ones, take a fresh name
(``dataset_1``, the first one neither the function nor the written code
uses), and the marks are taken off. A script's pipeline lines go back into
the script's own scope: there every name that scope uses counts (its
statements, not the bodies of the functions it defines). Messages, steps and notes are taken off
their marks too. Every mode goes through it: a function, a constructor or
method (written as a function first) and a script's pipeline lines.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import re
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.known_names import BATCHING, PROVIDER, READS, WRAPPER
from queue_pipeline._migrate.loading import MigrateError
from queue_pipeline._migrate.syntax import callee, names_in

__all__ = ["GENERATED", "kept_apart", "maps_per_batch", "mark", "script_scope", "unmark", "uses"]

# the names the written code binds in a pipeline function's version
GENERATED = (
    "dataset",
    "records",
    "per_record",
    "per_batch",
    "per_record_values",
    "provided_record",
    "provided_dataset",
)
_MARK = "__qp_user_name__"
# the names of the scope a script's pipeline lines go back into (see script_scope)
_SCRIPT_SCOPE: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "script_scope", default=frozenset()
)


@contextlib.contextmanager
def script_scope(
    source: str, function: str | None, user_source: str | None = None
) -> Iterator[None]:
    """While a script's pipeline lines are migrated: the user's names of their scope in `source`.

    The version of the wrapper (``_inline_pipeline``) goes back into that
    scope (the module's statements, or `function`'s body), so the written
    code keeps apart from every name used there, not only the region's. A
    later pass (NOTE [ Several pipelines in one function ]) reads a `source`
    holding an earlier pass's written code: only the names the file as the
    user wrote it (`user_source`) also uses there count; the earlier pass's
    own ``records`` and ``dataset`` were read where they were bound.
    """
    names = _scope_names(source, function)
    if user_source is not None:
        names &= _scope_names(user_source, function)
    token = _SCRIPT_SCOPE.set(frozenset(names))
    try:
        yield
    finally:
        _SCRIPT_SCOPE.reset(token)


def _scope_names(source: str, function: str | None) -> set[str]:
    """The names the statements of the module `source` (or of its `function`) use."""
    module = cst.parse_module(source)
    body: list = list(module.body)
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == function:
            body = [*stmt.body.body, stmt.params]
    names: set[str] = set()
    for stmt in body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
        else:
            names |= names_in(stmt)
    return names


def mark(text: str, names: frozenset[str]) -> str:
    """`text` (the user's code) with each of `names` as a variable (not an attribute) marked."""
    if not names:
        return text
    pattern = "|".join(sorted(names))
    return re.sub(rf"(?<![\w.])({pattern})\b", _MARK + r"\1", text)


def uses(text: str, name: str, names: frozenset[str]) -> bool:
    """Whether the written `text` reads the user's `name` (marked there when among `names`)."""
    return re.search(rf"(?<![\w.]){_MARK if name in names else ''}{name}\b", text) is not None


def maps_per_batch(text: str) -> bool:
    """Whether the written `text` defines a ``per_batch`` function (or its fresh name)."""
    return re.search(r"\bdef per_batch(_\d+)?\(", text) is not None


def unmark(text: str) -> str:
    """`text` with the marks of :func:`mark` taken off."""
    return text.replace(_MARK, "")


def renamed(text: str, names: frozenset[str], taken: set[str]) -> str:
    """The written function `text` with its own uses of `names` fresh and the marks off."""
    for name in sorted(names):
        fresh = next(
            f"{name}_{i}"
            for i in range(1, 1000)
            if f"{name}_{i}" not in taken and not re.search(rf"\b{name}_{i}\b", text)
        )
        text = re.sub(rf"(?<![\w.]){name}\b", fresh, text)
    return unmark(text)


def _read_late(rw, fn) -> set[str]:
    """The names `fn` uses from its first read or batching statement on (a statement
    calling ``read`` or a batching call, or a helper that does): where the written
    code binds its own names; the producer's arguments before it keep theirs."""
    statements = sorted(
        (rw.positions[s].start.line, s)
        for s in m.findall(fn.node.body, m.SimpleStatementLine())
        if isinstance(s, cst.SimpleStatementLine)
    )  # fmt: skip
    starts = [
        line
        for line, s in statements
        if any(
            callee(c) in (*READS, *BATCHING, PROVIDER) or rw.helper_of(c) is not None
            for c in rw.calls_in(s)
        )
    ]
    if not starts:
        return set()
    return {n for line, s in statements if line >= starts[0] for n in names_in(s)}


@contextlib.contextmanager
def kept_apart(rw, fn) -> Iterator[frozenset[str]]:
    """Marks the user's uses of the generated names in `fn` while its version is written.

    Yields the names to keep apart (see :func:`renamed`); on the way out the
    rewriter's written code, steps and notes, and a refusal's message, lose
    their marks.
    """
    outer = rw.user_names
    used = _read_late(rw, fn)
    if fn.name == WRAPPER:  # its version's body goes back into the script's own scope
        used |= _SCRIPT_SCOPE.get()
    rw.user_names = frozenset(n for n in GENERATED if n in used and fn.kind(n) == "plain")
    try:
        yield rw.user_names
    except MigrateError as e:
        e.args = tuple(unmark(a) if isinstance(a, str) else a for a in e.args)
        raise
    finally:
        rw.user_names = outer
        if not outer:
            rw.generated = {k: unmark(v) for k, v in rw.generated.items()}
            rw.dropped[:] = [unmark(d) for d in rw.dropped]
            rw.differences[:] = [unmark(d) for d in rw.differences]
            rw.steps[:] = [
                dataclasses.replace(
                    s,
                    legacy=unmark(s.legacy),
                    replacement=unmark(s.replacement),
                    fates=[(unmark(a), unmark(b)) for a, b in s.fates],
                )
                for s in rw.steps
            ]
