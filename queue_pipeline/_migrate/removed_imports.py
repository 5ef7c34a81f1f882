"""An import of a removed TensorFlow module, dropped from the written module.

NOTE [ A removed import the written code does not need ]
FastMaskRCNN's ``coco.py`` starts with ``import tensorflow.contrib.slim as
slim``; the function migrated does not need it, so migrate's load skipped it
(listed under "Not run of the file"). Copied into the written module as is,
it makes that module fail to import on TensorFlow 2.x, for a name the tf.data
code never reads. Such an import (one line of a ``tensorflow.`` module whose
import failed when migrate loaded the file, binding no name the added code
reads) is commented out in the written module, with a line of the report saying so and,
when the legacy code kept beside it still reads the name, what to import
instead for that code.
"""

from __future__ import annotations

import re

from queue_pipeline._scripts.removed import REMOVED

__all__ = ["without_removed_imports"]

_SKIPPED = re.compile(
    r"^(?P<where>.+):(?P<line>\d+): `(?P<stmt>(?:import|from) tensorflow\.[^`]+)`: raised "
    r"(RemovedModuleError|ModuleNotFoundError)"
)
_MARK = "  # removed in TensorFlow 2.x; the tf.data code does not need it (queue-pipeline migrate)"


def without_removed_imports(source: str, added: str, not_run: list[str]) -> tuple[str, list[str]]:
    """(`source` with each removed import `added` does not need commented out, the
    report's lines about them)."""
    notes: list[str] = []
    lines = source.splitlines(keepends=True)
    for entry in not_run:
        found = _SKIPPED.match(entry)
        if found is None:
            continue
        stmt = found.group("stmt")
        names = _bound(stmt)
        if not names or any(re.search(rf"(?<![\w.]){n}(?!\w)", added) for n in names):
            continue
        index = next((k for k, ln in enumerate(lines) if ln.strip() == stmt), None)
        if index is None:
            continue
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        lines[index] = f"{indent}# {stmt}{_MARK}\n"
        rest = "".join(lines)
        still = [n for n in names if re.search(rf"(?<![\w.#]){n}\.", rest)]
        notes.append(
            f"{found.group('where')}:{found.group('line')}: `{stmt}`: commented out in the "
            "written module (TensorFlow 2.x removed it, so the module would not import, and "
            "the tf.data code does not use it)"
            + (
                f"; the legacy code kept there still reads `{', '.join(still)}`: "
                f"{_instead(stmt)} if you call it"
                if still
                else ""
            )
        )
    return "".join(lines), notes


def _bound(stmt: str) -> list[str]:
    """The names an ``import`` statement of one line binds."""
    if stmt.startswith("import "):
        names = []
        for part in stmt[len("import ") :].split(","):
            module, _, alias = part.strip().partition(" as ")
            names.append(alias.strip() or module.split(".")[0])
        return names
    found = re.match(r"from \S+ import (.+)$", stmt)
    if found is None or "(" in found.group(1):
        return []
    return [
        (p.strip().partition(" as ")[2] or p.strip()).strip() for p in found.group(1).split(",")
    ]


def _instead(stmt: str) -> str:
    """What to do instead of the removed import, from the removed-API table."""
    module = re.sub(r"^(import|from)\s+", "", stmt).split()[0]
    chain = module.split(".")[1:] if module.startswith("tensorflow.") else []
    for size in range(len(chain), 0, -1):
        fix = REMOVED.get(".".join(chain[:size]))
        if fix is not None:
            return fix
    return "import its TensorFlow 2.x replacement"
