"""The loop that runs the examples' tf.data twins in either TF mode, and their ``--tf1`` flag.

Every twin in ``legacy_examples`` (its input Dataset, its training and its
evaluation loops) goes through :func:`run` (or :func:`values`), so no program
branches on the TF mode itself. See NOTE [ Eager loop vs Session loop ].

NOTE [ Eager loop vs Session loop ]
Under TF 2.x defaults the twin is consumed the TF2 way: the Dataset is
iterated with a Python ``for`` and the per-element step runs as a
``tf.function``. In TF1 mode (``tf.compat.v1.disable_v2_behavior()``, as
legacy scripts run) there is no eager execution: ``for`` over a Dataset,
``.numpy()`` and Keras 3 all fail. There the twin is consumed the way a
session script takes its first migration step: the same Dataset and the same
step are built once in a fresh graph on
``tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()``, and a
``tf.compat.v1.Session`` (with ``operation_timeout_in_ms``) runs the step
until ``tf.errors.OutOfRangeError``. The switch is ``tf.executing_eagerly()``,
so a TF 2.x caller inside ``tf.Graph().as_default()`` gets the Session loop
too. Steps are written once for both: ``tf.GradientTape`` and
``Variable.assign_sub`` build the same graph ops in a ``tf.function`` and in
a TF1 graph; a step returns its fetches (e.g. the loss) under
``tf.control_dependencies`` of its updates, so the Session runs them.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, NamedTuple, Sequence

import tensorflow as tf

__all__ = ["OP_TIMEOUT_MS", "Loop", "Result", "parse_args", "run", "values"]

OP_TIMEOUT_MS = 60_000
TF1_HELP = (
    "run in TF1 mode: tf.compat.v1.disable_v2_behavior() before anything is "
    "built, as legacy scripts run (the twin then reads its Dataset through a "
    "one-shot iterator in a Session)"
)


class Loop(NamedTuple):
    """What a twin's `build` function returns to :func:`run`.

    Attributes:
      dataset: the twin's Dataset; the loop ends with it (``take`` it to stop
        earlier).
      step: called once per element (a tuple element is unpacked into
        positional arguments, as ``Dataset.map`` does); returns the fetches
        of that step, e.g. the loss after an update. None: the element
        itself is the step's output.
      final: a structure of tensors or variables read once after the last
        step (e.g. the trained weights), or None.
    """

    dataset: tf.data.Dataset
    step: Callable[..., Any] | None = None
    final: Any = None


class Result(NamedTuple):
    """What :func:`run` returns: every step's output and `final`, as numpy."""

    outputs: list
    final: Any


def _call(step: Callable[..., Any], element):
    return step(*element) if isinstance(element, tuple) else step(element)


def _numpy(structure):
    return tf.nest.map_structure(
        lambda value: value.numpy() if hasattr(value, "numpy") else value, structure
    )


def run(build: Callable[[], Loop], *, timeout_ms: int = OP_TIMEOUT_MS) -> Result:
    """Runs a twin's loop to the end of its Dataset, eagerly or in a Session.

    See NOTE [ Eager loop vs Session loop ]. Eagerly, `build` is called in
    the caller's context; otherwise in a fresh graph, whose global and local
    variables are initialized before the first step.

    Args:
      build: makes the twin's Dataset, variables and step; returns a
        :class:`Loop`. Called exactly once.
      timeout_ms: the Session's ``operation_timeout_in_ms`` (Session loop
        only): a step blocked longer fails with DeadlineExceededError.

    Returns:
      A :class:`Result`: the outputs of every step, in order, and the value
      of ``Loop.final`` after the last step, as numpy.

    Raises:
      TypeError: `build` did not return a :class:`Loop`.

    Example::

        def build():
            weights = tf.Variable(tf.zeros([784, 10]))
            return Loop(batches(), step=make_train_step(weights), final=weights)

        losses, trained = run(build)
    """
    if tf.executing_eagerly():
        loop = _checked(build())
        step = None if loop.step is None else tf.function(loop.step, reduce_retracing=True)
        outputs = [
            _numpy(element if step is None else _call(step, element)) for element in loop.dataset
        ]
        return Result(outputs, _numpy(loop.final))
    graph = tf.Graph()
    with graph.as_default():
        loop = _checked(build())
        element = tf.compat.v1.data.make_one_shot_iterator(loop.dataset).get_next()
        fetches = element if loop.step is None else _call(loop.step, element)
        init = tf.group(
            tf.compat.v1.global_variables_initializer(), tf.compat.v1.local_variables_initializer()
        )
    config = tf.compat.v1.ConfigProto(operation_timeout_in_ms=timeout_ms)
    outputs = []
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        sess.run(init)
        try:
            while True:
                outputs.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            pass  # the end of the Dataset
        final = None if loop.final is None else sess.run(loop.final)
    return Result(outputs, final)


def _checked(loop) -> Loop:
    if not isinstance(loop, Loop):
        raise TypeError(
            f"_twin_loop.run: `build` must return a _twin_loop.Loop; got "
            f"{type(loop).__name__} {loop!r}. Fix: return "
            "Loop(dataset, step, final)."
        )
    return loop


def values(make_dataset: Callable[[], tf.data.Dataset], **kwargs) -> list:
    """Every element of the Dataset `make_dataset()` returns, as numpy, in order.

    ``run(lambda: Loop(make_dataset())).outputs``: eagerly, or through a
    one-shot iterator in a Session (`kwargs` go to :func:`run`).
    """
    return run(lambda: Loop(make_dataset()), **kwargs).outputs


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Adds ``--tf1`` to `parser`, parses `argv` and, with ``--tf1``, enters TF1 mode.

    ``tf.compat.v1.disable_v2_behavior()`` is the first thing that happens
    after parsing, before the program builds anything. It may be called again
    when the caller already disabled v2 behaviour (it is idempotent).
    """
    parser.add_argument("--tf1", action="store_true", help=TF1_HELP)
    args = parser.parse_args(argv)
    if args.tf1:
        tf.compat.v1.disable_v2_behavior()
    return args
