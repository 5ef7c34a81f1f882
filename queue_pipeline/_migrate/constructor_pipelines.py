"""Several pipelines in one constructor: which attributes go together, which lines each needs.

NOTE [ Several pipelines in a constructor ]
An input class often builds a training and a validation pipeline in its
``__init__`` and keeps both batches as attributes (a face-attributes model's
``self.train_images, self.train_attrs = tf.train.shuffle_batch(...)``, then
``self.val_images, self.val_attrs = tf.train.batch(...)`` from other files).
A Dataset holds one pipeline, so ``FILE.py:Class`` migrates each on its own:

* **Which attributes go together** is read from the graph the constructor
  built: the attributes computed from the same dequeue ops are one pipeline's
  batches (:func:`pipelines`).
* **Which lines each needs**: the constructor lifted for one pipeline keeps
  the statements its batches are computed from (by the names each statement
  reads and the last statement before it assigning them), the statements that
  set other attributes, and those that assign nothing; the statements that
  only build another pipeline, or read another pipeline's attributes, become
  blank lines (every line keeps its number) (:func:`only`).
* **Each is migrated and proven** as a constructor with one pipeline (NOTE
  [ Migrating a constructor ]), one after another, each on the file the last
  one wrote: the class gets ``init_<prefix>_dataset(self, ...)`` for each,
  named by what its attributes' names share (``train_images``,
  ``train_attrs``: ``init_train_dataset``; else ``init_dataset_<n>``).
"""

from __future__ import annotations

import os

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from queue_pipeline._migrate.graph_checks import nearest
from queue_pipeline._migrate.syntax import names_in

__all__ = ["dependencies", "method_names", "only", "pipelines"]


def pipelines(instance: object, attributes: list[str], reads: bool = False) -> list[list[str]]:
    """`attributes` of `instance` grouped by the dequeue ops their tensors are computed
    from (with `reads`, also the reader reads: records kept unbatched), in the order
    of their first attribute: one group per pipeline."""
    nearest_ops = _reads_or_dequeues if reads else _dequeues
    groups: dict[frozenset, list[str]] = {}
    for name in attributes:
        value = getattr(instance, name)
        values = value if isinstance(value, (list, tuple)) else [value]
        key = frozenset(op for v in values for op in nearest_ops(v))
        groups.setdefault(key, []).append(name)
    return list(groups.values())


def _dequeues(tensor) -> set[str]:
    """The names of the nearest dequeue ops `tensor` is computed from."""
    return nearest(tensor, lambda op: "Dequeue" in op.type)


def _reads_or_dequeues(tensor) -> set[str]:
    """The names of the nearest dequeue ops or reader reads `tensor` is computed from
    (an unbatched record's pipeline: NOTE [ A constructor keeping unbatched records ])."""
    return nearest(tensor, lambda op: "Dequeue" in op.type or op.type.startswith("ReaderRead"))


def method_names(groups: list[list[str]]) -> list[str]:
    """The tf.data methods' names, one per group: ``init_<shared prefix>_dataset``."""
    names = []
    for i, group in enumerate(groups):
        prefix = os.path.commonprefix(group).rstrip("_")
        if "_" in prefix:
            prefix = prefix.rsplit("_", 1)[0]
        names.append(f"init_{prefix}_dataset" if prefix.isidentifier() else f"init_dataset_{i + 1}")
    if len(set(names)) < len(names):
        names = [f"init_dataset_{i + 1}" for i in range(len(groups))]
    return names


def only(function_text: str, keep: list[str], others: list[str]) -> str:
    """The lifted constructor `function_text` (one ``def`` at its top; `keep`'s
    attributes already locals) with the statements of its body that build only the
    pipelines of `others` (attributes still ``self.<name>``) as blank lines."""
    wrapper = MetadataWrapper(cst.parse_module(function_text))
    function = wrapper.module.body[0]
    if not isinstance(function, cst.FunctionDef) or not isinstance(
        function.body, cst.IndentedBlock
    ):
        return function_text
    positions = wrapper.resolve(PositionProvider)
    body = list(function.body.body)
    other = set(others)
    last, needs = dependencies(body)
    reads_other = [bool(_attributes_read(stmt) & other) for stmt in body]
    roots = [
        i
        for i, stmt in enumerate(body)
        if not reads_other[i]
        and (set(_locals_assigned(stmt)) & set(keep) or not _locals_assigned(stmt))
    ]
    kept: set[int] = set()
    stack = list(roots)
    while stack:
        i = stack.pop()
        if i in kept or reads_other[i]:
            continue
        kept.add(i)
        stack.extend(needs[i])
    lines = function_text.splitlines(keepends=True)
    for i, stmt in enumerate(body):
        if i not in kept:
            first, end = positions[stmt].start.line, positions[stmt].end.line
            for k in range(first - 1, end):
                lines[k] = "\n"
    return "".join(lines)


def dependencies(body: list) -> tuple[dict[str, int], list[set[int]]]:
    """(each local name -> the index of the last statement of `body` assigning it, each
    statement's -> the indices of the statements whose names it reads)."""
    last: dict[str, int] = {}
    needs: list[set[int]] = []
    for i, stmt in enumerate(body):
        needs.append({last[n] for n in _names_read(stmt) if n in last})
        for name in _locals_assigned(stmt):
            last[name] = i
    return last, needs


def _names_read(stmt) -> set[str]:
    """The names `stmt` reads: an assignment's value (and an augmented one's target);
    every name of any other statement."""
    line = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and stmt.body else None
    if isinstance(line, (cst.Assign, cst.AnnAssign)) and line.value is not None:
        targets = line.targets if isinstance(line, cst.Assign) else [line]
        bases = {  # ``self.x`` and ``d[k]`` targets read ``self``, ``d`` and ``k``
            n for t in targets for n in names_in(t.target) if n not in _locals_assigned(line)
        }
        return names_in(line.value) | bases
    return names_in(stmt)


def _locals_assigned(stmt) -> list[str]:
    """The plain names `stmt` binds (assignment targets, loop variables, ``with ... as``);
    not ``self.images = ...`` (that stores into ``self``)."""
    found: list[str] = []
    for node in m.findall(
        stmt, m.AssignTarget() | m.AugAssign() | m.AnnAssign() | m.For() | m.AsName()
    ):
        target = getattr(node, "target", None) or getattr(node, "name", None)
        found += _bound(target)
    return list(dict.fromkeys(found))


def _bound(target) -> list[str]:
    """The names an assignment to `target` binds."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _bound(e.value)]
    if isinstance(target, cst.StarredElement):
        return _bound(target.value)
    return []


def _attributes_read(stmt) -> set[str]:
    """The attributes of ``self`` `stmt` names (read or assigned)."""
    return {
        node.attr.value
        for node in m.findall(stmt, m.Attribute(value=m.Name("self")))
        if isinstance(node, cst.Attribute)
    }
