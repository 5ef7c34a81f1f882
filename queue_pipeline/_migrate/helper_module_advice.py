"""A script whose pipeline is built by a function of another of the program's modules.

NOTE [ A script's pipeline built in another module ]
A script parses its flags and calls ``img, label =
_read_and_decode(a.tfrecord_dir, width=120, height=213)``, imported from a
module beside it (``from readAndDecodeBatch import _read_and_decode``), then
runs its session. The script's region finder reads the file alone, so it
found no producer, reader or batching call and said the script "builds no
queue pipeline": false. The migration of a script rewrites its own lines;
the pipeline is in the other file, where it can be migrated as a function.
So the refusal names the call's line, the other file's function and the
command that migrates it, with the call's arguments when they are literals
(else the names whose values to give).
"""

from __future__ import annotations

import ast
import os

import libcst as cst

from queue_pipeline._migrate.program_files import called, imported, input_function

__all__ = ["helper_elsewhere"]

_API = "queue-pipeline migrate"


def helper_elsewhere(module: cst.Module, positions, stmts: list, path: str, where: str) -> str:
    """The refusal for `stmts` (the script's) calling another module's pipeline function, or "".

    Args:
      module: the script's syntax tree; positions: its PositionProvider.
      stmts: the statements searched (the module level or the function's body).
      path: the script; where: how the message names the scope.
    """
    directory = os.path.dirname(os.path.realpath(path))
    wanted = called(module, imported(module, directory))
    if not wanted:
        return ""
    code = cst.Module([]).code_for_node
    for st in stmts:
        if isinstance(st, (cst.FunctionDef, cst.ClassDef)):
            continue
        for call in cst.matchers.findall(st, cst.matchers.Call()):
            if not isinstance(call, cst.Call) or code(call.func) not in wanted:
                continue
            file, name, _ = wanted[code(call.func)]
            found = input_function(file, name)
            if found is None:
                continue
            line = positions[call].start.line
            shown = os.path.relpath(file, directory) if file.startswith(directory) else file
            arguments = ", ".join(code(a).rstrip(", ") for a in call.args)
            unknown = [code(a.value) for a in call.args if not _literal(code(a.value))]
            given = (
                f' --call "{arguments}"'
                if not unknown
                else f' --call "{arguments}" with the value of {", ".join(unknown)} in place '
                "of the name"
            )
            scope = "the script" if where.endswith("at module level") else where.split(": ")[-1]
            return (
                f"{_API}: {path}:{line}: {scope} builds its queue pipeline in another module of "
                f"the program: `{code(call.func)}(...)` is {shown}:{name} (line {found[2]}), "
                "which makes the producer, reader or batching calls; a script's migration "
                "rewrites its own lines only. Fix: migrate that function: "
                f"queue-pipeline migrate {shown}:{name}{given} (then read its Dataset in "
                "the script)."
            )
    return ""


def _literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True
