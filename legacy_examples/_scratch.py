"""Scratch directories for the examples' ``queue-pipeline compare`` entry points.

The entry points write bundled data once per process; the directory they
write it to is removed when the process exits, so runs of ``compare`` (and of
the test suite) leave nothing behind in the temporary directory.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile

__all__ = ["scratch_dir"]


def scratch_dir(prefix: str) -> str:
    """Makes a new temporary directory, removed with its contents at interpreter exit.

    Args:
        prefix: The directory name's prefix, e.g. ``"queue_pipeline_cifar_"``.

    Returns:
        The directory's path.

    Side effects:
        Creates the directory and registers its removal with :mod:`atexit`.
    """
    directory = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory
