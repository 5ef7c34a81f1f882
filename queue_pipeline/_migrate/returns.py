"""How a migrated pipeline function ends: its ``return`` as the returned Dataset.

NOTE [ Plain values among the batches ]
``return raw_audio, mfcc, labels, num_examples, word, decoder_inputs`` (a
speech model's provider) returns a count among its batches. The version
returns the Dataset, its elements the batches in their order, and then the
plain values (as for plain values after the batches); the proof compares
them for equality as it does those, and the report says where the structure
changed. ``--callers`` rewrites callers only where the plain values come
last.

Part of the rewriter of NOTE [ How a legacy function is rewritten ] in
:mod:`queue_pipeline._migrate.codegen`: ``return batches`` becomes ``return
dataset.prefetch(AUTOTUNE)``; what the function computes from its batches, a
``map`` over the batched Dataset; a prefetch queue filled by its own
QueueRunner, that prefetch; batches followed by loaders, ``return dataset,
load``; per-record tensors returned without a batching call, the mapped
records.
"""

from __future__ import annotations

from typing import Any

import libcst as cst
import tensorflow as tf

from queue_pipeline._migrate import chains
from queue_pipeline._migrate.base import Function, State, Step, starred_params
from queue_pipeline._migrate.map_values import with_outer_values
from queue_pipeline._migrate.own_queues import OwnQueues
from queue_pipeline._migrate.plain_values import nones_dropped
from queue_pipeline._migrate.syntax import names_in

__all__ = ["Returns"]


