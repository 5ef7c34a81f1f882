"""A function's own queue whose dequeued tuple is indexed, not unpacked.

Shaped like public TF 1.x input code of the image-classifier era: CSV rows
(four pixel values and a label) decoded per record, enqueued into the
function's own ``FIFOQueue`` run by a ``QueueRunner`` with two enqueue
threads, then ``sample = queue.dequeue()`` read as ``sample[0]``,
``sample[1]`` (or ``sample[-1]``) into ``tf.train.batch``; beside it the same
with ``dequeue_many`` indexed, a one-component queue whose dequeue is used
directly (``value = lines.dequeue()``, ``x = queue.dequeue() * 2.0``), a
dequeued tuple handed whole to a helper, and a dequeue read inside a
batching call (refused).
"""

import tensorflow.compat.v1 as tf

DEFAULTS = [[0.0], [0.0], [0.0], [0.0], [0]]


def _decoded(file_list, num_epochs):
    filename_queue = tf.train.string_input_producer(file_list, num_epochs=num_epochs, shuffle=False)
    reader = tf.TextLineReader()
    _, line = reader.read(filename_queue)
    columns = tf.decode_csv(line, record_defaults=DEFAULTS)
    image = tf.stack(columns[:4]) / 255.0
    label = columns[4]
    return image, label


def indexed_batch(file_list, batch_size=8, num_epochs=1):
    image, label = _decoded(file_list, num_epochs)
    q = tf.FIFOQueue(100, [tf.float32, tf.int32], shapes=[[4], []])
    enq = q.enqueue([image, label])
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [enq] * 2))
    sample = q.dequeue()
    image_b, label_b = tf.train.batch([sample[0], sample[1]], batch_size)
    return image_b, label_b


def indexed_names(file_list, batch_size=8, num_epochs=1):
    image, label = _decoded(file_list, num_epochs)
    queue = tf.FIFOQueue(100, [tf.float32, tf.int32], shapes=[[4], []])
    enqueue_op = queue.enqueue([image, label])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * 2))
    sample = queue.dequeue()
    img = sample[0]
    lbl = sample[-1]
    img = tf.image.per_image_standardization(tf.reshape(img, [2, 2, 1]))
    return tf.train.batch([img, lbl], batch_size, allow_smaller_final_batch=True)


def indexed_many(file_list, batch_size=8, num_epochs=1):
    image, label = _decoded(file_list, num_epochs)
    queue = tf.RandomShuffleQueue(64, 16, [tf.float32, tf.int32], shapes=[[4], []], seed=7)
    enqueue_op = queue.enqueue([image, label])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op]))
    batch = queue.dequeue_many(batch_size)
    return batch[0], batch[1]


def one_component(file_list, batch_size=8, num_epochs=1):
    filename_queue = tf.train.string_input_producer(file_list, num_epochs=num_epochs, shuffle=False)
    _, line = tf.TextLineReader().read(filename_queue)
    lines = tf.FIFOQueue(32, [tf.string], shapes=[[]])
    tf.train.add_queue_runner(tf.train.QueueRunner(lines, [lines.enqueue([line])] * 2))
    value = lines.dequeue()
    columns = tf.decode_csv(value, record_defaults=DEFAULTS)
    return tf.train.batch([tf.stack(columns[:4]), columns[4]], batch_size)


def _augment(pair):
    return tf.reverse(pair[0], [0]), pair[1]


def handed_whole(file_list, batch_size=8, num_epochs=1):
    image, label = _decoded(file_list, num_epochs)
    queue = tf.FIFOQueue(100, [tf.float32, tf.int32], shapes=[[4], []])
    enqueue_op = queue.enqueue([image, label])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [enqueue_op] * 2))
    sample = queue.dequeue()
    image, label = _augment(sample)
    return tf.train.batch([image, label], batch_size)


def scaled_single(file_list, batch_size=8, num_epochs=1):
    image, _ = _decoded(file_list, num_epochs)
    queue = tf.RandomShuffleQueue(64, 8, [tf.float32], shapes=[[4]], seed=3)
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(image)] * 2))
    scaled = queue.dequeue() * 2.0
    return tf.train.batch([scaled], batch_size)


def dequeued_in_batch(file_list, batch_size=8, num_epochs=1):
    image, _ = _decoded(file_list, num_epochs)
    queue = tf.FIFOQueue(64, [tf.float32], shapes=[[4]])
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(image)]))
    return tf.train.batch([queue.dequeue()], batch_size)
