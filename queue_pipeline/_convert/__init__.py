"""Conversion of raw files and legacy pipelines to sharded TFRecord files, on Apache Beam.

One idea per module: ``sources`` (what SOURCE names, listed into records),
``images`` and ``tables`` (a record -> a ``tf.train.Example``), ``features``
(Python values <-> Example features, the feature spec), ``assign`` (the stable
split and shard of a record), ``tfrecords`` (the shard files),
``pipeline`` (the Beam pipeline), ``output``
(temporary names, the final rename, ``manifest.json``, ``errors.jsonl``),
``verify`` (reading the shards back), ``reader`` (the tf.data reader source),
``api`` (``queue_pipeline.convert``) and ``command`` (the CLI's arguments).
Nothing here imports TensorFlow or Beam at import time except ``pipeline``
(Beam), ``verify`` and ``api``'s callees; what Beam's workers run imports no
TensorFlow (NOTE [ Examples without TensorFlow ] in ``features``).
"""
