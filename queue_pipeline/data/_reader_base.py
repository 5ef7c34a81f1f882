"""The base of the reader twins: :class:`ReaderBase`, record numbering, work units.

:class:`ReaderBase` is the twin of ``queue_pipeline.ReaderBase``: its
``read`` / ``read_up_to`` turn a Dataset of file names (work units) into
``(key, value)`` records or batches of them, and the stateful reader methods
raise ``NotImplementedError`` naming the tf.data way. ``_NumberedReader`` adds
TF 1.x's ``"<file>:<record number>"`` keys for the readers whose records are
numbered. The concrete readers are :mod:`queue_pipeline.data.readers`'.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

from queue_pipeline._core.compat import as_int64
from queue_pipeline.data._common import as_dataset, warn_inert

_API = "queue_pipeline.data."
_MAX_INT64 = 2**63 - 1
_TFRECORD_FRAME_BYTES = 16  # length (8) + length CRC (4) + data CRC (4)

# NOTE [ Vectorized keys ]
# A legacy key is "<work unit>:<number>" (line number, record index or byte
# offset). Building it per record (`map(lambda ...: tf.strings.join(...))`)
# costs one function call per record, which on a small machine is 10-20
# times the cost of reading the record. So the keyed readers read each work
# unit in batches (`TextLineDataset(f).skip(n).batch(b)`, ...), pair every
# batch with its numbers (the first number, or a vector of byte offsets from a
# `scan`), and build a whole batch of keys with one `tf.strings.join` in one
# parallel, order-preserving `map`. `read` then unbatches; `read_up_to` uses
# `num_records` as the batch size, so a batch never spans two work units,
# exactly like the legacy kernel's ReadUpTo.


def _work_units(api: str, filenames) -> tf.data.Dataset:
    """`filenames` as a Dataset of scalar strings, or a clear TypeError."""
    units = as_dataset(api, "filenames", filenames)
    spec = units.element_spec
    if not (
        isinstance(spec, tf.TensorSpec)
        and spec.dtype == tf.string
        and spec.shape.is_compatible_with([])
    ):
        raise TypeError(
            f"{api}: `filenames` must be a Dataset (or list, tensor) of "
            f"scalar strings; got elements {spec}."
        )
    return units


def _keyed(work, numbers, values):
    """One batch of ``(keys, values)``; see NOTE [ Vectorized keys ].

    `numbers` is the first record's number (a scalar; the batch's numbers are
    consecutive) or a vector with one number per record.
    """
    if numbers.shape.rank == 0:
        numbers = numbers + tf.range(tf.size(values, out_type=tf.int64))
    keys = tf.strings.join([work, ":", tf.strings.as_string(numbers)])
    return keys, values


def _non_negative(api: str, arg: str, value, default: int = 0) -> int:
    """`value` (None means `default`) as an int >= 0, or a clear ValueError."""
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(
            f"{api}: `{arg}` must be an int >= 0 (or None for {default}); got {value!r}."
        )
    return value


class ReaderBase:
    """A reader that turns a Dataset of work units into a Dataset of records.

    Mirrors `queue_pipeline.ReaderBase`. A work unit is usually a file name;
    each unit's records are produced in order, then the next unit's.

    Args:
      reader_ref: the function from one work unit (a scalar string tensor) to
        the ``tf.data.Dataset`` of its ``(key, value)`` records: the twin of
        the legacy reader kernel handle. The built-in readers provide it.
      supports_serialize: reported by :attr:`supports_serialize`, as the
        legacy reader does; it enables nothing (see the module docstring).

    Raises:
      TypeError: `reader_ref` is not callable.

    Differences from the legacy class:
      See the module docstring: no kernel state, and the state methods raise
      ``NotImplementedError``.
    """

    def __init__(
        self, reader_ref: Callable[[tf.Tensor], tf.data.Dataset], supports_serialize: bool = False
    ) -> None:
        if not callable(reader_ref):
            raise TypeError(
                f"{self._api('__init__')}: `reader_ref` must be a function from a work "
                f"unit (scalar string tensor) to a Dataset of (key, value) records; "
                f"got {type(reader_ref).__name__}."
            )
        self._reader_ref = reader_ref
        self._supports_serialize = bool(supports_serialize)

    @property
    def reader_ref(self) -> Callable[[tf.Tensor], tf.data.Dataset]:
        """The function from one work unit to the Dataset of its records."""
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        """What the legacy reader reports; in tf.data checkpoint the iterator instead."""
        return self._supports_serialize

    def read(
        self, filenames: Any, name: str | None = None, *, keys: bool = True
    ) -> tf.data.Dataset:
        """Returns the Dataset of every work unit's records, unit after unit.

        Args:
          filenames: a Dataset of scalar strings (or a list, array or 1-D
            tensor of them), e.g. a producer twin's output.
          name: no effect; warns if set.
          keys: produce the legacy keys. Pass False when the pipeline ignores
            them (``_, value = reader.read(queue)``): the Dataset then holds
            the values alone and reads as fast as the plain tf.data dataset
            (no key is built).

        Returns:
          A ``tf.data.Dataset`` of ``(key, value)`` string scalars (of values
          alone with ``keys=False``).

        Raises:
          TypeError: `filenames` is not (convertible to) a Dataset of scalar
            strings.
        """
        api = self._api("read")
        warn_inert(api, name=name)
        units = _work_units(api, filenames)
        return self._records(units) if keys else self._values(units)

    def read_up_to(
        self, filenames: Any, num_records: Any, name: str | None = None, *, keys: bool = True
    ) -> tf.data.Dataset:
        """Returns the Dataset of record batches, at most `num_records` each.

        A batch never spans two work units (as the legacy kernel's ReadUpTo:
        5-record files with ``num_records=3`` give 3, 2, 3, 2 records).

        Args:
          filenames: as :meth:`read`.
          num_records: the largest batch, a positive int (or int64 scalar
            tensor).
          name: no effect; warns if set.
          keys: as :meth:`read`.

        Returns:
          A ``tf.data.Dataset`` of ``(keys, values)`` string vectors of equal
          length, 1 to `num_records` (of value vectors alone with
          ``keys=False``).

        Raises:
          TypeError: as :meth:`read`.
          ValueError: `num_records` is not positive (legacy returns empty
            batches for 0).
        """
        api = self._api("read_up_to")
        warn_inert(api, name=name)
        static = tf.get_static_value(num_records)
        if static is not None and (
            tf.TensorShape(getattr(static, "shape", ())).rank != 0 or int(static) <= 0
        ):
            raise ValueError(
                f"{api}: `num_records` must be a positive integer scalar; got {num_records!r}."
            )
        num_records = as_int64(num_records)
        units = _work_units(api, filenames)
        if not keys:
            return units.flat_map(lambda work: self._unit_values(work).batch(num_records))
        return self._batches(units, num_records)

    def num_records_produced(self, name: str | None = None):
        """Not available: a Dataset keeps no reader counters.

        Raises:
          NotImplementedError: always; count the records you consume (e.g.
            ``dataset.enumerate()``).
        """
        raise NotImplementedError(
            f"{self._api('num_records_produced')}: tf.data readers keep no counters; "
            "count the records you consume (e.g. `dataset.enumerate()`), or checkpoint "
            "the iterator with `tf.train.Checkpoint(iterator=...)`."
        )

    def num_work_units_completed(self, name: str | None = None):
        """Not available: a Dataset keeps no reader counters.

        Raises:
          NotImplementedError: always; count the work units yourself.
        """
        raise NotImplementedError(
            f"{self._api('num_work_units_completed')}: tf.data readers keep no "
            "counters; count the work units you pass in, or checkpoint the iterator "
            "with `tf.train.Checkpoint(iterator=...)`."
        )

    def serialize_state(self, name: str | None = None):
        """Not available: checkpoint the iterator instead.

        Raises:
          NotImplementedError: always; use ``tf.train.Checkpoint(iterator=it)``.
        """
        raise NotImplementedError(
            f"{self._api('serialize_state')}: tf.data readers have no state to "
            "serialize; save the position with `tf.train.Checkpoint(iterator=it)"
            ".save(path)` on an iterator `it = iter(dataset)` (in a Session: a "
            "`tf.compat.v1.train.Saver` over "
            "`tf.compat.v1.data.experimental.make_saveable_from_iterator(it)`)."
        )

    def restore_state(self, state: Any, name: str | None = None):
        """Not available: restore a checkpointed iterator instead.

        Raises:
          NotImplementedError: always; use ``tf.train.Checkpoint(iterator=it)``.
        """
        raise NotImplementedError(
            f"{self._api('restore_state')}: tf.data readers have no state to "
            "restore; restore the position with `tf.train.Checkpoint(iterator=it)"
            ".restore(path)` on a fresh iterator `it = iter(dataset)` (in a "
            "Session: `Saver.restore` with the iterator's saveable, see "
            "serialize_state)."
        )

    def reset(self, name: str | None = None):
        """Not available: a new iterator starts from the beginning.

        Raises:
          NotImplementedError: always; iterate the Dataset again instead.
        """
        raise NotImplementedError(
            f"{self._api('reset')}: tf.data readers have no state to reset; create "
            "a new iterator (`iter(dataset)`, or in a Session run an initializable "
            "iterator's `initializer` again) to read from the beginning."
        )

    def _api(self, method: str) -> str:
        return f"{_API}{type(self).__name__}.{method}"

    def _records(self, units: tf.data.Dataset) -> tf.data.Dataset:
        """The ``(key, value)`` records of every unit, in order."""
        return units.flat_map(self._reader_ref)

    def _batches(self, units: tf.data.Dataset, num_records: tf.Tensor) -> tf.data.Dataset:
        """``(keys, values)`` batches of at most `num_records`, per unit."""
        return units.flat_map(lambda work: self._reader_ref(work).batch(num_records))

    def _unit_values(self, work: tf.Tensor) -> tf.data.Dataset:
        """One unit's values, without keys (readers override it with a plain dataset)."""
        return self._reader_ref(work).map(lambda key, value: value)

    def _values(self, units: tf.data.Dataset) -> tf.data.Dataset:
        """The values of every unit, in order, without keys."""
        return units.flat_map(self._unit_values)


class _NumberedReader(ReaderBase):
    """Base of the readers whose keys are ``"<work unit>:<number>"``.

    Subclasses implement :meth:`_numbered`; see NOTE [ Vectorized keys ].
    """

    _read_batch_size = 1024  # records per internal batch of read()

    def __init__(self) -> None:
        super().__init__(lambda work: self._records(tf.data.Dataset.from_tensors(work)))

    def _numbered(self, work: tf.Tensor, batch_size) -> tf.data.Dataset:
        """One unit's records as batches of ``(numbers, values)``."""
        raise NotImplementedError  # pragma: no cover

    def _records(self, units):
        return self._batches(units, self._read_batch_size).unbatch()

    def _batches(self, units, num_records):
        def unit_batches(work):
            return tf.data.Dataset.zip(
                (tf.data.Dataset.from_tensors(work).repeat(), self._numbered(work, num_records))
            )

        return units.flat_map(unit_batches).map(
            lambda work, numbered: _keyed(work, *numbered), num_parallel_calls=tf.data.AUTOTUNE
        )
