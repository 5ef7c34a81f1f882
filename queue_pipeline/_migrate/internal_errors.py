"""An unexpected exception inside the rewrite, reported at the user's line being rewritten.

NOTE [ An internal error of migrate ]
The rewrite follows the user's statements one by one (NOTE [ How a legacy
function is rewritten ] in :mod:`queue_pipeline._migrate.codegen`); a shape no
rule expected can make one of migrate's own steps raise (an ``IndexError``, a
``KeyError``...). That is a bug in migrate, never a verdict: it must not reach
the user as a raw traceback with exit status 1 (the status of DIFFER). The
statement being rewritten when it happened is the user's best lead (and ours),
so the innermost statement names it: FILE:LINE, the statement, the exception,
and that it is to be reported; the command exits 2 and writes nothing. One
raised outside any statement names the file and the function migrated; the
CLI's last net (``cli._migrate_bug``) catches the rest. The exceptions the
rewrite raises and catches itself on purpose pass through.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from queue_pipeline._migrate import chains, vectorize
from queue_pipeline._migrate.loading import MigrateError

_API = "queue-pipeline migrate"
# raised and caught by the rewrite on purpose
_EXPECTED = (MigrateError, chains.Unsupported, vectorize.Unbatchable)

__all__ = ["BUG", "reported", "rewriting"]

# The fix every internal error names (also the CLI's last net, for one raised elsewhere).
BUG = (
    "this is a bug in migrate, not in your code: please report it with the file and the "
    "--call arguments; nothing was written"
)


@contextlib.contextmanager
def reported(rw, fn, stmt) -> Iterator[None]:
    """Re-raises an unexpected exception of rewriting `stmt` (of `fn`) as a MigrateError.

    Args:
      rw: the rewriter (its ``fail`` names the file, line and statement).
      fn: the function whose statement is rewritten.
      stmt: the statement.
    """
    try:
        yield
    except _EXPECTED:
        raise
    except Exception as e:  # noqa: BLE001 - NOTE [ An internal error of migrate ]
        why = f"migrate itself failed while rewriting it ({type(e).__name__}: {e}); {BUG}"
        raise rw.fail(fn, stmt, why) from e


@contextlib.contextmanager
def rewriting(path: str, function: str) -> Iterator[None]:
    """Re-raises an unexpected exception of rewriting `function` of `path`, outside any of
    its statements, as a MigrateError: NOTE [ An internal error of migrate ]."""
    try:
        yield
    except _EXPECTED:
        raise
    except Exception as e:  # noqa: BLE001 - NOTE [ An internal error of migrate ]
        raise MigrateError(
            f"{_API}: {path}: migrating {function}() failed inside migrate "
            f"({type(e).__name__}: {e}); {BUG}."
        ) from e
