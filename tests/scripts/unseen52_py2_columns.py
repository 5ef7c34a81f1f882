"""Census-style columns, written for Python 2 (zip(...) indexed at module level)."""

import tensorflow.compat.v1 as tf

CATEGORICAL = [("city", ["a", "b"]), ("kind", ["x", "y"])]
NUMERIC = ["age"]
ALL = [name for name, _ in CATEGORICAL] + NUMERIC
UNUSED = set(ALL) - set(zip(*CATEGORICAL)[0] + tuple(NUMERIC))


def rows(files, batch_size):
    queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    _, line = tf.TextLineReader().read(queue)
    defaults = [[0] if name in NUMERIC and name not in UNUSED else [""] for name in ALL]
    city, kind, age = tf.decode_csv(line, record_defaults=defaults)
    return tf.train.batch([city, kind, age], batch_size=batch_size)
