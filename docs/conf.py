"""Sphinx configuration for queue_pipeline's documentation site (``bash .ci/docs``)."""

from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the work tree's package, installed or not
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import queue_pipeline  # noqa: E402

project = "queue_pipeline"
author = "queue_pipeline contributors"
copyright = "queue_pipeline contributors"
release = version = queue_pipeline.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinxarg.ext",  # sphinx-argparse: the CLI reference from cli.build_parser()
]

exclude_patterns = ["_build", "requirements.txt"]
html_theme = "furo"
html_title = f"queue_pipeline {release}"
html_static_path: list[str] = []

# Google-style docstrings (STYLE.md section 5), types from the annotations.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
# Keep signatures readable: TensorFlow's own types are not documented here.
autodoc_type_aliases: dict[str, str] = {}
nitpicky = False

# The house sections of STYLE.md section 5, rendered as titled sections.
napoleon_custom_sections = [
    "Side effects",
    "tf.data equivalent",
    "Differences from TF 1.x",
    "Differences from the legacy function",
    "Differences from the legacy class",
]
