"""A proof that fails with a TF error on the twin side: the user's line of the failing op.

NOTE [ The user's line of a failing twin op ]
A kernel that fails inside a Dataset function names only its node
(``[[{{node Slice_1}}]]``): neither the migrated line nor the user's. When the
twin raises that way, the twin is built again in a graph of its own, the op is
looked up in the graphs of the Dataset's functions (``per_record``, ``per_batch``
and the ones the Datasets it reads from map), and the innermost frame of its
creation in the migrated module gives the written line. The written code copies
the user's statements, so that line is found in the user's file by its text
(the k-th copy of a line written several times is the k-th such line of the
user's file); the message then names the user's file:line and its code. Where
any step fails (the op is not found, the line was written by migrate itself),
the message stays as it was.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Callable, Iterator
from typing import Any

import tensorflow as tf

__all__ = ["user_line_of_failure"]

_NODE = re.compile(r"\{\{node ([^}]+)\}\}")


def _dataset_graphs(value: Any) -> Iterator[Any]:
    """The function graphs of every Dataset in `value` and of those they read."""
    stack = [d for d in tf.nest.flatten(value) if isinstance(d, tf.data.Dataset)]
    seen: set[int] = set()
    while stack:
        dataset = stack.pop()
        dataset = getattr(dataset, "_dataset", dataset)  # a DatasetV1Adapter
        if id(dataset) in seen:
            continue
        seen.add(id(dataset))
        with contextlib.suppress(AttributeError, TypeError, NotImplementedError):
            for wrapper in dataset._functions():  # noqa: SLF001 - no public walk of a Dataset
                yield wrapper.function.graph
        with contextlib.suppress(AttributeError, TypeError, NotImplementedError):
            stack += list(dataset._inputs())  # noqa: SLF001


def _written_line(build: Callable[[], Any], node: str, code_path: str) -> int | None:
    """The line of the migrated module (its code is `code_path`) that made op `node`."""
    with tf.Graph().as_default():
        built = build()
        for graph in _dataset_graphs(built):
            with contextlib.suppress(KeyError, ValueError):
                op = graph.get_operation_by_name(node)
                lines = [f.lineno for f in op.traceback if f.filename == code_path]
                if lines:
                    return lines[-1]
    return None


def _user_line(written: int, source: str, user: str) -> tuple[int, str] | None:
    """(line of `user`, its text) that the written line `written` of `source` copies."""
    lines = source.splitlines()
    text = lines[written - 1].strip() if 0 < written <= len(lines) else ""
    if not text:
        return None
    user_lines = user.splitlines()
    matcher = difflib.SequenceMatcher(a=user_lines, b=lines, autojunk=False)
    kept = {b.b + k + 1: b.a + k + 1 for b in matcher.get_matching_blocks() for k in range(b.size)}
    if written in kept:  # a line of the user's own code
        return kept[written], text
    copies = [i for i in range(1, len(lines) + 1) if i not in kept and lines[i - 1].strip() == text]
    found = [i + 1 for i, line in enumerate(user_lines) if line.strip() == text]
    if not found:
        return None
    at = copies.index(written) if written in copies else 0
    return found[min(at, len(found) - 1)], text


def user_line_of_failure(
    message: str, build: Callable[[], Any], code_path: str, source: str, path: str
) -> str:
    """`` The op that failed ... is ...`` for a twin-side TF error `message`, or ``""``.

    Args:
      message: the error's text.
      build: makes the twin (its Dataset or the structure holding it) again.
      code_path: the filename the migrated module's code runs under.
      source: the migrated module's source.
      path: the user's file (a method's copy: its lines are mapped by the caller).
    """
    found = _NODE.search(message)
    if found is None or "twin" not in message:
        return ""
    try:
        written = _written_line(build, found.group(1), code_path)
        with open(path, encoding="utf-8") as f:
            user = f.read()
    except Exception:  # noqa: BLE001 - only a better message is lost
        return ""
    where = _user_line(written, source, user) if written is not None else None
    if where is None:
        return ""
    line, text = where
    return (
        f"\nThe op that failed ({found.group(1)}) is made by the migrated copy of "
        f"{path}:{line}: `{text}`."
    )
