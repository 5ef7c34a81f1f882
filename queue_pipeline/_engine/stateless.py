"""Per-record random ops made stateless, keyed by the record's position: seeded maps in parallel.

NOTE [ Stateless randomness keyed by the record ]
A seeded legacy pipeline (a graph seed, or a seed on a producer or batcher)
draws the same distortions on every run: TF 1.x's random kernels keep one
stream per op, seeded from the op's ``seed`` and ``seed2`` attributes. Mapped
in parallel, such kernels hand their draws out in thread order, so the
engine used to map every region holding them sequentially: one core for the
decoding and augmentation, whatever the machine has.

Here each stateful random op of a region becomes its stateless form
(``RandomUniform`` -> ``StatelessRandomUniform``, ``RandomUniformInt``,
``RandomStandardNormal``, ``TruncatedNormal``, ``RandomShuffle``,
``Multinomial``, ``SampleDistortedBoundingBox`` and its V2, and so what
``random_crop``, ``random_flip_*``, ``random_brightness`` / ``contrast`` /
``hue`` / ``saturation`` and ``sample_distorted_bounding_box`` build from
them), seeded by two 64-bit words:

* the op's key: a hash of its ``seed`` and ``seed2`` attributes (the graph
  seed and the op seed, as TF resolved them when the op was made) and its
  name, so two ops never share a stream, even both unseeded;
* the record's position: how many records the map saw before it since the
  input started (epochs follow each other, so the position tells the epoch
  and the place in it), from ``Dataset.enumerate``.

The draws are then a pure function of (graph seed, op seed, position): the
map runs with ``num_parallel_calls=AUTOTUNE`` under
``Options.deterministic``, and the batches are the same on every run, at every
parallelism, on every machine with the same TensorFlow. The position is part
of the iterator's state, so a run restored from a checkpoint distorts the
next records exactly as the uninterrupted run did. The values differ from
TF's own kernels (another generator, the same distributions: tested in
``tests/test_engine_stateless.py``), and an op TF leaves unseeded whatever
the graph seed (``seed`` and ``seed2`` both 0, as TF's
``sample_distorted_bounding_box`` without its own ``seed``) repeats itself
here too, keyed by its name. A region with another stateful op that
may not repeat itself (a ``py_func``, a queue op) keeps the sequential map;
``Assert`` and ``Print`` repeat themselves and do not count.
"""

from __future__ import annotations

import dataclasses
import hashlib

import tensorflow as tf

from queue_pipeline._rebuild import lift
from queue_pipeline._rebuild.dealing import DealtRegion

__all__ = ["FORMS", "STATEFUL_BUT_REPEATABLE", "keyed_graph_def", "keyed_region", "unkeyable_ops"]

# Stateful ops whose results do not depend on a hidden state.
STATEFUL_BUT_REPEATABLE = frozenset({"Assert", "Print", "PrintV2"})

# The stateful random op -> its stateless form and where the seed goes among
# the inputs (None: appended last). RandomShuffle takes a key and a counter
# instead (see _shuffle).
FORMS = {
    "RandomUniform": ("StatelessRandomUniform", 1),
    "RandomStandardNormal": ("StatelessRandomNormal", 1),
    "TruncatedNormal": ("StatelessTruncatedNormal", 1),
    "RandomUniformInt": ("StatelessRandomUniformInt", 1),
    "Multinomial": ("StatelessMultinomial", None),
    "SampleDistortedBoundingBoxV2": ("StatelessSampleDistortedBoundingBox", None),
    "SampleDistortedBoundingBox": ("StatelessSampleDistortedBoundingBox", None),
    "RandomShuffle": ("StatelessShuffle", None),
}
_PHILOX = 1  # tf.random.Algorithm.PHILOX


def unkeyable_ops(region: lift.LiftedRegion | DealtRegion) -> list[str]:
    """Types of the stateful ops of `region` that have no stateless form (sorted).

    A TF1 while loop (``Enter``) counts when the region has random ops: its
    frames would need the record's position passed into them.
    """
    kinds = {op.type for op in region.ops}
    unkeyable = {
        op.type
        for op in region.ops
        if op.op_def.is_stateful and op.type not in FORMS and op.type not in STATEFUL_BUT_REPEATABLE
    }
    if kinds & set(FORMS):
        unkeyable |= kinds & {"Enter", "RefEnter"}
    return sorted(unkeyable)


