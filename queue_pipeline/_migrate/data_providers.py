"""tf-slim's ``DatasetDataProvider`` in a migration: the provider and its ``get``.

NOTE [ Migrating tf-slim's DatasetDataProvider ]
The TF-slim model zoo (``train_image_classifier.py`` and its forks) reads its
input through a provider::

    provider = slim.dataset_data_provider.DatasetDataProvider(
        dataset, num_readers=R, common_queue_capacity=C, common_queue_min=M,
        shuffle=S, num_epochs=E, seed=SEED)
    [image, label] = provider.get(['image', 'label'])

The provider is ``parallel_reader.parallel_read``: a ``string_input_producer``
over ``get_data_files(dataset.data_sources)`` (shuffled each epoch when `S`),
R readers of the class ``dataset.reader`` taking the next file as they need
one and enqueueing ``(key, serialized)`` into a common RandomShuffleQueue
(`S`; capacity C, seed SEED) or FIFOQueue, then
``dataset.decoder.decode(serialized, items)`` on what it hands out. The
engine rebuilds that graph as a gathering queue (NOTE [ Queues no builder
recorded ] in ``_rebuild/gathering.py``: the readers' streams interleaved
one element each in turn, then ``shuffle(capacity)``); the written code is
the same model as source:

* **The provider** line becomes ``records``: the producer's chain over the
  files (``chains.producer_lines``), each file read with the tf.data
  counterpart of the reader the run recorded at that line
  (``interleave(..., cycle_length=R)`` for R readers, as an own queue's
  reader loop: NOTE [ Migrating the function's own queue ]), then
  ``shuffle(C, seed=SEED)`` when `S`. The user's `dataset` object is kept
  (bound to a name of the written code's, which the map reads): its decoder
  is plain graph code that runs in a map.
* **``provider.get(items)``** is a per-record statement with the call
  replaced by ``dataset.decoder.decode(record, items)``: the serialized
  record is the mapped function's parameter.

Refused, with the line: a reader the run did not record or with no tf.data
counterpart, the provider's ``record_key`` item, a provider spelled as a bare
``DatasetDataProvider`` (its module is needed for ``get_data_files``), and any
use of the provider other than ``get``.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from queue_pipeline._migrate import chains
from queue_pipeline._migrate.base import Function, State, Step
from queue_pipeline._migrate.known_names import PROVIDER
from queue_pipeline._migrate.readers import Readers
from queue_pipeline._migrate.syntax import assigned_names, callee, names_in

__all__ = ["DataProviders"]

# the names the written code binds for a provider (kept apart from the user's:
# NOTE [ Names the written code binds ])
RECORD = "provided_record"
DATASET = "provided_dataset"


class DataProviders(Readers):
    """The provider rewrites (a mixin of the rewriter); see the NOTE above."""

    def provider_statement(self, fn: Function, stmt, calls: list, state: State, depth: int):
        """The lines `stmt` becomes if it builds or reads a provider; else None."""
        ctor = next((c for c in calls if callee(c) == PROVIDER), None)
        if ctor is not None:
            return self._provider(fn, stmt, ctor, state, depth)
        if not state.providers or not names_in(stmt) & set(state.providers):
            return None
        replace = []
        for call in calls:
            func = call.func
            if not (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value in state.providers
            ):
                continue
            if func.attr.value != "get" or len(call.args) != 1 or call.args[0].keyword:
                raise self.fail(fn, stmt, self._other_use(func.value.value))
            items = call.args[0].value
            if _names_record_key(items, state.providers[func.value.value][1]):
                raise self.fail(
                    fn, stmt, "it gets the provider's record key (the file and record a "
                    "record came from): tf.data's readers give no key; get the decoded items "
                    "only, or read the files with tf.data yourself"
                )  # fmt: skip
            decoded = f"{state.providers[func.value.value][0]}.decoder.decode({RECORD}, "
            replace.append((call, decoded + self.code(items) + ")"))
        used = {
            n.value
            for n in m.findall(stmt, m.Name())
            if isinstance(n, cst.Name) and n.value in state.providers
        }
        if len(replace) != len(used) or not replace:
            raise self.fail(fn, stmt, self._other_use(sorted(used)[0]))
        state.pending.append((stmt, tuple(replace)))
        return []

    def _other_use(self, name: str) -> str:
        return (
            f"it uses the DatasetDataProvider `{name}` otherwise than `{name}.get(items)` with "
            "one list of items, the only use migrated (NOTE [ Migrating tf-slim's "
            "DatasetDataProvider ]); read what else it needs from the dataset object "
            "(`dataset.num_samples`), then migrate"
        )

    def _provider(self, fn: Function, stmt, ctor: cst.Call, state: State, depth: int):
        pad, line = "    " * depth, fn.line(stmt)
        targets = assigned_names(stmt)
        if len(targets) != 1 or not isinstance(stmt, cst.SimpleStatementLine):
            raise self.fail(fn, stmt, "assign the DatasetDataProvider to one variable")
        made = fn.call.local_values.get(targets[0]) if fn.call is not None else None
        if made is None:
            raise self.fail(
                fn, stmt, "the run did not build this provider (a branch it did not take); "
                "migrate with arguments (--call) that build it"
            )  # fmt: skip
        if not isinstance(ctor.func, cst.Attribute):
            raise self.fail(
                fn, stmt, "the provider is spelled as a bare `DatasetDataProvider`; the "
                "written code lists the files with its module's `parallel_reader."
                "get_data_files`: spell it `slim.dataset_data_provider.DatasetDataProvider` "
                "(`import tf_slim as slim`), then migrate"
            )  # fmt: skip
        args = self.bound(type(made).__init__, ctor, skip_self=True)
        module = self.code(ctor.func.value)
        # the map reads the dataset under a name of its own: the user's may be rebound later
        lines, name = [f"{DATASET} = {args['dataset'].strip()}"], DATASET
        spec = self._recorded_read(fn, line, self.positions[stmt].end.line)
        if spec is None:
            raise self.fail(
                fn, stmt, "the run recorded no read of a reader class migrate knows with "
                "plain settings here (the dataset's `reader`, with `reader_kwargs`); tf.data "
                "has counterparts for TFRecordReader, TextLineReader, FixedLengthRecordReader "
                "and WholeFileReader: give the dataset one of them, or read the files with "
                "tf.data yourself"
            )  # fmt: skip
        try:
            reader_fn = chains.reader_dataset(*spec)
        except chains.Unsupported as e:
            raise self.fail(
                fn, stmt, f"the dataset's reader: {e}; give the dataset a reader tf.data has a "
                "counterpart for (TFRecordReader, TextLineReader, FixedLengthRecordReader, "
                "WholeFileReader), or read the files with tf.data yourself"
            ) from e  # fmt: skip
        producer: dict[str, str] = {
            "string_tensor": f"{module}.parallel_reader.get_data_files({name}.data_sources)"
        }
        producer.update({k: args[k] for k in ("num_epochs", "shuffle", "seed") if k in args})
        lines += chains.producer_lines("string_input_producer", producer, "records", False).lines
        readers = args.get("num_readers", "1").strip()
        if readers == "1":
            lines.append(f"records = {chains.records_of(reader_fn, 'records')}")
        else:
            lines.append(
                f"records = records.interleave({reader_fn}, cycle_length={readers}, "
                f"num_parallel_calls={chains.AUTOTUNE})"
            )
            self.differences.append(
                f"{self.where(line)}: `num_readers={readers}`: the provider's readers hand "
                "out records in the order their threads come in; the Dataset interleaves that "
                "many files, one record of each in turn (one order they could deliver)"
            )
        seed = f", seed={args['seed']}" if "seed" in args else ""
        shuffle = _literal_bool(args.get("shuffle", "True"))
        common = f"records = records.shuffle({args.get('common_queue_capacity', '256')}{seed})"
        if shuffle is None:
            lines += [f"if {args['shuffle']}:", "    " + common]
        elif shuffle:
            lines.append(common)
        if shuffle is not False and "common_queue_min" in args:
            self.differences.append(
                f"{self.where(line)}: `common_queue_min`: a Dataset's shuffle buffer is full "
                "before it hands out a record (the common queue's capacity)"
            )
        state.providers[targets[0]] = (name, args.get("record_key", "'record_key'"))
        state.element, state.read_from, state.read_by = [RECORD], ["records"], {targets[0]}
        written = "\n".join(lines)
        self.steps.append(Step(line, PROVIDER, " ".join(written.split())))
        return [f"{pad}{text}\n" for text in lines]


def _names_record_key(items: cst.BaseExpression, record_key: str) -> bool:
    """Whether the literal list of items `items` names the provider's record key."""
    try:
        key = cst.parse_expression(record_key.strip())
    except cst.ParserSyntaxError:
        return False
    if not isinstance(key, cst.SimpleString):
        return False
    return isinstance(items, (cst.List, cst.Tuple)) and any(
        isinstance(e.value, cst.SimpleString) and e.value.evaluated_value == key.evaluated_value
        for e in items.elements
    )


def _literal_bool(text: str) -> bool | None:
    """True / False for a literal flag's source text, None for an expression."""
    text = text.strip()
    if text == "True":
        return True
    if text in ("False", "None", "0"):
        return False
    return None
