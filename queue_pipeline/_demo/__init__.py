"""The demo's parts: its data and input pipelines, its model and training."""
