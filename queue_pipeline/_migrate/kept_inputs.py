"""A ``maybe_*`` batching call's ``keep_input`` as a ``Dataset.filter``.

NOTE [ keep_input as a filter ]
``maybe_batch`` / ``maybe_shuffle_batch`` (and their joins of one list)
enqueue a record only when its ``keep_input`` is true (the spec's 1.8.4): a
scalar per record; with ``enqueue_many=True`` a scalar keeps or drops the whole
input batch, and a vector keeps rows. The written code carries the keep value
in the element: the per-record function returns ``(<the tensors>), keep``,
then ``filter(lambda values, keep: keep)`` keeps the records the legacy queue
took and ``map(lambda values, keep: values)`` drops the value again, before
the shuffle and the batch (the package's own twin,
``queue_pipeline/data/_batch_engine.py``, filters at the same place). With
``enqueue_many`` a scalar filters before the ``unbatch``, a vector after it
(its rows go with the records' rows). ``keep_input=True`` writes no filter;
``keep_input=False`` is refused (the legacy pipeline blocks forever on its
first batch, so there is nothing to migrate). A join of several lists (each
list its own enqueue, all conditioned on the one keep tensor) is refused with
the way around.
"""

from __future__ import annotations

__all__ = ["filter_lines", "keep_of", "with_keep"]

_FILTER = "{var} = {var}.filter(lambda values, keep: keep)"
_DROP = "{var} = {var}.map(lambda values, keep: values)"


class KeepRefused(Exception):
    """A ``keep_input`` the written code cannot express (the message says why)."""


def keep_of(kind: str, args: dict[str, str]) -> str | None:
    """The source text of the keep value to filter by, or None (no ``maybe_*`` call, or
    ``keep_input=True``).

    Raises:
      KeepRefused: ``keep_input=False`` (nothing is ever batched).
    """
    if not kind.startswith("maybe_"):
        return None
    text = args.get("keep_input", "True").strip()
    if text == "True":
        return None
    if text == "False":
        raise KeepRefused(
            f"{kind}(keep_input=False) keeps no record: the legacy pipeline blocks forever "
            "on its first batch, so there is nothing to migrate; pass a keep value that "
            "keeps some records (or call batch / shuffle_batch)"
        )
    return text


def with_keep(element: str, keep: str | None) -> str:
    """What the per-record function returns: the element and its keep value."""
    return element if keep is None else f"({element}), {keep}"


def filter_lines(var: str, enqueue_many: bool, rank: int | None) -> tuple[list[str], list[str]]:
    """(the lines before the ``unbatch`` of an `enqueue_many` call, the lines after it)
    that keep the records whose keep value is true, then drop it; `rank`: the keep
    value's (0 a scalar, 1 a vector, None unknown: per record)."""
    lines = [_FILTER.format(var=var), _DROP.format(var=var)]
    if enqueue_many and rank == 0:
        return lines, []
    return [], lines


def keep_for(rewriter, fn, stmt, kind: str, args: dict[str, str]):
    """(the keep value's source text or None, its rank) of the batching call `stmt`
    (NOTE [ keep_input as a filter ]); refuses, at the call's line, what the written code
    cannot express (a join of several lists, copies of the per-record code included)."""
    try:
        keep = keep_of(kind, args)
    except KeepRefused as e:
        raise rewriter.fail(fn, stmt, str(e)) from e
    if keep is None:
        return None, None
    if kind.endswith("_join"):
        raise rewriter.fail(
            fn, stmt, f"{kind}'s `keep_input={keep}` over a join of several lists (each list "
            "is its own enqueue, all kept or dropped by the one keep tensor): a Dataset's "
            "filter keeps each record by its own value; return the keep value with each "
            "record (in the lists) and filter the records before the join by hand, or join "
            "one list"
        )  # fmt: skip
    if "shapes" in args and args["shapes"].strip() != "None":
        raise rewriter.fail(fn, stmt, f"{kind}'s `shapes` with `keep_input` (set the shapes "
                            "in the decode function)")  # fmt: skip
    ranks = {_rank(n.args.get("keep_input")) for n in rewriter.built_at(fn, stmt, (kind,))}
    rank = ranks.pop() if len(ranks) == 1 else None
    return keep, rank


def _rank(value) -> int | None:
    """The rank of a traced keep value (a Python bool: 0), or None."""
    if isinstance(value, (bool, int)):
        return 0
    shape = getattr(value, "shape", None)
    return getattr(shape, "rank", None) if shape is not None else None