def keyed_region(
    region: lift.LiftedRegion | DealtRegion,
) -> lift.LiftedRegion | DealtRegion | None:
    """`region` with its random ops stateless, seeded by the record's position.

    See NOTE [ Stateless randomness keyed by the record ]. The returned
    region reads one more external input, :data:`lift.POSITION` (an int64
    scalar: the record's position since the input started), which
    :meth:`Rebuilder.apply_region` feeds when called with ``keyed=True``.

    Returns:
      The rewritten region, or None when `region` has no random op to make
      stateless or has a stateful op that has no stateless form (see
      :func:`unkeyable_ops`).
    """
    if unkeyable_ops(region) or not any(op.type in FORMS for op in region.ops):
        return None
    if isinstance(region, DealtRegion):  # each list's ops keyed by the same position
        return region.with_parts(keyed_region(part) or part for part in region.parts)
    return dataclasses.replace(region, graph_def=keyed_graph_def(region.graph_def))


def keyed_graph_def(graph_def, names=None):
    """A copy of `graph_def` whose random ops are stateless, seeded [op key, position].

    The position is the external input :data:`lift.POSITION` (an int64
    scalar); see NOTE [ Stateless randomness keyed by the record ].

    Args:
      graph_def: a region's GraphDef (it is not changed).
      names: the names of the nodes to rewrite (each of a type in
        :data:`FORMS`); None: every node of such a type.

    Returns:
      The rewritten copy.
    """
    keyed = tf.compat.v1.GraphDef()
    keyed.CopyFrom(graph_def)
    for node in list(keyed.node):
        if node.op in FORMS and (names is None or node.name in names):
            _make_stateless(keyed, node)
    return keyed


def _op_key(node) -> int:
    """A 63-bit key from the op's resolved seeds and its name."""
    text = f"{node.attr['seed'].i},{node.attr['seed2'].i},{node.name}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def _add_node(graph_def, name: str, op: str, inputs=(), **attrs):
    node = graph_def.node.add()
    node.name, node.op = name, op
    node.input.extend(inputs)
    for key, value in attrs.items():
        node.attr[key].CopyFrom(value)
    return node


def _const(graph_def, name: str, value, dtype) -> str:
    tensor = tf.make_tensor_proto(value, dtype=dtype)
    _add_node(
        graph_def,
        name,
        "Const",
        dtype=tf.compat.v1.AttrValue(type=dtype.as_datatype_enum),
        value=tf.compat.v1.AttrValue(tensor=tensor),
    )
    return name


def _int64_type():
    return tf.compat.v1.AttrValue(type=tf.int64.as_datatype_enum)


def _make_stateless(graph_def, node) -> None:
    """Rewrites `node` in place into its stateless form, seeded [op key, position]."""
    prefix = f"{node.name}/qp_stateless"
    key = _const(graph_def, f"{prefix}/op_key", _op_key(node), tf.int64)
    seed = _add_node(
        graph_def,
        f"{prefix}/seed",
        "Pack",
        [key, lift.POSITION.split(":")[0]],
        N=tf.compat.v1.AttrValue(i=2),
        T=_int64_type(),
        axis=tf.compat.v1.AttrValue(i=0),
    ).name
    kind = node.op
    stateless, at = FORMS[kind]
    inputs = list(node.input)
    data_inputs = [i for i in inputs if not i.startswith("^")]
    control = [i for i in inputs if i.startswith("^")]
    if kind == "RandomShuffle":
        counter = _add_node(
            graph_def, f"{prefix}/key_counter", "StatelessRandomGetKeyCounter", [seed],
            Tseed=_int64_type(),
        ).name  # fmt: skip
        alg = _const(graph_def, f"{prefix}/alg", _PHILOX, tf.int32)
        data_inputs += [f"{counter}:0", f"{counter}:1", alg]
    else:
        if kind == "SampleDistortedBoundingBox":  # V1 holds min_object_covered as an attribute
            covered = node.attr["min_object_covered"].f
            name = f"{prefix}/min_object_covered"
            data_inputs.append(_const(graph_def, name, covered, tf.float32))
            del node.attr["min_object_covered"]
        data_inputs.insert(len(data_inputs) if at is None else at, seed)
        node.attr["Tseed"].CopyFrom(_int64_type())
        if kind == "RandomUniformInt":
            node.attr["dtype"].CopyFrom(node.attr["Tout"])
            del node.attr["Tout"]
    for attr in ("seed", "seed2"):
        if attr in node.attr:
            del node.attr[attr]
    node.op = stateless
    del node.input[:]
    node.input.extend(data_inputs + control)
