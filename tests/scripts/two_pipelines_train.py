"""A training function with a training and a validation pipeline (issue #41).

Shaped like kwotsin/TensorFlow-ENet's train_enet.py ``run()``: module-level
file lists; in ``with tf.Graph().as_default():`` a ``slice_input_producer``
over image and annotation paths, ``read_file`` + decode, ``tf.train.batch``;
the model and its train op on the batches; then a validation pipeline built
the same way (another decoder, another batch size) and the model on it; a
Supervisor-style session loop. NOTE [ Several pipelines in one function ].
"""

import os

import tensorflow.compat.v1 as tf

DATA = os.environ.get("TWO_PIPELINES_DATA", "data")
batch_size = 4
eval_batch_size = 3


def listed(folder):
    return sorted(os.path.join(DATA, folder, f) for f in os.listdir(os.path.join(DATA, folder)))


image_files, annotation_files = listed("train"), listed("trainannot")
image_val_files, annotation_val_files = listed("val"), listed("valannot")


def model(images):
    with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
        w = tf.get_variable("w", [3, 3, 3, 2], initializer=tf.glorot_uniform_initializer(seed=1))
        return tf.nn.conv2d(tf.to_float(images), w, [1, 1, 1, 1], "SAME")


def run():
    with tf.Graph().as_default():
        # training input
        images = tf.convert_to_tensor(image_files)
        annotations = tf.convert_to_tensor(annotation_files)
        input_queue = tf.train.slice_input_producer([images, annotations], shuffle=False)
        image = tf.image.decode_png(tf.read_file(input_queue[0]), channels=3)
        annotation = tf.image.decode_png(tf.read_file(input_queue[1]), channels=1)
        image.set_shape([6, 8, 3])
        annotation.set_shape([6, 8, 1])
        images, annotations = tf.train.batch(
            [image, annotation], batch_size=batch_size, allow_smaller_final_batch=True
        )

        logits = model(images)
        loss = tf.reduce_mean(tf.square(logits - tf.to_float(annotations)))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

        # validation input
        images_val = tf.convert_to_tensor(image_val_files)
        annotations_val = tf.convert_to_tensor(annotation_val_files)
        input_queue_val = tf.train.slice_input_producer(
            [images_val, annotations_val], shuffle=False
        )
        image_val = tf.image.decode_image(tf.read_file(input_queue_val[0]), channels=3)
        annotation_val = tf.image.decode_image(tf.read_file(input_queue_val[1]), channels=1)
        image_val = tf.reshape(image_val, [6, 8, 3])
        annotation_val = tf.reshape(annotation_val, [6, 8, 1])
        images_val, annotations_val = tf.train.batch(
            [image_val, annotation_val], batch_size=eval_batch_size
        )

        predictions_val = tf.argmax(model(images_val), -1)
        accuracy = tf.reduce_mean(
            tf.to_float(tf.equal(predictions_val, tf.to_int64(annotations_val[..., 0])))
        )

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            for _ in range(2):
                sess.run(train_op)
            print(sess.run(accuracy))
            coord.request_stop()
            coord.join(threads)


if __name__ == "__main__":
    run()
