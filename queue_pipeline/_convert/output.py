"""The output directory of a conversion: refusal, temporary names, the final rename, manifest.json.

NOTE [ No partial shards ]
The job writes every shard, and its small JSON results, under
``OUT/.convert-tmp-<random>/``. Only after the job succeeded (and ``verify``
passed) are the shards renamed to ``OUT/<split>-<i>-of-<n>``, then
``errors.jsonl`` and last ``manifest.json`` written: a reader that finds a
manifest finds every shard it names. A failed job removes its temporary
directory and leaves ``OUT`` as it was. ``overwrite=True`` allows a non-empty
``OUT``; what a previous conversion wrote there (the files its manifest
names, its errors.jsonl) is removed just before the rename, and nothing
else is deleted.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import tensorflow as tf

__all__ = ["ERRORS", "MANIFEST", "check_out", "finish", "make_temp", "remove_temp"]

_API = "queue_pipeline.convert"
MANIFEST = "manifest.json"
ERRORS = "errors.jsonl"
_TEMP_PREFIX = ".convert-tmp-"


def check_out(out: str, overwrite: bool) -> None:
    """Refuses an existing non-empty `out` unless `overwrite`; creates `out` otherwise.

    Raises:
      FileExistsError: `out` has files and `overwrite` is False.
      NotADirectoryError: `out` is a file.
    """
    if tf.io.gfile.exists(out) and not tf.io.gfile.isdir(out):
        raise NotADirectoryError(f"{_API}: `out` {out!r} is a file. Fix: name a directory.")
    if tf.io.gfile.isdir(out):
        entries = [e for e in tf.io.gfile.listdir(out) if not e.startswith(_TEMP_PREFIX)]
        if entries and not overwrite:
            raise FileExistsError(
                f"{_API}: `out` {out!r} is not empty ({len(entries)} entries, e.g. "
                f"{sorted(entries)[0]!r}). Fix: pass overwrite=True (--overwrite) or an empty "
                "directory."
            )
    tf.io.gfile.makedirs(out)


def make_temp(out: str) -> str:
    """A fresh temporary directory inside `out` (see NOTE [ No partial shards ])."""
    path = os.path.join(out, _TEMP_PREFIX + uuid.uuid4().hex[:12])
    tf.io.gfile.makedirs(path)
    return path


def remove_temp(path: str) -> None:
    """Removes the temporary directory `path` and what is left in it."""
    if tf.io.gfile.exists(path):
        tf.io.gfile.rmtree(path)


def _previous_outputs(out: str) -> list[str]:
    path = os.path.join(out, MANIFEST)
    if not tf.io.gfile.exists(path):
        return []
    try:
        with tf.io.gfile.GFile(path) as f:
            manifest = json.load(f)
        names = [s["file"] for split in manifest["splits"].values() for s in split["shards"]]
    except (ValueError, KeyError, TypeError):
        return [MANIFEST]  # not ours to understand: only the manifest itself is replaced
    return names + [ERRORS, MANIFEST]


def finish(out: str, temp: str, manifest: dict[str, Any], errors: list[dict[str, Any]]) -> None:
    """Moves the shards from `temp` to `out`, writes errors.jsonl, then manifest.json."""
    for name in _previous_outputs(out):
        if tf.io.gfile.exists(os.path.join(out, name)):
            tf.io.gfile.remove(os.path.join(out, name))
    for split in manifest["splits"].values():
        for shard in split["shards"]:
            tf.io.gfile.rename(
                os.path.join(temp, shard["file"]), os.path.join(out, shard["file"]), overwrite=True
            )
    with tf.io.gfile.GFile(os.path.join(out, ERRORS), "w") as f:
        f.write("".join(json.dumps(e, sort_keys=True) + "\n" for e in errors))
    with tf.io.gfile.GFile(os.path.join(out, MANIFEST), "w") as f:
        f.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    remove_temp(temp)
