"""A SequenceExample reader whose batching function is picked through a local name.

Shaped like a public grocery-reorder model's data module: a
``read_and_decode(filename_queue)`` that parses one ``SequenceExample``
(context features and per-step sequence features) and merges both dicts, and
a ``fetch_batchdat_vars(fname, mode, hps)`` that puts a filename queue in
front of it, binds ``batchfn = tf.train.batch``, rebinds it to
``tf.train.maybe_batch`` in training mode (with a ``keep_input`` drawn
against the example's weight), fills a ``batch_kwargs`` dict per mode and
returns ``batchfn(dat, **batch_kwargs)``. Beside it, the shapes a user writes
after migrate's fix: the arguments written out with the rebinding done
through ``functools.partial`` (``fetch_batch``), and a module-level reader
alias with a plain local batching alias (``fetch_batch_plain``). Used by
``queue-pipeline migrate tests/scripts/unseen_batch_alias.py:fetch_batch_plain
--call "'users.tfrecords', type('H', (), {'batch_size': 4})()"``.
"""

import functools

import tensorflow.compat.v1 as tf

NFEATS = 3
READER = tf.TFRecordReader


def fetch_batchdat_vars(fname, mode, hps):
    """where mode is one of train, test, validation"""
    assert mode in ("train", "test", "validation")
    fq = tf.train.string_input_producer(
        [fname], num_epochs=1, shuffle=False, name="{}-filename-queue".format(mode)
    )
    dat = read_and_decode(fq)
    batch_kwargs = {"dynamic_pad": True, "batch_size": hps.batch_size, "capacity": 100}
    batchfn = tf.train.batch
    if mode == "train":
        batchfn = tf.train.maybe_batch
        keep = tf.random_uniform([]) < dat["weight"]
        batch_kwargs["keep_input"] = keep
    elif mode == "test":
        batch_kwargs["allow_smaller_final_batch"] = True
    batchdat = batchfn(dat, **batch_kwargs)
    return batchdat


def fetch_batch(fname, mode, hps):
    fq = tf.train.string_input_producer([fname], num_epochs=1, shuffle=False)
    dat = read_and_decode(fq)
    batchfn = tf.train.batch
    if mode == "train":
        keep = tf.random_uniform([]) < dat["weight"]
        batchfn = functools.partial(tf.train.maybe_batch, keep_input=keep)
    return batchfn(dat, batch_size=hps.batch_size, capacity=100, dynamic_pad=True)


def fetch_batch_plain(fname, hps):
    fq = tf.train.string_input_producer([fname], num_epochs=1, shuffle=False)
    reader = READER()
    _, serialized_example = reader.read(fq)
    dat = decode(serialized_example)
    batchfn = tf.train.batch
    # the last batch may be short: every user is seen
    batchdat = batchfn(
        dat,
        batch_size=hps.batch_size,
        capacity=100,
        dynamic_pad=True,
        allow_smaller_final_batch=True,
    )
    return batchdat


def read_and_decode(filename_queue):
    reader = READER()
    _, serialized_example = reader.read(filename_queue)
    return decode(serialized_example)


def decode(serialized_example):
    ctxfeats = {
        "uid": tf.FixedLenFeature([], tf.int64),
        "seqlen": tf.FixedLenFeature([], tf.int64),
        "weight": tf.FixedLenFeature([], tf.float32),
    }
    seqfeats = {
        "label": tf.FixedLenSequenceFeature([], tf.float32),
        "feats": tf.FixedLenSequenceFeature([NFEATS], tf.float32),
    }
    ctx, seq = tf.parse_single_sequence_example(
        serialized_example, context_features=ctxfeats, sequence_features=seqfeats
    )
    feats = dict(list(ctx.items()) + list(seq.items()))
    return feats
