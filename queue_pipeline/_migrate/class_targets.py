"""``FILE.py:Class.method`` and ``FILE.py:Class``: NOTE [ Migrating a method ] and NOTE
[ Migrating a constructor ] in :mod:`queue_pipeline._migrate.methods`, NOTE [ Several pipelines
in a constructor ] in :mod:`queue_pipeline._migrate.constructor_pipelines`."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re

from queue_pipeline._migrate import classes as _classes
from queue_pipeline._migrate import constructor_pipelines as _pipelines
from queue_pipeline._migrate import codegen
from queue_pipeline._migrate import foreign as _foreign
from queue_pipeline._migrate import methods as _methods
from queue_pipeline._migrate import script as _script
from queue_pipeline._migrate import trace as _trace

from queue_pipeline._migrate.trace import MigrateError

from queue_pipeline._migrate.line_maps import (
    at_lines,
    at_lines_of,
    foreign_step,
    method_lines,
    unchanged_lines,
)
from queue_pipeline._migrate.proven import MigrationResult, finish, merged, rewrite_and_prove

__all__ = ["migrate_constructor", "migrate_method"]


def migrate_constructor(
    path, qualified, call, target, in_place, verify, epochs, max_batches, batch_decode, argv
) -> MigrationResult:
    """``Class``: NOTE [ Migrating a constructor ] in methods.py; each of several
    pipelines on its own (NOTE [ Several pipelines in a constructor ])."""
    groups = _classes.constructor_batches(path, qualified, call, argv)
    given = (call, verify, epochs, max_batches, batch_decode, argv)
    if len(groups) < 2:
        return migrate_method(path, qualified, *given, target=target, in_place=in_place,
                               batches=groups[0] if groups else [])  # fmt: skip
    real, original = _trace.read_source(path)
    source = original
    passes: list[MigrationResult] = []
    # the last first: each is written right after __init__, so they end up in order
    for group, name in reversed(list(zip(groups, _pipelines.method_names(groups)))):
        others = [a for g in groups if g is not group for a in g]
        lines = unchanged_lines(original, source)
        try:
            result = migrate_method(
                path, qualified, *given, source=source, batches=group, others=others,
                new_method=name,
            )  # fmt: skip
        except MigrateError as e:
            raise MigrateError(at_lines(str(e), real, lines)) from e
        passes.insert(0, at_lines_of(result, real, lines))
        source = result.source
    verdict, steps, dropped, differences = merged(passes)
    function = " and ".join(p.function for p in passes)
    rewrite = codegen.Rewrite(source, "".join(p.added for p in passes), function, [], [], [])
    return finish(
        path, original, source, target, in_place, rewrite, steps, dropped, differences,
        verdict, passes[-1].original,
    )  # fmt: skip


def migrate_method(
    path, qualified, call, verify, epochs, max_batches, batch_decode, argv, *, target=None,
    in_place=False, source=None, batches=None, others=None, new_method="",
) -> MigrationResult:  # fmt: skip
    """``Class.method``: NOTE [ Migrating a method ] in methods.py; ``Class`` (the
    constructor) with `batches`, its batch attributes, and `others`, those of its other
    pipelines, in the file's text `source` (default: the file's)."""
    real, original = _trace.read_source(path)
    original = original if source is None else source
    constructor = "." not in qualified
    made = None
    if constructor:
        lifted = _methods.lift_keeping(original, real, qualified, batches or [], others, new_method)
    else:
        lifted = _methods.lift(original, real, qualified)
        try:
            probe = _classes.probe_method(path, lifted, call, argv)
        except MigrateError as e:
            raise MigrateError(_with_call_form(str(e), lifted.cls)) from e
        made = probe.made
        if made is not None:  # NOTE [ A method reading what its constructor built ]
            lifted = _methods.lift_with_constructor(original, real, qualified, probe.held)
        elif probe.kept:  # NOTE [ Migrating a constructor ], for a method
            lifted = _methods.lift_keeping(original, real, qualified, probe.kept)
    combined = made is not None
    lifted = _methods.with_reading_methods(lifted, original, real)
    foreign = _foreign.lift(lifted.source, real)  # NOTE [ Following a function of another module ]
    if foreign is not None:
        locals_ = tuple(f.local for f in foreign.followed)
        lifted = dataclasses.replace(
            lifted, source=foreign.source, helpers=lifted.helpers + locals_
        )
    copy = _script.copy_path_for(real, kind="method")
    with open(copy, "w", encoding="utf-8") as f:
        f.write(lifted.source)
    try:
        module, _ = _trace.load_module(copy, lifted.function, argv, call)
        cls = lifted.cls
        if made is not None:
            pass
        elif constructor:
            made = f"{cls}.__new__({cls}), {call or ''}"
        elif _classes.names_the_instance(module, cls, call):  # `--call 'Reader(a, b), 4'`
            made = call or ""
        else:
            made = f"{cls}({call or ''})"
        args, kwargs, graph_call = _trace.call_arguments(module, made)
        traced = _trace.trace(
            copy, lifted.function, args, kwargs, module=module, argv=argv, graph_call=graph_call
        )
        rewrite, verdict, notes = rewrite_and_prove(
            traced, lifted.source, verify, batch_decode, args, kwargs, epochs, max_batches,
            argv, graph_call,
        )  # fmt: skip
        rewritten = foreign.write_back(rewrite.source) if foreign else rewrite.source
        source = _methods.write_back(lifted, rewritten, rewrite.function)
        source = foreign.finish(source) if foreign else source
    except MigrateError as e:
        text = foreign.map_lines(str(e), copy) if foreign else str(e)
        text = lifted.map_lines(text, copy, real)
        if not constructor and not combined:
            text = _with_call_form(text, lifted.cls)
        raise MigrateError(text) from e
    finally:
        with contextlib.suppress(OSError):
            os.remove(copy)
    steps = [
        dataclasses.replace(step, line=lifted.file_line(step.line)) if step.line else step
        for step in rewrite.steps
    ]
    if foreign is not None:
        steps = [
            foreign_step(foreign, old if foreign.place(old.line) else new)
            for old, new in zip(rewrite.steps, steps)
        ]
    fix = functools.partial(method_lines, lifted, foreign, copy_path=copy, path=real)
    name = f"{lifted.cls}.{lifted.new_method or lifted.method + '_dataset'}"
    notes = list(notes)
    if combined:
        notes.append(
            f"{real}:{lifted.method_first}: {name}(self, <the constructor's parameters>, *, "
            f"<{lifted.method}'s>) runs the constructor's statements and {lifted.method}'s: "
            f"the constructor built the records {lifted.method} batched"
        )
    if lifted.model is not None:  # NOTE [ The model after the input, in a method ]
        notes.append(
            f"{real}:{lifted.model[0]}-{lifted.model[1]}: the rest of {lifted.method} (the "
            f"model built on the batches) stays in {lifted.method}; {name} ends where the "
            "batches are made"
        )
    if constructor:
        notes.append(
            f"{real}:{lifted.method_first}: {name}(self, ...) does the constructor's work with "
            "its batch attributes as the Dataset's elements (a dict by attribute name); "
            f"__init__ is kept as it was: call {name.rpartition('.')[2]} from it in place of "
            "the pipeline to switch"
        )
    added = foreign.finish(rewrite.added) if foreign else rewrite.added
    return finish(
        path, original, source, target, in_place,
        dataclasses.replace(rewrite, function=name, added=added),
        steps, [fix(d) for d in rewrite.dropped], [fix(d) for d in rewrite.differences + notes],
        verdict, traced.module,
        not_run=[fix(n) for n in module.__dict__.get("__qp_skipped__", [])],
    )  # fmt: skip


def _with_call_form(text: str, cls: str) -> str:
    """`text`, with the form of a method's `--call` where its arguments did not fit."""
    if not re.search(r"positional argument|unexpected keyword argument", text):
        return text
    return text + (
        f" A method's own arguments follow its instance: --call "
        f"'{cls}(CONSTRUCTOR ARGS), METHOD ARGS' (--call 'ARGS' alone is the constructor's)."
    )
