"""Keypoints, an image and visibility flags read from one binary database with offsets.

Shaped like a 3D hand-pose reader: each fixed-length record holds float32
keypoint coordinates, then uint8 image bytes and visibility bytes; the code
walks the record with a Python byte counter updated between the decode lines,
and makes its file-name queue inside the call that reads it.
"""

import tensorflow as tf

NUM_KP = 4
IMAGE_HW = (2, 2)


def record_size(num_kp=NUM_KP, image_hw=IMAGE_HW):
    """Bytes in one record: xyz and uv floats, image bytes, visibility bytes."""
    return 4 * num_kp * 3 + 4 * num_kp * 2 + image_hw[0] * image_hw[1] * 3 + num_kp


def read_pose_batch(path, batch_size, use_wrist=True):
    """One batch of (xyz, uv, visible) read inline, a byte counter between the slices."""
    record_bytes = record_size()
    reader = tf.compat.v1.FixedLengthRecordReader(header_bytes=0, record_bytes=record_bytes)
    _, value = reader.read(tf.compat.v1.train.string_input_producer([path], shuffle=False))
    bytes_read = 0
    as_float = tf.io.decode_raw(value, tf.float32)
    xyz = tf.reshape(tf.slice(as_float, [bytes_read // 4], [NUM_KP * 3]), [NUM_KP, 3])
    bytes_read += 4 * NUM_KP * 3
    if not use_wrist:
        xyz = tf.concat([0.5 * (xyz[:1] + xyz[1:2]), xyz[1:]], 0)
    uv = tf.reshape(tf.slice(as_float, [bytes_read // 4], [NUM_KP * 2]), [NUM_KP, 2])
    bytes_read += 4 * NUM_KP * 2
    as_bytes = tf.io.decode_raw(value, tf.uint8)
    bytes_read += IMAGE_HW[0] * IMAGE_HW[1] * 3
    visible = tf.cast(tf.slice(as_bytes, [bytes_read], [NUM_KP]), tf.bool)
    bytes_read += NUM_KP
    assert bytes_read == record_bytes, "the record layout does not add up"
    return tf.compat.v1.train.batch([xyz, uv, visible], batch_size=batch_size)


def read_lines_batch(path, batch_size):
    """Two CSV columns read inline, the producer inside the read call."""
    reader = tf.compat.v1.TextLineReader()
    _, line = reader.read(
        tf.compat.v1.train.string_input_producer([path], shuffle=False, num_epochs=1)
    )
    first, second = tf.io.decode_csv(line, record_defaults=[[0], [0]])
    return tf.compat.v1.train.batch([first, second], batch_size=batch_size)


def read_named_parts(path, batch_size):
    """A dict of parts sliced in a loop; the names and the byte count are read after the batch."""
    record_bytes = record_size()
    reader = tf.compat.v1.FixedLengthRecordReader(header_bytes=0, record_bytes=record_bytes)
    _, value = reader.read(tf.compat.v1.train.string_input_producer([path], shuffle=False))
    names = []
    as_float = tf.io.decode_raw(value, tf.float32)
    parts = {}
    offset = 0
    for name, entries in (("xyz", 3 * NUM_KP), ("uv", 2 * NUM_KP)):
        parts[name] = tf.slice(as_float, [offset // 4], [entries])
        names.append(name)
        offset += 4 * entries
    count = len(names)
    batch = tf.compat.v1.train.batch(parts, batch_size=batch_size)
    return batch, count, offset


def read_uv_in_scope(path, batch_size):
    """The counter moved on inside a name scope that also slices."""
    reader = tf.compat.v1.FixedLengthRecordReader(header_bytes=0, record_bytes=record_size())
    _, value = reader.read(tf.compat.v1.train.string_input_producer([path], shuffle=False))
    offset = 0
    as_float = tf.io.decode_raw(value, tf.float32)
    xyz = tf.slice(as_float, [offset // 4], [3 * NUM_KP])
    with tf.name_scope("uv"):
        offset += 4 * 3 * NUM_KP
        uv = tf.slice(as_float, [offset // 4], [2 * NUM_KP])
    return tf.compat.v1.train.batch([xyz, uv], batch_size=batch_size)


class PoseDbReader(object):
    """Reads the binary database written by the converter, one dict of batches per step."""

    def __init__(self, path, batch_size=2, shuffle=False, use_wrist_coord=True):
        self.path_to_db = path
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.use_wrist_coord = use_wrist_coord
        self.image_size = IMAGE_HW
        self.num_kp = NUM_KP

    def get(self):
        """The batches of every item of the record, by name."""
        record_bytes = 0
        encoding_bytes = 4
        kp_xyz_entries = 3 * self.num_kp
        record_bytes += encoding_bytes * kp_xyz_entries
        kp_uv_entries = 2 * self.num_kp
        record_bytes += encoding_bytes * kp_uv_entries
        image_bytes = self.image_size[0] * self.image_size[1] * 3
        record_bytes += image_bytes
        record_bytes += self.num_kp

        reader = tf.compat.v1.FixedLengthRecordReader(header_bytes=0, record_bytes=record_bytes)
        _, value = reader.read(tf.compat.v1.train.string_input_producer([self.path_to_db]))

        bytes_read = 0
        data_dict = dict()
        record_float = tf.io.decode_raw(value, tf.float32)

        keypoint_xyz = tf.reshape(
            tf.slice(record_float, [bytes_read // 4], [kp_xyz_entries]), [self.num_kp, 3]
        )
        bytes_read += encoding_bytes * kp_xyz_entries
        if not self.use_wrist_coord:
            palm = tf.expand_dims(0.5 * (keypoint_xyz[0, :] + keypoint_xyz[1, :]), 0)
            keypoint_xyz = tf.concat([palm, keypoint_xyz[1:, :]], 0)
        data_dict["keypoint_xyz"] = keypoint_xyz

        keypoint_uv = tf.reshape(
            tf.slice(record_float, [bytes_read // 4], [kp_uv_entries]), [self.num_kp, 2]
        )
        bytes_read += encoding_bytes * kp_uv_entries
        data_dict["keypoint_uv"] = keypoint_uv

        record_uint8 = tf.io.decode_raw(value, tf.uint8)
        image = tf.reshape(
            tf.slice(record_uint8, [bytes_read], [image_bytes]),
            [self.image_size[0], self.image_size[1], 3],
        )
        image = tf.cast(image, tf.float32) / 255.0 - 0.5
        bytes_read += image_bytes
        data_dict["image"] = image

        keypoint_vis = tf.cast(tf.slice(record_uint8, [bytes_read], [self.num_kp]), tf.bool)
        bytes_read += self.num_kp
        data_dict["keypoint_vis"] = keypoint_vis

        names, tensors = zip(*data_dict.items())
        if self.shuffle:
            tensors = tf.compat.v1.train.shuffle_batch_join(
                [tensors],
                batch_size=self.batch_size,
                capacity=100,
                min_after_dequeue=50,
                enqueue_many=False,
            )
        else:
            tensors = tf.compat.v1.train.batch_join(
                [tensors], batch_size=self.batch_size, capacity=100, enqueue_many=False
            )
        return dict(zip(names, tensors))
