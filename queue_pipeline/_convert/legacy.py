"""``FILE.py:FUNCTION``: what a legacy input function's reader and decoder produce, as records.

The function is run once, as ``migrate`` runs it (``_migrate/trace.py``: the
file is imported, not executed as a script, so its ``__main__`` training
does not run; ``--argv`` is its own command line; the function is called
with ``--call``'s arguments under
``queue_pipeline.install()`` in a fresh graph). Its batching call's inputs
are the per-record region; ``queue_pipeline.to_dataset`` rebuilds them as a
tf.data pipeline, read here one epoch long (a producer that repeats
forever, ``num_epochs=None``, is read for one epoch). Each element becomes one
Example: a feature per component, named by the dict key (a dict was
batched) or the function's local variable that held it, else
``component_<i>``. Dtype and shape go to the feature spec; ``float64`` and
``uint64`` values are stored as raw bytes (``encoding: raw``) so they read
back bit for bit, the rest in their natural lists (``int64_list`` for
integers and bools, ``float_list`` for float32, ``bytes_list`` for strings).

A record's identity is a hash of its content (and its repeat count): the
legacy pipeline's order (shuffled files, threads) does not change its shard.

The reading and decoding run in this process (tf.data's own parallelism),
not on Beam's workers; Beam writes the shards.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np
import tensorflow as tf

from queue_pipeline import plan as _plan
from queue_pipeline._core.compat import readable_error
from queue_pipeline._convert.features import serialize_features
from queue_pipeline._convert.listing import Listing

__all__ = ["RAW_DTYPES", "list_legacy"]

_API = "queue_pipeline.convert"
RAW_DTYPES = ("float64", "uint64", "complex64", "complex128")


def _fail(message: str) -> ValueError:
    return ValueError(f"{_API}: {message}")


def _record_tensors(traced) -> tuple[list[str], list[tf.Tensor], bool]:
    batches = [n for n in traced.nodes if n.kind in _plan.BATCHING_KINDS]
    if not batches:
        raise _fail(
            f"{traced.function}() in {traced.path} has no batching call; `convert` writes "
            "what reaches the batching call (shuffle_batch, batch, ...)."
        )
    node = batches[-1]
    if node.args.get("num_lists", 1) != 1 or node.args.get("dynamic_pad"):
        raise _fail(
            f"{node.kind}(num_lists={node.args.get('num_lists')}, dynamic_pad="
            f"{node.args.get('dynamic_pad')}) is not supported yet: convert needs one list of "
            "tensors of static shape. Fix: convert the function's reader + decoder alone."
        )
    tensors = list(node.inputs)
    return _names(traced, node, tensors), tensors, bool(node.args.get("enqueue_many"))


def _names(traced, node, tensors) -> list[str]:
    outputs = traced.outputs
    if isinstance(outputs, dict):
        flat = tf.nest.flatten(outputs)
        if len(flat) == len(node.outputs) and all(a is b for a, b in zip(flat, node.outputs)):
            return sorted(str(k) for k in outputs)
    names = []
    for i, tensor in enumerate(tensors):
        found = [
            name
            for call in traced.calls.values()
            for name, value in call.local_values.items()
            if value is tensor and not name.startswith("_")
        ]
        names.append(found[0] if found else f"component_{i}")
    if len(set(names)) != len(names):
        names = [f"component_{i}" for i in range(len(tensors))]
    return names


# NOTE [ Bad records of a legacy function ]
# A record the function's decoder fails on (a truncated JPEG, a malformed CSV
# line) is an error of that element alone: a tf.data iterator raises it for
# that element and goes on with the next one. convert reads the per-record
# region in a fixed order (the producers' shuffles off, one epoch: the shards
# do not depend on the order, NOTE [ Stable assignment ]), so the n-th element
# is the n-th of the record's *sources* read alone in the same order: the
# readers' keys (``file:record``, or the file for a WholeFileReader) and the
# string slices of ``slice_input_producer`` (file paths, most often). The
# failing element is listed with that file and key and TensorFlow's reason,
# and the job goes on (``on_error="fail"``: the first stops it). When the
# sources cannot be read alone, or do not line up with the elements
# (``enqueue_many``), the error names the element's position instead. Errors
# with no element between, MAX_ERRORS_IN_A_ROW of them (an iterator that
# cannot go on, not a folder of bad files), stop the conversion with the last.
MAX_ERRORS_IN_A_ROW = 10_000


class _Failed(NamedTuple):
    error: tf.errors.OpError


@contextlib.contextmanager
def _one_ordered_epoch() -> Iterator[None]:
    """Inside: producers run one epoch and tf.data shuffles keep their order."""
    from queue_pipeline._migrate.proof_conditions import bounded_repeats  # noqa: PLC0415

    shuffle = tf.data.Dataset.shuffle

    def in_order(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None):
        return self

    tf.data.Dataset.shuffle = in_order
    try:
        with bounded_repeats(1):
            yield
    finally:
        tf.data.Dataset.shuffle = shuffle


def _elements(tensors: list[tf.Tensor], enqueue_many: bool) -> Iterator[Any]:
    """One epoch of the region's elements (tuples of numpy values), or a _Failed for each bad one.

    Both TF modes; the order is fixed (NOTE [ Bad records of a legacy function ]).
    """
    from queue_pipeline.rebuild import to_dataset  # noqa: PLC0415 - no cycle at import

    def build():
        with _one_ordered_epoch():
            dataset = to_dataset(tuple(tensors))
        options = tf.data.Options()
        options.deterministic = True
        return (dataset.unbatch() if enqueue_many else dataset).with_options(options)

    in_a_row = 0
    for item in _iterate(build):
        if isinstance(item, _Failed):
            in_a_row += 1
            if in_a_row >= MAX_ERRORS_IN_A_ROW:
                raise item.error
        else:
            in_a_row = 0
        yield item


def _iterate(build) -> Iterator[Any]:
    """The elements of the Dataset `build()` makes, errors as _Failed (eagerly or in a Session)."""
    if tf.executing_eagerly():
        iterator = iter(build())
        while True:
            try:
                yield tf.nest.map_structure(lambda t: t.numpy(), next(iterator))
            except StopIteration:
                return
            except tf.errors.OpError as e:
                yield _Failed(e)
    graph = tf.Graph()
    with graph.as_default():
        next_element = tf.compat.v1.data.make_one_shot_iterator(build()).get_next()
    with tf.compat.v1.Session(graph=graph) as sess:
        while True:
            try:
                yield sess.run(next_element)
            except tf.errors.OutOfRangeError:
                return
            except tf.errors.OpError as e:
                yield _Failed(e)


def _source_keys(traced, tensors: list[tf.Tensor], enqueue_many: bool) -> list[str] | None:
    """Each element's source names, in the order of :func:`_elements`; None if unknown."""
    from queue_pipeline.rebuild import to_dataset  # noqa: PLC0415

    if enqueue_many:
        return None
    keys = []
    for node in traced.nodes:
        if node.kind.endswith(".read") and len(node.outputs) == 2:
            keys.append(node.outputs[0])
        elif node.kind == "slice_input_producer":
            keys += [t for t in node.outputs if t.dtype == tf.string and t.shape.rank == 0]
    if not keys:
        return None

    def build():
        with _one_ordered_epoch():
            return to_dataset(tuple(keys))

    try:
        names = []
        for item in _iterate(build):
            if isinstance(item, _Failed):
                return None
            values = item if isinstance(item, tuple) else (item,)
            names.append(" ".join(v.decode("utf-8", "backslashreplace") for v in values))
    except Exception:  # noqa: BLE001 - the names are a help to the report, never its failure
        return None
    return names


