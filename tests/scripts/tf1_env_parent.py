"""A TF 1.x script that starts another through ``queue-pipeline run`` without ``--tf1``.

The child (``tf1_env_child.py``) is a TF 1.x script too; it runs in TF1 mode
only because it inherits ``QUEUE_PIPELINE_TF1=1`` from this one. Prints the
child's output and exits with its status.
"""

import os
import subprocess
import sys

import tensorflow as tf

here = os.path.dirname(os.path.abspath(__file__))
print(
    "parent: QUEUE_PIPELINE_TF1=%s eager=%s"
    % (os.environ.get("QUEUE_PIPELINE_TF1"), tf.executing_eagerly())
)
child = subprocess.run(
    [sys.executable, "-m", "queue_pipeline", "run", os.path.join(here, "tf1_env_child.py")],
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    universal_newlines=True,
    timeout=150,
)
sys.stdout.write(child.stdout)
if child.returncode:
    sys.stderr.write(child.stderr[-3000:])
sys.exit(child.returncode)
