"""Batch-vectorized decoding: a lifted per-record region rewritten to run on whole batches.

``api`` (:func:`vectorize`) walks a region with ``builder``'s ``_Builder``,
which applies the per-op rules (``rules``: the table; ``rules_elementwise``,
``rules_decode``, ``rules_shape``: the rules by op family; ``base``: what they
share), makes ``reorder``'s exact swaps in the result, and returns one of
``results``' types. See NOTE [ Vectorizing a region ]
in ``api.py``.
"""

from queue_pipeline._engine.vectorize.api import vectorize
from queue_pipeline._engine.vectorize.results import NotVectorizable, VectorizedRegion

__all__ = ["NotVectorizable", "VectorizedRegion", "vectorize"]