def _reason(error: tf.errors.OpError) -> str:
    """TensorFlow's message for a record, without the iterator's and the graph's framing."""
    lines = [line.strip() for line in (error.message or "").splitlines()]
    lines = [line for line in lines if line and line != "Graph execution error:"]
    message = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", lines[0] if lines else "")
    message = re.sub(
        r"^Error in user-defined function passed to .*? transformation with iterator: "
        r"[\w:]+: ",
        "",
        message,
    )
    return f"{type(error).__name__}: {message}"


def _file_of(key: str) -> str:
    """The file a reader key (``file:record``) or a sliced path names."""
    first = key.split(" ")[0]
    file, sep, record = first.rpartition(":")
    return file if sep and record.isdigit() else first


def _spec(names, tensors, enqueue_many) -> dict[str, dict[str, Any]]:
    spec = {}
    for name, tensor in zip(names, tensors):
        shape = tensor.shape[1:] if enqueue_many else tensor.shape
        if not shape.is_fully_defined():
            raise _fail(
                f"the per-record tensor {name!r} ({tensor.name}) has shape {shape}, not a "
                "static one; convert writes fixed-shape features. Fix: set_shape or reshape "
                "it in the input function."
            )
        dtype = tensor.dtype.name
        entry: dict[str, Any] = {"dtype": dtype, "shape": [int(d) for d in shape]}
        if dtype in RAW_DTYPES:
            entry["encoding"] = "raw"
        spec[name] = entry
    return spec


