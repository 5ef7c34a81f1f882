"""Runs a TF 1.x script on TensorFlow's own TF1 mode, without queue_pipeline: the oracle.

tests/test_run_tf1.py compares a script's output under ``queue-pipeline run
--tf1`` with its output here. This wrapper does only what TF 1.x itself
gave the script: ``tf.compat.v1.disable_v2_behavior()``, and ``import
tensorflow`` in the script and in the modules beside it gives
``tensorflow.compat.v1`` (with TensorFlow's own queue API, readers and
Coordinator). It handles only ``import tensorflow [as tf]``.

Usage: python tf1_native.py SCRIPT.py [ARGS...]
"""

import builtins
import os
import runpy
import sys

import tensorflow.compat.v1 as tf_v1

tf_v1.disable_v2_behavior()
script = os.path.realpath(sys.argv[1])
here = os.path.dirname(script)
original_import = builtins.__import__


def tf1_import(name, globals=None, locals=None, fromlist=(), level=0):
    module = original_import(name, globals, locals, fromlist, level)
    importer = os.path.realpath((globals or {}).get("__file__") or "/")
    if name == "tensorflow" and level == 0 and os.path.dirname(importer) == here:
        return tf_v1
    return module


builtins.__import__ = tf1_import
sys.argv = sys.argv[1:]
sys.path[0] = here
runpy.run_path(script, run_name="__main__")
