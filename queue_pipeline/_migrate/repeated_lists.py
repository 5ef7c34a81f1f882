"""A join's lists written as one list repeated: ``[[image, label]] * num_threads``.

NOTE [ A join of one list repeated ]
``tf.train.batch_join([[image, label]] * n, ...)`` hands the join n lists
that are the same Python list: the same tensors, so n enqueue threads each
running the same ops (one reader, read n times at once). That is
``tf.train.batch([image, label], num_threads=n, ...)`` (the spec's
batch_join: one thread per list; batch: ``num_threads`` threads of one
enqueue op), and ``shuffle_batch_join([example] * n)`` is
``shuffle_batch(example, num_threads=n)``; every other argument means the
same in both. The migration then writes that batching call's chain: the
records in the order of the reader (the legacy order depends on its
threads, said among the differences). ``n * [x]`` is the same list.
A list of several lists (``[[a, b], [c, d]] * 2``) is n threads of
different ops, and stays with the join's other forms.
"""

from __future__ import annotations

import libcst as cst

__all__ = ["multiplied_list"]


def multiplied_list(node: cst.BaseExpression | None) -> tuple[cst.BaseExpression, str] | None:
    """(the repeated list's only item, the count's source text) if `node` is
    ``[x] * n`` or ``n * [x]``; else None."""
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply)):
        return None
    for one, count in ((node.left, node.right), (node.right, node.left)):
        if (
            isinstance(one, cst.List)
            and len(one.elements) == 1
            and not isinstance(one.elements[0], cst.StarredElement)
            and not isinstance(count, cst.List)
        ):
            return one.elements[0].value, cst.Module([]).code_for_node(count)
    return None
