"""The names migrate knows on both sides: the legacy calls it looks for and its own wrapper.

The floor under :mod:`~queue_pipeline._migrate.base` (the rewriter's shared
state), :mod:`~queue_pipeline._migrate.script` (a script's pipeline lines
wrapped in a function), :mod:`~queue_pipeline._migrate.generated_names` (the
written code's names kept apart from the user's) and the hints that tell a
script's failure from a function's: each reads these names from here, so none
imports another for them.
"""

from __future__ import annotations

from queue_pipeline import plan

__all__ = ["BATCHING", "PRODUCERS", "PROVIDER", "READS", "WRAPPER"]

PRODUCERS = ("string_input_producer", "input_producer", "range_input_producer")
BATCHING = tuple(sorted(plan.BATCHING_KINDS))
READS = ("read", "read_up_to")
# tf-slim's provider (NOTE [ Migrating tf-slim's DatasetDataProvider ])
PROVIDER = "DatasetDataProvider"
# the function a script's pipeline lines are wrapped in to run and migrate them:
# a name of migrate's, not the user's
WRAPPER = "_inline_pipeline"
