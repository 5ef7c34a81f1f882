"""A batching call's ``shapes`` in a migration: dropped, or checked with ``tf.ensure_shape``.

NOTE [ A batching call's shapes ]
``tf.train.batch(tensors, ..., shapes=S)`` builds its queue with the
component shapes `S` instead of the records' static shapes (the spec's
``_shapes``): every enqueue is checked against `S` (a record of another
shape fails the run) and the batches' static shapes are ``[batch] + S``.
The traced call says what `S` changes. Where each given shape is the
record's static shape, or less precise than it (``[None]`` for a ``[5]``),
it changes nothing a Dataset would not already do, and the twin drops it:
``padded_batch`` pads the unknown dimensions as the PaddingFIFOQueue of
``dynamic_pad`` does. Where a given shape fixes a dimension the record
leaves open (``[28, 28, 1]`` for a decoded ``[None, None, 1]``), the twin
maps ``tf.ensure_shape`` over the records before batching: the same check
at run time and the same static shapes. With ``enqueue_many`` the shapes are
those of one row. A SparseTensor, a dict of tensors, or lists joined from
several readers whose shapes are narrowed are refused with the fix (set the
shape in the per-record code).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst
import libcst.matchers as m
import tensorflow as tf

from queue_pipeline import plan
from queue_pipeline._migrate import chains
from queue_pipeline._migrate.base import Step
from queue_pipeline._migrate.constructor_pipelines import _locals_assigned
from queue_pipeline._migrate.legacy_api import legacy_api
from queue_pipeline._migrate.syntax import bind_arguments, callee, names_in, parse_expression

__all__ = ["BatchShapes", "Narrowed", "narrowed_shapes"]


def _row_shape(tensor, enqueue_many: bool) -> tf.TensorShape:
    shape = tf.TensorShape(tensor.shape)
    if not enqueue_many:
        return shape
    return shape[1:] if shape.rank is not None else tf.TensorShape(None)


def narrowed_shapes(nodes: Sequence[Any]) -> list[int]:
    """The positions whose given ``shapes`` entry fixes a dimension (or the rank) that
    the records' static shape leaves open, over the traced batching plan `nodes`.

    Raises:
      ValueError: the call's shapes cannot be compared (a SparseTensor among the
        records, a count of shapes unlike the records', a shape the records
        cannot have); the message says which.
    """
    narrowed: set[int] = set()
    for node in nodes:
        given = [tf.TensorShape(s) for s in node.args["shapes"]]
        lists = node.args.get("num_lists") or 1
        tensors = list(node.inputs)
        if any(isinstance(t, tf.SparseTensor) for t in tensors):
            raise ValueError("a SparseTensor among the records")
        if len(tensors) != len(given) * lists:
            raise ValueError(f"{len(given)} shape(s) for {len(tensors) // lists} tensor(s)")
        for i, tensor in enumerate(tensors):
            wanted = given[i % len(given)]
            static = _row_shape(tensor, bool(node.args.get("enqueue_many")))
            if not static.is_compatible_with(wanted):
                raise ValueError(f"shape {wanted} for a record of static shape {static}")
            if wanted.rank is None:
                continue
            if static.rank is None or any(
                s is None and w is not None
                for s, w in zip(static.as_list(), wanted.as_list(), strict=True)
            ):
                narrowed.add(i % len(given))
    return sorted(narrowed)


@dataclasses.dataclass(frozen=True)
class Narrowed:
    """The shapes a batching call fixes beyond its records' static shapes."""

    spelled: list[tuple[int, str]] = dataclasses.field(default_factory=list)  # (position, shape)
    count: int = 0  # tensors in one record
    structure: str = ""  # the plan's: "tensor", "list", "tuple", "dict"