def _value(value: Any, entry: dict[str, Any]) -> Any:
    if entry.get("encoding") == "raw":
        return np.ascontiguousarray(value, dtype=entry["dtype"]).tobytes()
    return value


def list_legacy(
    source: str,
    path: str,
    function: str,
    call: str | None,
    argv: str | Sequence[str] | None = None,
) -> Listing:
    """Runs `function` of `path` once (with `call`) and lists one epoch of its per-record region.

    `argv` is the program's own command line (``sys.argv[1:]`` for its flags
    and argparse while it is loaded, traced and read), as ``migrate --argv``.

    Raises:
      ValueError: the function cannot be run or traced, has no batching
        call, or a record tensor has no static shape.
    """
    from queue_pipeline._migrate import loading as _loading  # noqa: PLC0415 - migrate's loader
    from queue_pipeline._migrate import trace as _trace  # noqa: PLC0415

    try:
        program_argv = _loading.split_argv(argv)
        module, _ = _trace.load_module(path, function, program_argv, call)
        args, kwargs = _trace.parse_call(module, call)
        traced = _trace.trace(path, function, args, kwargs, module=module, argv=program_argv)
    except _trace.MigrateError as e:
        raise _fail(str(e).replace("queue-pipeline migrate: ", "", 1)) from e
    names, tensors, enqueue_many = _record_tensors(traced)
    spec = _spec(names, tensors, enqueue_many)
    listing = Listing(source, "example", spec, [])
    seen: dict[str, int] = {}
    failed: list[tuple[int, tf.errors.OpError]] = []
    position = 0
    try:
        with _loading.own_argv(module.__file__ or path, program_argv):
            for element in _elements(tensors, enqueue_many):
                if isinstance(element, _Failed):
                    failed.append((position, element.error))
                else:
                    record = serialize_features(
                        {name: _value(v, spec[name]) for name, v in zip(names, element)}
                    )
                    key = hashlib.sha256(record).hexdigest()
                    seen[key] = seen.get(key, 0) + 1
                    listing.records.append((f"{key}#{seen[key]}", record))
                position += 1
            keys = _source_keys(traced, tensors, enqueue_many) if failed else None
    except tf.errors.OpError as e:
        raise _fail(
            f"reading {function}()'s pipeline failed after {len(listing.records)} records: "
            f"{type(e).__name__}: {e.message}"
        ) from e
    if keys is not None and len(keys) != position:
        keys = None  # the sources do not line up with the elements
    for at, error in failed:
        where = keys[at] if keys is not None else f"{function}() record {at + 1}"
        listing.errors.append(
            {
                "record": where,
                "file": _file_of(keys[at]) if keys is not None else source,
                "reason": _reason(readable_error(error)),
            }
        )
    return listing
