"""The dataset engine's input position in checkpoints: saved by default, optional on restore.

NOTE [ Checkpoints without an input position ]
The dataset engine puts each served iterator's state in ``SAVEABLE_OBJECTS``
(``make_saveable_from_iterator``), so a default ``tf.compat.v1.train.Saver()``
(and ``MonitoredTrainingSession``'s) saves the input position with the
variables and a restore resumes mid-epoch. But a Saver restores every key it
saves, in one ``RestoreV2`` op, and fails on a checkpoint that lacks one
(``NotFoundError: Key ..._STATE not found``): a model trained natively, on
the queue engine, or by a run that fell back has no input position, and
evaluating or fine-tuning such a model is the most common thing a legacy
user does. TF has no optional key, so :func:`mark` (called by the engine for
each iterator saveable) wraps two methods of TF's ``Saver`` class, once per
process:

* ``Saver.build``: a Saver whose variable list holds marked saveables also
  builds, beside its own ops, a restore-only Saver of the rest
  (``<name>_without_input_position``), while the graph can still grow
  (``MonitoredTrainingSession`` finalizes it before restoring).
* ``Saver.restore``: when the checkpoint lacks a marked key, that second
  Saver restores every variable the checkpoint has, the input starts from
  the beginning (a new iterator, as a queue pipeline's re-initialized local
  variables would), and that is logged once per checkpoint on logger
  ``queue_pipeline``. A checkpoint with the keys restores as before, after
  the served calls whose iterator needs initializing (variables or preloaded
  arrays read when the input starts) are started in the session: TF
  restores a position only into an initialized iterator, and
  ``MonitoredTrainingSession`` and ``Supervisor`` restore before they start
  the runners (the runners' start then leaves the restored iterators alone).

Savers with no marked saveable (no dataset engine in their graph, or an
explicit ``var_list`` without the input position) are untouched. A
checkpoint written under the dataset engine restores under the queue engine
and under native TF as is: a Saver ignores keys it does not restore. Savers
rebuilt from a ``SaverDef`` (``import_meta_graph``) are not built again, so
they keep TF's strict restore.

NOTE [ Which pipeline an input position belongs to ]
An iterator's state restores only into a Dataset of the same definition
(else ``NotFoundError: Failed to restore dataset iterator ... Make sure the
dataset definition has not changed``), and an evaluation program commonly
builds a different pipeline (no shuffle, no distortion, test files) under
the names its training program used, then restores the training checkpoint.
So the key of an input position names its pipeline:
``<iterator>:0-<fingerprint>_STATE``, where the fingerprint
(:func:`fingerprint`, 16 hex digits of a SHA-256) covers what the engine
built for the call, in build order: each op's type and attributes, the
values of constants of up to 1,024 elements (file names, batch sizes,
seeds), only the dtype and shape of larger ones, and the body of every
function it built (the ``map`` of the per-record ops, the one-shot
iterator's factory; each body as a multiset of its nodes, whose order in a
traced body carries no meaning), without op names and the process-local
names of functions and Python functions, and with every transpose counted
as ``Transpose`` of any element type, so that the engine's own exact swaps,
made or not by the process's oneDNN setting (NOTE [ Widening casts before
transposes ]), do not change it. The same program builds the same
fingerprint in any graph and any process, so a training run resumes where
it stopped; another pipeline under the same names finds no key of its own
and is restored as from a checkpoint without an input position (above: the
variables come back, the input starts from the beginning, logged once).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, Callable

import tensorflow as tf

from queue_pipeline._core.compat import logger
from queue_pipeline._engine import runners
from queue_pipeline._engine.vectorize.reorder import swap_invariant

__all__ = ["fingerprint", "mark"]

_MARK = "_qp_input_position"
_KEYS = "_qp_input_position_keys"
_WITHOUT = "_qp_saver_without_input_position"
_LOCK = threading.Lock()
_HOOKED: dict[str, Callable[..., Any]] = {}  # method name -> TF's original
_LOGGED: set[str] = set()


def mark(saveable) -> None:
    """Marks an iterator saveable as an input position; hooks the Saver once.

    Side effect: the first call wraps ``tf.compat.v1.train.Saver.build`` and
    ``.restore`` for the rest of the process; see NOTE [ Checkpoints without
    an input position ].
    """
    setattr(saveable, _MARK, True)
    with _LOCK:
        if _HOOKED:
            return
        saver_class = tf.compat.v1.train.Saver
        _HOOKED["build"], _HOOKED["restore"] = saver_class.build, saver_class.restore
        saver_class.build = _build
        saver_class.restore = _restore


_SMALL_CONSTANT = 1024  # elements; larger constants count by dtype and shape
_LOCAL_ATTRS = frozenset({"token"})  # a Python function's process-local token


def fingerprint(ops, functions) -> str:
    """The name of a served call's pipeline (NOTE [ Which pipeline an input position belongs to ]).

    Args:
      ops: the ``tf.Operation``s the engine built for the call, in build order.
      functions: the graph functions it built (with ``definition``), in order.

    Returns:
      16 hex digits, the same for the same program in any graph or process.
    """
    digest = hashlib.sha256()
    for op in ops:
        if op.type == "Const":
            size = op.outputs[0].shape.num_elements()
            if size is None or size > _SMALL_CONSTANT:
                digest.update(f"Const {op.outputs[0].dtype} {op.outputs[0].shape}".encode())
                continue
        _hash_node(digest, op.node_def)
    for function in functions:
        definition = getattr(function, "definition", None)
        nodes = []  # a body's nodes as a multiset: the order of a traced body is not meaning
        for node in getattr(definition, "node_def", ()):
            one = hashlib.sha256()
            _hash_node(one, node)
            nodes.append(one.digest())
        for node_digest in sorted(nodes):
            digest.update(node_digest)
    return digest.hexdigest()[:16]


def _hash_node(digest, node_def) -> None:
    op, skipped = swap_invariant(node_def)
    digest.update(op.encode())
    for key in sorted(node_def.attr):
        value = node_def.attr[key]
        digest.update(key.encode())
        if key in _LOCAL_ATTRS or key in skipped or value.HasField("func") or value.list.func:
            continue  # function names are process-local; their bodies are hashed
        digest.update(value.SerializeToString(deterministic=True))


def key_of(saveable, pipeline: str) -> None:
    """Renames `saveable`'s checkpoint key after its `pipeline` fingerprint."""
    base = saveable.name  # the iterator's tensor name, which TF's Saver looks up
    for spec in saveable.specs:
        if spec.name.startswith(base):
            spec.name = f"{base}-{pipeline}{spec.name[len(base) :]}"


