"""What a class holds, learned by running it once: the probes of a class's migration.

``FILE.py:Class.method`` and ``FILE.py:Class`` (NOTE [ Migrating a method ],
NOTE [ Migrating a constructor ], NOTE [ A method reading what its
constructor built ] in :mod:`queue_pipeline._migrate.methods`) decide how to
lift the code from what the constructor and the method keep: each runs once
here, in a graph of its own, under ``install()`` as ``--call`` is evaluated.
"""

from __future__ import annotations

import dataclasses
import inspect
import os

import libcst as cst
import tensorflow as tf

from queue_pipeline._migrate import constructor_pipelines as _pipelines
from queue_pipeline._migrate import methods as _methods
from queue_pipeline._migrate import trace as _trace
from queue_pipeline._migrate.python_filled_queues import python_filled_queue
from queue_pipeline._migrate.trace import MigrateError

_API = "queue-pipeline migrate"

__all__ = [
    "Probe",
    "constructor_batches",
    "defines_class",
    "names_the_instance",
    "probe_method",
    "top_level",
]


@dataclasses.dataclass
class Probe:
    """What a method's instance holds, from one run in a graph of its own.

    Attributes:
      made: the lifted method-and-constructor's arguments, where the
        constructor built queue input the method reads (NOTE [ A method reading
        what its constructor built ]); else None.
      held: the attributes holding tensors read from a queue or reader that
        the constructor made.
      kept: the attributes holding them that the method itself assigned, where
        it returns nothing (NOTE [ Migrating a constructor ] applies to it).
    """

    made: str | None = None
    held: list[str] = dataclasses.field(default_factory=list)
    kept: list[str] = dataclasses.field(default_factory=list)


def probe_method(path: str, lifted, call: str | None, argv) -> Probe:
    """Runs the class's constructor and the method once, in a graph of their own."""
    cls = lifted.cls
    module, _ = _trace.load_module(path, cls, argv, call)
    named = names_the_instance(module, cls, call)
    with tf.Graph().as_default():
        args, kwargs = _trace.parse_call(module, call if named else f"{cls}({call or ''})")
        if not args:
            return Probe()
        instance, rest = args[0], args[1:] if named else ()
        held = _methods.queue_tensors(instance, reads=True)
        assigned = _methods.attributes_assigned(lifted)
        try:
            returned = getattr(instance, lifted.method)(*rest, **(kwargs if named else {}))
        except Exception:  # noqa: BLE001 - the trace runs it again and reports what it raised
            return Probe()
        after = _methods.queue_tensors(instance, reads=True)
    kept = [a for a in after if a in assigned]
    if returned is None and kept:
        return Probe(kept=kept)
    held = [a for a in held if a not in assigned]
    if not held:
        return Probe()
    code = cst.Module([]).code_for_node
    if not named:
        return Probe(f"{cls}.__new__({cls}), {call or ''}", held)
    outer = cst.parse_expression(f"f({call})")
    assert isinstance(outer, cst.Call) and isinstance(outer.args[0].value, cst.Call)
    inner = ", ".join(code(a.value) if a.keyword is None else code(a).rstrip(", ")
                      for a in outer.args[0].value.args)  # fmt: skip
    method = getattr(getattr(module, cls), lifted.method)
    params = list(inspect.signature(method).parameters)[1:]
    passed = []
    for i, a in enumerate(outer.args[1:]):
        keyword = a.keyword.value if a.keyword is not None else params[i]
        passed.append(f"{keyword}={code(a.value)}")
    return Probe(", ".join([f"{cls}.__new__({cls})", *([inner] if inner else []), *passed]), held)


def names_the_instance(module, cls: str, call: str | None) -> bool:
    """Whether a method's `call` starts with an instance of `cls`: ``Reader(a, b), 4`` gives
    ``self`` and the method's own arguments (else `call` is the constructor's arguments)."""
    if not call or not call.lstrip().startswith(cls):
        return False
    try:
        with tf.Graph().as_default():
            args, _ = _trace.parse_call(module, call)
    except MigrateError:
        return False
    return bool(args) and isinstance(args[0], getattr(module, cls))


def top_level(path: str) -> list:
    """The top-level statements of the file at `path`; none if it cannot be read or parsed
    (the usual path reports that)."""
    try:
        with open(path, encoding="utf-8") as f:
            return list(cst.parse_module(f.read()).body)
    except (OSError, cst.ParserSyntaxError):
        return []


def defines_class(path: str, name: str) -> bool:
    """Whether the file at `path` defines class `name` at its top level."""
    return any(isinstance(s, cst.ClassDef) and s.name.value == name for s in top_level(path))


def constructor_batches(path: str, cls: str, call: str | None, argv) -> list[list[str]]:
    """The attributes that ``cls(call)`` keeps holding tensors read from a queue, one
    list per pipeline (NOTE [ Several pipelines in a constructor ]).

    The constructor runs once, in a graph of its own (under install(), as
    `--call` is evaluated): NOTE [ Migrating a constructor ].
    """
    module, _ = _trace.load_module(path, cls, argv, call)
    with tf.Graph().as_default() as graph:
        (instance,), _ = _trace.parse_call(module, f"{cls}({call or ''})")
        found = _pipelines.pipelines(instance, _methods.queue_tensors(instance))
        if not found:  # NOTE [ A constructor keeping unbatched records ]
            found = _records_kept(path, cls, instance)
    if not found:  # NOTE [ A queue filled from Python state ]
        filled = python_filled_queue(graph, os.path.realpath(path), f"{cls}(...)")
        if filled:
            raise MigrateError(filled)
    return found


def _records_kept(path: str, cls: str, instance: object) -> list[list[str]]:
    """The attributes of `instance` holding records read by a reader, with no batching
    call, one list per pipeline, where no other method of `cls` reads them.

    NOTE [ A constructor keeping unbatched records ]
    A loader's test mode often reads one record per step and keeps it as it
    is (monodepth's ``self.left_image_batch = tf.stack([image,
    tf.image.flip_left_right(image)], 0)``, with no batching call). Such a
    constructor migrates as a function returning unbatched records does: its
    Dataset's elements are those attributes, one record each. Where another
    method of the class reads them (a ``dequeue(n)`` that batches them: NOTE
    [ A method reading what its constructor built ]), that method is the
    pipeline: the constructor is refused, naming it.

    Raises:
      MigrateError: another method reads the records.
    """
    records = _methods.queue_tensors(instance, reads=True)
    if not records:
        return []
    readers = _methods_reading(path, cls, set(records))
    if readers:
        name, attribute = readers[0]
        raise MigrateError(
            f"{_API}: {path}: {cls}(...) keeps records it reads (self.{attribute}) "
            f"unbatched, and {cls}.{name} reads them: that method builds the pipeline "
            f"with them. Fix: migrate {os.path.basename(path)}:{cls}.{name} (--call "
            f"'{cls}(ARGS), METHOD ARGS')."
        )
    return _pipelines.pipelines(instance, records, reads=True)


def _methods_reading(path: str, cls: str, attributes: set[str]) -> list[tuple[str, str]]:
    """(method, attribute) for each method of class `cls` in the file at `path`, other
    than ``__init__``, that names one of `attributes` of ``self``."""
    found = []
    for stmt in top_level(path):
        if not (isinstance(stmt, cst.ClassDef) and stmt.name.value == cls):
            continue
        for fn in stmt.body.body:
            if not isinstance(fn, cst.FunctionDef) or fn.name.value == "__init__":
                continue
            named = _pipelines._attributes_read(fn)
            found += [(fn.name.value, a) for a in sorted(named & attributes)]
    return found
