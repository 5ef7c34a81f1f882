"""The package's version: its own module, below every other, so that any module can name it.

setup.py reads it from here; ``queue_pipeline.__version__`` is this one.
"""

__version__ = "0.1.0"
