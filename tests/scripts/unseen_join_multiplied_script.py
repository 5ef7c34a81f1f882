"""A training script joining one reader's pair repeated: ``[[image, label]] * 4``.

Shaped like a public TF 1.x script: module-level ``string_input_producer``
over CSV files, one ``TextLineReader`` and ``decode_csv``, then
``tf.train.batch_join([[image, label]] * num_threads, ...)`` (four enqueue
threads of the same ops) and a session printing what the batches hold (all in ``with
tf.Graph().as_default():``, so it runs under TF 2.x defaults too).
"""

import tensorflow.compat.v1 as tf

num_threads = 4
with tf.Graph().as_default():
    filename_queue = tf.train.string_input_producer(["p0.csv", "p1.csv"], shuffle=False)
    reader = tf.TextLineReader()
    _, line = reader.read(filename_queue)
    columns = tf.decode_csv(line, record_defaults=[[0.0], [0.0], [0.0], [0.0], [0]])
    image = tf.stack(columns[:4]) / 255.0
    label = columns[4]
    image_batch, label_batch = tf.train.batch_join(
        [[image, label]] * num_threads, batch_size=4, capacity=16
    )

    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        for step in range(3):
            images, labels = sess.run([image_batch, label_batch])
            print(step, images.shape, images.dtype, labels.shape, int(labels.max()) < 3)
        coord.request_stop()
        coord.join(threads)
