"""The reads of a migration: which reader a read is, and its Dataset of records.

A ``reader.read(queue)`` (or ``read_up_to``) becomes the records of the
files the queue holds, read by the tf.data source that matches the reader
the run built (its class and constructor arguments: a ``TextLineReader``'s
``skip_header_lines``, a ``FixedLengthRecordReader``'s record sizes), whoever
built it: the function, a reader passed in, or TF itself.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m
import tensorflow as tf

from queue_pipeline._migrate.legacy_api import legacy_api
from queue_pipeline._migrate import chains
from queue_pipeline._migrate.base import READER_CLASSES, READS, Function, RewriterBase
from queue_pipeline._migrate.known_names import WRAPPER
from queue_pipeline._migrate.syntax import assigned_names, callee, names_in

__all__ = ["Readers"]


class Readers(RewriterBase):
    """The read rewrites (a mixin of the rewriter)."""

    def _reader_ctor(self, fn: Function, stmt: cst.CSTNode) -> tuple[str, dict] | None:
        """(reader kind, its arguments) if `stmt` creates a reader.

        A reader of a traced read is known by the run, however its class is
        spelled (``IMPLS[impl]["TFRecordReader"]()``); in a branch the run did
        not take, by the class name (``tf.compat.v1.TextLineReader()``).
        """
        first, last = self.positions[stmt].start.line, self.positions[stmt].end.line
        kinds = [
            node.kind.rpartition(".")[0]
            for node in self.trace.nodes
            if any(
                name == fn.name and first <= line <= last
                for name, line in self.trace.reader_sites.get(node.index, ())
            )
        ]
        for call in self.calls_in(stmt):
            if callee(call) in READS:
                continue
            for kind in kinds or ([callee(call)] if callee(call) in READER_CLASSES else []):
                try:
                    reader_init = legacy_api(kind).__init__
                    return kind, self.bound(reader_init, call, skip_self=True)
                except (chains.Unsupported, TypeError, ValueError, AttributeError):
                    continue
        return None

    def _carried(self, fn: Function, stmt, ctor: tuple[str, dict]) -> tuple[str, dict]:
        """The reader's arguments, those computed in `fn` replaced by the values the run gave.

        The Dataset that replaces the reader is built in the caller, where the
        helper's locals (``record_bytes = label_bytes + image_bytes`` in
        ``read_cifar10``) do not exist; the run recorded what each argument was.
        """
        kind, args = ctor
        local = {
            n for st in m.findall(fn.node.body, m.SimpleStatementLine()) for n in assigned_names(st)
        } - set(fn.params)
        first, last = self.positions[stmt].start.line, self.positions[stmt].end.line
        traced = next(
            (
                node.args
                for node in self.trace.nodes
                if any(
                    name == fn.name and first <= line <= last
                    for name, line in self.trace.reader_sites.get(node.index, ())
                )
            ),
            {},
        )
        carried = dict(args)
        for arg, text in args.items():
            if not names_in(cst.parse_expression(text)) & local:
                continue
            value = traced.get(arg)
            if not isinstance(value, (int, float, str, bytes)) or isinstance(value, bool):
                raise self.fail(
                    fn, stmt, f"the reader's `{arg}` ({text}) is computed in {fn.name} and the "
                    "run gave no plain value for it (pass it as a parameter)"
                )  # fmt: skip
            carried[arg] = repr(value)
        return kind, carried

    def _reader_spec(self, fn, stmt, read_call, readers) -> tuple[str, dict]:
        """(reader kind, its constructor's arguments) of the reader a read statement reads."""
        receiver = read_call.func.value if isinstance(read_call.func, cst.Attribute) else None
        spec = None
        if isinstance(receiver, cst.Name):
            spec = readers.get(receiver.value)
        elif isinstance(receiver, cst.Call):
            spec = self._reader_ctor(fn, stmt)
        if spec is None:
            spec = self._passed_reader(fn, stmt)
        if spec is None:
            spec = self._reader_of_the_run(fn, stmt)
        if spec is None:
            raise self.fail(
                fn,
                stmt,
                "its reader was not created by a traced reader constructor, and the run "
                "read no reader with plain settings here",
            )
        return spec

    def _reader_of_the_run(self, fn: Function, stmt) -> tuple[str, dict] | None:
        """The one reader kind and settings every read of `fn` the run made used, for a read
        in a branch the run did not take (Inception's ``if num_readers > 1:`` loop in an
        evaluation run); None when the run read with none or with several."""
        specs = {
            (kind, tuple(sorted(args.items())))
            for first in range(fn.first, fn.last + 1)
            if (found := self._recorded_read(fn, first, first)) is not None
            for kind, args in [found]
        }
        if len(specs) != 1:
            return None
        kind, args = next(iter(specs))
        self.differences.append(
            f"{self.where(fn.line(stmt))}: a read in a branch this run did not take: read with "
            f"the {kind} (and settings) the run read with elsewhere in {fn.name}"
        )
        return kind, dict(args)

    def _passed_reader(self, fn: Function, stmt) -> tuple[str, dict] | None:
        """(reader kind, its settings as literals) of a reader made outside `fn` (passed in).

        ``prefetch_input_data(tf.compat.v1.TFRecordReader(), ...)`` or a
        reader class argument: the constructor is not in the file, but the
        run recorded the read at `stmt` (by queue_pipeline's reader, or read
        from the graph for TF's own), with the reader's settings.
        """
        first, last = self.positions[stmt].start.line, self.positions[stmt].end.line
        return self._recorded_read(fn, first, last)

    def _recorded_read(self, fn: Function, first: int, last: int) -> tuple[str, dict] | None:
        """(reader kind, its settings as literals) of a read the run recorded in `fn` on lines
        `first` to `last`; None if none, or its settings are not literals."""
        node = self._recorded_node(fn, first, last)
        if node is not None:
            args = {}
            for arg, value in node.args.items():
                if arg in ("num_records", "name"):
                    continue
                if arg == "options" and value is not None:
                    value = _compression_string(value)
                if value is not None and (
                    not isinstance(value, (int, float, str, bytes)) or isinstance(value, bool)
                ):
                    return None
                args[arg] = repr(value)
            return node.kind.rpartition(".")[0], args
        return None

    def _recorded_node(self, fn: Function, first: int, last: int):
        """The trace node of the read the run made in `fn` on lines `first` to `last`."""
        for node in self.trace.nodes:
            if node.kind.endswith(tuple("." + m for m in READS)) and any(
                name == fn.name and first <= line <= last
                for name, line in self.trace.sites.get(node.index, ())
            ):
                return node
        return None

    def _compression(self, fn: Function, stmt, args: dict) -> dict:
        """`args` with a TFRecordReader's `options` as the string the run read with where the
        source spells no literal (NOTE [ A TFRecordReader's options as a compression string ])."""
        if not chains.compression_code(args.get("options", "None")).startswith("tf."):
            return args
        first, last = self.positions[stmt].start.line, self.positions[stmt].end.line
        node = self._recorded_node(fn, first, last)
        value = _compression_string(node.args.get("options")) if node is not None else None
        if not isinstance(value, str):
            return args  # not run here: converted where the Dataset is built
        return {**args, "options": f'"{value}"'}

    def _read_key(self, stmt) -> str:
        """The name a read statement assigns its key to (``key`` of ``key, value = ...``)."""
        target = stmt.body[0].targets[0].target
        return self.code(target.elements[0].value)

    def _read(self, fn, stmt, read_call, readers):
        """The reader kind, Dataset function and value variable of a read statement."""
        kind, args = self._reader_spec(fn, stmt, read_call, readers)
        if kind == "TFRecordReader":
            args = self._compression(fn, stmt, args)
        try:
            reader_fn = chains.reader_dataset(kind, args)
        except chains.Unsupported as e:
            raise self.fail(fn, stmt, str(e)) from e
        up_to = callee(read_call) == "read_up_to"  # NOTE [ read_up_to as per-file chunks ]
        if up_to and self.trace.function == WRAPPER:
            raise self.fail(
                fn, stmt, "read_up_to in a pipeline inline in a script or a training function "
                "(not migrated there yet): move the pipeline into a function that returns its "
                "batches and migrate that function"
            )  # fmt: skip
        if up_to:
            count = self._read_count(fn, stmt, read_call)
            reader_fn = chains.chunks_dataset(reader_fn, count)
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
        key, value = "", ""
        if isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Tuple):
            elements = assign.targets[0].target.elements
            key, value = (self.code(e.value) for e in elements)
        if not value or not re.fullmatch(r"\w+", value):
            raise self.fail(fn, stmt, "the read must assign `key, value = reader.read(queue)`")
        # The rest of the function, however deep the read is (a `with` block).
        later = "".join(self.lines[self.positions[stmt].end.line : fn.last])
        key_used = (
            bool(key)
            and key != "_"
            and bool(re.search(rf"(?<![\w.]){re.escape(key)}(?!\w)", later))
        )
        if key and not re.fullmatch(r"\w+", key):
            self.dropped.append(
                f"{self.where(fn.line(stmt))}: `{key}` (the reader's key): tf.data's readers give "
                "no key"
            )
        if key_used and up_to:
            raise self.fail(
                fn, stmt, "read_up_to's keys (the chunks of values are read; read the key "
                "from the values, or read one record at a time with read)"
            )  # fmt: skip
        if kind == "WholeFileReader" and not up_to:
            reader_fn = "tf.io.read_file"
        return kind, reader_fn, value, key_used

    def _read_count(self, fn, stmt, read_call) -> str:
        """The source text of ``read_up_to``'s `num_records` argument."""
        args = list(read_call.args)
        found = next((a for a in args if a.keyword and a.keyword.value == "num_records"), None)
        if found is None and len(args) > 1 and args[1].keyword is None:
            found = args[1]
        if found is None:
            raise self.fail(fn, stmt, "read_up_to without its number of records")
        return self.code(found.value)


def _compression_string(options):
    """The compression string of a TFRecordReader's `options` value, as TF 1.x's reader
    computed it; `options` itself when it is no compression setting."""
    try:
        return tf.io.TFRecordOptions.get_compression_type_string(options)
    except (ValueError, TypeError, KeyError):
        return options
