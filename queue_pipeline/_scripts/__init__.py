"""Running unmodified scripts: install() and ``queue-pipeline run --tf1``."""
