"""Checks, from inside ``queue-pipeline run --tf1``, who sees which ``tensorflow``.

Prints ``ok NAME`` or ``FAIL NAME`` per check; tests/test_run_tf1.py wants
every check ok. The script and ``tf1_model.py`` beside it get
``tensorflow.compat.v1`` for ``import tensorflow``; dotted and ``from``
imports give the real modules; ``sys.modules``, queue_pipeline, TensorFlow's
own modules and installed packages keep the real package.
"""

import importlib
import os
import sys

import tensorflow as tf
import tensorflow.compat.v1 as v1_dotted
import tensorflow.compat.v2 as v2_dotted
import tensorflow.python.framework.ops as ops_dotted
from tensorflow import train
from tensorflow.compat import v1 as v1_from

import queue_pipeline
import tf1_model

real = sys.modules["tensorflow"]


def check(name, condition):
    print("ok" if condition else "FAIL", name)


def imported_by(module_name, file):
    """What `import tensorflow` gives code whose module is `module_name` at `file`."""
    namespace = {"__name__": module_name, "__file__": file}
    exec("import tensorflow", namespace)
    return namespace["tensorflow"]


def imports_in_a_function():
    import tensorflow

    return tensorflow


check("alias is not the real package", tf is not real and real.__name__ == "tensorflow")
check(
    "alias has the v1 API",
    tf.placeholder is real.compat.v1.placeholder and tf.Session is real.compat.v1.Session,
)
check("alias has __version__", tf.__version__ == real.__version__ == tf.VERSION)
check(
    "alias compat is the real compat", tf.compat is real.compat and tf.compat.v1 is real.compat.v1
)
check("import tensorflow.compat.v1 as tf", v1_dotted is real.compat.v1)
check("from tensorflow.compat import v1", v1_from is real.compat.v1)
check("import tensorflow.compat.v2", v2_dotted is real.compat.v2)
check(
    "import tensorflow.python.x as y", ops_dotted is sys.modules["tensorflow.python.framework.ops"]
)
check("from tensorflow import train", train is real.compat.v1.train)
check(
    "the queue API is routed",
    train.Coordinator is queue_pipeline.Coordinator
    and tf.TFRecordReader is queue_pipeline.TFRecordReader,
)
check("a module beside the script", tf1_model.tf is tf)
check("an import in a function", imports_in_a_function() is tf)
check(
    "sys.modules keeps the real package",
    sys.modules["tensorflow"] is real
    and hasattr(real, "function")
    and not hasattr(real, "placeholder"),
)
check("importlib keeps the real package", importlib.import_module("tensorflow") is real)
check("queue_pipeline keeps the real package", queue_pipeline.producers.tf is real)
check(
    "queue_pipeline's imports",
    imported_by(
        "queue_pipeline.probe", os.path.join(os.path.dirname(queue_pipeline.__file__), "probe.py")
    )
    is real,
)
check(
    "TensorFlow's own imports",
    imported_by("tensorflow.python.probe", os.path.join(os.path.dirname(real.__file__), "probe.py"))
    is real,
)
check(
    "an installed package's imports",
    imported_by(
        "absl.probe",
        os.path.join(os.path.dirname(importlib.import_module("absl").__file__), "probe.py"),
    )
    is real,
)
check(
    "the standard library's imports",
    imported_by("probe", os.path.join(os.path.dirname(os.__file__), "probe.py")) is real,
)
check("TF1 mode", not tf.executing_eagerly() and not real.__internal__.tf2.enabled())
with tf.Graph().as_default():
    check("v1 variables", type(tf.Variable(1.0)).__name__ == "RefVariable")
check("QUEUE_PIPELINE_TF1 for subprocesses", os.environ.get("QUEUE_PIPELINE_TF1") == "1")
check("hasattr(tf, 'contrib') is False", not hasattr(tf, "contrib"))
