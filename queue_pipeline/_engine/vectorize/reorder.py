"""Exact reorderings of a vectorized region's GraphDef that make its kernels cheaper.

NOTE [ Widening casts before transposes ]
A legacy decoder of CIFAR-style records transposes the image from planes to
pixels while it is still bytes, then casts it to float32::

    image = tf.cast(tf.transpose(tf.reshape(raw[1:], [3, 32, 32]), [1, 2, 0]), tf.float32)

On a batch, TF's CPU ``Transpose`` of bytes is a generic element-by-element
copy (Eigen's block shuffle): for 128 images it took 505 us of the batch's
563 us of decoding (traced in a Session, one thread), and ``perf`` of W3
epochs under the dataset engine put it at 19-21% of all the process's CPU
samples. Where oneDNN is on (TF's default on x86-64), a float32 transpose
runs as oneDNN's reorder instead (228 us for the same batch), so casting
first and transposing the floats costs less than half, although it moves
four times the bytes. Where oneDNN is off, Eigen's float32 transpose is
slower than its byte transpose (W3 with the swap: 623 against 486 ms of CPU
an epoch), so nothing is swapped then.

A cast is element-wise and a transpose only moves elements, so the swap
gives bitwise the same values and the same errors (neither op raises on
values). :func:`widen_before_transposes` makes it where a ``Cast`` from a
one-byte integer or a bool to float32 reads a ``Transpose`` that nothing
else reads (no other op, no control edge, not an output of the region).
The new transpose is a ``ConjugateTranspose``, which for real numbers is
the same permutation and the same kernel: Grappler's arithmetic optimizer,
which tf.data runs on map functions, moves a widening cast back after a
``Transpose`` (to move fewer bytes), and it did so here (perf showed the
byte shuffle again); it leaves ``ConjugateTranspose`` alone. Measured on W3
under the dataset engine, A/B in one process, 8 alternations: CPU an epoch
418 -> 343 ms (TF 2.x), 395 -> 322 ms (TF1 mode); the steady rate 233k ->
285k and 245k -> 296k examples/s.
"""

from __future__ import annotations

from typing import Collection

import tensorflow as tf

from queue_pipeline._engine.vectorize.base import _canonical

__all__ = ["onednn_enabled", "swap_invariant", "widen_before_transposes"]

# Source types whose Transpose takes the slow byte-wise path (the measured
# one-byte types), and the target type oneDNN transposes; the casts between
# them are exact.
_NARROW = frozenset(t.as_datatype_enum for t in (tf.uint8, tf.int8, tf.bool))
_WIDE = tf.float32.as_datatype_enum


def onednn_enabled() -> bool:
    """Whether TF runs its CPU kernels through oneDNN in this process (TF_ENABLE_ONEDNN_OPTS)."""
    try:
        from tensorflow.python.util import _pywrap_util_port  # noqa: PLC0415
    except ImportError:  # pragma: no cover - a build without the probe
        return False
    return bool(_pywrap_util_port.IsMklEnabled())


def swap_invariant(node_def) -> tuple[str, frozenset[str]]:
    """What to name `node_def` by so that a pipeline is the same with or without the swap.

    Returns the op type and the attributes to leave out: a transpose of
    either kind counts as ``Transpose`` whatever its element type (the swap
    turns a byte ``Transpose`` into a float32 ``ConjugateTranspose``, and
    whether it is made depends on the process's oneDNN setting). A checkpoint's
    input position is keyed by such names (NOTE [ Which pipeline an input
    position belongs to ] in ``_engine/input_position.py``), so a run with
    oneDNN on resumes one with it off.
    """
    if node_def.op in ("Transpose", "ConjugateTranspose"):
        return "Transpose", frozenset({"T"})
    return node_def.op, frozenset()


def _op_name(ref: str) -> str:
    return ref.lstrip("^").partition(":")[0]


def widen_before_transposes(
    graph_def, keep: Collection[str], *, enabled: bool | None = None
) -> list[str]:
    """Moves each widening cast of a transposed tensor before its transpose, in place.

    See NOTE [ Widening casts before transposes ]. The ``Cast`` node becomes
    a ``ConjugateTranspose`` (same name, so whatever read the cast reads the
    transposed floats), a new ``Cast`` node reads the transpose's input, and
    the old ``Transpose`` node is removed.

    Args:
      graph_def: a vectorized region's ``GraphDef``; changed in place.
      keep: tensor or op names the caller reads from `graph_def` (the
        region's outputs); a transpose among them is left alone.
      enabled: make the swaps; None means where it is faster: when
        :func:`onednn_enabled`.

    Returns:
      The names of the removed ``Transpose`` nodes (empty if none qualified,
      or if not `enabled`).
    """
    if not (onednn_enabled() if enabled is None else enabled):
        return []
    nodes = {node.name: node for node in graph_def.node}
    readers: dict[str, int] = {}
    for node in graph_def.node:
        for ref in node.input:
            readers[_op_name(ref)] = readers.get(_op_name(ref), 0) + 1
    kept = {_op_name(name) for name in keep}
    moved = []
    for cast in list(graph_def.node):
        if cast.op != "Cast" or not cast.input or cast.input[0].startswith("^"):
            continue
        transpose = nodes.get(_op_name(cast.input[0]))
        if (
            transpose is None
            or transpose.op != "Transpose"
            or _canonical(cast.input[0]) != f"{transpose.name}:0"
            or transpose.name in kept
            or readers.get(transpose.name) != 1
            or cast.attr["SrcT"].type not in _NARROW
            or cast.attr["DstT"].type != _WIDE
            or transpose.attr["T"].type != cast.attr["SrcT"].type
        ):
            continue
        widened = graph_def.node.add()
        widened.CopyFrom(cast)
        widened.name = _fresh(nodes, f"{cast.name}/before_transpose")
        del widened.input[:]
        widened.input.append(transpose.input[0])
        controls = [ref for ref in list(transpose.input) + list(cast.input) if ref.startswith("^")]
        widened.input.extend(controls)
        perm_type = transpose.attr["Tperm"].type
        cast.op = "ConjugateTranspose"  # not moved back by Grappler (see NOTE)
        cast.ClearField("attr")
        cast.attr["T"].type = _WIDE
        cast.attr["Tperm"].type = perm_type
        del cast.input[:]
        cast.input.extend([widened.name, transpose.input[1]])
        nodes[widened.name] = widened
        moved.append(transpose.name)
    if moved:
        gone = set(moved)
        survivors = [node for node in graph_def.node if node.name not in gone]
        del graph_def.node[:]
        graph_def.node.extend(survivors)
    return moved


def _fresh(nodes: dict, hint: str) -> str:
    name, i = hint, 0
    while name in nodes:
        i += 1
        name = f"{hint}_{i}"
    return name
