"""Line numbers of the copies migrate traces, in the user's own files; those of one pass
of several, in the original's."""

from __future__ import annotations

import dataclasses
import difflib
import re

from queue_pipeline._migrate import codegen
from queue_pipeline._migrate import foreign as _foreign


from queue_pipeline._migrate.proven import MigrationResult

__all__ = [
    "at_lines",
    "at_lines_of",
    "foreign_lines",
    "foreign_step",
    "method_lines",
    "unchanged_lines",
]


def unchanged_lines(original: str, current: str) -> dict[int, int]:
    """Line numbers of `current` (1-based) that are unchanged lines of `original`, mapped."""
    matcher = difflib.SequenceMatcher(
        a=original.splitlines(), b=current.splitlines(), autojunk=False
    )
    found = {}
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            found[block.b + k + 1] = block.a + k + 1
    return found


def at_lines(text: str, real: str, lines: dict[int, int]) -> str:
    """`text` with ``REAL:LINE`` of the file a pass read as the original file's lines."""
    if all(k == v for k, v in lines.items()):
        return text
    return re.sub(
        re.escape(real) + r":(\d+)",
        lambda mt: f"{real}:{lines.get(int(mt.group(1)), mt.group(1))}",
        text,
    )


def at_lines_of(result: MigrationResult, real: str, lines: dict[int, int]) -> MigrationResult:
    """`result` of a pass, its steps and notes in the original file's lines."""
    return dataclasses.replace(
        result,
        steps=[
            dataclasses.replace(s, line=lines.get(s.line, s.line)) if s.line else s
            for s in result.steps
        ],
        dropped=[at_lines(d, real, lines) for d in result.dropped],
        differences=[at_lines(d, real, lines) for d in result.differences],
    )


def foreign_lines(foreign: _foreign.Foreign, text: str, copy: str, path: str) -> str:
    """`text` of a copy with followed functions, in the program's own files and names."""
    return foreign.map_lines(text, copy).replace(copy, path)


def foreign_step(foreign: _foreign.Foreign, step: codegen.Step) -> codegen.Step:
    """`step` with its line in a followed function's own file."""
    where = foreign.place(step.line) if step.line else None
    legacy, replacement = foreign.renamed(step.legacy), foreign.renamed(step.replacement)
    step = dataclasses.replace(step, legacy=legacy, replacement=replacement)
    if where is None:
        return step
    return dataclasses.replace(step, file=where[0], line=where[1])


def method_lines(lifted, foreign, text: str, copy_path: str, path: str) -> str:
    """`text` of a method's copy in the program's own files and lines."""
    text = foreign.map_lines(text, copy_path) if foreign is not None else text
    return lifted.map_lines(text, copy_path, path)
