"""Shaped like the CSV readers of the census / iris tutorials: the record defaults are
built by a comprehension over ``_`` and edited afterwards (an item replaced, one
appended, a counter bumped) while ``_`` later names the reader's key.
"""

import tensorflow as tf


def input_fn(files, batch_size, num_numeric=3):
    defaults = [[0.0] for _ in range(num_numeric)]
    defaults[1] = [-1.0]
    defaults.append([""])
    defaults += [[0]]
    columns = num_numeric
    columns += 2
    filename_queue = tf.compat.v1.train.string_input_producer(files, num_epochs=1, shuffle=False)
    reader = tf.compat.v1.TextLineReader(skip_header_lines=1)
    _, value = reader.read(filename_queue)
    fields = tf.io.decode_csv(value, record_defaults=defaults)
    assert len(fields) == columns
    numeric = tf.stack(fields[:num_numeric])
    word, label = fields[num_numeric], fields[num_numeric + 1]
    return tf.compat.v1.train.batch(
        [numeric, word, label], batch_size=batch_size, allow_smaller_final_batch=True
    )
