"""``queue-pipeline service``: tf.data service dispatcher and worker servers as commands."""
