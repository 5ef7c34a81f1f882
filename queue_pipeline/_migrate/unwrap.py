"""Putting a migrated inline pipeline back into the user's script.

:func:`unwrap` replaces the region :func:`~queue_pipeline._migrate.script.wrap`
cut out of the file with the tf.data version's body, at the region's place and
indentation, and drops the queue runners of the session code around it (see
the module docstring of :mod:`queue_pipeline._migrate.script`).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.callers import drop_queue_runners
from queue_pipeline._migrate.removed_objects import drop_uses
from queue_pipeline._migrate.script import LOADER, WRAPPER, Wrapped
from queue_pipeline._migrate.syntax import assigned_names, string_lines

__all__ = ["unwrap"]


def unwrap(
    wrapped: Wrapped,
    original: str,
    migrated_source: str,
    new_function: str,
    *,
    initializable: bool = False,
) -> tuple[str, list[str]]:
    """The file with its region replaced by `new_function`'s body, at the region's place.

    Args:
      wrapped: what :func:`wrap` returned.
      original: the file's text.
      migrated_source: the copy with the migrated functions inserted (the
        rewriter's ``source``).
      new_function: the name of the region's tf.data version.
      initializable: the pipeline reads variables: it is read through an
        initializable iterator, initialized where the runners were started.

    Returns:
      (the new text, what changed in the session code).
    """
    module = cst.parse_module(migrated_source)
    fn = next(
        s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == new_function
    )
    assert isinstance(fn.body, cst.IndentedBlock)  # the rewriter writes blocks
    statements = list(fn.body.body)
    last = statements[-1]
    returned = (
        last.body[0].value
        if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return)
        else None
    )
    loads: list[str] = []
    if isinstance(returned, cst.Tuple):  # (dataset, _load_variables): the loads stay put
        # (dataset, load): arrays held in variables, NOTE [ Preloaded arrays in a
        # migrated TF1-mode program ]: `load(sess)` runs where the runners started
        loads = [
            e.value.value
            for e in returned.elements[1:]
            if isinstance(e.value, cst.Name) and e.value.value != LOADER
        ]
        initializable = initializable or bool(loads)
        returned = returned.elements[0].value
        statements = [
            st
            for st in statements
            if not (isinstance(st, cst.FunctionDef) and st.name.value == LOADER)
        ]
    assert returned is not None
    # The copy's text before the wrapper is the file's first `prologue_lines`
    # lines with the helpers' versions inserted; module helpers written with
    # the wrapper's version (the preloaded arrays' one) go with them.
    helpers = migrated_source[: migrated_source.index(f"def {WRAPPER}(")]
    for in_copy, as_written in wrapped.restore:  # the user's functions as written
        helpers = helpers.replace(in_copy, as_written)
    extra = "".join(
        cst.Module([]).code_for_node(st.with_changes(leading_lines=())) + "\n\n"
        for st in module.body
        if isinstance(st, cst.FunctionDef)
        and st.name.value not in (WRAPPER, new_function)
        and f"def {st.name.value}(" not in helpers
    )
    if (extra or wrapped.definitions) and helpers.strip() and not helpers.endswith("\n\n\n"):
        helpers = helpers.rstrip("\n") + "\n\n\n"  # two blank lines before a definition
    helpers += extra
    code = cst.Module([], default_indent=wrapped.unit).code_for_node
    # The statements copied before the region, in their order (a statement of
    # the region may read as one of them: `records = records.repeat()` of a
    # pipeline migrated by an earlier pass).
    copied = [_bare(code(s)) for s in wrapped.before]
    kept = []
    for st in statements[:-1]:
        if copied and _bare(code(st)) == copied[0]:
            copied.pop(0)
        elif _bare(code(st)) in copied:
            del copied[: copied.index(_bare(code(st))) + 1]
        else:
            kept.append(st)
    used = {
        n.value for n in m.findall(cst.parse_module(original), m.Name()) if isinstance(n, cst.Name)
    }
    var = next(n for n in ("dataset", "input_dataset", "migrated_dataset") if n not in used)
    body = "".join(code(st) for st in _spaced(kept, top=wrapped.indent == ""))
    if wrapped.lead and not body.startswith(wrapped.lead):
        body = wrapped.lead + body  # the blank line or comment above the region
    returned = _not_prefetched_twice(returned, kept, module)
    if code(returned).strip() != var:
        body += f"{var} = {code(returned)}\n"
    initializer = ""
    if initializable:  # a one-shot iterator cannot capture a variable
        it = next(n for n in ("iterator", "input_iterator", "dataset_iterator") if n not in used)
        body += f"{it} = tf.compat.v1.data.make_initializable_iterator({var})\n"
        body += f"{', '.join(wrapped.names)} = {it}.get_next()\n"
        initializer = f"{it}.initializer"
    else:
        iterator = f"tf.compat.v1.data.make_one_shot_iterator({var}).get_next()"
        body += f"{', '.join(wrapped.names)} = {iterator}\n"
    in_string = string_lines(body)
    body = "".join(
        line if (k + 1) in in_string or not line.strip() else wrapped.indent + line
        for k, line in enumerate(body.splitlines(keepends=True))
    )
    lines = original.splitlines(keepends=True)
    edits = [(line, st) for st, line in wrapped.kept] + [(a, b) for a, b in wrapped.pulled]
    for line, what in sorted(edits, key=lambda edit: -edit[0]):
        if isinstance(what, int):  # NOTE [ A pipeline finished in the session block ]
            del lines[line - 1 : what]
            continue
        # a reader the code after the region reads again: made just before that read
        indent = lines[line - 1][: len(lines[line - 1]) - len(lines[line - 1].lstrip())]
        lines.insert(line - 1, indent + _bare(code(what)).strip() + "\n")
    first, last_line = wrapped.region
    new = (
        helpers
        + "".join(lines[wrapped.prologue_lines : first - 1])
        + body
        + "".join(lines[last_line:])
    )
    datasets = frozenset(n for st in kept for n in assigned_names(st)) | {var}
    new, removed = drop_queue_runners(new, wrapped.scope, initializer, datasets, loads)
    # NOTE [ Lines that use the removed queue objects ]
    made_again = (
        datasets | set(wrapped.names) | {n for st, _ in wrapped.kept for n in assigned_names(st)}
    )
    if initializer:
        made_again |= {initializer.split(".")[0]}
    new, uses = drop_uses(new, wrapped.scope, set(wrapped.made - made_again))
    return new, removed + uses


def _bare(code: str) -> str:
    """A statement's code without the blank lines and comments above it."""
    lines = code.splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("#")):
        lines.pop(0)
    return "\n".join(lines)


def _spaced(statements: list, *, top: bool) -> list:
    """At module level, two blank lines around each ``def`` (as a formatter would)."""
    if not top:
        return statements
    two = [cst.EmptyLine(), cst.EmptyLine()]
    out = []
    after_def = False
    for st in statements:
        comments = [line for line in st.leading_lines if line.comment is not None]
        if isinstance(st, cst.FunctionDef) or after_def:
            st = st.with_changes(leading_lines=[*two, *comments])
        after_def = isinstance(st, cst.FunctionDef)
        out.append(st)
    return out


def _not_prefetched_twice(returned: cst.BaseExpression, kept: list, module: cst.Module):
    """`returned` without its ``.prefetch(...)`` when the Dataset it prefetches is the
    result of a function of the module whose every ``return`` prefetches already
    (``dataset = f_dataset()``, then the region's ``dataset.prefetch(AUTOTUNE)``)."""
    if not (
        isinstance(returned, cst.Call)
        and isinstance(returned.func, cst.Attribute)
        and returned.func.attr.value == "prefetch"
        and isinstance(returned.func.value, cst.Name)
        and kept
    ):
        return returned
    name = returned.func.value.value
    last = kept[-1]
    assign = last.body[0] if isinstance(last, cst.SimpleStatementLine) else None
    if not (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and m.matches(assign.targets[0].target, m.Name(name))
        and isinstance(assign.value, cst.Call)
        and isinstance(assign.value.func, cst.Name)
    ):
        return returned
    called = assign.value.func.value
    definition = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == called),
        None,
    )
    if definition is None:
        return returned
    returns = [r for r in m.findall(definition, m.Return()) if isinstance(r, cst.Return)]
    prefetched = [
        r.value
        for r in returns
        if isinstance(r.value, cst.Call)
        and isinstance(r.value.func, cst.Attribute)
        and r.value.func.attr.value == "prefetch"
    ]
    if not returns or len(prefetched) != len(returns):
        return returned
    return returned.func.value
