"""A script reading a CSV of names and scores, five rows a batch."""

import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

queue = tf.train.string_input_producer(["scores.csv"], shuffle=False)
key, line = tf.TextLineReader().read(queue)
name, score = tf.decode_csv(line, record_defaults=[[""], [0.0]])
# batch() adds a queue of examples and a runner that fills it;
# rows are dequeued five at a time.
name_batch, score_batch = tf.train.batch([name, score], batch_size=5)
with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=20000)) as sess:
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(coord=coord)
    for _ in range(2):
        print(sess.run(name_batch))
    coord.request_stop()
    coord.join(threads)