def _is_marked(value) -> bool:
    return bool(getattr(value, _MARK, False))


def _build(self) -> None:
    """TF's ``Saver.build``, plus a restore-only Saver without the input position."""
    _HOOKED["build"](self)
    var_list = getattr(self, "_var_list", None)
    if not isinstance(var_list, (list, tuple)) or not any(map(_is_marked, var_list)):
        return
    ours = [v for v in var_list if _is_marked(v)]
    rest = [v for v in var_list if not _is_marked(v)]
    setattr(self, _KEYS, [spec.name for saveable in ours for spec in saveable.specs])
    name = f"{getattr(self, '_name', None) or 'save'}_without_input_position"
    setattr(
        self,
        _WITHOUT,
        tf.compat.v1.train.Saver(
            rest,
            reshape=getattr(self, "_reshape", False),
            sharded=getattr(self, "_sharded", False),
            name=name,
            allow_empty=True,
            write_version=self.saver_def.version,
        )
        if rest
        else None,
    )


def _restore(self, sess, save_path):
    """TF's ``Saver.restore``; without the input position if the checkpoint has none."""
    keys = getattr(self, _KEYS, None)
    if keys and save_path is not None:
        missing = _missing_keys(save_path, keys)
        if missing:
            _log_once(save_path, missing)
            without = getattr(self, _WITHOUT, None)
            return None if without is None else without.restore(sess, save_path)
        # a position restores only into a started iterator (runners start after restores)
        runners.start_inputs(sess)
    return _HOOKED["restore"](self, sess, save_path)


def _missing_keys(save_path: str, keys: list[str]) -> list[str]:
    """The `keys` the checkpoint at `save_path` lacks ([] if it cannot be read)."""
    try:
        reader = tf.train.load_checkpoint(save_path)
    except (tf.errors.OpError, ValueError):
        return []  # TF's own restore reports the unreadable checkpoint
    return [key for key in keys if not reader.has_tensor(key)]


def _log_once(save_path: str, missing: list[str]) -> None:
    with _LOCK:
        if save_path in _LOGGED:
            return
        _LOGGED.add(save_path)
    logger.info(
        "queue_pipeline dataset engine: checkpoint %s has no input position of this pipeline "
        "(%s); every variable it holds is restored and the input starts from "
        "the beginning.",
        save_path,
        ", ".join(missing),
    )
