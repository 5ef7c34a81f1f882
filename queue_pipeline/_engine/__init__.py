"""The dataset engine: legacy batching calls served by tf.data, vectorized decoding, checkpoints."""
