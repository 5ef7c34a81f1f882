"""Data a pipeline function draws at random while it is built: held equal, or shown unreproducible.

NOTE [ Random data made while the pipeline is built ]
A function may make its own records with NumPy or Python's ``random``
(``images = np.random.random([num, 5, 5, 3])`` before
``slice_input_producer``). Each build of it then holds other data: the trace,
the legacy side and the twin each draw anew, and a faithful migration
compares DIFFER. Two answers were weighed: build the legacy side twice and
give up (UNVERIFIED) when its data differs, or hold the global random state
equal so that both sides draw the same numbers. The second makes the proof
real (both sides run the user's same code with the same draws), so it is the
rule: every side's build starts from the global state the proof found
(:class:`HeldRandomState`), the verdict says so when a build drew from it,
and the user's state is restored afterwards. Draws the global state does not
decide (an unseeded ``np.random.default_rng()``, ``os.urandom``) still
differ; for a DIFFER the legacy side is then built twice more, and where its
constants differ between the two builds the verdict is UNVERIFIED, naming
the line that made them (:func:`unreproducible_constant`).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator

import numpy as np
import tensorflow as tf

__all__ = ["HeldRandomState", "unreproducible_constant"]


class HeldRandomState:
    """NumPy's and Python's global random state, the same at the start of every build."""

    def __init__(self) -> None:
        self._numpy = np.random.get_state()
        self._python = random.getstate()
        self.drew: set[str] = set()

    @contextlib.contextmanager
    def build(self) -> Iterator[None]:
        """One side's build, from the held state; notes whether it drew from it."""
        np.random.set_state(self._numpy)
        random.setstate(self._python)
        try:
            yield
        finally:
            if not _same_numpy_state(np.random.get_state(), self._numpy):
                self.drew.add("numpy's")
            if random.getstate() != self._python:
                self.drew.add("Python's")

    def restore(self) -> None:
        """The user's global state as the proof found it."""
        np.random.set_state(self._numpy)
        random.setstate(self._python)

    def condition(self) -> str:
        """The verdict's note, or "" when no build drew from the global state."""
        if not self.drew:
            return ""
        names = " and ".join(sorted(self.drew))
        return (
            f"{names} global random state held equal for both sides' builds (the function "
            "draws its data at random while it builds; both sides drew the same values)"
        )


def _same_numpy_state(a, b) -> bool:
    if not isinstance(a, tuple) or not isinstance(b, tuple) or len(a) != len(b):
        return False
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


def unreproducible_constant(build: Callable[[], object], path: str | None) -> str:
    """Why two builds of the legacy side hold different data, or "" if they hold the same.

    NOTE [ Random data made while the pipeline is built ]. `build` makes the
    legacy side in the default graph; it runs twice, each in a fresh graph,
    and the constants of the two graphs are compared in order. The first
    constant that differs is named by the line of `path` (the user's file)
    that made it, else by the nearest line outside TensorFlow.
    """
    graphs = []
    for _ in range(2):
        graph = tf.Graph()
        with graph.as_default():
            try:
                build()
            except Exception:  # noqa: BLE001 - the proof's own build reports its errors
                return ""
        graphs.append(graph)
    first, second = ([op for op in g.get_operations() if op.type == "Const"] for g in graphs)
    if len(first) != len(second):
        return ""
    for a, b in zip(first, second):
        left, right = _value(a), _value(b)
        if left is None or right is None:
            continue
        if left.shape == right.shape and left.dtype == right.dtype and _equal(left, right):
            continue
        where = _line_of(a, path)
        return (
            "the legacy function's own data is not reproducible: two builds of it hold "
            f"different values in the constant {a.name!r} ({left.dtype}{list(left.shape)})"
            + (f", made at {where}" if where else "")
            + "; its data is drawn anew at every call (unseeded), so no two runs can be "
            "compared; seed it or read the data from a file to prove the migration"
        )
    return ""


def _value(op) -> np.ndarray | None:
    try:
        return tf.make_ndarray(op.get_attr("value"))
    except (ValueError, TypeError):
        return None


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _line_of(op, path: str | None) -> str:
    """FILE:LINE: `source` of the frame in `path` that made `op`, else the nearest non-TF frame."""
    frames = list(op.traceback or ())
    mine = [f for f in frames if path and f.filename == path]
    others = [
        f
        for f in frames
        if "/tensorflow/" not in f.filename
        and "/queue_pipeline/" not in f.filename
        and "/site-packages/" not in f.filename
    ]
    chosen = (mine or others or [None])[-1]
    if chosen is None:
        return ""
    line = (chosen.line or "").strip()
    return f"{chosen.filename}:{chosen.lineno}" + (f" (`{line}`)" if line else "")
