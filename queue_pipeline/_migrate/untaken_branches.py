"""A branch of the written function that leaves a name the migration made unbound.

NOTE [ A branch that makes no Dataset ]
monodepth's loader batches in its ``if mode == 'train':`` branch and keeps
one unbatched record as its attribute in ``elif mode == 'test':``. Rewritten,
the first branch binds ``dataset``; the second maps its records and binds no
``dataset``, so the code after the ``if`` (the attributes' dict, the
prefetch) fails there, and the proof cannot see it: the run takes one
branch. So every written function is read once more (Python's syntax tree):
a name the migration binds in one branch of an ``if`` (a name the user's
function never assigns, and not bound before the ``if``) that another
explicit branch, ending in no ``return`` or ``raise``, leaves unbound is
refused at that branch's line, with the fix. (A user's parameter the
written code rebinds, where the user's code never did, is not bound before:
the parameter held something else.)
"""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate.loading import MigrateError

__all__ = ["branch_without", "check_branches"]

API = "queue-pipeline migrate"


def branch_without(text: str, user_assigned: set[str], user_params: set[str]):
    """(the ``if`` test of the branch, the missing name) in the written function `text`, or None.

    Args:
      text: one written function's source (``def ...``), dedented.
      user_assigned: the names the user's function assigns.
      user_params: the user's function's parameters.
    """
    fn = ast.parse(text).body[0]
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    rebound = _assigned(fn.body) - user_assigned
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    before = params - (user_params & rebound)
    return _block(fn.body, before, user_assigned)


def _block(stmts: list, before: set[str], user: set[str]):
    bound = set(before)
    for st in stmts:
        if isinstance(st, ast.If):
            branches = _branches(st)
            tops = [_assigned(body) for _, body in branches]
            made = set().union(*tops) - bound - user
            for (test, body), names in zip(branches, tops):
                if made - names and not _exits(body):
                    return test, sorted(made - names)[0]
            for _, body in branches:
                found = _block(body, bound, user)
                if found:
                    return found
        bound |= _assigned([st])
    return None


def _branches(st: ast.If) -> list[tuple[ast.expr | None, list]]:
    """The explicit branches of an ``if`` / ``elif`` / ``else`` chain: (test, body)."""
    out: list[tuple[ast.expr | None, list]] = [(st.test, st.body)]
    orelse = st.orelse
    while orelse:
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):
            out.append((orelse[0].test, orelse[0].body))
            orelse = orelse[0].orelse
        else:
            out.append((None, orelse))
            break
    return out if len(out) > 1 else []


def _exits(body: list) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _assigned(stmts: list) -> set[str]:
    """Names the statements bind in their own scope (not in nested functions' bodies)."""
    names: set[str] = set()
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def check_branches(rw, fn, text: str) -> None:
    """Raises MigrateError for a branch of `fn`'s written version `text` that leaves a
    name the migration made unbound: NOTE [ A branch that makes no Dataset ]."""
    user = ast.parse(textwrap.dedent(rw.code(fn.node))).body
    assigned = _assigned(user[0].body) if isinstance(user[0], ast.FunctionDef) else set()
    found = branch_without(textwrap.dedent(text), assigned, set(fn.params))
    if found is None:
        return
    test, missing = found
    shown = ast.unparse(test) if test is not None else "else"
    line = next(
        (
            rw.positions[node].start.line
            for node in m.findall(fn.node, m.If())
            if isinstance(node, cst.If) and test is not None and _same(rw.code(node.test), test)
        ),
        fn.first,
    )
    raise MigrateError(
        f"{API}: {rw.where(line)}: cannot migrate the branch `{shown}`, which the run did not "
        f"take: another branch of its `if` makes the Dataset (`{missing}`) and this one makes "
        "none (it has no batching call the migration follows), so the tf.data version would "
        "fail there. Fix: migrate with arguments that take this branch (--call), or move each "
        "branch's pipeline into a function of its own and migrate each"
    )


def _same(code: str, test: ast.expr) -> bool:
    try:
        return ast.dump(ast.parse(code.strip(), mode="eval").body) == ast.dump(test)
    except SyntaxError:
        return False
