"""An input pipeline beside a Python class that walks a folder (issue #41).

Shaped like Avynn/Cat-GAN's src/imagePipeline.py: a plain Python
``FileNameQueue`` whose constructor calls its own method on a folder (no TF
queue: the program's own object, not followed), ``string_input_producer`` over
its ``dump()``, ``WholeFileReader``, a label from the file's key through
``tf.py_func``, ``shuffle_batch``.
"""

import os

import numpy as np
import tensorflow.compat.v1 as tf


class FileNameQueue:
    def __init__(self, folderPath, numEpochs):
        self.contents = []
        for _ in range(numEpochs):
            self.enqueuePaths(folderPath)

    def enqueuePaths(self, folderPath):
        for dirPath, dirNames, filenames in sorted(os.walk(folderPath)):
            if not dirNames:
                for fileName in sorted(filenames):
                    self.contents.append(dirPath + "/" + fileName)

    def dump(self):
        return list(self.contents)


def getLabel(path):
    if isinstance(path, bytes):
        path = path.decode()
    label = np.zeros(2, dtype=np.float32)
    label[0 if "cat" in os.path.basename(path) else 1] = 1
    return label


def readIMG(pathQueue):
    reader = tf.WholeFileReader()
    key, value = reader.read(pathQueue)
    example = tf.strings.to_number(tf.strings.split([value]).values)
    example = tf.reshape(example, [4])
    label = tf.py_func(getLabel, [key], tf.float32)
    label.set_shape([2])
    return example, label


def inputPipeline(folderPath, batchSize, numEpochs):
    filenames = FileNameQueue(folderPath, 1)
    pathQueue = tf.train.string_input_producer(filenames.dump(), num_epochs=numEpochs)
    example, label = readIMG(pathQueue)
    return tf.train.shuffle_batch(
        [example, label], batch_size=batchSize, capacity=30, min_after_dequeue=10, num_threads=2
    )
