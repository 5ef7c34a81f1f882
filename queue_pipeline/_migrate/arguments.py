"""The arguments migrate calls the user's function with, and safe looks at the user's objects.

``--call`` is evaluated in the module's namespace under
:func:`queue_pipeline.install` (:func:`parse_call`); arguments that belong to a
graph (a reader, a queue, a tensor) are made again in each graph the function
runs in (:class:`GraphCall`); a parameter left to a constant tensor default
made at import is passed its value (:func:`import_constants`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import types
from typing import Any

import tensorflow as tf

from queue_pipeline._migrate import loading
from queue_pipeline._migrate.loading import MigrateError

__all__ = [
    "GraphCall",
    "attribute",
    "call_arguments",
    "graph_defaults",
    "has",
    "import_constants",
    "parse_call",
    "spell",
]

_API = "queue-pipeline migrate"


def attribute(value: Any, name: str) -> Any:
    """``getattr(value, name)``, or None where the access raises anything (see :func:`has`)."""
    try:
        return getattr(value, name)
    except Exception:  # noqa: BLE001 - the user's object, whatever it raised
        return None


def has(value: Any, name: str) -> bool:
    """``hasattr`` for the user's objects: an attribute whose access raises anything is absent.

    ``hasattr`` lets every exception but AttributeError through; a closed
    image file, a lazy proxy or a handle to a finished resource raises
    ValueError, RuntimeError or OSError instead.
    """
    try:
        getattr(value, name)
    except Exception:  # noqa: BLE001 - the object is not a pipeline stage, whatever it raised
        return False
    return True


@dataclasses.dataclass(frozen=True)
class GraphCall:
    """`--call` arguments that build graph objects (``tf.compat.v1.TFRecordReader()``).

    Such an argument cannot be made once and for all: eagerly it fails, and
    made in one graph it cannot be used in another. The call is evaluated
    again in each graph the function runs in (the trace, each side of the
    proof).
    """

    module: types.ModuleType
    call: str

    def arguments(self) -> tuple[tuple, dict]:
        """The arguments, made in the current default graph."""
        return parse_call(self.module, self.call)


def call_arguments(
    module: types.ModuleType, call: str | None
) -> tuple[tuple, dict, GraphCall | None]:
    """`--call`'s arguments, or ``((), {}, GraphCall)`` when they hold graph objects.

    The call is evaluated once in a graph of its own: a reader, queue or
    tensor it makes belongs to a graph and is made again in each graph that
    runs the function (:class:`GraphCall`); plain values are used as they are.

    Raises:
      MigrateError: the arguments cannot be evaluated.
    """
    with tf.Graph().as_default():
        args, kwargs = parse_call(module, call)
    if _graph_bound((args, kwargs)):
        return (), {}, GraphCall(module, call or "")
    return args, kwargs, None


# how deep and how widely _graph_bound looks into an argument's attributes and containers
_GRAPH_BOUND_DEPTH = 6
_GRAPH_BOUND_VALUES = 2000


def _graph_bound(value: Any) -> bool:
    """Whether `value` belongs to a graph (a tensor, an op, a reader or queue object), or holds
    one at any depth of its attributes and containers (a class whose constructor built
    tensors; tf-slim's ``Dataset`` whose decoder's ``FixedLenFeature`` has a tensor
    ``default_value``).

    The walk is bounded (depth and number of values) and skips classes, modules and
    functions: a graph object deeper than that is not seen (the call then fails in the
    graph it was made in, and the failure says so: see ``failure_hints.failure_fix``).
    """
    seen: set[int] = set()
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo and len(seen) < _GRAPH_BOUND_VALUES:
        item, depth = todo.pop()
        if id(item) in seen or item is None or isinstance(item, _NOT_WALKED):
            continue
        seen.add(id(item))
        if isinstance(item, (tf.Tensor, tf.Operation, tf.Variable)) or any(
            has(item, a) for a in ("graph", "reader_ref", "queue_ref")
        ):
            return True
        if depth >= _GRAPH_BOUND_DEPTH:
            continue
        todo.extend((v, depth + 1) for v in _parts(item))
    return False


_NOT_WALKED = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    str,
    bytes,
    int,
    float,
    complex,
    bool,
)


def _parts(value: Any) -> list:
    """The values `value` holds: a container's items, an object's attributes."""
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    attributes = getattr(value, "__dict__", None)
    return list(attributes.values()) if isinstance(attributes, dict) else []


def parse_call(module: types.ModuleType, call: str | None) -> tuple[tuple, dict]:
    """The positional and keyword arguments that `call` (``"'a.csv', 2, num_epochs=1"``) spells.

    The expressions are evaluated in the module's namespace, so they may name
    its constants.
    """
    if not call:
        return (), {}

    def capture(*args, **kwargs):
        return args, kwargs

    from queue_pipeline._scripts.install import install  # noqa: PLC0415 - no cycle at import

    namespace = dict(vars(module))
    namespace["__qp_capture__"] = capture
    try:
        code = compile(f"__qp_capture__({call})", "<--call>", "eval")
    except SyntaxError as e:
        raise MigrateError(
            f"{_API}: `--call` {call!r} is not a valid argument list ({e.msg}). Fix: write "
            "the arguments as in a Python call, e.g. --call \"'train.csv', 32\"."
        ) from e
    try:
        # Under install(), as the call itself runs: a reader class passed in
        # (`reader=tf.compat.v1.TFRecordReader`) is queue_pipeline's, which
        # records its stage.
        with install():
            return eval(code, namespace)  # noqa: S307 - the user's own arguments
    except Exception as e:  # noqa: BLE001
        # the user's line the error went through (a function of the file --call runs)
        found = loading.raised_frame(e, getattr(module, "__file__", None) or "")
        where = (
            f" at {found[0]}:{found[1]}" + (f" (`{found[2]}`)" if found[2] else "")
            if found is not None
            else ""
        )
        usual = (
            f"make {found[0]}:{found[1]} run under these arguments"
            if found is not None
            else "pass arguments that can be computed here (files that exist, names of the module)"
        )
        fix = loading.fix_for(e, usual)
        if found is not None and fix != usual:
            fix = f"at {found[0]}:{found[1]}, {fix}"
        raise MigrateError(
            f"{_API}: evaluating `--call` {call!r} raised {type(e).__name__}{where}: "
            f"{str(e).rstrip('.')}. Fix: {fix.rstrip('.')}."
        ) from e


def graph_defaults(fn, args, kwargs) -> str:
    """The fix when `fn` was called with a default that is a tensor made at import.

    A parameter's default made as ``tf.constant(16)`` belongs to the graph the
    module was imported in; migrate calls the function in a graph of its own
    (each side of the proof too), where that tensor cannot be used.
    """
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return ""
    passed = set(list(kwargs or {}))
    passed |= {p.name for p in parameters[: len(args)]}
    tensors = [
        p
        for p in parameters
        if p.name not in passed and isinstance(p.default, (tf.Tensor, tf.Variable))
    ]
    if not tensors:
        return ""
    value = None
    with contextlib.suppress(Exception):  # a constant's value, for the example
        value = tf.get_static_value(tensors[0].default)
    example = f"{tensors[0].name}={value.tolist() if value is not None else 'VALUE'}"
    return (
        f"the default of {', '.join(p.name for p in tensors)} is a tensor made when the file "
        f"was imported, in another graph: pass a value with --call (e.g. --call "
        f"'{example}'), or make the default a plain value"
    )


def import_constants(fn, args: tuple, kwargs: dict) -> dict:
    """The parameters of `fn` left to a constant tensor default, with the constants' values.

    NOTE [ A default made at import ]
    cinc2017 writes ``FLAGS.batch_size = tf.constant(16)`` at module level and
    ``def get_batch_producer(batch_size=FLAGS.batch_size)``: the program builds
    everything in the one graph that was default at import. Migrate calls the
    function in graphs of its own (the trace, each side of the proof), where
    that tensor cannot be used, so a constant default is passed as its value,
    alike on both sides; the migrated code keeps the default as written. A
    default whose value is not constant (a variable) still fails, with the
    fix (:func:`graph_defaults`).
    """
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return {}
    passed = set(kwargs) | {p.name for p in parameters[: len(args)]}
    values = {}
    for p in parameters:
        if p.name in passed or not isinstance(p.default, tf.Tensor):
            continue
        with contextlib.suppress(Exception):
            value = tf.get_static_value(p.default)
            if value is not None:
                values[p.name] = value.tolist() if hasattr(value, "tolist") else value
    return values


def spell(args, kwargs) -> str:
    return ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in (kwargs or {}).items()])
