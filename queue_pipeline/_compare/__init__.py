"""Running and comparing pipelines: the harness, graph inspection, normalization, reports."""