class Returns(OwnQueues):
    """The ``return`` statements of a pipeline function."""

    def _prefetched(self, fn: Function, expr: cst.CSTNode, state: State) -> bool:
        """Whether `expr` is ``helper(batches, ...).dequeue()`` of a helper returning a queue.

        Such a helper is a prefetch queue filled by its own QueueRunner (the
        Object Detection API's prefetcher); the Dataset's ``prefetch``
        already does its work.
        """
        if not (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "dequeue"
            and isinstance(expr.func.value, cst.Call)
            and isinstance(expr.func.value.func, cst.Name)
        ):
            return False
        inner = expr.func.value
        if not isinstance(inner, cst.Call) or not isinstance(inner.func, cst.Name):
            return False
        helper = self.functions.get(inner.func.value)
        if helper is None or helper.call is None:
            return False
        if self.trace.kind_of(helper.call.returned) != "queue" or not inner.args:
            return False
        first = inner.args[0].value
        if not (
            isinstance(first, cst.Name)
            and first.value in [e.lstrip("*") for e in state.batch_element]
        ):
            return False
        self.steps.append(
            Step(
                fn.line(expr),
                f"{helper.name}(...).dequeue() (a prefetch queue and its QueueRunner)",
                "Dataset.prefetch(AUTOTUNE) where the function returns the Dataset",
            )
        )
        self.dropped.append(
            f"{self.where(helper.first)}: {helper.name}: the queue's fill summary "
            "(a Dataset has no queue to measure)"
        )
        return True

    def _plain_returns(self, fn: Function, parts) -> list[str]:
        """The code of each returned value that is neither a tensor nor built from one.

        By the value the run returned where the call's result is known (so
        ``lambda sess: ...`` counts), else by the local variable's value.
        """
        returned = fn.call.returned if fn.call is not None else None
        values = fn.call.local_values if fn.call is not None else {}
        plain = []
        for i, part in enumerate(parts):
            code = self.code(part.value)
            if isinstance(returned, (tuple, list)) and len(returned) == len(parts):
                value = returned[i]
            elif isinstance(part.value, cst.Name) and part.value.value in values:
                value = values[part.value.value]
            else:
                continue
            if isinstance(value, (tf.Tensor, tf.SparseTensor)) or self.trace.kind_of(value) != (
                "plain"
            ):
                continue
            if isinstance(part.value, cst.Name) and fn.kind(part.value.value) != "plain":
                continue
            plain.append(code)
        return plain

    def _plain_fields(self, fn: Function) -> tuple[Any, list[str]]:
        """The namedtuple or dict `fn` returned, and the names of its plain fields.

        pix2pix's ``load_examples`` returns ``Examples(paths=..., inputs=...,
        count=len(input_paths), steps_per_epoch=...)``: its callers read
        ``examples.count`` as a Python number beside the batch fields.
        """
        returned: Any = fn.call.returned if fn.call is not None else None
        if hasattr(returned, "_fields"):
            fields = dict(returned._asdict())
        elif isinstance(returned, dict):
            fields = returned
        else:
            return returned, []
        plain = [
            str(k)
            for k, v in fields.items()
            if not isinstance(v, (tf.Tensor, tf.SparseTensor)) and self.trace.kind_of(v) == "plain"
        ]
        return returned, plain

    def _field_code(self, fn: Function, stmt, returned) -> dict[str, str]:
        """Each field's code in ``return Examples(a=..., b=...)`` or ``return {"a": ...}``."""
        value = stmt.body[0].value
        fields: dict[str, str] = {}
        if isinstance(value, cst.Call) and hasattr(returned, "_fields"):
            order = list(returned._fields)
            for i, arg in enumerate(value.args):
                if arg.star or (arg.keyword is None and i >= len(order)):
                    fields = {}
                    break
                key = arg.keyword.value if arg.keyword is not None else order[i]
                fields[key] = self.code(arg.value)
        elif isinstance(value, cst.Dict) and isinstance(returned, dict):
            for element in value.elements:
                key = element.key if isinstance(element, cst.DictElement) else None
                if not isinstance(key, cst.SimpleString):
                    fields = {}
                    break
                fields[str(key.evaluated_value)] = self.code(element.value)
        names = returned._fields if hasattr(returned, "_fields") else returned.keys()
        if sorted(fields) != sorted(str(k) for k in names):
            raise self.fail(
                fn, stmt, f"it returns {type(returned).__name__} with plain values beside the "
                "batches, built elsewhere than in the return statement (write the "
                "namedtuple or dict in the return statement, its fields named)"
            )  # fmt: skip
        return fields

    def _return_fields(self, fn, stmt, state: State, returned, plain, pad) -> list[str]:
        """``return Examples(paths=b, inputs=f(b), count=n)`` as the Dataset and the plain fields.

        NOTE [ A namedtuple with plain values beside the batches ]
        A Dataset's elements are tensors, and the callers read ``count`` as a
        Python number: the batch fields become the elements, a dict by field
        name (``{"paths": b, "inputs": f(b)}``), and the function returns
        ``dataset, {"count": n}``. A caller rebuilds the structure it had with
        ``Examples(**iterator.get_next(), **plain)`` (the caller rewrite does
        it), so the code after the call reads the same fields as before.
        """
        fields = self._field_code(fn, stmt, returned)
        batch = {k: v for k, v in fields.items() if k not in plain}
        params = ", ".join(state.batch_element)
        element = ", ".join(f"{k!r}: {v}" for k, v in batch.items())
        values = ", ".join(f"{k!r}: {fields[k]}" for k in plain)
        line = _map_line(params, f"{{{element}}}", pad)
        kind = type(returned).__name__
        self.steps.append(
            Step(
                fn.line(stmt),
                f"return {kind}(...) with plain values ({', '.join(plain)})",
                "return the Dataset (a dict of the batch fields), a dict of the plain values",
            )
        )
        self.differences.append(
            f"{self.where(fn.line(stmt))}: {fn.name}_dataset returns (dataset, "
            f"{{{', '.join(repr(k) for k in plain)}}}): the batch fields are the Dataset's "
            f"elements, a dict by field name; `{kind}(**element, **plain)` rebuilds the "
            f"{'namedtuple' if kind != 'dict' else 'dict'}"
        )
        return [line, f"{pad}return dataset.prefetch({chains.AUTOTUNE}), {{{values}}}\n"]

    def _return_beside(self, fn, stmt, parts, state, extra, pad) -> list[str]:
        """``return batches..., load`` as ``return dataset, load``.

        The batches must come first, in their order, and everything after them
        must be a plain value (a function such as the preloaded-variable
        program's ``load(sess)``, which feeds the arrays to the variables the
        pipeline reads).
        """
        element = [e.lstrip("*") for e in state.batch_element]
        params = ", ".join(state.batch_element)
        names = [self.code(p.value) for p in parts]
        returned = fn.call.returned if fn.call is not None else None
        loaders = isinstance(returned, (tuple, list)) and any(callable(v) for v in returned)
        last = names[: len(element)] == element and names[len(element) :] == extra
        built = [n for n in names if n not in extra]
        mapped: list[str] = []
        if built != element and built and names[len(built) :] == extra and not loaders:
            # NOTE [ Batches in a structure, plain values after it ]
            # ``return {"image": images}, None`` (an Estimator input_fn whose model
            # takes no labels): the Dataset's element is that structure of the
            # batches, mapped from them, and the plain values follow the Dataset
            value = built[0] if len(built) == 1 else f"({', '.join(built)})"
            mapped = [_map_line(params, value, pad)]
            built = element
        # plain values may come among the batches (NOTE [ Plain values among the
        # batches ]); a loader, which the caller runs before reading, comes last
        if (loaders and not last) or built != element:
            raise self.fail(
                fn,
                stmt,
                f"it returns {', '.join(extra)} beside the batches, not after them all; a "
                "Dataset holds only the batches (return the batches first, or migrate the "
                "function that builds just the pipeline)",
            )
        blank = "\n" if any(isinstance(x, cst.EmptyLine) for x in stmt.leading_lines) else ""
        if self._labels_absent(fn, stmt, names, extra):
            return [blank + line for line in mapped[:1]] + [
                f"{'' if mapped else blank}{pad}return dataset.prefetch({chains.AUTOTUNE})\n"
            ]
        self._note_plain_among(fn, stmt, names, extra)
        self.steps.append(
            Step(
                fn.line(stmt),
                f"return {', '.join(names)}",
                f"return the Dataset, {', '.join(extra)}",
            )
        )
        if loaders:
            # a loader (not a count, which the proof compares) fills variables
            named = ", ".join(extra)
            self.differences.append(
                f"{self.where(fn.line(stmt))}: {fn.name}_dataset returns (dataset, {named}): "
                f"where the pipeline reads variables that {named} fills, read the "
                "dataset through tf.compat.v1.data.make_initializable_iterator and run its "
                "initializer after that (a one-shot iterator cannot capture a variable)"
            )
        ret = f"{pad}return dataset.prefetch({chains.AUTOTUNE}), {', '.join(extra)}\n"
        if mapped:
            return [blank + mapped[0], ret]
        return [blank + ret]

    def _labels_absent(self, fn, stmt, returned: list[str], plain: list[str]) -> bool:
        """Whether the plain values `fn` returns beside its batches are all None (no
        labels): then it is noted, and the version returns the Dataset alone
        (NOTE [ No labels: a None beside the batches ])."""
        if fn.call is None or not nones_dropped(fn.call.returned):
            return False
        self.steps.append(
            Step(fn.line(stmt), f"return {', '.join(returned)}", "return the Dataset alone")
        )
        self.differences.append(
            f"{self.where(fn.line(stmt))}: {fn.name} returns {', '.join(plain)} beside its "
            f"batches (no labels); its tf.data version returns the Dataset alone, its element "
            "the batches, as an Estimator takes an input_fn's features without labels "
            f"(`(dataset, {', '.join(plain)})` would make the Dataset the features)"
        )
        return True

    def _note_plain_among(self, fn, stmt, returned: list[str], plain: list[str]) -> None:
        """Says so when plain values come before some of the batches: the version
        returns the Dataset first, its elements the batches in their order, then the
        plain values (NOTE [ Plain values among the batches ])."""
        if returned[-len(plain) :] == plain:
            return
        self.differences.append(
            f"{self.where(fn.line(stmt))}: {fn.name} returns {', '.join(plain)} among its "
            f"batches; {fn.name}_dataset returns the Dataset (its elements the batches in "
            f"their order) and then {', '.join(plain)}"
        )

    def _records_beside(self, fn, stmt, names):
        """The refusal of ``return batches..., record`` (an unbatched tensor of one record)."""
        records = ", ".join(sorted(n for n in names if fn.kind(n) == "record"))
        return self.fail(
            fn, stmt, f"it returns per-record tensors ({records}) beside the batches: an "
            "element of a Dataset holds batches only; add them to the batching call's list "
            "(or leave them out), then migrate"
        )  # fmt: skip

    def _return(self, fn, stmt, state: State, depth: int) -> list[str]:
        lines = self._return_lines(fn, stmt, state, depth)
        if state.loaders and lines and lines[-1].lstrip().startswith("return "):
            # NOTE [ Preloaded arrays in a migrated TF1-mode program ]
            lines[-1] = lines[-1].rstrip("\n") + f", {', '.join(state.loaders)}\n"
        return lines

    def _per_batch(self, state: State, returns: str, depth: int) -> list[str]:
        """The statements after the batching call as a function mapped over the batches.

        NOTE [ Per-batch code after the batching call ]
        An input function often works on its batches before it returns them
        (Inception's ``images = tf.cast(images, tf.float32)``, ``images =
        tf.reshape(images, [batch_size, h, w, 3])``, ``return images,
        tf.reshape(labels, [batch_size])``): those statements, in order, become
        ``per_batch(<the batches>)``, mapped over the batched Dataset, which
        returns what the function returned. A summary of the batches is listed
        as not migrated; a statement making a variable or placeholder is refused.
        """
        pad = "    " * depth
        params, unpack = starred_params(state.batch_element, set())
        params = with_outer_values(params, [st for st, _ in state.after_batch])
        body = "".join(f"{pad}    {line}\n" for line in unpack)
        body += "".join(self.text(st, depth + 1, rep) for st, rep in state.after_batch)
        body = body.lstrip("\n")
        state.after_batch = []
        return [
            "\n",
            f"{pad}def per_batch({params}):\n",
            body,
            f"{pad}    return {returns}\n",
            "\n",
            f"{pad}dataset = dataset.map(per_batch, num_parallel_calls={chains.AUTOTUNE})\n",
        ]

    def _return_lines(self, fn, stmt, state: State, depth: int) -> list[str]:
        pad = "    " * depth
        ret = stmt.body[0]
        value = self.code(ret.value) if ret.value is not None else ""
        names = names_in(ret)
        if state.batch_element and ret.value is not None and self._prefetched(fn, ret.value, state):
            return [f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n"]
        if (
            isinstance(ret.value, cst.Name)
            and ret.value.value in state.enqueued
            and not state.batch_element
        ):  # NOTE [ A queue a helper fills and returns ]: the records it was fed
            out = self._flush(state, ", ".join(state.element), depth) if state.pending else []
            return out + [f"{pad}return records.prefetch({chains.AUTOTUNE})\n"]
        if state.batch_element and state.after_batch:
            parts = ret.value.elements if isinstance(ret.value, (cst.Tuple, cst.List)) else []
            if "record" in {fn.kind(n) for n in names}:
                raise self._records_beside(fn, stmt, names)
            extra = self._plain_returns(fn, parts)
            codes = [self.code(p.value) for p in parts]
            if extra and len(extra) < len(codes):
                # ``return frames, labels, lengths, num_examples``: the count beside the
                # batches computed on (NOTE [ Per-batch code after the batching call ])
                tensors = ", ".join(c for c in codes if c not in extra)
                if self._labels_absent(fn, stmt, codes, extra):
                    return self._per_batch(state, tensors, depth) + [
                        f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n"
                    ]
                self._note_plain_among(fn, stmt, codes, extra)
                self.steps.append(
                    Step(
                        fn.line(stmt), f"return {value}", f"return the Dataset, {', '.join(extra)}"
                    )
                )
                return self._per_batch(state, tensors, depth) + [
                    f"{pad}return dataset.prefetch({chains.AUTOTUNE}), {', '.join(extra)}\n"
                ]
            if extra or self._plain_fields(fn)[1]:
                raise self.fail(
                    fn, stmt, "it returns plain values among the batches it computed on; return "
                    "the batches first and the plain values after them all"
                )  # fmt: skip
            return self._per_batch(state, value, depth) + [
                f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n"
            ]
        if state.batch_element:
            element = [e.lstrip("*") for e in state.batch_element]
            if value.replace(" ", "").strip("()[]") == ",".join(element):
                return [f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n"]
            if "record" in {fn.kind(n) for n in names}:
                raise self._records_beside(fn, stmt, names)
            parts = ret.value.elements if isinstance(ret.value, (cst.Tuple, cst.List)) else []
            extra = self._plain_returns(fn, parts)
            if extra:
                return self._return_beside(fn, stmt, parts, state, extra, pad)
            returned, plain = self._plain_fields(fn)
            if plain:
                return self._return_fields(fn, stmt, state, returned, plain, pad)
            return [
                _map_line(", ".join(state.batch_element), f"({value})", pad),
                f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n",
            ]
        if fn.role == "batch" or state.element:
            if fn.role == "batch" and not state.pending and not state.mapped:
                return [f"{pad}return dataset.prefetch({chains.AUTOTUNE})\n"]
            return self._flush(state, value, depth) + [
                f"{pad}return records.prefetch({chains.AUTOTUNE})\n"
            ]
        return [self.text(stmt, depth)]


def _map_line(params: str, value: str, pad: str) -> str:
    """``dataset = dataset.map(lambda PARAMS: VALUE)``, wrapped past 100 characters."""
    mapping = f"lambda {params}: {value}"
    line = f"{pad}dataset = dataset.map({mapping})\n"
    if len(line) > 100:
        line = f"{pad}dataset = dataset.map(\n{pad}    {mapping}\n{pad})\n"
    return line
