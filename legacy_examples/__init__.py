"""The classic TF 1.x input programs, run on queue_pipeline with bundled data, in both TF modes."""
