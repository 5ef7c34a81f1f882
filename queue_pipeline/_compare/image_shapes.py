"""Naming the components to draw as images, and their shapes (TensorFlow-free, for the CLI).

``--image 0=28x28`` (and ``compare(..., image_shapes={"0": (28, 28)})``)
names a component the way a user would, ``0``, ``image`` or a path such as
``[0]``, with the shape each example is drawn in: HxW or HxWxC, C in 1, 3 or 4.
"""

from __future__ import annotations

import re
from typing import Sequence

__all__ = ["check_image_shape", "component_path", "parse_image_shape"]


def component_path(name: str) -> str:
    """A component as the user names it (``0``, ``image``, ``[0]``) as its path (``[0]``)."""
    name = name.strip()
    if name == "" or name.startswith("["):
        return name
    return f"[{name}]"


def check_image_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """`shape` as a tuple of ints if it is HxW or HxWxC with C in 1, 3 or 4.

    Raises:
      ValueError: any other shape.
    """
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        dims = ()
    if len(dims) not in (2, 3) or min(dims) < 1 or (len(dims) == 3 and dims[2] not in (1, 3, 4)):
        raise ValueError(f"an image shape must be HxW or HxWxC with C in 1, 3 or 4; got {shape!r}.")
    return dims


def parse_image_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """Parses ``COMPONENT=HxW`` or ``COMPONENT=HxWxC`` into ``(path, shape)``.

    >>> parse_image_shape("0=28x28")
    ('[0]', (28, 28))

    Raises:
      ValueError: a malformed value.
    """
    name, sep, shape = text.partition("=")
    match = re.fullmatch(r"\s*(\d+)x(\d+)(?:x(\d+))?\s*", shape)
    if not sep or match is None:
        raise ValueError(
            f"`image` must look like COMPONENT=HxW or COMPONENT=HxWxC (e.g. 0=28x28); got {text!r}."
        )
    dims = tuple(int(d) for d in match.groups() if d is not None)
    return component_path(name), check_image_shape(dims)
