"""Shaped like a public input producer class whose method names a private helper.

``Producer(path, batch_size).inputs()`` reads CSV lines, decodes them and
batches them; a private ``__scale`` helper is named only in a comment and a
string of ``inputs`` (an earlier version called it), while ``inputs_scaled``
really calls it through ``self.__scale``, which means ``self._Producer__scale``
inside the class only.
"""

import tensorflow as tf


class Producer(object):
    def __init__(self, path, batch_size):
        self.path = path
        self.batch_size = batch_size

    def __scale(self, value):
        return value * 2

    def inputs(self):
        queue = tf.compat.v1.train.string_input_producer([self.path], num_epochs=1, shuffle=False)
        _, line = tf.compat.v1.TextLineReader().read(queue)
        ident, label = tf.io.decode_csv(line, record_defaults=[[0], [0]])
        # ident = self.__scale(ident)
        tf.compat.v1.logging.debug("self.__scale(ident) is not applied")
        return tf.compat.v1.train.batch([ident, label], batch_size=self.batch_size)

    def inputs_scaled(self):
        queue = tf.compat.v1.train.string_input_producer([self.path], num_epochs=1, shuffle=False)
        _, line = tf.compat.v1.TextLineReader().read(queue)
        ident, label = tf.io.decode_csv(line, record_defaults=[[0], [0]])
        ident = self.__scale(ident)
        return tf.compat.v1.train.batch([ident, label], batch_size=self.batch_size)