class BatchShapes:
    """The ``shapes`` of batching calls (a mixin of the rewriter)."""

    built_at: Callable[..., list]  # the stages': the plan nodes a statement built
    fail: Callable[..., Exception]  # the rewriter's: a refusal naming the line
    code: Callable[[cst.CSTNode], str]
    where: Callable[[int], str]
    positions: Any  # the parsed module's positions
    module: Any  # the parsed module (libcst)
    steps: list[Step]

    def given_shapes(self, fn, stmt, kind: str, args: dict[str, str]) -> tuple[dict, Narrowed]:
        """`args` without their ``shapes``, and what of them to check with
        ``tf.ensure_shape`` (NOTE [ A batching call's shapes ])."""
        source = args.get("shapes", "None").strip()
        if source == "None":
            return args, Narrowed()
        nodes = [n for n in self.built_at(fn, stmt, plan.BATCHING_KINDS) if n.args.get("shapes")]
        if not nodes:  # NOTE [ The same shapes in a branch the run did not take ]
            nodes = self._sibling_nodes(fn, stmt, args)
        if not nodes:
            raise self.fail(
                fn, stmt, f"{kind}'s `shapes={source}`: the run did not build this call, so "
                "whether it only repeats the records' static shapes is unknown; drop it if it "
                "does, or set the shapes in the per-record code (`x.set_shape(...)`)"
            )  # fmt: skip
        try:
            narrowed = narrowed_shapes(nodes)
        except ValueError as e:
            raise self.fail(
                fn, stmt, f"{kind}'s `shapes={source}` ({e}): set the shapes in the "
                "per-record code (`x.set_shape(...)`) and drop `shapes`"
            ) from e  # fmt: skip
        args = {k: v for k, v in args.items() if k != "shapes"}
        if not narrowed:
            self.steps.append(
                Step(
                    fn.line(stmt),
                    f"{kind}(shapes={source})",
                    "dropped: the records' static shapes already say it",
                )  # fmt: skip
            )
            return args, Narrowed()
        listed = parse_expression(source)
        items = (
            [self.code(e.value) for e in listed.elements]
            if isinstance(listed, (cst.List, cst.Tuple))
            else None
        )
        spelled = [(i, items[i] if items else f"({source})[{i}]") for i in narrowed]
        self.steps.append(
            Step(
                fn.line(stmt),
                f"{kind}(shapes={source})",
                "tf.ensure_shape in Dataset.map before the batch",
            )  # fmt: skip
        )
        node = nodes[0]
        count = len(node.inputs) // (node.args.get("num_lists") or 1)
        return args, Narrowed(spelled, count, str(node.args.get("structure")))

    def _sibling_nodes(self, fn, stmt, args: dict[str, str]) -> list:
        """The traced nodes of another batching call of `fn` that the run built, with the
        same records and ``shapes`` (source text) as `stmt`'s untaken call (`args`), in a
        branch of one ``if`` that rebinds none of the names they read; or [].

        NOTE [ The same shapes in a branch the run did not take ]
        cifar10-shaped input code batches with ``shuffle_batch`` in one branch
        and ``tf.train.batch`` in the other, both with the same ``shapes=`` over
        the same records (``shapes=[(width, height, 1)] * 2`` fixing what
        ``decode_png`` leaves open). The run builds one of them; the other's
        shapes say the same of the same tensors, so it gets the same check
        (``tf.ensure_shape``, or nothing). The records and the shapes must be
        spelled alike, and no statement of the ``if`` holding both may assign a
        name they read (else they could differ); any other untaken call with
        ``shapes`` stays refused.
        """
        first = "tensors_list" if "tensors_list" in args else "tensors"
        wanted = (_spelled(args.get(first, "")), _spelled(args.get("shapes", "")))
        for other in m.findall(fn.node, m.SimpleStatementLine()):
            if other is stmt:
                continue
            for call in m.findall(other, m.Call()):
                assert isinstance(call, cst.Call)
                if callee(call) not in plan.BATCHING_KINDS:
                    continue
                try:
                    given = bind_arguments(legacy_api(callee(call)), call, self.module)
                except (chains.Unsupported, TypeError):
                    continue
                key = "tensors_list" if "tensors_list" in given else "tensors"
                if (_spelled(given.get(key, "")), _spelled(given.get("shapes", ""))) != wanted:
                    continue
                nodes = [
                    n for n in self.built_at(fn, other, plan.BATCHING_KINDS) if n.args.get("shapes")
                ]
                if nodes and self._none_rebound(fn, stmt, other, (args[first], args["shapes"])):
                    return nodes
        return []

    def _none_rebound(self, fn, one, other, texts: tuple[str, str]) -> bool:
        """Whether the innermost ``if`` of `fn` holding statements `one` and `other`
        exists and assigns none of the names the source texts `texts` read."""
        a, b = self.positions[one], self.positions[other]
        holding = [
            node
            for node in m.findall(fn.node, m.If())
            if all(
                self.positions[node].start.line <= p.start.line
                and p.end.line <= self.positions[node].end.line
                for p in (a, b)
            )
        ]
        if not holding:
            return False
        span = self.positions
        inner = min(holding, key=lambda n: span[n].end.line - span[n].start.line)
        parsed = [parse_expression(t) for t in texts]
        if any(e is None for e in parsed):
            return False
        read = set().union(*(names_in(e) for e in parsed if e is not None))
        return not read & set(_locals_assigned(inner))

    def ensure_line(self, fn, stmt, kind, narrowed: Narrowed, element: str | None) -> str:
        """``dataset = dataset.map(lambda ...: ...)`` checking the `narrowed` shapes on
        the records the mapped code returns as `element` (its source text; None for
        the lists of a join)."""
        count = narrowed.count
        text = (element or "").strip()
        single = count == 1 and not text.startswith("tuple(") and not text.endswith(",")
        if element is None or count < 1 or narrowed.structure == "dict":
            raise self.fail(
                fn, stmt, f"{kind}'s `shapes` fixes a dimension its records leave open, "
                "and the records are not a tuple of tensors: set the shapes in the "
                "per-record code (`x.set_shape(...)`) and drop `shapes`"
            )  # fmt: skip
        names = [f"t{i}" for i in range(count)]
        shapes = dict(narrowed.spelled)
        out = [f"tf.ensure_shape({n}, {shapes[i]})" if i in shapes else n
               for i, n in enumerate(names)]  # fmt: skip
        body = out[0] if single else "(" + ", ".join(out) + ("," if count == 1 else "") + ")"
        return f"dataset = dataset.map(lambda {', '.join(names)}: {body})"


def _spelled(text: str) -> str:
    """Source text without its whitespace (two spellings of one expression compare equal)."""
    return "".join(text.split())
